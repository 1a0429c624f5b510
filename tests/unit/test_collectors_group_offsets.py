"""Committed offsets of many groups per request (issue 33): ``KafkaOffsets.committed`` finds every group's
coordinator in one FindCoordinator v4, asks each coordinator once (OffsetFetch v8/v9 naming all its groups), all
coordinators at once, and keeps each group's answer or error its own.

The brokers are a fake ``KafkaConnectionManager`` (``send`` answers from a table, or never); the event loop, the
futures and ``wait_for`` are kafka-python's own, so the timeouts are the ones the product runs on. Nothing here
asserts on time: a coordinator that never answers is proven by what its groups and the others' come back with.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kafka.errors import UnknownBrokerIdError
from kafka.future import Future
from kafka.net.manager import KafkaConnectionManager
from kafka.net.selector import NetworkSelector

from collectors.protocol_client import KafkaOffsets, coordinator_plan, settle_coordinator
from monitor.core.errors import TargetForbidden, TargetTimeout, TargetUnreachable, TransportError

NOT_COORDINATOR, GROUP_AUTHORIZATION_FAILED, UNSTABLE_OFFSET_COMMIT = 16, 30, 88


def _row(key: str, node: int, error: int = 0) -> SimpleNamespace:
    return SimpleNamespace(key=key, node_id=node, error_code=error, error_message=None)


def _group(group: str, offsets: dict[tuple[str, int], int], error: int = 0, partition_errors=()) -> SimpleNamespace:
    topics: dict[str, list[SimpleNamespace]] = {}
    for (topic, part), offset in offsets.items():
        code = UNSTABLE_OFFSET_COMMIT if (topic, part) in partition_errors else 0
        topics.setdefault(topic, []).append(
            SimpleNamespace(partition_index=part, committed_offset=offset, error_code=code)
        )
    return SimpleNamespace(
        group_id=group, error_code=error, topics=[SimpleNamespace(name=t, partitions=ps) for t, ps in topics.items()]
    )


class FakeBrokers:
    """``KafkaConnectionManager`` as ``KafkaOffsets`` uses it. Each broker answers FindCoordinator from
    ``coordinator`` (group -> node) and OffsetFetch with each group's ``offsets``; the groups of ``moves`` move to
    their new node as the first OffsetFetch arrives (that request answers NOT_COORDINATOR for them; later lookups name
    the new node); a broker of ``dead`` never answers anything."""

    def __init__(
        self,
        coordinator: dict[str, int],
        offsets: dict[str, dict],
        *,
        dead=(),
        moves=None,
        forbidden=(),
        listing: dict[int, list[SimpleNamespace]] | None = None,
        described: dict[str, SimpleNamespace] | None = None,
    ):
        """``listing``: each broker's ListGroups rows; ``described``: each group's DescribeGroups or
        ConsumerGroupDescribe row (the coordinator answers NOT_COORDINATOR for a group it does not hold, and
        GROUP_AUTHORIZATION_FAILED for a ``forbidden`` one)."""
        self._net = NetworkSelector()
        self.listing, self.described = listing or {}, described or {}
        self.requests: list[tuple[str, int | None, list[str]]] = []  # (request class, node, groups) of the group reads
        self.coordinator, self.offsets, self.dead = dict(coordinator), offsets, set(dead)
        self.actual = {**coordinator, **(moves or {})}
        self.forbidden = set(forbidden)
        self.lookups: list[tuple[int | None, list[str]]] = []
        self.fetches: list[tuple[int | None, list[str], int | None]] = []
        self.metadata_updates = 0  # kafka-python's cluster.request_update(): asked for when a node is unknown
        self.cluster = SimpleNamespace(
            brokers=lambda: [SimpleNamespace(node_id=n) for n in (1, 2, 3)], request_update=self._request_update
        )
        self.broker_version_data = SimpleNamespace(api_versions={9: (0, 9), 10: (0, 6)})
        self.least_loaded = 1
        self.unknown: set[int] = set()

    def _request_update(self) -> None:
        self.metadata_updates += 1

    wait_for = KafkaConnectionManager.wait_for

    def run(self, coro, *args):
        return self._net.run(coro, *args)

    def least_loaded_node(self) -> int:
        return self.least_loaded

    def send(self, request: Any, node_id: int | None = None, request_timeout_ms: int | None = None) -> Future:
        if node_id in self.unknown:
            raise UnknownBrokerIdError(node_id)  # as kafka-python does for a node its metadata does not know yet
        future = Future()
        answer: Any
        kind = type(request).__name__
        if kind == "ListGroupsRequest":
            self.requests.append((kind, node_id, []))
            answer = SimpleNamespace(error_code=0, groups=self.listing.get(node_id, []))
        elif kind in ("DescribeGroupsRequest", "ConsumerGroupDescribeRequest"):
            ids = list(request.groups if kind == "DescribeGroupsRequest" else request.group_ids)
            self.requests.append((kind, node_id, ids))
            rows = []
            for g in ids:
                error = (
                    NOT_COORDINATOR if self.actual[g] != node_id else GROUP_AUTHORIZATION_FAILED * (g in self.forbidden)
                )
                rows.append(self.described[g] if not error else SimpleNamespace(group_id=g, error_code=error))
            answer = SimpleNamespace(groups=rows)
            self.coordinator = dict(self.actual)  # ``moves`` happened as this request arrived: lookups say so now
        elif hasattr(request, "coordinator_keys"):
            keys = list(request.coordinator_keys)
            self.lookups.append((node_id, keys))
            where = self.actual if self.fetches else self.coordinator
            answer = SimpleNamespace(coordinators=[_row(k, where[k]) for k in keys])
        else:
            groups = [g.group_id for g in request.groups]
            self.fetches.append((node_id, groups, request._max_version))
            rows = []
            for g in groups:
                if self.actual[g] != node_id:
                    rows.append(_group(g, {}, error=NOT_COORDINATOR))
                elif g in self.forbidden:
                    rows.append(_group(g, {}, error=GROUP_AUTHORIZATION_FAILED))
                else:
                    rows.append(_group(g, self.offsets.get(g, {})))
            answer = SimpleNamespace(groups=rows)
        if node_id not in self.dead:
            self._net.call_later(0, lambda: future.success(answer))
        return future


def _offsets(brokers: FakeBrokers) -> KafkaOffsets:
    reader = KafkaOffsets.__new__(KafkaOffsets)
    reader._principal, reader._admin = "monitor", SimpleNamespace(_manager=brokers)
    return reader


GROUPS = {f"g{i}": 1 + i % 3 for i in range(9)}  # nine groups, three on each of brokers 1-3
OFFSETS = {g: {("t", i): 10 * i} for i, g in enumerate(GROUPS)}


def test_one_lookup_and_one_offsets_request_per_coordinator_naming_all_its_groups():
    brokers = FakeBrokers(GROUPS, OFFSETS)
    answers = _offsets(brokers).committed(list(GROUPS), timeout=5.0, group_timeout=5.0)
    assert answers == OFFSETS
    # one FindCoordinator for all groups, to two brokers at once (the least loaded and one other)
    assert sorted(n for n, _ in brokers.lookups) == [1, 2]
    assert all(keys == list(GROUPS) for _, keys in brokers.lookups)
    # one OffsetFetch per coordinator, naming exactly its groups, at most v9 (v10 names topics by id only)
    assert sorted((n, sorted(gs)) for n, gs, _ in brokers.fetches) == [
        (n, sorted(g for g, c in GROUPS.items() if c == n)) for n in (1, 2, 3)
    ]
    assert {v for _, _, v in brokers.fetches} == {9}


def test_a_coordinator_that_never_answers_fails_its_own_groups_only():
    brokers = FakeBrokers(GROUPS, OFFSETS, dead={3})
    brokers.least_loaded = 3  # its lookup is lost too: the other broker's answer counts
    answers = _offsets(brokers).committed(list(GROUPS), timeout=5.0, group_timeout=1.0)
    dead = {g for g, c in GROUPS.items() if c == 3}
    assert {g for g, a in answers.items() if isinstance(a, TargetTimeout)} == dead
    assert {g: a for g, a in answers.items() if g not in dead} == {g: o for g, o in OFFSETS.items() if g not in dead}
    assert "group coordinator 3" in str(answers[sorted(dead)[0]])


def test_a_coordinator_the_client_cannot_send_to_fails_its_own_groups_only():
    brokers = FakeBrokers(GROUPS, OFFSETS)
    brokers.unknown, brokers.least_loaded = {2}, 2  # a new broker, not in the client's metadata yet
    answers = _offsets(brokers).committed(list(GROUPS), timeout=5.0, group_timeout=5.0)
    on_2 = {g for g, c in GROUPS.items() if c == 2}
    assert all(isinstance(answers[g], TransportError) for g in on_2)
    assert {g: a for g, a in answers.items() if g not in on_2} == {g: o for g, o in OFFSETS.items() if g not in on_2}
    assert brokers.metadata_updates >= 1  # and the client is told to refresh its metadata at once


def test_a_coordinator_cut_by_the_rounds_deadline_leaves_its_groups_out():
    """The round's time ran out before the group's own: not the coordinator's failure, the deadline's cut (the
    collector counts the groups left out as skipped by the deadline)."""
    brokers = FakeBrokers(GROUPS, OFFSETS, dead={2})
    answers = _offsets(brokers).committed(list(GROUPS), timeout=1.0, group_timeout=3.0)
    assert set(answers) == {g for g, c in GROUPS.items() if c != 2}
    assert all(answers[g] == OFFSETS[g] for g in answers)


def test_groups_whose_coordinator_moved_are_asked_again_after_a_fresh_lookup():
    brokers = FakeBrokers(GROUPS, OFFSETS, moves={"g0": 2, "g3": 3})
    answers = _offsets(brokers).committed(list(GROUPS), timeout=5.0, group_timeout=5.0)
    assert answers == OFFSETS
    # the second pass asks only the moved groups: one lookup (to two brokers), one request to each new coordinator
    assert [sorted(keys) for _, keys in brokers.lookups[2:]] == [["g0", "g3"], ["g0", "g3"]]
    assert sorted((n, gs) for n, gs, _ in brokers.fetches[3:]) == [(2, ["g0"]), (3, ["g3"])]


def test_a_group_the_principal_may_not_describe_fails_alone_and_names_the_acl():
    brokers = FakeBrokers(GROUPS, OFFSETS, forbidden={"g4"})
    answers = _offsets(brokers).committed(list(GROUPS), timeout=5.0, group_timeout=5.0)
    assert isinstance(answers["g4"], TargetForbidden) and "User:monitor" in str(answers["g4"])
    assert "GROUP_AUTHORIZATION_FAILED" in str(answers["g4"])  # Kafka's error name, as the librdkafka path says it
    assert {g: a for g, a in answers.items() if g != "g4"} == {g: o for g, o in OFFSETS.items() if g != "g4"}


@pytest.mark.parametrize(
    ("rows", "by_node", "failed"),
    [
        ([_row("a", 1), _row("b", 2), _row("c", 1)], {1: ["a", "c"], 2: ["b"]}, {}),
        ([_row("a", 1), _row("b", -1, 15)], {1: ["a"]}, {"b": (15, "")}),
        ([_row("a", -1)], {}, {"a": (15, "")}),  # no node and no error code: not available
    ],
)
def test_coordinator_plan_groups_by_node_and_keeps_failed_lookups(rows, by_node, failed):
    assert coordinator_plan(rows) == (by_node, failed)


def test_settle_keeps_each_groups_answer_its_own():
    import kafka.errors as ke

    answer = SimpleNamespace(
        groups=[
            _group("ok", {("t", 0): 5, ("t", 1): 7}, partition_errors={("t", 1)}),  # an unstable partition: left out
            _group("moved", {}, error=NOT_COORDINATOR),
        ]
    )
    out, again = settle_coordinator(["ok", "moved", "absent"], answer, cut_by_round=False, principal=None, node=1)
    assert out["ok"] == {("t", 0): 5}
    assert isinstance(out["moved"], TransportError) and again == ["moved"]
    assert isinstance(out["absent"], TransportError) and "left group absent out" in str(out["absent"])
    # no answer: a connection lost is said per group; a timeout is the group's unless the round's deadline came first
    out, _ = settle_coordinator(["a", "b"], ke.KafkaConnectionError("gone"), cut_by_round=False, principal=None, node=2)
    assert all(isinstance(e, TargetUnreachable) for e in out.values()) and set(out) == {"a", "b"}
    out, _ = settle_coordinator(["a"], ke.KafkaTimeoutError(), cut_by_round=False, principal=None, node=2)
    assert isinstance(out["a"], TargetTimeout)
    assert settle_coordinator(["a"], ke.KafkaTimeoutError(), cut_by_round=True, principal=None, node=2) == ({}, [])


def test_the_admin_client_reads_through_librdkafka_while_kafka_python_connects_then_batches():
    """kafka-python connects in the background from the client's start (a SASL_SSL bootstrap under load took a
    whole round when made on first use): a call made before it is ready does not wait for it."""
    import concurrent.futures

    from collectors.admin_client import KafkaAdmin

    per_group: list[str] = []

    class Librdkafka:
        def list_consumer_group_offsets(self, asked, request_timeout):
            group = asked[0].group_id
            per_group.append(group)
            done: concurrent.futures.Future = concurrent.futures.Future()
            done.set_result(
                SimpleNamespace(topic_partitions=[SimpleNamespace(topic="t", partition=0, offset=1, error=None)])
            )
            return {group: done}

    class Batched:
        def batches_groups(self) -> bool:
            return True

        def committed(self, groups, *, timeout, group_timeout):
            return {g: {("t", 0): 2} for g in groups}

    admin = KafkaAdmin.__new__(KafkaAdmin)
    admin._admin, admin._settings, admin._timeout = Librdkafka(), {"bootstrap.servers": "b:9092"}, 10.0
    admin.stale_coordinator = admin.replace_client = False
    admin._offsets_pending = concurrent.futures.Future()  # still connecting
    assert admin.committed(["a", "b"], timeout=5.0, group_timeout=2.0) == {"a": {("t", 0): 1}, "b": {("t", 0): 1}}
    assert per_group == ["a", "b"]
    admin._offsets_pending.set_result(Batched())
    assert admin.committed(["a", "b"], timeout=5.0, group_timeout=2.0) == {"a": {("t", 0): 2}, "b": {("t", 0): 2}}
    assert per_group == ["a", "b"]  # no librdkafka request any more


# Consumer groups listed and described on the same client (collectors.consumer_groups, issue 33): ListGroups to every
# broker, then per coordinator one DescribeGroups for its classic groups and one ConsumerGroupDescribe for its
# KIP-848 ones; share and streams groups are left to collectors.group_kinds, empty groups are not described.


def _listed(gid: str, type_: str, state: str, protocol: str = "consumer") -> SimpleNamespace:
    return SimpleNamespace(group_id=gid, group_type=type_, group_state=state, protocol_type=protocol)


def _classic(gid: str, state: str, members: list[tuple[str, str, list[tuple[str, int]]]]) -> SimpleNamespace:
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as A

    def blob(tps: list[tuple[str, int]]) -> bytes:
        topics: dict[str, list[int]] = {}
        for t, p in tps:
            topics.setdefault(t, []).append(p)
        parts = [A.TopicPartition(topic=t, partitions=ps) for t, ps in topics.items()]
        return A(version=0, assigned_partitions=parts, user_data=None).encode() if tps else b""

    return SimpleNamespace(
        group_id=gid,
        error_code=0,
        group_state=state,
        protocol_type="consumer",
        members=[SimpleNamespace(client_id=c, client_host=h, member_assignment=blob(tps)) for c, h, tps in members],
    )


def _modern(gid: str, state: str, members: list[tuple[str, str, list[tuple[str, int]]]]) -> SimpleNamespace:
    def assignment(tps: list[tuple[str, int]]) -> SimpleNamespace:
        topics: dict[str, list[int]] = {}
        for t, p in tps:
            topics.setdefault(t, []).append(p)
        return SimpleNamespace(
            topic_partitions=[SimpleNamespace(topic_name=t, partitions=ps) for t, ps in topics.items()]
        )

    return SimpleNamespace(
        group_id=gid,
        error_code=0,
        group_state=state,
        members=[SimpleNamespace(client_id=c, client_host=h, assignment=assignment(tps)) for c, h, tps in members],
    )


KIND_COORDINATORS = {"c1": 1, "c2": 2, "k1": 1, "k2": 3, "e1": 2, "s1": 1, "st1": 3, "simple": 3}
LISTING = {
    1: [_listed("c1", "classic", "Stable"), _listed("k1", "consumer", "Reconciling"), _listed("s1", "share", "Stable")],
    2: [_listed("c2", "classic", "PreparingRebalance"), _listed("e1", "classic", "Empty")],
    3: [
        _listed("k2", "consumer", "Stable"),
        _listed("st1", "streams", "Stable", "streams"),
        _listed("simple", "classic", "Empty", ""),
    ],
}
DESCRIBED = {
    "c1": _classic("c1", "Stable", [("app-1", "/10.0.0.1", [("t", 0), ("t", 1)]), ("app-2", "/10.0.0.2", [])]),
    "c2": _classic("c2", "PreparingRebalance", [("app-3", "/10.0.0.3", [])]),
    "k1": _modern("k1", "Reconciling", [("k-app", "/10.0.0.4", [("u", 2), ("u", 0)])]),
    "k2": _modern("k2", "Stable", []),
}


def _groups(brokers: FakeBrokers, timeout: float = 5.0) -> dict[str, Any]:
    from collectors.consumer_groups import ConsumerGroups

    brokers.broker_version_data.api_versions[69] = (0, 1)  # ConsumerGroupDescribe (Kafka 4.0+)
    return {g.group: g for g in ConsumerGroups(_offsets(brokers)).groups(timeout=timeout)}


def test_groups_listed_on_every_broker_and_described_once_per_coordinator_and_kind():
    from collectors.types import GroupInfo

    brokers = FakeBrokers(KIND_COORDINATORS, {}, listing=LISTING, described=DESCRIBED)
    got = _groups(brokers)
    assert got == {
        "c1": GroupInfo(
            "c1",
            "stable",
            2,
            False,
            (("app-1", "/10.0.0.1"), ("app-2", "/10.0.0.2")),
            (("app-1", "/10.0.0.1", (("t", 0), ("t", 1))), ("app-2", "/10.0.0.2", ())),
        ),
        "c2": GroupInfo("c2", "preparingrebalance", 1, False, (("app-3", "/10.0.0.3"),), (("app-3", "/10.0.0.3", ()),)),
        "k1": GroupInfo(
            "k1", "reconciling", 1, False, (("k-app", "/10.0.0.4"),), (("k-app", "/10.0.0.4", (("u", 0), ("u", 2))),)
        ),
        "k2": GroupInfo("k2", "stable", 0, False),
        "e1": GroupInfo("e1", "empty", 0, False),  # not described: the listing says all
        "simple": GroupInfo("simple", "empty", 0, True),  # no protocol type: offsets committed by hand
    }  # the share and streams groups are collectors.group_kinds' to read
    assert sorted(n for kind, n, _ in brokers.requests if kind == "ListGroupsRequest") == [1, 2, 3]
    describes = sorted((kind, n, sorted(ids)) for kind, n, ids in brokers.requests if kind != "ListGroupsRequest")
    assert describes == [
        ("ConsumerGroupDescribeRequest", 1, ["k1"]),
        ("ConsumerGroupDescribeRequest", 3, ["k2"]),
        ("DescribeGroupsRequest", 1, ["c1"]),
        ("DescribeGroupsRequest", 2, ["c2"]),
    ]
    assert len(brokers.lookups) == 2  # one FindCoordinator naming every group to describe, to two brokers


def test_a_coordinator_that_never_answers_leaves_its_groups_listed_with_members_unknown():
    brokers = FakeBrokers(KIND_COORDINATORS, {}, listing=LISTING, described=DESCRIBED, dead={1})
    brokers.least_loaded = 2
    got = _groups(brokers, timeout=2.0)
    # broker 1 lists nothing (its groups' coordinator is what died); broker 3's KIP-848 group is still described
    assert set(got) == {"c2", "e1", "k2", "simple"}
    assert got["c2"].members == 1 and got["k2"].members == 0


def test_a_describe_that_fails_keeps_the_group_with_the_listings_state_and_unknown_members():
    brokers = FakeBrokers(
        {**KIND_COORDINATORS, "c1": 2}, {}, listing=LISTING, described=DESCRIBED, dead={2}, forbidden={"k1"}
    )
    got = _groups(brokers, timeout=2.0)
    # c1's coordinator (2) does not answer: listed by 1, kept; k1 is refused (GROUP_AUTHORIZATION_FAILED): kept too
    assert (got["c1"].state, got["c1"].members) == ("stable", None)
    assert (got["k1"].state, got["k1"].members) == ("reconciling", None)
    assert got["k2"].members == 0  # the others are described


def test_groups_whose_coordinator_moved_are_described_after_a_fresh_lookup():
    brokers = FakeBrokers(KIND_COORDINATORS, {}, listing=LISTING, described=DESCRIBED, moves={"c1": 3, "k2": 2})
    got = _groups(brokers)
    assert got["c1"].members == 2 and got["k2"].members == 0
    again = sorted((kind, n, ids) for kind, n, ids in brokers.requests[7:])
    assert again == [("ConsumerGroupDescribeRequest", 2, ["k2"]), ("DescribeGroupsRequest", 3, ["c1"])]


def test_a_listing_no_broker_answers_fails_the_call():
    brokers = FakeBrokers(KIND_COORDINATORS, {}, listing=LISTING, described=DESCRIBED, dead={1, 2, 3})
    with pytest.raises(TargetTimeout, match="no broker answered"):
        _groups(brokers, timeout=1.0)


@pytest.mark.parametrize(
    ("name", "state"),
    [
        ("Stable", "stable"),
        ("PreparingRebalance", "preparingrebalance"),
        ("PREPARING_REBALANCING", "preparingrebalance"),  # librdkafka's enum name: the same label on either path
        ("COMPLETING_REBALANCING", "completingrebalance"),
        ("CompletingRebalance", "completingrebalance"),
        ("Assigning", "assigning"),
        ("Empty", "empty"),
        ("NOT_READY", "notready"),
    ],
)
def test_group_state_is_kafkas_name_whichever_client_read_it(name, state):
    from collectors.consumer_groups import group_state

    assert group_state(name) == state


def test_librdkafkas_fallback_writes_the_states_the_advisor_reads():
    """librdkafka's enum said ``preparingrebalancing``, which neither docs/metrics.md nor the advisor's rebalance
    rule (REBALANCING_STATES) matched: a group rebalancing through the fallback path was never seen rebalancing."""
    import re

    from confluent_kafka import ConsumerGroupState

    from collectors.admin_client import _state
    from monitor.advisor.source import REBALANCING_STATES

    for state in (ConsumerGroupState.PREPARING_REBALANCING, ConsumerGroupState.COMPLETING_REBALANCING):
        assert re.fullmatch(REBALANCING_STATES, _state(state)), _state(state)
    assert _state(ConsumerGroupState.STABLE) == "stable" and _state(ConsumerGroupState.EMPTY) == "empty"


def test_consumer_group_describe_schema_round_trips_through_kafka_python():
    """The shipped ConsumerGroupDescribe v0 schema (collectors/kafka_messages) encodes and decodes a response as
    kafka-python's message classes do, and its members' assignments come out by topic name."""
    import uuid

    from collectors.consumer_groups import consumer_group_info
    from collectors.group_kinds import group_messages
    from collectors.types import GroupInfo

    messages = group_messages()
    request = messages.consumer_describe_req(group_ids=["k1"], include_authorized_operations=False, max_version=0)
    assert request.API_KEY == 69
    [resp] = [r for r in messages.responses if r.__name__ == "ConsumerGroupDescribeResponse"]
    member, assignment = resp.DescribedGroup.Member, resp.DescribedGroup.Member.Assignment
    tps = assignment.TopicPartitions(topic_id=uuid.uuid4(), topic_name="orders", partitions=[2, 0])
    row = resp.DescribedGroup(
        error_code=0,
        error_message=None,
        group_id="k1",
        group_state="Assigning",
        group_epoch=5,
        assignment_epoch=4,
        assignor_name="uniform",
        members=[
            member(
                member_id="m1",
                instance_id=None,
                rack_id=None,
                member_epoch=3,
                client_id="app",
                client_host="/10.0.0.1",
                subscribed_topic_names=["orders"],
                subscribed_topic_regex=None,
                assignment=assignment(topic_partitions=[tps]),
                target_assignment=assignment(topic_partitions=[]),
            )
        ],
        authorized_operations=-2147483648,
    )
    decoded = resp.decode(resp(throttle_time_ms=0, groups=[row]).encode(version=0), version=0)
    assert consumer_group_info(decoded.groups[0]) == GroupInfo(
        "k1", "assigning", 1, False, (("app", "/10.0.0.1"),), (("app", "/10.0.0.1", (("orders", 0), ("orders", 2))),)
    )


def test_a_request_queued_behind_a_connection_being_set_up_still_ends_at_its_deadline():
    """kafka-python applies a request's timeout once it is on the wire; a request to a frozen broker whose first
    connection timed out waits behind the new connection's set-up, the client's whole timeout (10 s on the 4.4 stack
    for a request given 4.5 s). ``answers_until`` ends every wait at the caller's deadline: on kafka-python's own
    event loop, a request that never gets an answer comes back as a timeout 200 ms on, a late answer changes nothing,
    and the answered request beside it is read."""
    import time

    import kafka.errors as ke

    from collectors.protocol_client import answers_until

    net = NetworkSelector()
    manager = KafkaConnectionManager.__new__(KafkaConnectionManager)  # only its event loop and wait_for are used
    manager._net = net
    never, answered = Future(), Future().success("answer")

    async def ask():
        return await answers_until(manager, [never, answered], time.monotonic() + 0.2)

    started = time.monotonic()
    got = net.run(ask)  # without the deadline this never returns: ``never`` is never answered
    assert time.monotonic() - started < 2
    assert isinstance(got[0], ke.KafkaTimeoutError) and got[1] == "answer"
    never.success("late")  # the answer after the deadline: ignored, nothing raised
    net.close()
