"""Every kind of group through one listing, share groups (KIP-932) and streams groups (KIP-1071) described: issue 29.

``ListGroups`` v5 (KIP-848, Kafka 4.0+) answers each group's type: ``classic``, ``consumer``, ``share`` or
``streams`` (KIP-1071). ``GroupKinds.list_groups`` returns them as ``Group`` rows, so a share or streams group is
shown as what it is, never as a consumer group with zero members (kafka_exporter #533, KMinion #294).

Share groups have no committed offsets: each share-partition has a start offset (records below it are acknowledged)
and, from Kafka 4.2 (DescribeShareGroupOffsets v1, KIP-1226), a lag the broker computes (records at or above the start
offset not yet acknowledged). confluent-kafka 2.16 sends neither ShareGroupDescribe (API 77) nor
DescribeShareGroupOffsets (API 90), and kafka-python 3.0.12 defines neither, but it builds a message class from
Kafka's own JSON schema: the two schemas ship in ``collectors.kafka_messages`` and the requests go through the same
pure-Python kafka-python client as ``collectors.protocol_client`` (no JVM, no child process): one describe of a
share group took 6-102 ms on the 4.4 test stack under load. A Java Admin child (``Admin.listShareGroupOffsets``) was
the other path: a JVM of kafka-clients holds about 130 MB resident (a 64 MB-heap share consumer: 132,720 KB), and
``kafka-share-groups --describe`` took 2.2 s wall, mostly JVM start, for the same answer.

Kafka 3.9 refuses API 77: ``share_supported`` is then False and share groups are said absent, not failed. Kafka
4.1.1 offers ShareGroupDescribe v1 but has no share group unless ``share.version`` is enabled: ListGroups lists none
and nothing is described (both checked by tests/integration/test_kafka_versions.py on each release).

Streams groups (Kafka Streams 4.1+ with ``group.protocol=streams``; brokers offer them by default from 4.2) commit
through OffsetCommit like consumer groups, and OffsetFetch answers for them: the collector reads their committed
offsets and lag on the consumer-group path (``collectors.admin``). What that path cannot read is who the members are:
librdkafka describes consumer groups only. ``describe_streams_groups`` sends StreamsGroupDescribe (API 89, v0; its
schema, generated from kafka-clients 4.4.0, ships in ``collectors.kafka_messages``) and ``streams_group_info`` turns
the answer into the ``GroupInfo`` of a consumer group: state, members, and each member's partitions, which are its
active tasks' partitions of the source topics of their subtopology (a task ``1_0`` reads partition 0 of every source
and repartition topic of subtopology 1). Standby and warm-up tasks read changelogs, not input: they are no part of the
lag. The topology itself, the task offsets the members report and the state stores are not exported.

``share_status`` is pure: consuming, stalled (members, records waiting, start offsets not moving between two
samples), idle (no records waiting) or ``no_members`` (records waiting and nobody to take them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import collectors.kafka_messages as _schemas
from collectors.protocol_client import answers_until, api_max, ms_until, protocol_settings, send_to_node, translate
from collectors.types import GroupInfo, Sample
from monitor.core.errors import KafkaHealthError, TargetAuthFailed, TargetForbidden

log = logging.getLogger(__name__)

SHARE_DESCRIBE_API = 77
SHARE_OFFSETS_API = 90
STREAMS_DESCRIBE_API = 89
STATUSES = ("consuming", "stalled", "idle", "no_members")


@dataclass(frozen=True)
class Group:
    """One row of ListGroups: ``type`` is classic, consumer, share or streams (``classic`` below v5)."""

    id: str
    type: str
    state: str
    protocol_type: str = ""


@dataclass(frozen=True)
class ShareMember:
    member_id: str
    client_id: str
    host: str
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class SharePartition:
    topic: str
    partition: int
    start_offset: int  # -1: the share-partition is not initialised (nothing consumed yet)
    lag: int | None  # None where the broker does not compute it (DescribeShareGroupOffsets v0)


@dataclass(frozen=True)
class ShareGroup:
    id: str
    state: str
    members: tuple[ShareMember, ...]
    partitions: tuple[SharePartition, ...] = ()
    error: str = ""
    unanswered: bool = False  # its coordinator did not answer the describe (``error`` says why)

    @property
    def lag(self) -> int:
        return sum(p.lag or 0 for p in self.partitions)

    def topics(self) -> tuple[str, ...]:
        return tuple(sorted({p.topic for p in self.partitions} | {t for m in self.members for t, _ in m.partitions}))


@dataclass(frozen=True)
class StreamsMember:
    member_id: str
    client_id: str
    host: str
    process_id: str
    active_tasks: tuple[tuple[str, tuple[int, ...]], ...]  # (subtopology id, partitions) of its active tasks


@dataclass(frozen=True)
class StreamsGroup:
    """One streams group as StreamsGroupDescribe answers it. ``sources``: each subtopology's input topics (source and
    repartition source topics), which its tasks' partitions are partitions of."""

    id: str
    state: str
    members: tuple[StreamsMember, ...]
    sources: tuple[tuple[str, tuple[str, ...]], ...] = ()
    error: str = ""


def streams_group_info(group: StreamsGroup) -> GroupInfo:
    """The consumer-group view of a streams group: its state as the collector writes states (lower case, no
    underscores: ``stable``, ``empty``, ``notready``, ``assigning``, ``reconciling``), its members, and each member's
    input partitions (its active tasks' partitions of their subtopology's source topics)."""
    sources = dict(group.sources)
    return GroupInfo(
        group.id,
        group.state.lower().replace("_", ""),
        len(group.members),
        False,
        tuple((m.client_id, m.host) for m in group.members),
        tuple(
            (
                m.client_id,
                m.host,
                tuple(
                    sorted((topic, p) for sub, parts in m.active_tasks for topic in sources.get(sub, ()) for p in parts)
                ),
            )
            for m in group.members
        ),
    )


@dataclass(frozen=True)
class GroupListing:
    """One listing of the cluster's groups (ListGroups to every broker at once): the groups of the brokers that
    answered, and of each broker that did not, why. ``lost_shares``: the share groups those brokers listed the last
    time they answered; their series are missing this round as a described group's whose coordinator did not answer
    (``ShareGroup.unanswered``), not dropped as deleted."""

    groups: tuple[Group, ...]
    unlisted: tuple[str, ...] = ()
    brokers: int = 0
    lost_shares: tuple[str, ...] = ()

    def note(self) -> str:
        """What the round says of the brokers that did not list their groups ("" when every one did): a count and
        the first one's error; never group ids (the round's message is the operator's)."""
        if not self.unlisted:
            return ""
        return (
            f"groups of {len(self.unlisted)} of {self.brokers} brokers not listed, no series of theirs this round: "
            f"{self.unlisted[0]}"
        )


def unanswered_note(shares: Iterable[ShareGroup]) -> str:
    """What the round says of share groups whose coordinator did not answer ("" when every one answered): how many
    of how many, and the first coordinator's error. Counts, never group ids: the round's message is the operator's,
    across tenants. A group a broker refused by name (deleted since it was listed) is not counted."""
    shares = list(shares)
    lost = [g for g in shares if g.unanswered]
    if not lost:
        return ""
    return f"{len(lost)} of {len(shares)} share groups not described, no series of theirs this round: {lost[0].error}"


def share_status(now: ShareGroup, before: ShareGroup | None) -> str:
    """consuming / stalled / idle / no_members for ``now``, with ``before`` the previous sample of the same group.

    Records waiting (lag > 0) and no member: ``no_members``. Members, records waiting and no start offset advanced
    since ``before`` (same partitions, none moved): ``stalled``; a first sample cannot say stalled. No records
    waiting: ``idle``. Otherwise ``consuming``."""
    if now.lag <= 0:
        return "idle"
    if not now.members:
        return "no_members"
    if before is None:
        return "consuming"
    prev = {(p.topic, p.partition): p.start_offset for p in before.partitions}
    moved = any(p.start_offset != prev.get((p.topic, p.partition)) for p in now.partitions if p.lag)
    return "consuming" if moved else "stalled"


class Owners(Protocol):
    """Who owns a group or a topic on one cluster, "" for nobody (``collectors.catalog.TenantLookup``)."""

    def group(self, group: str) -> str: ...

    def topic(self, topic: str) -> str: ...


def share_tenant(owners: Owners, group: ShareGroup) -> str | None:
    """The tenant of a share group: its group prefix, else the owner of the topics it reads (one owner only).
    ShareGroupDescribe names no principal, so a principal selector cannot attribute a share group."""
    owner = owners.group(group.id)
    if owner:
        return owner
    found = {owners.topic(t) for t in group.topics()} - {""}
    return found.pop() if len(found) == 1 else None


class GroupKindsApi(Protocol):
    """What ``collectors.admin.AdminCollector`` asks of one cluster's group listing (``GroupKinds``, or a test's
    fake). Implementers raise only ``KafkaHealthError``s and finish each call within ``within`` seconds (the time
    left in the collector's round; None: the timeout they were built with): a request that outlived the round would
    lose the answers of every broker that did answer."""

    @property
    def share_supported(self) -> bool: ...

    def list_groups(self, *, within: float | None = None) -> GroupListing: ...

    def describe_share_groups(self, group_ids: Iterable[str], *, within: float | None = None) -> list[ShareGroup]: ...

    @property
    def streams_supported(self) -> bool: ...

    def describe_streams_groups(
        self, group_ids: Iterable[str], *, within: float | None = None
    ) -> list[StreamsGroup]: ...

    def close(self) -> None: ...


class ShareGroupSeries:
    """The series of one cluster's groups (docs/metrics.md, "Share and streams groups"). Keeps each share group's
    previous sample, which ``share_status`` needs to tell stalled from consuming."""

    def __init__(self) -> None:
        self._before: dict[str, ShareGroup] = {}

    def samples(
        self,
        groups: Iterable[Group],
        shares: Iterable[ShareGroup],
        *,
        base: tuple[tuple[str, str], ...],
        tenant: Callable[[ShareGroup], str | None],
        group_tenant: Callable[[str], str | None],
    ) -> list[Sample]:
        out = [
            Sample(
                "kafka_group_info",
                "gauge",
                "1 per group, by its type (classic, consumer, share, streams)",
                base
                + (("group", g.id), ("type", g.type), ("state", g.state.lower()), ("tenant", group_tenant(g.id) or "")),
                1.0,
            )
            for g in groups
        ]
        now: dict[str, ShareGroup] = {}
        for g in shares:
            if g.error:
                if g.id in self._before:  # not described this round: its last sample stays the one to compare with
                    now[g.id] = self._before[g.id]
                continue
            now[g.id] = g
            labels = base + (("group", g.id), ("tenant", tenant(g) or ""))
            out.append(
                Sample("kafka_sharegroup_members", "gauge", "members of the share group", labels, float(len(g.members)))
            )
            out.append(
                Sample(
                    "kafka_sharegroup_status",
                    "gauge",
                    "1 for the share group's status: consuming, stalled, idle, no_members",
                    labels + (("status", share_status(g, self._before.get(g.id))),),
                    1.0,
                )
            )
            per_client: dict[tuple[str, str], int] = {}
            for m in g.members:
                key = (m.client_id, m.host)
                per_client[key] = per_client.get(key, 0) + len(m.partitions)
            for (client_id, host), n in sorted(per_client.items()):
                out.append(
                    Sample(
                        "kafka_sharegroup_member_partitions",
                        "gauge",
                        "share-partitions assigned to the group's members of this client id and host",
                        labels[:-1] + (("client_id", client_id), ("client_host", host)) + labels[-1:],
                        float(n),
                    )
                )
            for topic in sorted({p.topic for p in g.partitions}):
                parts = [p for p in g.partitions if p.topic == topic]
                t_labels = labels[:-1] + (("topic", topic),) + labels[-1:]
                known = [p.lag for p in parts if p.lag is not None]
                if known:
                    out.append(
                        Sample(
                            "kafka_sharegroup_lag",
                            "gauge",
                            "records of the topic from the share-partition start offsets on, not yet "
                            "acknowledged (the broker's lag, KIP-1226)",
                            t_labels,
                            float(sum(known)),
                        )
                    )
                started = [p.start_offset for p in parts if p.start_offset >= 0]
                if started:
                    out.append(
                        Sample(
                            "kafka_sharegroup_start_offset",
                            "gauge",
                            "sum of the topic's share-partition start offsets (below: acknowledged)",
                            t_labels,
                            float(sum(started)),
                        )
                    )
        self._before = now
        return out


@dataclass
class _Messages:
    describe_req: Any = None
    offsets_req: Any = None
    streams_req: Any = None
    consumer_describe_req: Any = None  # ConsumerGroupDescribe (API 69): collectors.consumer_groups
    responses: tuple[Any, ...] = ()  # kafka-python registers response classes by weak reference: kept alive here
    loaded: bool = field(default=False)


_MESSAGES = _Messages()


def group_messages() -> _Messages:
    """The request classes of the groups APIs kafka-python lacks (share, streams, KIP-848 consumer describe), built once
    from Kafka's schemas (collectors.kafka_messages; kafka-python registers the response classes)."""
    if not _MESSAGES.loaded:
        from kafka.protocol.api_message import ApiMessage

        class ShareGroupDescribeRequest(ApiMessage, load_json=_schemas):
            pass

        class ShareGroupDescribeResponse(ApiMessage, load_json=_schemas):
            pass

        class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=_schemas):
            pass

        class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=_schemas):
            pass

        class StreamsGroupDescribeRequest(ApiMessage, load_json=_schemas):
            pass

        class StreamsGroupDescribeResponse(ApiMessage, load_json=_schemas):
            pass

        class ConsumerGroupDescribeRequest(ApiMessage, load_json=_schemas):
            pass

        class ConsumerGroupDescribeResponse(ApiMessage, load_json=_schemas):
            pass

        _MESSAGES.describe_req, _MESSAGES.offsets_req = ShareGroupDescribeRequest, DescribeShareGroupOffsetsRequest
        _MESSAGES.streams_req = StreamsGroupDescribeRequest
        _MESSAGES.consumer_describe_req = ConsumerGroupDescribeRequest
        _MESSAGES.responses = (
            ShareGroupDescribeResponse,
            DescribeShareGroupOffsetsResponse,
            StreamsGroupDescribeResponse,
            ConsumerGroupDescribeResponse,
        )
        _MESSAGES.loaded = True
    return _MESSAGES


def _until(within: float | None) -> float | None:
    """The deadline (time.monotonic) of a call that must end within ``within`` seconds (None: the client's own
    timeouts)."""
    return None if within is None else time.monotonic() + within


def _get(obj: Any, name: str) -> Any:
    return getattr(obj, name)


class GroupKinds:
    """ListGroups with types, ShareGroupDescribe, DescribeShareGroupOffsets and StreamsGroupDescribe of one cluster
    (kafka-python)."""

    def __init__(self, settings: dict[str, str], *, timeout: float):
        from kafka.admin import KafkaAdminClient

        self._principal = settings.get("sasl.username")
        self._shares_listed_by: dict[int, frozenset[str]] = {}  # each broker's share groups, as it last listed them
        args = protocol_settings(settings, timeout=timeout) | {"client_id": "kafka-health-groups"}
        try:
            self._admin = KafkaAdminClient(**args)
        except Exception as exc:  # the library's errors, translated at the seam
            raise translate("connect", exc, self._principal) from exc

    def _api_max(self, api_key: int) -> int:
        return api_max(self._admin._manager, api_key)

    @property
    def share_supported(self) -> bool:
        """The cluster answers ShareGroupDescribe v1 (stable KIP-932: Kafka 4.1+ with share.version, 4.2+ default)."""
        return self._api_max(SHARE_DESCRIBE_API) >= 1

    def list_groups(self, *, within: float | None = None) -> GroupListing:
        """Every group of every broker with its type (ListGroups v5; below it every group reads ``classic``). Every
        broker is asked at once: one that fails or does not answer within ``within`` seconds costs its own groups
        (``GroupListing.unlisted``), not the listing of the cluster. Raises when none answers, or when the monitoring
        principal itself is refused (authentication, ACL)."""
        try:
            answers = self._admin._manager.run(self._list_each, _until(within))
        except Exception as exc:
            raise translate("list groups", exc, self._principal) from exc
        groups: list[Group] = []
        unlisted: list[str] = []
        lost: set[str] = set()
        for node, rows in answers:
            if isinstance(rows, Exception):
                err = translate(f"list groups at broker {node}", rows, self._principal)
                if isinstance(err, (TargetAuthFailed, TargetForbidden)) or len(answers) == 1:
                    raise err
                unlisted.append(str(err))
                lost.update(self._shares_listed_by.get(node, ()))
                self._forget_coordinators(self._shares_listed_by.get(node, ()))  # they move when it is fenced
                continue
            listed = [
                Group(
                    str(r["group_id"]),
                    str(r.get("group_type") or "classic").lower(),
                    str(r.get("group_state") or ""),
                    str(r.get("protocol_type") or ""),
                )
                for r in rows
            ]
            self._shares_listed_by[node] = frozenset(g.id for g in listed if g.type == "share")
            groups.extend(listed)
        if answers and len(unlisted) == len(answers):
            raise KafkaHealthError(f"list groups: no broker answered: {unlisted[0]}")
        return GroupListing(
            tuple(sorted(groups, key=lambda g: g.id)),
            tuple(unlisted),
            len(answers),
            tuple(sorted(lost - {g.id for g in groups})),
        )

    async def _list_each(self, until: float | None) -> list[tuple[int, Any]]:
        """(broker, its ListGroups rows or the exception it failed with) of every broker the metadata knows."""
        manager = self._admin._manager
        nodes = sorted(b.node_id for b in manager.cluster.brokers())
        sent = [
            send_to_node(manager, self._admin._list_groups_request(), node_id=node, request_timeout_ms=ms_until(until))
            for node in nodes
        ]
        out: list[tuple[int, Any]] = []
        for node, answer in zip(nodes, await answers_until(manager, sent, until), strict=True):
            try:
                out.append(
                    (
                        node,
                        answer if isinstance(answer, Exception) else self._admin._list_groups_process_response(answer),
                    )
                )
            except Exception as exc:  # noqa: BLE001 - this broker's groups are unlisted, the others' are read
                out.append((node, exc))
        return out

    async def _ask(
        self, ids: list[str], offsets_version: int, until: float | None
    ) -> list[tuple[int, list[str], Any, Any]]:
        """(coordinator, its groups, offsets answer, describe answer) of each coordinator of ``ids``, in one run of
        kafka-python's event loop, as its own admin calls do. Every coordinator is asked before any answer is awaited,
        so a hung one costs its own request timeout, not one per coordinator queued behind it; a coordinator that
        fails comes back as (node, groups, the exception, None)."""
        msgs = group_messages()
        manager = self._admin._manager
        asked = [
            (
                node,
                groups,
                send_to_node(
                    manager,
                    msgs.offsets_req(
                        groups=[
                            msgs.offsets_req.DescribeShareGroupOffsetsRequestGroup(group_id=g, topics=None)
                            for g in groups
                        ],
                        max_version=offsets_version,
                    ),
                    node_id=node,
                    request_timeout_ms=ms_until(until),
                ),
                send_to_node(
                    manager,
                    msgs.describe_req(group_ids=groups, include_authorized_operations=False, max_version=1),
                    node_id=node,
                    request_timeout_ms=ms_until(until),
                ),
            )
            for node, groups in await self._by_coordinator(ids)
        ]
        out: list[tuple[int, list[str], Any, Any]] = []
        for node, groups, *sent in asked:  # all in flight already: each wait ends at the same deadline
            offsets, desc = await answers_until(manager, sent, until)
            failed = next((a for a in (offsets, desc) if isinstance(a, Exception)), None)
            # a coordinator that failed either costs its groups, the others are described
            out.append((node, groups, failed, None) if failed is not None else (node, groups, offsets, desc))
        return out

    def describe_share_groups(self, group_ids: Iterable[str], *, within: float | None = None) -> list[ShareGroup]:
        """Members, assignments and per-partition start offset and lag of each share group; a group the broker
        refuses carries its error name, one whose coordinator did not answer is ``unanswered`` and says why. Empty
        where the cluster has no share groups (``share_supported``)."""
        import kafka.errors as ke

        ids = sorted(set(group_ids))
        if not ids or not self.share_supported:
            return []
        out: list[ShareGroup] = []
        try:
            answers = self._admin._manager.run(self._ask, ids, min(1, self._api_max(SHARE_OFFSETS_API)), _until(within))
        except Exception as exc:
            raise translate("describe share groups", exc, self._principal) from exc
        try:
            for node, groups, offsets, desc in answers:
                if isinstance(offsets, Exception):
                    out.extend(self._coordinator_failed(node, groups, offsets))
                    continue
                parts: dict[str, list[SharePartition]] = {}
                errors: dict[str, str] = {}
                for g in _get(offsets, "groups"):
                    err = ke.for_code(_get(g, "error_code"))
                    if err is not ke.NoError:
                        errors[_get(g, "group_id")] = err.__name__
                    for t in _get(g, "topics"):
                        for p in _get(t, "partitions"):
                            lag = getattr(p, "lag", -1)  # v0 has none
                            parts.setdefault(_get(g, "group_id"), []).append(
                                SharePartition(
                                    str(_get(t, "topic_name")),
                                    int(_get(p, "partition_index")),
                                    int(_get(p, "start_offset")),
                                    int(lag) if lag is not None and lag >= 0 else None,
                                )
                            )
                for g in _get(desc, "groups"):
                    gid = str(_get(g, "group_id"))
                    err = ke.for_code(_get(g, "error_code"))
                    members = tuple(
                        ShareMember(
                            str(_get(m, "member_id")),
                            str(_get(m, "client_id")),
                            str(_get(m, "client_host")),
                            tuple(
                                sorted(
                                    (str(_get(tp, "topic_name")), int(p))
                                    for tp in _get(_get(m, "assignment"), "topic_partitions")
                                    for p in _get(tp, "partitions")
                                )
                            ),
                        )
                        for m in _get(g, "members")
                    )
                    out.append(
                        ShareGroup(
                            gid,
                            str(_get(g, "group_state")),
                            members,
                            tuple(sorted(parts.get(gid, ()), key=lambda p: (p.topic, p.partition))),
                            errors.get(gid, "") if err is ke.NoError else err.__name__,
                        )
                    )
        except KafkaHealthError:
            raise
        except Exception as exc:
            raise translate("describe share groups", exc, self._principal) from exc
        return sorted(out, key=lambda g: g.id)

    def _coordinator_failed(self, node: int, groups: list[str], exc: Exception) -> list[ShareGroup]:
        """The share groups of a coordinator that did not answer, ``unanswered`` and carrying why: one
        broker down or hung costs its own groups this round, not every share group of the cluster. A refusal of the
        monitoring principal itself (authentication, ACL) is the cluster's, and raised."""
        err = translate(f"describe share groups at coordinator {node}", exc, self._principal)
        if isinstance(err, (TargetAuthFailed, TargetForbidden)):
            raise err
        self._forget_coordinators(groups)
        return [ShareGroup(g, "", (), (), str(err), unanswered=True) for g in groups]

    def _forget_coordinators(self, groups: Iterable[str]) -> None:
        """Drop kafka-python's cached coordinator of ``groups``: the next describe asks FindCoordinator again. A
        frozen broker is fenced and its coordinator partitions move to the others within seconds; with the cache
        kept, every later round asked the frozen broker again and lost its groups until the client was rebuilt
        (measured on the 4.4 stack: rounds 2 and 3 after a freeze each waited 10 s at the old coordinator)."""
        from kafka.protocol.metadata import CoordinatorType

        cached = self._admin._manager.cluster._coordinators
        for g in groups:
            cached.pop((CoordinatorType.GROUP, g), None)

    @property
    def streams_supported(self) -> bool:
        """The cluster answers StreamsGroupDescribe (KIP-1071: Kafka 4.1+, on by default from 4.2)."""
        return self._api_max(STREAMS_DESCRIBE_API) >= 0

    async def _ask_streams(self, ids: list[str], until: float | None) -> list[Any]:
        """The StreamsGroupDescribe answer of each coordinator of ``ids``; raises the first failure."""
        msgs = group_messages()
        manager = self._admin._manager
        sent = [
            send_to_node(
                manager,
                msgs.streams_req(group_ids=groups, include_authorized_operations=False, max_version=0),
                node_id=node,
                request_timeout_ms=ms_until(until),
            )
            for node, groups in await self._by_coordinator(ids)
        ]
        answers = await answers_until(manager, sent, until)
        failed = next((a for a in answers if isinstance(a, Exception)), None)
        if failed is not None:
            raise failed
        return answers

    async def _by_coordinator(self, ids: list[str]) -> list[tuple[int, list[str]]]:
        """``ids`` grouped by their coordinator (one batched FindCoordinator), in node order: every describe asks each
        coordinator once for all its groups."""
        found = await self._admin._find_coordinator_ids(ids)
        by_node: dict[int, list[str]] = {}
        for g in ids:
            by_node.setdefault(int(found[g]), []).append(g)
        return sorted(by_node.items())

    def describe_streams_groups(self, group_ids: Iterable[str], *, within: float | None = None) -> list[StreamsGroup]:
        """Members, their active tasks and the subtopologies' input topics of each streams group; a group the
        broker refuses carries its error name. Empty where the cluster has no streams groups (``streams_supported``)."""
        ids = sorted(set(group_ids))
        if not ids or not self.streams_supported:
            return []
        try:
            answers = self._admin._manager.run(self._ask_streams, ids, _until(within))
            out = [streams_group(g) for desc in answers for g in _get(desc, "groups")]
        except Exception as exc:
            raise translate("describe streams groups", exc, self._principal) from exc
        return sorted(out, key=lambda g: g.id)

    def close(self) -> None:
        try:
            self._admin.close()
        except Exception:  # closing a broken client must not fail the collector's shutdown
            log.debug("closing the groups client failed", exc_info=True)


def streams_group(g: Any) -> StreamsGroup:
    """One group of a StreamsGroupDescribe answer (kafka-python's message object) as a ``StreamsGroup``."""
    import kafka.errors as ke

    err = ke.for_code(_get(g, "error_code"))
    topology = _get(g, "topology")
    subtopologies = (_get(topology, "subtopologies") or []) if topology is not None else []
    sources = tuple(
        (
            str(_get(s, "subtopology_id")),
            tuple(
                sorted(
                    {str(t) for t in _get(s, "source_topics")}
                    | {str(_get(t, "name")) for t in _get(s, "repartition_source_topics")}
                )
            ),
        )
        for s in subtopologies
    )
    members = tuple(
        StreamsMember(
            str(_get(m, "member_id")),
            str(_get(m, "client_id")),
            str(_get(m, "client_host")),
            str(_get(m, "process_id")),
            tuple(
                (str(_get(t, "subtopology_id")), tuple(int(p) for p in _get(t, "partitions")))
                for t in _get(_get(m, "assignment"), "active_tasks")
            ),
        )
        for m in _get(g, "members")
    )
    return StreamsGroup(
        str(_get(g, "group_id")),
        str(_get(g, "group_state")),
        members,
        sources,
        "" if err is ke.NoError else err.__name__,
    )
