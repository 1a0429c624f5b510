"""Admin API collector (confluent-kafka): brokers, controller, partition states, consumer groups and lag.

Seam: ``KafkaAdmin`` is the only code that touches confluent-kafka; it returns plain data and translates library
errors into ``TargetTimeout``/``TargetUnreachable``/``TransportError``. The rest is pure:
``cluster_samples`` (metadata and topic configs -> offline/under-replicated/under-min-ISR per topic, independent of
JMX), ``group_samples`` (committed offsets + high watermarks -> lag per group and topic) and ``lag_seconds`` (from
the history of high watermarks kept by ``WatermarkHistory``).

Partial-failure policy (after DataDog's kafka_consumer): metadata failing fails the target (nothing else can be
trusted); listing the groups failing (ListGroups goes to every broker: one that just died makes it time out) drops
only this round's group series, never the cluster state read before it (the broker-down and offline-partition
series are exactly what is needed then), and counts the groups of the last good listing as skipped; one group
whose offsets cannot be read is skipped and counted in ``kafka_health_admin_skipped_groups``;
a partition without a committed offset has no lag (it is not "zero lag"). Committed offsets are read *before* the
high watermarks, so a lag is never negative (and is clamped at 0 should a truncation happen in between).
Groups with no active members (state Empty) are included: a stopped consumer is exactly when lag matters.

Round deadline: one round has the target's timeout in all (``jmx.timeout_seconds`` of the cluster), not per call.
A dead or hanging broker would otherwise make each of the sequential calls wait its own timeout, and the cluster
state would go stale (dropped after two intervals) exactly when a broker dies. Every call gets the time left:
metadata and topic configs first, then the group listing, the committed offsets group by group, and last the
high watermarks, for which the offsets leave ``WATERMARK_RESERVE`` of the budget (without watermarks no lag can
be computed). When time runs out the round ends with what it has: the cluster state is exported, the groups not
finished (not listed, offsets not read, or no watermarks read for them) are skipped and counted like the failures
above, and the round says so in its result message and a warning. A watermark call failing is handled the same
way: it no longer fails the target, since the cluster state read before it is still good. Within the round, the
group listing and descriptions get ``GROUPS_SHARE`` of the budget and one group's offsets ``OFFSETS_CALL_SHARE``, and
groups whose offsets failed go last next round: a group on a dead coordinator cannot take the lag of all the others.

Process: in production the ``KafkaAdmin`` runs in a child process (``collectors.admin_process.IsolatedAdmin``), so a
librdkafka crash fails one round of this target instead of killing the collector; the client is replaced after a
round in which it died, hung, or met a moved or dead group coordinator (``replace_client``).
"""

from __future__ import annotations

import bisect
import concurrent.futures
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from monitor.core.config import ClusterConfig
from monitor.core.errors import KafkaHealthError, TargetTimeout, TargetUnreachable, TransportError

from collectors.catalog import TenantLookup
from collectors.outcome import failed, succeeded
from collectors.types import Sample, Target, TargetResult

log = logging.getLogger(__name__)

TP = tuple[str, int]
MIN_ISR_REFRESH_SECONDS = 300.0
# Share of the round's budget the committed-offset reads leave for the high watermarks.
WATERMARK_RESERVE = 0.2
# A call with less time than this left is not started: librdkafka counts whole milliseconds, and a call that can
# only time out would just add a library error to the log.
MIN_CALL_SECONDS = 0.05
# Calls about one consumer group: a timeout or lost connection there means its coordinator is probably dead.
GROUP_CALLS = ("describe groups", "describe group", "group offsets")
# Shares of the round budget: listing and describing the groups, and one group's committed offsets. A group whose
# coordinator is dead answers nothing; without these caps it takes the whole round and no group has a lag.
GROUPS_SHARE = 0.4
OFFSETS_CALL_SHARE = 0.25
# The round budget is at most this share of the collection interval: a round longer than the interval is still
# running when the next is due, and its result ages out (collectors.exporter) before the one after arrives.
INTERVAL_SHARE = 0.8


class RoundDeadline:
    """The time left in one collection round, on an injected monotonic clock."""

    def __init__(self, budget: float, monotonic: Callable[[], float]):
        self.budget = budget
        self._clock = monotonic
        self._start = monotonic()
        self._end = self._start + budget

    def elapsed(self) -> float:
        return self._clock() - self._start

    def remaining(self, *, reserve: float = 0.0) -> float:
        """Seconds left before the deadline, keeping ``reserve`` seconds back for a later call; never negative."""
        return max(0.0, self._end - reserve - self._clock())

    def allows(self, *, reserve: float = 0.0) -> bool:
        return self.remaining(reserve=reserve) >= MIN_CALL_SECONDS


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int  # -1 when offline
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class ClusterState:
    brokers: tuple[int, ...]
    controller_id: int
    partitions: tuple[PartitionState, ...]
    # topic -> its effective min.insync.replicas; a topic missing here has no under-min-ISR series (unknown, not 0)
    min_isr: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupInfo:
    group: str
    state: str  # lower case: stable, empty, preparingrebalance, dead, unknown, ...
    members: int | None  # None: the group could not be described (its offsets and lag are still read)
    simple: bool = False
    # (client id, client host) of each active member: the host is the address the coordinator sees, which is how
    # a slow peer found by the host collector's socket backlogs is tied to a client id.
    member_clients: tuple[tuple[str, str], ...] = ()


@dataclass
class GroupOffsets:
    group: GroupInfo
    committed: dict[TP, int] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------------------------
# Pure parts


def cluster_samples(state: ClusterState, *, base: tuple, configured: Iterable[int], tenants: TenantLookup) -> list[Sample]:
    out = [
        Sample("kafka_cluster_brokers", "gauge", "Brokers in the cluster metadata", base, float(len(state.brokers))),
        Sample("kafka_cluster_controller_id", "gauge", "Node id of the active controller (-1 if unknown)", base,
               float(state.controller_id)),
    ]
    present = set(state.brokers)
    for b in sorted(present | set(configured)):
        out.append(Sample("kafka_cluster_broker_up", "gauge", "1 if the broker is in the cluster metadata",
                          base + (("broker", str(b)),), 1.0 if b in present else 0.0))
    per_topic: dict[str, list[int]] = {}
    for p in state.partitions:
        counts = per_topic.setdefault(p.topic, [0, 0, 0, 0])
        counts[0] += 1
        counts[1] += p.leader < 0
        counts[2] += p.leader >= 0 and len(p.isr) < len(p.replicas)
        counts[3] += len(p.replicas)
    under_min_isr: dict[str, int] = {}
    for p in state.partitions:
        if p.topic in state.min_isr:
            # As Kafka's UnderMinIsrPartitionCount: a led partition whose ISR is below min.insync.replicas (acks=all
            # producers fail). A partition without a leader is counted as offline instead.
            under_min_isr[p.topic] = under_min_isr.get(p.topic, 0) + (p.leader >= 0 and
                                                                      len(p.isr) < state.min_isr[p.topic])
    for topic, (n, offline, urp, replicas) in sorted(per_topic.items()):
        labels = base + (("topic", topic), ("tenant", tenants.topic(topic)))
        if topic in under_min_isr:
            out.append(Sample("kafka_topic_under_min_isr_partitions", "gauge",
                              "Led partitions whose ISR is smaller than the topic's min.insync.replicas (metadata + "
                              "topic config)", labels, float(under_min_isr[topic])))
        out += [
            Sample("kafka_topic_partitions", "gauge", "Partitions of the topic (metadata)", labels, float(n)),
            Sample("kafka_topic_replicas", "gauge", "Replicas of the topic's partitions, summed (metadata): "
                   "replicas / partitions is the replication factor", labels, float(replicas)),
            Sample("kafka_topic_offline_partitions", "gauge", "Partitions without a leader (metadata)", labels,
                   float(offline)),
            Sample("kafka_topic_under_replicated_partitions", "gauge",
                   "Partitions whose ISR is smaller than their replica set (metadata)", labels, float(urp)),
        ]
    return out


def lag_seconds(history: Sequence[tuple[float, int]], committed: int, high_watermark: int, now: float) -> float:
    """How long ago the oldest unconsumed message was written, estimated from (time, high watermark) history.

    The message at offset ``committed`` arrived between the last sample whose watermark was <= ``committed`` and
    the next one; interpolate linearly between them. If the whole history is already past it, the answer is a lower
    bound: the age of the oldest sample.
    """
    if committed >= high_watermark or not history:
        return 0.0
    hws = [hw for _, hw in history]
    i = bisect.bisect_right(hws, committed) - 1  # last sample with hw <= committed
    if i < 0:
        return max(0.0, now - history[0][0])
    t_i, hw_i = history[i]
    if i + 1 >= len(history):
        return max(0.0, now - t_i)
    t_j, hw_j = history[i + 1]
    frac = (committed + 1 - hw_i) / max(1, hw_j - hw_i)
    return max(0.0, now - (t_i + (t_j - t_i) * min(1.0, frac)))


class WatermarkHistory:
    """Bounded (time, high watermark) samples per partition; a watermark going down (topic recreated) resets."""

    def __init__(self, max_points: int = 720):
        self._max = max_points
        self._points: dict[TP, deque[tuple[float, int]]] = {}

    def add(self, tp: TP, now: float, hw: int) -> None:
        pts = self._points.get(tp)
        if pts is None or (pts and hw < pts[-1][1]):
            pts = self._points[tp] = deque(maxlen=self._max)
        if len(pts) >= 2 and pts[-1][1] == hw and pts[-2][1] == hw:
            # A plateau keeps its first and latest point only, so history spans long idle periods without growing.
            pts[-1] = (now, hw)
        else:
            pts.append((now, hw))

    def get(self, tp: TP) -> Sequence[tuple[float, int]]:
        return tuple(self._points.get(tp, ()))


def group_samples(
    groups: Sequence[GroupOffsets], watermarks: dict[TP, int], history: WatermarkHistory, *, now: float,
    base: tuple, tenants: TenantLookup,
) -> list[Sample]:
    out: list[Sample] = []
    for g in groups:
        tenant = tenants.group(g.group.group)
        gl = base + (("group", g.group.group), ("tenant", tenant))
        if g.group.members is not None:
            out.append(Sample("kafka_consumergroup_members", "gauge", "Active members of the group", gl,
                              float(g.group.members)))
        out.append(Sample("kafka_consumergroup_state", "gauge", "1 for the group's current state",
                          base + (("group", g.group.group), ("state", g.group.state), ("tenant", tenant)), 1.0))
        for client_id, host in sorted(set(g.group.member_clients)):
            out.append(Sample("kafka_consumergroup_member_info", "gauge",
                              "1 per (client id, client host) of the group's active members", gl +
                              (("client_id", client_id), ("client_host", host.lstrip("/"))), 1.0))
        per_topic: dict[str, list[float]] = {}
        committed_sum: dict[str, float] = {}
        for (topic, part), committed in sorted(g.committed.items()):
            if committed >= 0:  # with or without a watermark this round: a missed read must not look like a rewind
                committed_sum[topic] = committed_sum.get(topic, 0.0) + committed
            hw = watermarks.get((topic, part))
            if hw is None or committed < 0:
                continue  # no commit or no watermark: lag unknown, not zero
            lag = max(0, hw - committed)
            secs = lag_seconds(history.get((topic, part)), committed, hw, now)
            acc = per_topic.setdefault(topic, [0.0, 0.0, 0.0, 0.0])
            acc[0] += lag
            acc[1] = max(acc[1], lag)
            acc[2] = max(acc[2], secs)
            acc[3] += 1
        for topic, (total, worst, secs, n) in sorted(per_topic.items()):
            tl = base + (("group", g.group.group), ("topic", topic), ("tenant", tenant))
            out += [
                Sample("kafka_consumergroup_lag", "gauge", "Messages behind the high watermark, summed over partitions",
                       tl, total),
                Sample("kafka_consumergroup_partition_lag_max", "gauge", "Largest lag of one partition", tl, worst),
                Sample("kafka_consumergroup_lag_seconds", "gauge",
                       "Estimated age of the oldest unconsumed message, worst partition", tl, secs),
                Sample("kafka_consumergroup_partitions", "gauge", "Partitions with a committed offset", tl, float(n)),
            ]
        for topic, total in sorted(committed_sum.items()):
            out.append(Sample("kafka_consumergroup_committed_offset", "gauge",
                              "Committed offsets summed over the partitions that have one (falls only on a rewind)",
                              base + (("group", g.group.group), ("topic", topic), ("tenant", tenant)), total))
    return out


# ---------------------------------------------------------------------------------------------------------------
# The seam around confluent-kafka


class KafkaAdmin:
    """Plain-data calls on confluent-kafka's AdminClient.

    Every call takes ``timeout``: the whole call, all its requests and futures together, returns or raises
    ``TargetTimeout`` within it (the collector passes what is left of its round). The constructor's ``timeout``
    only sets librdkafka's socket timeout.
    """

    def __init__(self, settings: dict[str, str], *, timeout: float):
        from confluent_kafka.admin import AdminClient

        self._timeout = timeout
        # Set when a call failed with NOT_COORDINATOR: the client's coordinator for some group is stale (librdkafka
        # 2.16 kept sending that group's ConsumerGroupDescribe and OffsetFetch to the old coordinator, round after
        # round, after the __consumer_offsets leaders moved). No offsets are asked of it (see ``committed``).
        self.stale_coordinator = False
        # Set by a stale coordinator, and by a group call that timed out or lost its connection: librdkafka 2.16 keeps
        # a dead coordinator for good (a long-lived client timed out on the group for minutes while a fresh one, 10 s
        # after the kill, found the new coordinator), so the collector builds a fresh client after the round.
        self.replace_client = False
        quiet = logging.getLogger("kafka_health.collectors.librdkafka")
        quiet.propagate = False
        quiet.addHandler(logging.NullHandler())
        self._admin = AdminClient({**settings, "logger": quiet, "socket.timeout.ms": int(timeout * 1000)})

    def _call(self, what: str, timeout: float, fn: Callable):
        from confluent_kafka import KafkaException

        try:
            return fn()
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            text = err.str() if hasattr(err, "str") else str(exc)
            if hasattr(err, "name") and err.name() not in text:  # librdkafka's text can be empty ("X: ")
                text = f"{text} [{err.name()}]"
            if hasattr(err, "name") and err.name() in ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"):
                self.stale_coordinator = self.replace_client = True
            if "timed out" in text.lower() or "timeout" in text.lower():
                self._group_call_failed(what)
                raise TargetTimeout(f"Admin API {what}: {text}") from None
            if "transport" in text.lower() or "connect" in text.lower() or "brokers are down" in text.lower():
                self._group_call_failed(what)
                raise TargetUnreachable(f"Admin API {what}: {text}") from None
            raise TransportError(f"Admin API {what}: {text}") from None
        except TimeoutError:  # concurrent.futures' result(timeout) expired
            self._group_call_failed(what)
            raise TargetTimeout(f"Admin API {what}: no answer within {timeout:g}s") from None

    def _group_call_failed(self, what: str) -> None:
        if what in GROUP_CALLS:
            self.replace_client = True

    def cluster(self, *, timeout: float) -> ClusterState:
        md = self._call("metadata", timeout, lambda: self._admin.list_topics(timeout=timeout))
        parts = tuple(
            PartitionState(t.topic, p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
            for t in md.topics.values() if t.error is None for p in t.partitions.values()
        )
        return ClusterState(tuple(sorted(md.brokers)), md.controller_id, parts)

    def min_insync_replicas(self, topics: Iterable[str], *, timeout: float) -> dict[str, int]:
        """Effective ``min.insync.replicas`` per topic (topic override or broker default). Topics whose config cannot
        be read (in time) are left out."""
        from confluent_kafka.admin import ConfigResource

        t, end = timeout, time.monotonic() + timeout
        wanted = [ConfigResource("topic", name) for name in topics]
        if not wanted:
            return {}
        futs = self._call("describe configs", t, lambda: self._admin.describe_configs(wanted, request_timeout=t))
        out = {}
        for res, fut in futs.items():
            try:
                entry = self._call("describe configs", t, lambda: fut.result(_left(end))).get("min.insync.replicas")
            except KafkaHealthError as exc:
                log.debug("topic %s: min.insync.replicas unknown: %s", res.name, exc)
                continue
            if entry is not None and entry.value is not None:
                out[res.name] = int(entry.value)
        return out

    def groups(self, *, timeout: float) -> list[GroupInfo]:
        """Every consumer group, described. Raises if the listing fails. Groups whose description fails are asked
        again in a request of their own; a group that still cannot be described is kept with the listing's state and
        unknown members (0 if the listing says empty), so its offsets and lag are still read. (librdkafka 2.16
        against Kafka 4.1 answered "ConsumerGroupDescribe: " for some classic groups of a long-lived client, round
        after round; leaving them out made their lag vanish, and the lag alert with it.)"""
        t, end = timeout, time.monotonic() + timeout
        listing = self._call("list groups", t,
                             lambda: self._admin.list_consumer_groups(request_timeout=t).result(t))
        listed = {g.group_id: g for g in listing.valid}
        if not listed:
            return []
        described: dict[str, GroupInfo] = {}
        failed: dict[str, KafkaHealthError] = {}

        def describe(ids: list[str]) -> None:
            futs = self._call("describe groups", t, lambda: self._admin.describe_consumer_groups(
                ids, request_timeout=max(MIN_CALL_SECONDS, _left(end))))
            # Waited for together: a group whose coordinator is dead must not use up the time of the others.
            concurrent.futures.wait(list(futs.values()), timeout=_left(end))
            for gid, fut in futs.items():
                try:
                    d = self._call("describe group", t, lambda: fut.result(0))
                except KafkaHealthError as exc:
                    failed[gid] = exc
                    continue
                failed.pop(gid, None)
                described[gid] = GroupInfo(gid, _state(d.state), len(d.members), bool(d.is_simple_consumer_group),
                                           tuple((m.client_id, m.host) for m in d.members))

        describe(list(listed))
        if failed and _left(end) >= MIN_CALL_SECONDS:
            describe(sorted(failed))  # once more, in a request of their own
        for gid, exc in sorted(failed.items()):
            g = listed[gid]
            state = _state(g.state)
            log.warning("group %s: not described (%s); offsets and lag read anyway, members unknown", gid, exc)
            described[gid] = GroupInfo(gid, state, 0 if state == "empty" else None,
                                       bool(getattr(g, "is_simple_consumer_group", False)))
        return [described[gid] for gid in listed if gid in described]

    def committed(self, group: str, *, timeout: float) -> dict[TP, int]:
        from confluent_kafka import ConsumerGroupTopicPartitions

        if self.stale_coordinator:
            # librdkafka (2.16 still, librdkafka#5040) dereferences a NULL consumer group when an admin OffsetFetch
            # answers NOT_COORDINATOR, and the whole process dies (SIGSEGV, seen on the latency bench): with a stale
            # coordinator known, no offsets are asked of this client; the next round's fresh client reads them.
            raise TransportError(f"Admin API group offsets of {group}: skipped, the client's group coordinator is "
                                 "stale (NOT_COORDINATOR); read next round with a fresh client")
        t = timeout
        futs = self._call("group offsets", t, lambda: self._admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=t))
        res = self._call("group offsets", t, lambda: futs[group].result(t))
        return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions if tp.error is None}

    def high_watermarks(self, tps: Iterable[TP], *, timeout: float) -> dict[TP, int]:
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        request = {TopicPartition(t, p): OffsetSpec.latest() for t, p in tps}
        if not request:
            return {}
        t, end = timeout, time.monotonic() + timeout
        futs = self._call("list offsets", t, lambda: self._admin.list_offsets(request, request_timeout=t))
        out = {}
        for tp, fut in futs.items():
            try:
                out[(tp.topic, tp.partition)] = self._call("list offsets", t, lambda: fut.result(_left(end))).offset
            except KafkaHealthError:
                continue  # e.g. an offline partition, or no answer in time: no watermark, no lag for it
        return out


def _isolated_admin(cluster: ClusterConfig):
    """The production client: a KafkaAdmin in a child process (collectors.admin_process), so a librdkafka crash
    fails one round of this target instead of killing the collector."""
    from collectors.admin_process import IsolatedAdmin

    return IsolatedAdmin(cluster.client_settings(), timeout=cluster.jmx.timeout_seconds)


def _left(end: float) -> float:
    """Seconds until ``end`` (time.monotonic): the futures of one call share its timeout instead of each getting it."""
    return max(0.0, end - time.monotonic())


def _state(state) -> str:
    name = getattr(state, "name", str(state))
    return name.lower().replace("_", "")


class AdminCollector:
    """One target per cluster: the Admin API through the bootstrap servers.

    ``clock`` (wall time) dates the min.insync.replicas refresh; ``monotonic`` times the round against its deadline
    (the cluster's ``jmx.timeout_seconds``). Both are injectable so tests can make calls "take" time.
    """

    def __init__(
        self,
        cluster: ClusterConfig,
        *,
        tenants: TenantLookup,
        max_series: int = 20000,
        admin_factory: Callable[[ClusterConfig], KafkaAdmin] | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        interval: float | None = None,
    ):
        self._cluster = cluster
        self._tenants = tenants
        self._max_series = max_series
        self._factory = admin_factory or _isolated_admin
        self._admin: KafkaAdmin | None = None
        self._history = WatermarkHistory()
        self._known_groups = 0  # groups of the last good listing: what a failed listing skips
        self._clock = clock
        self._monotonic = monotonic
        self._budget = cluster.jmx.timeout_seconds
        if interval is not None and INTERVAL_SHARE * interval < self._budget:
            self._budget = INTERVAL_SHARE * interval
            log.info("%s: Admin round budget %gs (%g of the %gs collection interval, under jmx.timeout_seconds)",
                     cluster.name, self._budget, INTERVAL_SHARE, interval)
        self._slow_groups: set[str] = set()  # groups whose offsets could not be read last round: read last
        # min.insync.replicas per topic changes rarely and costs one request per topic: read it for new topics and
        # every MIN_ISR_REFRESH_SECONDS, not every round.
        self._min_isr: dict[str, int] = {}
        self._min_isr_at = float("-inf")
        self._lock = threading.Lock()
        self._target = Target(cluster.name, "admin", "admin", address=cluster.bootstrap_servers)

    def targets(self) -> Sequence[Target]:
        return (self._target,)

    def _with_min_isr(self, admin: KafkaAdmin, state: ClusterState, deadline: RoundDeadline) -> ClusterState:
        topics = {p.topic for p in state.partitions}
        now = self._clock()
        stale = now - self._min_isr_at >= MIN_ISR_REFRESH_SECONDS
        missing = topics - set(self._min_isr)
        if (stale or missing) and not deadline.allows():
            log.warning("%s: min.insync.replicas not read: round deadline of %gs reached", self._target.key,
                        deadline.budget)
        elif stale or missing:
            try:
                fresh = admin.min_insync_replicas(sorted(topics if stale else missing), timeout=deadline.remaining())
            except KafkaHealthError as exc:  # the partition states are still good: only this series is missing
                log.warning("%s: min.insync.replicas not read: %s", self._target.key, exc)
            else:
                self._min_isr = {t: v for t, v in {**self._min_isr, **fresh}.items() if t in topics}
                if stale:
                    self._min_isr_at = now
        return ClusterState(state.brokers, state.controller_id, state.partitions,
                            {t: v for t, v in self._min_isr.items() if t in topics})

    def _read_groups(self, admin: KafkaAdmin, deadline: RoundDeadline) -> tuple[list[GroupOffsets], dict[TP, int],
                                                                                int, str]:
        """Groups with their committed offsets, the high watermarks, the groups skipped and why the round was cut
        short ("" when it was not). Never raises a KafkaHealthError: the cluster state is read already."""
        key, budget = self._target.key, deadline.budget
        if not deadline.allows():
            return [], {}, self._known_groups, (f"round deadline of {budget:g}s reached before the consumer groups "
                                                f"were listed: {self._known_groups} groups skipped")
        try:
            listed = admin.groups(timeout=min(deadline.remaining(), GROUPS_SHARE * budget))
            self._known_groups = len(listed)
        except KafkaHealthError as exc:
            log.warning("%s: consumer groups skipped this round: %s", key, exc)
            return [], {}, self._known_groups, ""
        groups: list[GroupOffsets] = []
        skipped, cut = 0, ""
        reserve = WATERMARK_RESERVE * budget
        slow, self._slow_groups = self._slow_groups, set()
        listed = sorted(listed, key=lambda g: g.group in slow)  # stable: last round's slow groups go last
        for i, info in enumerate(listed):
            if not deadline.allows(reserve=reserve):
                skipped += len(listed) - i
                self._slow_groups.update(g.group for g in listed[i:] if g.group in slow)
                cut = (f"round deadline of {budget:g}s reached: offsets of {len(groups)} of {len(listed)} consumer "
                       f"groups read, {skipped} groups skipped")
                break
            try:  # before the watermarks
                committed = admin.committed(info.group, timeout=min(deadline.remaining(reserve=reserve),
                                                                    OFFSETS_CALL_SHARE * budget))
                groups.append(GroupOffsets(info, committed))
            except KafkaHealthError as exc:
                log.warning("%s: group %s skipped: %s", key, info.group, exc)
                self._slow_groups.add(info.group)
                skipped += 1
        wanted = {tp for g in groups for tp in g.committed}
        if not wanted:
            return groups, {}, skipped, cut
        why = ""
        if not deadline.allows():
            why = f"round deadline of {budget:g}s reached before the high watermarks were read"
        else:
            try:
                return groups, admin.high_watermarks(sorted(wanted), timeout=deadline.remaining()), skipped, cut
            except KafkaHealthError as exc:
                why = f"high watermarks not read: {exc}"
        # No watermarks, no lag: a group with committed offsets is not finished this round.
        unfinished = sum(1 for g in groups if g.committed)
        why = f"{why}: {unfinished} groups whose offsets were read skipped"
        return [g for g in groups if not g.committed], {}, skipped + unfinished, f"{cut}; {why}" if cut else why

    def _drop_admin(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None and hasattr(admin, "close"):
            admin.close()

    def close(self) -> None:
        """Stop the Admin client (its process): after the round in flight, or at once if that round hangs."""
        got = self._lock.acquire(timeout=self._budget + 10)
        try:
            self._drop_admin()
        finally:
            if got:
                self._lock.release()

    def collect_target(self, target: Target, *, now: float) -> TargetResult:
        deadline = RoundDeadline(self._budget, self._monotonic)
        base = (("cluster", target.cluster),)
        try:
            with self._lock:  # one round at a time per cluster: the history is shared state
                if self._admin is None:
                    self._admin = self._factory(self._cluster)
                admin = self._admin
                # Cluster state first: it is what matters when a broker dies, and what the rest of the round keeps.
                state = admin.cluster(timeout=deadline.remaining())
                state = self._with_min_isr(admin, state, deadline)
                samples = cluster_samples(state, base=base, configured=[b.id for b in self._cluster.brokers],
                                          tenants=self._tenants)
                groups, watermarks, skipped, cut = self._read_groups(admin, deadline)
                for tp, hw in watermarks.items():
                    self._history.add(tp, now, hw)
                samples += group_samples(groups, watermarks, self._history, now=now, base=base, tenants=self._tenants)
                samples.append(Sample("kafka_health_admin_skipped_groups", "gauge",
                                      "Consumer groups whose offsets could not be read this round", base, float(skipped)))
        except KafkaHealthError as exc:
            log.warning("%s: %s", target.key, exc)
            return failed(target, exc, started_at=now, duration=deadline.elapsed())
        finally:
            with self._lock:
                if getattr(self._admin, "broken", False):
                    log.warning("%s: the Admin client process is gone; the next round starts a fresh one", target.key)
                    self._drop_admin()
                elif getattr(self._admin, "replace_client", False):
                    log.info("%s: a group coordinator moved or does not answer; the next round uses a fresh Admin "
                             "client", target.key)
                    self._drop_admin()
        result = succeeded(target, samples, started_at=now, duration=deadline.elapsed(), max_series=self._max_series)
        if cut:
            log.warning("%s: %s; cluster state exported", target.key, cut)
            result = replace(result, message=f"{cut}; cluster state exported")
        return result
