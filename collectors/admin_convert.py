"""The Admin API's answers as samples: pure conversions, no I/O, no clock (``now`` is passed in).

    ClusterState ──(cluster_samples)──> brokers, controller; per broker: up, request-handler threads; per topic:
                                        partitions, replicas, offline, under-replicated and under-min-ISR
                                        partitions; per tenant and broker: the tenant's partitions it leads
    GroupOffsets, high watermarks, WatermarkHistory ──(group_samples)──> per group: members, state, member
                                        clients; per group and topic: lag, worst partition, lag seconds, committed; per
                                        member (client id, host) and topic: assigned partitions and their lag

``cluster_samples`` counts the partition states of the metadata (independent of JMX, so it still answers when a
broker's JMX does not). ``group_samples`` computes lag from committed offsets and high watermarks, and
``lag_seconds`` the age of the oldest unconsumed message from the history of high watermarks that
``WatermarkHistory`` keeps. Unknown stays unknown: a partition without a committed offset or without a watermark
this round has no lag (it is not "zero lag"), a topic whose ``min.insync.replicas`` is unknown has no under-min-ISR
series, a broker whose ``num.io.threads`` is unknown no request-handler threads series, and a group that could not be
described has no members series. A lag is clamped at 0 (the collector reads committed offsets before watermarks, so
only a truncation in between could make it negative).
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from collectors.catalog import TenantLookup
from collectors.types import TP, ClusterState, GroupInfo, Sample


@dataclass
class GroupOffsets:
    """One consumer group and the offsets it has committed (read this round; negative: no commit there)."""

    group: GroupInfo
    committed: dict[TP, int] = field(default_factory=dict)


def cluster_samples(
    state: ClusterState, *, base: tuple, configured: Iterable[int], tenants: TenantLookup
) -> list[Sample]:
    out = [
        Sample("kafka_cluster_brokers", "gauge", "Brokers in the cluster metadata", base, float(len(state.brokers))),
        Sample(
            "kafka_cluster_controller_id",
            "gauge",
            "Node id of the active controller (-1 if unknown)",
            base,
            float(state.controller_id),
        ),
    ]
    present = set(state.brokers)
    for b in sorted(present | set(configured)):
        out.append(
            Sample(
                "kafka_cluster_broker_up",
                "gauge",
                "1 if the broker is in the cluster metadata",
                base + (("broker", str(b)),),
                1.0 if b in present else 0.0,
            )
        )
    out += [
        Sample(
            "kafka_broker_request_handler_threads",
            "gauge",
            "Request handler threads of the broker: its num.io.threads (DescribeConfigs, dynamic override included)",
            base + (("broker", str(b)),),
            float(threads),
        )
        for b, threads in sorted(state.handler_threads.items())
        if b in present
    ]
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
            under_min_isr[p.topic] = under_min_isr.get(p.topic, 0) + (
                p.leader >= 0 and len(p.isr) < state.min_isr[p.topic]
            )
    out += tenant_leader_samples(state, base=base, tenants=tenants)
    for topic, (n, offline, urp, replicas) in sorted(per_topic.items()):
        labels = base + (("topic", topic), ("tenant", tenants.topic(topic)))
        if topic in under_min_isr:
            out.append(
                Sample(
                    "kafka_topic_under_min_isr_partitions",
                    "gauge",
                    "Led partitions whose ISR is smaller than the topic's min.insync.replicas (metadata + "
                    "topic config)",
                    labels,
                    float(under_min_isr[topic]),
                )
            )
        out += [
            Sample("kafka_topic_partitions", "gauge", "Partitions of the topic (metadata)", labels, float(n)),
            Sample(
                "kafka_topic_replicas",
                "gauge",
                "Replicas of the topic's partitions, summed (metadata): "
                "replicas / partitions is the replication factor",
                labels,
                float(replicas),
            ),
            Sample(
                "kafka_topic_offline_partitions",
                "gauge",
                "Partitions without a leader (metadata)",
                labels,
                float(offline),
            ),
            Sample(
                "kafka_topic_under_replicated_partitions",
                "gauge",
                "Partitions whose ISR is smaller than their replica set (metadata)",
                labels,
                float(urp),
            ),
        ]
    return out


def tenant_leader_samples(state: ClusterState, *, base: tuple, tenants: TenantLookup) -> list[Sample]:
    """Per (tenant, broker): how many of the tenant's partitions the broker leads, so a tenant's availability can
    join the probe's per-broker results (alerts/slo.py). Only where the broker leads some: brokers x tenants stay
    few series, and partitions no tenant owns and partitions without a leader (offline) have none."""
    counts: dict[tuple[str, int], int] = {}
    for p in state.partitions:
        tenant = tenants.topic(p.topic)
        if tenant and p.leader >= 0:
            counts[(tenant, p.leader)] = counts.get((tenant, p.leader), 0) + 1
    return [
        Sample(
            "kafka_cluster_tenant_led_partitions",
            "gauge",
            "Partitions of the tenant this broker leads (metadata)",
            base + (("tenant", tenant), ("broker", str(broker))),
            float(n),
        )
        for (tenant, broker), n in sorted(counts.items())
    ]


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
    groups: Sequence[GroupOffsets],
    watermarks: dict[TP, int],
    history: WatermarkHistory,
    *,
    now: float,
    base: tuple,
    tenants: TenantLookup,
) -> list[Sample]:
    out: list[Sample] = []
    for g in groups:
        tenant = tenants.group(g.group.group)
        gl = base + (("group", g.group.group), ("tenant", tenant))
        if g.group.members is not None:
            out.append(
                Sample(
                    "kafka_consumergroup_members", "gauge", "Active members of the group", gl, float(g.group.members)
                )
            )
        out.append(
            Sample(
                "kafka_consumergroup_state",
                "gauge",
                "1 for the group's current state",
                base + (("group", g.group.group), ("state", g.group.state), ("tenant", tenant)),
                1.0,
            )
        )
        for client_id, host in sorted(set(g.group.member_clients)):
            out.append(
                Sample(
                    "kafka_consumergroup_member_info",
                    "gauge",
                    "1 per (client id, client host) of the group's active members",
                    gl + (("client_id", client_id), ("client_host", host.lstrip("/"))),
                    1.0,
                )
            )
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
                Sample(
                    "kafka_consumergroup_lag",
                    "gauge",
                    "Messages behind the high watermark, summed over partitions",
                    tl,
                    total,
                ),
                Sample("kafka_consumergroup_partition_lag_max", "gauge", "Largest lag of one partition", tl, worst),
                Sample(
                    "kafka_consumergroup_lag_seconds",
                    "gauge",
                    "Estimated age of the oldest unconsumed message, worst partition",
                    tl,
                    secs,
                ),
                Sample("kafka_consumergroup_partitions", "gauge", "Partitions with a committed offset", tl, float(n)),
            ]
        out += member_lag_samples(g, watermarks, base=base, tenant=tenant)
        for topic, total in sorted(committed_sum.items()):
            out.append(
                Sample(
                    "kafka_consumergroup_committed_offset",
                    "gauge",
                    "Committed offsets summed over the partitions that have one (falls only on a rewind)",
                    base + (("group", g.group.group), ("topic", topic), ("tenant", tenant)),
                    total,
                )
            )
    return out


def member_lag_samples(g: GroupOffsets, watermarks: dict[TP, int], *, base: tuple, tenant: str) -> list[Sample]:
    """Per (member client id, client host, topic): the partitions assigned to it and their lag, from the group's
    description and this round's offsets. Members sharing a client id and host are one series (their sum): the
    member id changes with every restart and would leave a series behind each time. A partition without a commit or
    a watermark adds to the partitions, not to the lag (unknown, not zero); a member with none has no lag series."""
    acc: dict[tuple[str, str, str], list[float]] = {}
    for client_id, host, assigned in g.group.member_assignments:
        for topic, part in assigned:
            entry = acc.setdefault((client_id, host.lstrip("/"), topic), [0.0, 0.0, 0.0])
            entry[0] += 1
            committed, hw = g.committed.get((topic, part), -1), watermarks.get((topic, part))
            if committed >= 0 and hw is not None:
                entry[1] += max(0, hw - committed)
                entry[2] += 1
    out: list[Sample] = []
    for (client_id, host, topic), (parts, lag, known) in sorted(acc.items()):
        labels = base + (
            ("group", g.group.group),
            ("topic", topic),
            ("client_id", client_id),
            ("client_host", host),
            ("tenant", tenant),
        )
        out.append(
            Sample(
                "kafka_consumergroup_member_partitions",
                "gauge",
                "Partitions of the topic assigned to the group's members of this client id and host",
                labels,
                parts,
            )
        )
        if known:
            out.append(
                Sample(
                    "kafka_consumergroup_member_lag",
                    "gauge",
                    "Lag of the partitions of the topic assigned to the group's members of this client id "
                    "and host (those with a commit and a watermark)",
                    labels,
                    lag,
                )
            )
    return out
