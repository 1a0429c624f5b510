"""The Admin round exports every group's kind and the share groups (issue 29, item 4): ``AdminCollector`` with a
fake Admin client and a fake group listing (``GroupKindsApi``); the real listing is proven on the stack by
tests/e2e/test_share_groups.py (4.4) and tests/integration/test_kafka_versions.py (3.9, 4.1: none, no error)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from types import SimpleNamespace

import pytest

from collectors.admin import AdminCollector
from collectors.catalog import TenantLookup
from collectors.group_kinds import (
    Group,
    GroupKinds,
    GroupListing,
    ShareGroup,
    ShareMember,
    SharePartition,
    StreamsGroup,
    StreamsMember,
    streams_group,
    streams_group_info,
)
from collectors.types import ClusterState, GroupInfo, PartitionState, TargetStatus
from monitor.core.config import ClusterConfig, JmxSettings, TenantConfig, TenantSelector
from monitor.core.errors import KafkaHealthError, TargetForbidden
from monitor.core.tenancy import TenantIndex

pytestmark = pytest.mark.unit

CLUSTER = ClusterConfig(name="c1", bootstrap_servers="h:9092", jmx=JmxSettings(timeout_seconds=2.0))
TENANTS = TenantLookup(
    TenantIndex(
        [
            TenantConfig(name="pay", selectors=(TenantSelector(cluster="c1", group_prefixes=("pay-",)),)),
            TenantConfig(name="ship", selectors=(TenantSelector(cluster="c1", topic_prefixes=("ship.",)),)),
        ]
    ),
    "c1",
)
MEMBER = ShareMember("m1", "pay-worker", "/10.0.0.7", (("pay.orders", 0), ("pay.orders", 1)))


class QuietAdmin:
    """A one-broker cluster with one topic; ``listed``: the groups librdkafka lists (every kind), ``asked``: the
    groups whose offsets each round asked for."""

    def __init__(self, listed: tuple[str, ...] = ()) -> None:
        self.listed, self.asked = listed, []

    def cluster(self, *, timeout: float) -> ClusterState:
        return ClusterState((1,), 1, (PartitionState("pay.orders", 0, 1, (1,), (1,)),))

    def min_insync_replicas(self, topics: Iterable[str], *, timeout: float) -> dict[str, int]:
        return {t: 1 for t in topics}

    def handler_threads(self, brokers: Iterable[int], *, timeout: float) -> dict[int, int]:
        return {b: 8 for b in brokers}

    def groups(self, *, timeout: float) -> list[GroupInfo]:
        return [GroupInfo(g, "empty", 0) for g in self.listed]

    def committed(self, groups: list[str], *, timeout: float, group_timeout: float) -> dict[str, object]:
        self.asked.append(sorted(groups))
        return {g: {} for g in groups}

    def high_watermarks(self, tps: object, *, timeout: float) -> dict[object, int]:
        return {}


class FakeKinds:
    """``GroupKindsApi``: ``rounds`` are the share groups' successive descriptions; ``gate`` (when set) holds each
    call until it is released; ``fail`` is raised by the listing."""

    def __init__(
        self,
        *,
        supported: bool = True,
        rounds: list[list[ShareGroup]] | None = None,
        streams: list[list[StreamsGroup]] | None = None,
    ) -> None:
        self.share_supported = supported
        self.streams_supported = streams is not None
        self.rounds = rounds or [[]]
        self.streams = streams or [[]]
        self.streams_described = 0
        self.described = 0
        self.gate: threading.Event | None = None
        self.fail: Exception | None = None
        self.closed = False
        self.within: list[float | None] = []  # the time each call was given
        self.listings: list[GroupListing] = []  # listings to answer first, in order (then every group, every round)

    def list_groups(self, *, within: float | None = None) -> GroupListing:
        self.within.append(within)
        if self.gate is not None:
            self.gate.wait(10)
        if self.fail is not None:
            raise self.fail
        if self.listings:
            return self.listings.pop(0)
        shares = [Group(g.id, "share", g.state) for g in self.rounds[0]]
        streams = [Group(g.id, "streams", g.state) for g in self.streams[0]]
        return GroupListing(
            (Group("pay-app", "consumer", "Stable"), Group("legacy", "classic", "Empty"), *shares, *streams)
        )

    def describe_streams_groups(self, group_ids: Iterable[str], *, within: float | None = None) -> list[StreamsGroup]:
        assert self.streams_supported, "described on a cluster without streams groups"
        out = self.streams[min(self.streams_described, len(self.streams) - 1)]
        self.streams_described += 1
        return [g for g in out if g.id in set(group_ids)]

    def describe_share_groups(self, group_ids: Iterable[str], *, within: float | None = None) -> list[ShareGroup]:
        self.within.append(within)
        assert self.share_supported, "described on a cluster without share groups"
        out = self.rounds[min(self.described, len(self.rounds) - 1)]
        self.described += 1
        ids = set(group_ids)  # the collector passes a generator
        return [g for g in out if g.id in ids]

    def close(self) -> None:
        self.closed = True


def share(start: int, lag: int, members: tuple[ShareMember, ...] = (MEMBER,), gid: str = "pay-share") -> ShareGroup:
    parts = (SharePartition("pay.orders", 0, start, lag), SharePartition("pay.orders", 1, start, 0))
    return ShareGroup(gid, "Stable" if members else "Empty", members, parts)


def collector(kinds: FakeKinds, admin: QuietAdmin | None = None) -> AdminCollector:
    fake = admin or QuietAdmin()
    return AdminCollector(CLUSTER, tenants=TENANTS, admin_factory=lambda c: fake, kinds_factory=lambda c, t: kinds)


CLUSTER_TARGET = AdminCollector(CLUSTER, tenants=TENANTS, admin_factory=lambda c: QuietAdmin()).targets()[0]


def by_name(result) -> dict[str, list[dict[str, str | float]]]:
    out: dict[str, list[dict[str, str | float]]] = {}
    for s in result.samples:
        out.setdefault(s.name, []).append({**dict(s.labels), "value": s.value})
    return out


def test_a_round_exports_each_group_as_its_kind_and_a_share_group_stalled_on_the_second_round() -> None:
    kinds = FakeKinds(rounds=[[share(100, 40)], [share(100, 60)]])
    ac = collector(kinds)
    target = ac.targets()[0]
    first = by_name(ac.collect_target(target, now=1000.0))
    info = {(s["group"], s["type"], s["tenant"]) for s in first["kafka_group_info"]}
    assert info == {("pay-app", "consumer", "pay"), ("legacy", "classic", ""), ("pay-share", "share", "pay")}
    assert [s["status"] for s in first["kafka_sharegroup_status"]] == ["consuming"]  # a first sample cannot stall
    second_result = ac.collect_target(target, now=1015.0)
    second = by_name(second_result)
    assert second_result.status is TargetStatus.OK and not second_result.message
    assert [(s["status"], s["tenant"]) for s in second["kafka_sharegroup_status"]] == [("stalled", "pay")]
    assert [(s["topic"], s["value"]) for s in second["kafka_sharegroup_lag"]] == [("pay.orders", 60.0)]
    assert [(s["client_id"], s["client_host"], s["value"]) for s in second["kafka_sharegroup_member_partitions"]] == [
        ("pay-worker", "/10.0.0.7", 2.0)
    ]
    assert "kafka_cluster_broker_up" in second  # the cluster state is still there


def test_a_share_group_whose_coordinator_did_not_answer_is_counted_in_the_message_and_keeps_its_last_sample() -> None:
    lost = ShareGroup("pay-share", "", (), (), "describe share groups at coordinator 2: timeout", unanswered=True)
    other = share(7, 3, gid="pay-other")
    kinds = FakeKinds(rounds=[[share(100, 40), other], [lost, other], [share(100, 60), other]])
    ac = collector(kinds)
    first = ac.collect_target(CLUSTER_TARGET, now=1000.0)
    assert not first.message
    second = ac.collect_target(CLUSTER_TARGET, now=1015.0)
    assert second.status is TargetStatus.OK
    assert "1 of 2 share groups not described, no series of theirs this round: describe share groups at" in (
        second.message
    ), second.message
    assert "pay-share" not in second.message  # counts in the operator's message, never a tenant's group id
    described = {s["group"] for s in by_name(second)["kafka_sharegroup_status"]}
    assert described == {"pay-other"}  # the other coordinator's group is still exported
    # the round after, described again: compared with its last sample (round 1), so a frozen group reads stalled
    third = by_name(ac.collect_target(CLUSTER_TARGET, now=1030.0))
    assert {s["group"]: s["status"] for s in third["kafka_sharegroup_status"]}["pay-share"] == "stalled"


def test_a_coordinator_that_fails_costs_its_own_groups_and_a_refused_principal_the_round() -> None:
    import kafka.errors as ke
    from kafka.protocol.metadata import CoordinatorType

    kinds = GroupKinds.__new__(GroupKinds)
    kinds._principal = "mon"
    cached = {(CoordinatorType.GROUP, "a"): 2, (CoordinatorType.GROUP, "b"): 2, (CoordinatorType.GROUP, "c"): 1}
    kinds._admin = SimpleNamespace(_manager=SimpleNamespace(cluster=SimpleNamespace(_coordinators=cached)))

    groups = kinds._coordinator_failed(2, ["a", "b"], ke.KafkaTimeoutError("request timed out after 5000 ms"))
    # their coordinator is asked for again next round (a frozen broker's groups move to the others within seconds)
    assert cached == {(CoordinatorType.GROUP, "c"): 1}
    assert [g.id for g in groups] == ["a", "b"]
    assert all(g.unanswered and g.error.startswith("describe share groups at coordinator 2: ") for g in groups)
    assert all(not g.members and not g.partitions for g in groups)
    with pytest.raises(TargetForbidden, match="User:mon needs an ACL"):
        kinds._coordinator_failed(2, ["a"], ke.GroupAuthorizationFailedError())


def test_a_broker_that_does_not_list_costs_its_own_groups_and_its_share_groups_keep_their_last_sample() -> None:
    """Issue 33 ("nothing dropped in silence"): ListGroups asked of every broker at once; one that did not answer
    costs the groups it coordinates, said in counts, and its share groups are carried as not described (their last
    sample kept), not dropped as if deleted."""
    other = share(7, 3, gid="pay-other")
    kinds = FakeKinds(rounds=[[share(100, 40), other], [other], [share(100, 60), other]])
    listed = (Group("pay-app", "consumer", "Stable"), Group("pay-other", "share", "Stable"))
    kinds.listings = [
        GroupListing((*listed, Group("pay-share", "share", "Stable")), brokers=3),
        GroupListing(
            listed,
            ("list groups at broker 2: RequestTimedOutError: request timed out after 1500 ms",),
            3,
            ("pay-share",),
        ),
    ]
    admin = QuietAdmin(listed=("pay-app", "pay-share"))  # librdkafka's listing: it still lists the share group
    ac = collector(kinds, admin)
    assert not ac.collect_target(CLUSTER_TARGET, now=1000.0).message
    second = ac.collect_target(CLUSTER_TARGET, now=1015.0)
    assert second.status is TargetStatus.OK
    assert "groups of 1 of 3 brokers not listed, no series of theirs this round: list groups at broker 2" in (
        second.message
    ), second.message
    assert "1 of 2 share groups not described" in second.message
    assert "pay-share" not in second.message
    names = by_name(second)
    assert {s["group"] for s in names["kafka_sharegroup_status"]} == {"pay-other"}
    assert "pay-share" not in {s["group"] for s in names["kafka_group_info"]}
    third = by_name(ac.collect_target(CLUSTER_TARGET, now=1030.0))
    assert {s["group"]: s["status"] for s in third["kafka_sharegroup_status"]}["pay-share"] == "stalled"
    # a share group its broker did not list is still known as one: never read as a consumer group meanwhile
    assert admin.asked == [["pay-app", "pay-share"], ["pay-app"], ["pay-app"]]
    # every call of the read was given less than the round's budget (2 s): its answers arrive within the round; the
    # listing at most half of it, so a broker that hangs the listing leaves the describes their time
    assert kinds.within and all(w is not None and 0 < w < 2.0 for w in kinds.within), kinds.within
    assert all(listed <= described / 2 + 0.01 for listed, described in zip(kinds.within[::2], kinds.within[1::2]))


def _listing_kinds(answers: list) -> tuple[GroupKinds, list]:
    """A GroupKinds whose brokers answer ``answers`` (each round's list of (node, rows or exception)); ``runs``
    records the request timeout each listing was given."""
    kinds = GroupKinds.__new__(GroupKinds)
    kinds._principal, kinds._shares_listed_by = "mon", {}
    runs: list = []

    def run(fn, timeout_ms):
        runs.append(timeout_ms)
        return answers.pop(0)

    cluster = SimpleNamespace(_coordinators={})
    kinds._admin = SimpleNamespace(_manager=SimpleNamespace(run=run, cluster=cluster))
    return kinds, runs


def _row(gid: str, kind: str) -> dict[str, str]:
    return {"group_id": gid, "group_type": kind, "group_state": "Stable", "protocol_type": ""}


def test_the_listing_keeps_the_brokers_that_answered_and_raises_only_when_none_did_or_the_principal_is_refused() -> (
    None
):
    import kafka.errors as ke
    from kafka.protocol.metadata import CoordinatorType

    hung = ke.KafkaTimeoutError("request timed out after 1500 ms")
    kinds, runs = _listing_kinds(
        [
            [(1, [_row("a", "consumer"), _row("s1", "share")]), (2, [_row("s2", "share")])],
            [(1, [_row("a", "consumer"), _row("s1", "share")]), (2, hung)],
            [(1, hung), (2, hung)],
            [(1, [_row("a", "consumer")]), (2, ke.GroupAuthorizationFailedError())],
        ]
    )
    assert [g.id for g in kinds.list_groups(within=1.5).groups] == ["a", "s1", "s2"]
    cached = kinds._admin._manager.cluster._coordinators
    cached.update({(CoordinatorType.GROUP, "s1"): 1, (CoordinatorType.GROUP, "s2"): 2})
    second = kinds.list_groups(within=1.5)
    # s2's coordinator is looked up again when next described: broker 2's groups move once it is fenced
    assert cached == {(CoordinatorType.GROUP, "s1"): 1}
    assert [g.id for g in second.groups] == ["a", "s1"]
    assert second.lost_shares == ("s2",) and second.brokers == 2
    assert second.unlisted[0].startswith("list groups at broker 2: ")
    assert second.note().startswith("groups of 1 of 2 brokers not listed")
    with pytest.raises(KafkaHealthError, match="no broker answered"):
        kinds.list_groups(within=1.5)
    with pytest.raises(TargetForbidden, match="User:mon needs an ACL"):
        kinds.list_groups()
    # every broker's answer awaited until the round's time left has passed (a deadline), or the client's own timeouts
    assert [None if r is None else round(r - time.monotonic()) for r in runs] == [1, 1, 1, None]


def test_a_share_group_is_attributed_by_its_topics_owner_when_no_prefix_matches() -> None:
    orphan = ShareGroup("anon", "Empty", (), (SharePartition("ship.parcels", 0, 5, 7),))
    out = by_name(collector(FakeKinds(rounds=[[orphan]])).collect_target(CLUSTER_TARGET, now=1.0))
    assert [(s["status"], s["tenant"]) for s in out["kafka_sharegroup_status"]] == [("no_members", "ship")]


def test_a_cluster_without_share_groups_lists_the_kinds_says_so_once_and_is_no_error(caplog) -> None:
    kinds = FakeKinds(supported=False)
    ac = collector(kinds)
    with caplog.at_level(logging.INFO, logger="collectors.admin"):
        results = [ac.collect_target(CLUSTER_TARGET, now=t) for t in (1.0, 16.0)]
    for r in results:
        assert r.status is TargetStatus.OK and not r.message, r.message
        names = by_name(r)
        assert {s["type"] for s in names["kafka_group_info"]} == {"consumer", "classic"}
        assert not [n for n in names if n.startswith("kafka_sharegroup_")]
    said = [r for r in caplog.records if "no share groups" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.INFO
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert kinds.described == 0


def test_a_failed_listing_drops_only_its_series_and_says_why() -> None:
    kinds = FakeKinds()
    kinds.fail = TargetForbidden("list groups: not authorized: User:mon needs an ACL allowing Describe on Group *")
    r = collector(kinds).collect_target(CLUSTER_TARGET, now=1.0)
    assert r.status is TargetStatus.OK
    assert "group types and share groups not read: list groups: not authorized" in r.message
    names = by_name(r)
    assert "kafka_cluster_broker_up" in names and "kafka_group_info" not in names
    assert kinds.closed  # the next round connects afresh


def test_a_hanging_listing_ends_with_the_round_and_is_not_asked_twice() -> None:
    kinds = FakeKinds()
    kinds.gate = threading.Event()
    ac = collector(kinds)
    try:
        first = ac.collect_target(CLUSTER_TARGET, now=1.0)
        assert "group types and share groups not read within the round deadline of 2s" in first.message
        assert "kafka_cluster_broker_up" in by_name(first)
        second = ac.collect_target(CLUSTER_TARGET, now=16.0)
        assert "the last round's read is still running" in second.message
    finally:
        kinds.gate.set()
    ac.close()
    assert kinds.closed


def test_a_share_group_librdkafka_lists_is_never_exported_as_a_consumer_group() -> None:
    """librdkafka's listing has every kind: the share group must not also read as a consumer group without members
    (kafka_exporter #533, KMinion #294). First round: its consumer series dropped; then not even asked offsets."""
    admin = QuietAdmin(listed=("pay-app", "pay-share"))
    ac = collector(FakeKinds(rounds=[[share(100, 0)]]), admin)
    for now in (1.0, 16.0):
        out = by_name(ac.collect_target(CLUSTER_TARGET, now=now))
        consumer = {s["group"] for name, rows in out.items() if name.startswith("kafka_consumergroup_") for s in rows}
        assert consumer == {"pay-app"}, consumer
        assert [s["group"] for s in out["kafka_sharegroup_status"]] == ["pay-share"]
    assert admin.asked == [["pay-app", "pay-share"], ["pay-app"]]


# A Kafka Streams application "pay-streams" (application.id) of two subtopologies: 0 reads pay.orders, 1 reads its
# repartition topic; its one instance runs tasks 0_0, 0_1 and 1_0 (and a standby, which reads no input).
STREAMS_SOURCES = (("0", ("pay.orders",)), ("1", ("pay-streams-agg-repartition",)))
STREAMS_MEMBER = StreamsMember(
    "m1", "pay-streams-app-StreamThread-1-consumer", "/10.0.0.9", "p1", (("0", (0, 1)), ("1", (0,)))
)


def test_a_streams_member_reads_its_active_tasks_partitions_of_their_subtopology_sources() -> None:
    other = StreamsMember("m2", "pay-streams-app-StreamThread-2-consumer", "/10.0.0.8", "p2", ())
    info = streams_group_info(StreamsGroup("pay-streams", "NOT_READY", (STREAMS_MEMBER, other), STREAMS_SOURCES))
    assert (info.group, info.state, info.members) == ("pay-streams", "notready", 2)
    assert info.member_clients == (
        ("pay-streams-app-StreamThread-1-consumer", "/10.0.0.9"),
        ("pay-streams-app-StreamThread-2-consumer", "/10.0.0.8"),
    )
    assert info.member_assignments == (
        (
            "pay-streams-app-StreamThread-1-consumer",
            "/10.0.0.9",
            (("pay-streams-agg-repartition", 0), ("pay.orders", 0), ("pay.orders", 1)),
        ),
        ("pay-streams-app-StreamThread-2-consumer", "/10.0.0.8", ()),
    )
    empty = streams_group_info(StreamsGroup("pay-streams", "Empty", (), STREAMS_SOURCES))
    assert (empty.state, empty.members, empty.member_assignments) == ("empty", 0, ())


class CommittingAdmin(QuietAdmin):
    """``QuietAdmin`` whose groups have committed 100 on each partition of pay.orders, whose high watermark is 250
    on each; like librdkafka 2.16 it lists no streams group."""

    def cluster(self, *, timeout: float) -> ClusterState:
        return ClusterState((1,), 1, tuple(PartitionState("pay.orders", p, 1, (1,), (1,)) for p in (0, 1)))

    def committed(self, groups: list[str], *, timeout: float, group_timeout: float) -> dict[str, object]:
        self.asked.append(sorted(groups))
        return {g: {("pay.orders", 0): 100, ("pay.orders", 1): 100} for g in groups}

    def high_watermarks(self, tps: object, *, timeout: float) -> dict[object, int]:
        return {("pay.orders", 0): 250, ("pay.orders", 1): 250}


def test_a_streams_group_is_watched_as_a_consumer_group_with_its_members_from_streams_describe() -> None:
    """librdkafka lists no streams group: the kinds listing of the last round adds it to the consumer-group reads,
    so it has committed offsets and lag from the second round on, and its members, state and member lag from this
    round's StreamsGroupDescribe; the same consumer-group series and tenant as a consumer group of its prefix.
    Once its instances are gone (Empty, no member) the lag is still read and its members series says 0."""
    running = StreamsGroup("pay-streams", "Stable", (STREAMS_MEMBER,), STREAMS_SOURCES)
    gone = StreamsGroup("pay-streams", "Empty", (), STREAMS_SOURCES)
    admin = CommittingAdmin(listed=("pay-app",))
    kinds = FakeKinds(streams=[[running], [running], [gone]])
    ac = collector(kinds, admin)
    first = by_name(ac.collect_target(CLUSTER_TARGET, now=1.0))
    assert [(s["type"], s["tenant"]) for s in first["kafka_group_info"] if s["group"] == "pay-streams"] == [
        ("streams", "pay")
    ]
    assert not [s for s in first["kafka_consumergroup_lag"] if s["group"] == "pay-streams"]  # not listed yet

    second = by_name(ac.collect_target(CLUSTER_TARGET, now=16.0))
    assert admin.asked[-1] == ["pay-app", "pay-streams"]

    def of_streams(out, name):
        return [s for s in out.get(name, []) if s["group"] == "pay-streams"]

    assert [(s["topic"], s["tenant"], s["value"]) for s in of_streams(second, "kafka_consumergroup_lag")] == [
        ("pay.orders", "pay", 300.0)
    ]
    assert [s["value"] for s in of_streams(second, "kafka_consumergroup_members")] == [1.0]
    assert [s["state"] for s in of_streams(second, "kafka_consumergroup_state")] == ["stable"]
    assert [
        (s["client_id"], s["client_host"], s["topic"], s["value"])
        for s in of_streams(second, "kafka_consumergroup_member_lag")
    ] == [("pay-streams-app-StreamThread-1-consumer", "10.0.0.9", "pay.orders", 300.0)]

    third = by_name(ac.collect_target(CLUSTER_TARGET, now=31.0))
    assert [s["value"] for s in of_streams(third, "kafka_consumergroup_members")] == [0.0]
    assert [s["state"] for s in of_streams(third, "kafka_consumergroup_state")] == ["empty"]
    assert [s["value"] for s in of_streams(third, "kafka_consumergroup_lag")] == [300.0]
    assert not of_streams(third, "kafka_consumergroup_member_lag")


def test_a_streams_group_not_described_this_round_has_its_lag_and_unknown_members() -> None:
    """StreamsGroupDescribe refused (or late): the lag is still read, the members are unknown (no members series,
    never a 0 that would read as an application gone)."""
    running = StreamsGroup("pay-streams", "Stable", (STREAMS_MEMBER,), STREAMS_SOURCES)
    refused = StreamsGroup("pay-streams", "", (), (), error="GroupAuthorizationFailedError")
    ac = collector(FakeKinds(streams=[[running], [refused]]), CommittingAdmin())
    ac.collect_target(CLUSTER_TARGET, now=1.0)
    second = by_name(ac.collect_target(CLUSTER_TARGET, now=16.0))
    assert [s["value"] for s in second["kafka_consumergroup_lag"] if s["group"] == "pay-streams"] == [300.0]
    assert not [s for s in second.get("kafka_consumergroup_members", []) if s["group"] == "pay-streams"]
    assert [s["state"] for s in second["kafka_consumergroup_state"] if s["group"] == "pay-streams"] == ["stable"]


def test_a_streams_describe_answer_becomes_a_streams_group_and_a_refusal_keeps_its_error_name() -> None:
    """``streams_group`` on kafka-python's message shape (attributes by snake-case field name): the subtopologies'
    source and repartition-source topics, each member's active tasks (standby tasks are not input); a group not
    found has no topology (null) and carries the error's name."""
    ns = SimpleNamespace
    tasks = ns(
        active_tasks=[ns(subtopology_id="0", partitions=[1, 0])], standby_tasks=[ns(subtopology_id="1", partitions=[0])]
    )
    topology = ns(
        epoch=1,
        subtopologies=[
            ns(subtopology_id="0", source_topics=["pay.orders"], repartition_source_topics=[]),
            ns(
                subtopology_id="1", source_topics=[], repartition_source_topics=[ns(name="pay-streams-agg-repartition")]
            ),
        ],
    )
    member = ns(
        member_id="m1",
        client_id="c-StreamThread-1-consumer",
        client_host="/10.0.0.9",
        process_id="p1",
        assignment=tasks,
    )
    ok = streams_group(
        ns(error_code=0, group_id="pay-streams", group_state="Stable", topology=topology, members=[member])
    )
    assert ok == StreamsGroup(
        "pay-streams",
        "Stable",
        (StreamsMember("m1", "c-StreamThread-1-consumer", "/10.0.0.9", "p1", (("0", (1, 0)),)),),
        (("0", ("pay.orders",)), ("1", ("pay-streams-agg-repartition",))),
    )
    assert streams_group_info(ok).member_assignments[0][2] == (("pay.orders", 0), ("pay.orders", 1))
    gone = streams_group(ns(error_code=69, group_id="nope", group_state="Dead", topology=None, members=[]))
    assert (gone.sources, gone.members, gone.error) == ((), (), "GroupIdNotFoundError")
