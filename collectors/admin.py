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
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from monitor.config import ClusterConfig
from monitor.errors import KafkaHealthError, TargetTimeout, TargetUnreachable, TransportError

from collectors.catalog import TenantLookup
from collectors.outcome import failed, succeeded
from collectors.types import Sample, Target, TargetResult

log = logging.getLogger(__name__)

TP = tuple[str, int]
MIN_ISR_REFRESH_SECONDS = 300.0


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
    members: int
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
        out.append(Sample("kafka_consumergroup_members", "gauge", "Active members of the group", gl,
                          float(g.group.members)))
        out.append(Sample("kafka_consumergroup_state", "gauge", "1 for the group's current state",
                          base + (("group", g.group.group), ("state", g.group.state), ("tenant", tenant)), 1.0))
        for client_id, host in sorted(set(g.group.member_clients)):
            out.append(Sample("kafka_consumergroup_member_info", "gauge",
                              "1 per (client id, client host) of the group's active members", gl +
                              (("client_id", client_id), ("client_host", host.lstrip("/"))), 1.0))
        per_topic: dict[str, list[float]] = {}
        for (topic, part), committed in sorted(g.committed.items()):
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
    return out


# ---------------------------------------------------------------------------------------------------------------
# The seam around confluent-kafka


class KafkaAdmin:
    """Plain-data calls on confluent-kafka's AdminClient. ``timeout`` bounds each call."""

    def __init__(self, settings: dict[str, str], *, timeout: float):
        from confluent_kafka.admin import AdminClient

        self._timeout = timeout
        quiet = logging.getLogger("kafka_health.collectors.librdkafka")
        quiet.propagate = False
        quiet.addHandler(logging.NullHandler())
        self._admin = AdminClient({**settings, "logger": quiet, "socket.timeout.ms": int(timeout * 1000)})

    def _call(self, what: str, fn: Callable):
        from confluent_kafka import KafkaException

        try:
            return fn()
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            text = err.str() if hasattr(err, "str") else str(exc)
            if "timed out" in text.lower() or "timeout" in text.lower():
                raise TargetTimeout(f"Admin API {what}: {text}") from None
            if "transport" in text.lower() or "connect" in text.lower() or "brokers are down" in text.lower():
                raise TargetUnreachable(f"Admin API {what}: {text}") from None
            raise TransportError(f"Admin API {what}: {text}") from None
        except TimeoutError:  # concurrent.futures' result(timeout) expired
            raise TargetTimeout(f"Admin API {what}: no answer within {self._timeout:g}s") from None

    def cluster(self) -> ClusterState:
        md = self._call("metadata", lambda: self._admin.list_topics(timeout=self._timeout))
        parts = tuple(
            PartitionState(t.topic, p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
            for t in md.topics.values() if t.error is None for p in t.partitions.values()
        )
        return ClusterState(tuple(sorted(md.brokers)), md.controller_id, parts)

    def min_insync_replicas(self, topics: Iterable[str]) -> dict[str, int]:
        """Effective ``min.insync.replicas`` per topic (topic override or broker default). Topics whose config cannot
        be read are left out."""
        from confluent_kafka.admin import ConfigResource

        t = self._timeout
        wanted = [ConfigResource("topic", name) for name in topics]
        if not wanted:
            return {}
        futs = self._call("describe configs", lambda: self._admin.describe_configs(wanted, request_timeout=t))
        out = {}
        for res, fut in futs.items():
            try:
                entry = self._call("describe configs", lambda: fut.result(t)).get("min.insync.replicas")
            except KafkaHealthError as exc:
                log.debug("topic %s: min.insync.replicas unknown: %s", res.name, exc)
                continue
            if entry is not None and entry.value is not None:
                out[res.name] = int(entry.value)
        return out

    def groups(self) -> list[GroupInfo]:
        t = self._timeout
        listing = self._call("list groups", lambda: self._admin.list_consumer_groups(request_timeout=t).result(t))
        ids = [g.group_id for g in listing.valid]
        if not ids:
            return []
        described = self._admin.describe_consumer_groups(ids, request_timeout=t)
        out = []
        for gid, fut in described.items():
            try:
                d = self._call("describe group", lambda: fut.result(t))
            except KafkaHealthError as exc:
                log.warning("group %s: %s", gid, exc)
                continue
            out.append(GroupInfo(gid, _state(d.state), len(d.members), bool(d.is_simple_consumer_group),
                                 tuple((m.client_id, m.host) for m in d.members)))
        return out

    def committed(self, group: str) -> dict[TP, int]:
        from confluent_kafka import ConsumerGroupTopicPartitions

        t = self._timeout
        futs = self._admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=t)
        res = self._call("group offsets", lambda: futs[group].result(t))
        return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions if tp.error is None}

    def high_watermarks(self, tps: Iterable[TP]) -> dict[TP, int]:
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        request = {TopicPartition(t, p): OffsetSpec.latest() for t, p in tps}
        if not request:
            return {}
        t = self._timeout
        futs = self._call("list offsets", lambda: self._admin.list_offsets(request, request_timeout=t))
        out = {}
        for tp, fut in futs.items():
            try:
                out[(tp.topic, tp.partition)] = self._call("list offsets", lambda: fut.result(t)).offset
            except KafkaHealthError:
                continue  # e.g. an offline partition: no watermark, no lag for it
        return out


def _state(state) -> str:
    name = getattr(state, "name", str(state))
    return name.lower().replace("_", "")


class AdminCollector:
    """One target per cluster: the Admin API through the bootstrap servers."""

    def __init__(
        self,
        cluster: ClusterConfig,
        *,
        tenants: TenantLookup,
        max_series: int = 20000,
        admin_factory: Callable[[ClusterConfig], KafkaAdmin] | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self._cluster = cluster
        self._tenants = tenants
        self._max_series = max_series
        self._factory = admin_factory or (lambda c: KafkaAdmin(c.client_settings(), timeout=c.jmx.timeout_seconds))
        self._admin: KafkaAdmin | None = None
        self._history = WatermarkHistory()
        self._known_groups = 0  # groups of the last good listing: what a failed listing skips
        self._clock = clock
        # min.insync.replicas per topic changes rarely and costs one request per topic: read it for new topics and
        # every MIN_ISR_REFRESH_SECONDS, not every round.
        self._min_isr: dict[str, int] = {}
        self._min_isr_at = float("-inf")
        self._lock = threading.Lock()
        self._target = Target(cluster.name, "admin", "admin", address=cluster.bootstrap_servers)

    def targets(self) -> Sequence[Target]:
        return (self._target,)

    def _with_min_isr(self, admin: KafkaAdmin, state: ClusterState) -> ClusterState:
        topics = {p.topic for p in state.partitions}
        now = self._clock()
        stale = now - self._min_isr_at >= MIN_ISR_REFRESH_SECONDS
        missing = topics - set(self._min_isr)
        if stale or missing:
            try:
                fresh = admin.min_insync_replicas(sorted(topics if stale else missing))
            except KafkaHealthError as exc:  # the partition states are still good: only this series is missing
                log.warning("%s: min.insync.replicas not read: %s", self._target.key, exc)
            else:
                self._min_isr = {t: v for t, v in {**self._min_isr, **fresh}.items() if t in topics}
                if stale:
                    self._min_isr_at = now
        return ClusterState(state.brokers, state.controller_id, state.partitions,
                            {t: v for t, v in self._min_isr.items() if t in topics})

    def collect_target(self, target: Target, *, now: float) -> TargetResult:
        start = time.monotonic()
        base = (("cluster", target.cluster),)
        try:
            with self._lock:  # one round at a time per cluster: the history is shared state
                if self._admin is None:
                    self._admin = self._factory(self._cluster)
                admin = self._admin
                state = admin.cluster()
                state = self._with_min_isr(admin, state)
                samples = cluster_samples(state, base=base, configured=[b.id for b in self._cluster.brokers],
                                          tenants=self._tenants)
                groups, skipped = [], 0
                try:
                    listed = admin.groups()
                    self._known_groups = len(listed)
                except KafkaHealthError as exc:
                    log.warning("%s: consumer groups skipped this round: %s", target.key, exc)
                    listed, skipped = [], self._known_groups
                for info in listed:
                    try:
                        groups.append(GroupOffsets(info, admin.committed(info.group)))  # before the watermarks
                    except KafkaHealthError as exc:
                        log.warning("%s: group %s skipped: %s", target.key, info.group, exc)
                        skipped += 1
                wanted = {tp for g in groups for tp in g.committed}
                watermarks = admin.high_watermarks(sorted(wanted))
                for tp, hw in watermarks.items():
                    self._history.add(tp, now, hw)
                samples += group_samples(groups, watermarks, self._history, now=now, base=base, tenants=self._tenants)
                samples.append(Sample("kafka_health_admin_skipped_groups", "gauge",
                                      "Consumer groups whose offsets could not be read this round", base, float(skipped)))
        except KafkaHealthError as exc:
            log.warning("%s: %s", target.key, exc)
            return failed(target, exc, started_at=now, duration=time.monotonic() - start)
        return succeeded(target, samples, started_at=now, duration=time.monotonic() - start,
                         max_series=self._max_series)
