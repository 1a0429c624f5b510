"""Capacity planning: pure formulas over observed usage (``monitor.advisor.source`` reads it from Prometheus).

Every formula is written out in docs/advisor.md with its source. The model, in one paragraph: a tenant's steady
storage is what it writes during its retention, on every replica (ingress x retention x replication factor); until
it gets there its storage grows at ingress x replication factor (so the disks fill piecewise linearly, slowing as
each tenant reaches its steady state); broker threads are loaded in proportion to ingress; a broker holds at most
``max_partitions_per_broker`` replicas, leads at most ``max_leaders_per_broker`` partitions and should keep its log
disk below ``max_disk_fill``. An input with no series is listed in ``Plan.missing`` and the figures needing it are
None, never computed from zeros. Nothing here queries or reads the clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

DAY = 86400.0
MiB = 2**20


@dataclass(frozen=True)
class Limits:
    max_disk_fill: float = 0.8  # keep log disks below 80%: room for reassignment and segment roll-over
    max_partitions_per_broker: int = 4000  # replicas per broker (Kafka operations guidance for ZK/KRaft brokers)
    max_leaders_per_broker: int = 2000  # leaders per broker: each leader serves its partition's produce and fetches
    handler_idle_floor: float = 0.2  # KafkaRequestHandlerSaturation's threshold
    network_idle_floor: float = 0.3  # KafkaNetworkProcessorSaturation's threshold
    default_retention_seconds: float = 7 * DAY  # Kafka's log.retention.hours=168


@dataclass(frozen=True)
class LogDirDisk:
    """The filesystem holding one broker log dir, as the host collector sees it (statvfs of the dir)."""

    broker: str
    path: str
    host: str
    size_bytes: float
    avail_bytes: float
    device: str = ""  # the filesystem's device label ("8:1", host collector): when known, it alone decides

    @property
    def used_bytes(self) -> float:
        return max(self.size_bytes - self.avail_bytes, 0.0)


# The fallback for log dirs without a device label (series of an older collector or another exporter): two log dirs
# of one host whose filesystems have the same size and free space within this are one filesystem. The host collector
# reads every log dir of a host in one scrape, microseconds apart: the same filesystem differs by the few blocks
# written in between. Two distinct filesystems of one size (JBOD disks of one model) whose free space is this close
# are taken for one, and one filesystem written fast between two reads is split (see docs/alerts.md).
SAME_FILESYSTEM_SLACK_BYTES = 1 * MiB


def same_filesystems(
    dirs: Iterable[LogDirDisk], *, slack_bytes: float = SAME_FILESYSTEM_SLACK_BYTES
) -> list[tuple[LogDirDisk, ...]]:
    """The log dirs grouped by the filesystem holding them: by (host, device) when a device is known, else by
    (host, size) and free space within ``slack_bytes`` of a neighbour's. Several brokers on one machine (the local
    stack) share one filesystem; counted once per broker it would be counted three times. Each group sorted by
    broker id (numeric first) then path; groups by their first log dir. Pure."""
    buckets: dict[tuple, list[LogDirDisk]] = {}
    for d in dirs:
        key = (d.host, "device", d.device) if d.device else (d.host, "size", d.size_bytes)
        buckets.setdefault(key, []).append(d)
    groups: list[list[LogDirDisk]] = []
    for key, members in buckets.items():
        if key[1] == "device":
            groups.append(members)
            continue
        members.sort(key=lambda d: d.avail_bytes)
        run = [members[0]]
        for d in members[1:]:
            if d.avail_bytes - run[-1].avail_bytes <= slack_bytes:
                run.append(d)
            else:
                groups.append(run)
                run = [d]
        groups.append(run)
    out = [tuple(sorted(g, key=_log_dir_order)) for g in groups]
    return sorted(out, key=lambda g: _log_dir_order(g[0]))


def _log_dir_order(d: LogDirDisk) -> tuple:
    return (not d.broker.isdigit(), int(d.broker) if d.broker.isdigit() else 0, d.broker, d.path)


@dataclass(frozen=True)
class BrokerUsage:
    broker: str
    disk_size_bytes: float  # its log dirs' filesystems, each counted once
    disk_avail_bytes: float
    partitions: float
    leaders: float
    handler_idle_at_peak: float | None  # lowest request-handler idle ratio in the window
    network_idle_at_peak: float | None
    disks: tuple[LogDirDisk, ...] = ()  # where its log dirs are: brokers sharing a filesystem count it once

    @property
    def disk_used_bytes(self) -> float:
        return max(self.disk_size_bytes - self.disk_avail_bytes, 0.0)


def disk_totals(brokers: Iterable[BrokerUsage]) -> tuple[float, float]:
    """(size, used) of the brokers' log disks, a filesystem shared by several brokers (or log dirs) counted once.
    A broker without ``disks`` (its log dirs unknown) counts its own figures."""
    brokers = tuple(brokers)
    groups = same_filesystems(d for b in brokers for d in b.disks)
    size = sum(g[0].size_bytes for g in groups) + sum(b.disk_size_bytes for b in brokers if not b.disks)
    used = sum(g[0].used_bytes for g in groups) + sum(b.disk_used_bytes for b in brokers if not b.disks)
    return size, used


@dataclass(frozen=True)
class TenantUsage:
    tenant: str
    bytes_in_per_second: float  # produced by its clients (leader ingress, before replication)
    stored_bytes: float  # on disk now, all replicas
    retention_seconds: float
    budget_bytes: float | None = None
    partitions: float = 0.0  # partitions of its topics (not replicas)
    replication_factor: float | None = None  # of its topics (replicas / partitions); None: the cluster's


@dataclass(frozen=True)
class NewTenant:
    name: str
    bytes_in_per_second: float
    retention_seconds: float
    partitions: float = 0.0


@dataclass(frozen=True)
class Scenario:
    """What-if: multiply tenants' ingress (``grow``) and/or add tenants."""

    grow: tuple[tuple[str, float], ...] = ()
    add: tuple[NewTenant, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.grow and not self.add


@dataclass(frozen=True)
class ClusterUsage:
    cluster: str
    brokers: tuple[BrokerUsage, ...]
    tenants: tuple[TenantUsage, ...]
    replication_factor: float  # replicas / partitions over the cluster's topics (Admin API metadata)
    other_bytes_in_per_second: float = 0.0  # ingress of topics no tenant owns
    other_stored_bytes: float = 0.0


# ------------------------------------------------------------------------------------------------ formulas


def steady_storage_bytes(bytes_in_per_second: float, retention_seconds: float, replication_factor: float) -> float:
    """Bytes on disk once retention deletes as fast as producers write: ingress x retention x RF."""
    return bytes_in_per_second * retention_seconds * replication_factor


def seconds_until(
    level_bytes: float, stored_bytes: float, bytes_in_per_second: float, replication_factor: float, steady_bytes: float
) -> float | None:
    """When storage reaches ``level_bytes``: 0 if already there, None if it never will (steady state below it or no
    ingress). Storage grows at ingress x RF until it reaches the steady state."""
    return fill_time(
        level_bytes, stored_bytes, [(bytes_in_per_second * replication_factor, steady_bytes - stored_bytes)]
    )


def fill_time(level_bytes: float, used_bytes: float, growers: list[tuple[float, float]]) -> float | None:
    """When ``used_bytes`` reaches ``level_bytes`` if each grower ``(rate B/s, room B)`` adds ``rate`` until it has
    added ``room`` (its steady state) and nothing after: piecewise linear, the total rate dropping as each grower
    reaches its steady state. 0 if already there; None if the growers stop below it."""
    if used_bytes >= level_bytes:
        return 0.0
    ends = sorted((room / rate, rate) for rate, room in growers if rate > 0 and room > 0)
    rate, t, left = sum(r for _, r in ends), 0.0, level_bytes - used_bytes
    for end, r in ends:
        if rate * (end - t) >= left:
            return t + left / rate
        left -= rate * (end - t)
        t, rate = end, rate - r
    return None


def thread_headroom(idle_at_peak: float | None, floor: float) -> float | None:
    """How many times the peak load can grow before idle falls to ``floor``: (1 - floor) / (1 - idle)."""
    if idle_at_peak is None:
        return None
    busy = 1.0 - idle_at_peak
    return math.inf if busy <= 0 else (1.0 - floor) / busy


def brokers_for(
    *,
    disk_needed_bytes: float,
    disk_per_broker_bytes: float | None,
    partition_replicas: float,
    leaders: float,
    handler_busy: float | None,
    network_busy: float | None,
    limits: Limits,
) -> dict[str, int]:
    """Brokers each constraint needs (the answer is the largest): disk at ``max_disk_fill``, replicas and leaders
    per broker, and request-handler / network thread busy time (summed over brokers) kept above their idle floors.
    A constraint whose input is unknown (None) is left out rather than read as needing no broker."""

    def ceil(x: float) -> int:
        return max(1, math.ceil(x - 1e-9))

    needed = {
        "disk": ceil(disk_needed_bytes / (disk_per_broker_bytes * limits.max_disk_fill))
        if disk_per_broker_bytes
        else None,
        "partitions": ceil(partition_replicas / limits.max_partitions_per_broker),
        # Kafka spreads leaders evenly (preferred-leader election); each broker leads at most the limit.
        "leaders": ceil(leaders / limits.max_leaders_per_broker),
        "request_handler_threads": None
        if handler_busy is None
        else ceil(handler_busy / (1.0 - limits.handler_idle_floor)),
        "network_threads": None if network_busy is None else ceil(network_busy / (1.0 - limits.network_idle_floor)),
    }
    return {k: v for k, v in needed.items() if v is not None}


# ------------------------------------------------------------------------------------------------ the plan


@dataclass(frozen=True)
class TenantPlan:
    tenant: str
    bytes_in_per_second: float
    stored_bytes: float
    retention_seconds: float
    replication_factor: float
    steady_storage_bytes: float
    budget_bytes: float | None
    budget_full_in_seconds: float | None  # None: never at this rate (or no budget)

    def as_json(self) -> dict:
        return {k: _r(v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class Plan:
    cluster: str
    replication_factor: float
    tenants: tuple[TenantPlan, ...]
    brokers: int
    disk_total_bytes: float
    disk_used_bytes: float
    steady_storage_bytes: float
    disk_full_in_seconds: float | None  # when log disks reach max_disk_fill; None: never at this rate
    partitions_per_broker_max: float
    leaders_per_broker_max: float
    handler_headroom: float | None  # min over brokers: load multiplier before the handler idle floor
    network_headroom: float | None
    brokers_needed: dict[str, int]  # a constraint whose input is missing is absent
    limits: Limits
    scenario: Scenario = field(default_factory=Scenario)
    missing: tuple[str, ...] = ()  # inputs with no series (``missing_inputs``): the figures needing them are None

    @property
    def brokers_required(self) -> int:
        return max(self.brokers_needed.values(), default=0)

    def as_json(self, *, cluster_wide: bool = True) -> dict:
        out = {
            "cluster": self.cluster,
            "replication_factor": _r(self.replication_factor),
            "tenants": [t.as_json() for t in self.tenants],
        }
        if cluster_wide:
            out.update(
                {
                    "brokers": self.brokers,
                    "disk_total_bytes": _r(self.disk_total_bytes),
                    "disk_used_bytes": _r(self.disk_used_bytes),
                    "steady_storage_bytes": _r(self.steady_storage_bytes),
                    "disk_full_in_seconds": _r(self.disk_full_in_seconds),
                    "partitions_per_broker_max": self.partitions_per_broker_max,
                    "leaders_per_broker_max": self.leaders_per_broker_max,
                    "handler_headroom": _r(self.handler_headroom),
                    "network_headroom": _r(self.network_headroom),
                    "brokers_needed": self.brokers_needed,
                    "brokers_required": self.brokers_required,
                    "missing": {k: describe_missing(k) for k in self.missing},
                    "limits": dict(self.limits.__dict__),
                    "scenario": {
                        "grow": dict(self.scenario.grow),
                        "add": [dict(n.__dict__) for n in self.scenario.add],
                    },
                }
            )
        return out


def _r(v):
    if isinstance(v, float):
        return None if math.isinf(v) or math.isnan(v) else round(v, 3)
    return v


def apply_scenario(usage: ClusterUsage, scenario: Scenario) -> tuple[ClusterUsage, float]:
    """The usage the scenario implies, and the factor by which total ingress (so thread load) changes."""
    grow = dict(scenario.grow)
    tenants = [
        replace(t, bytes_in_per_second=t.bytes_in_per_second * grow.get(t.tenant, 1.0), partitions=t.partitions)
        for t in usage.tenants
    ]
    tenants += [
        TenantUsage(
            tenant=n.name,
            bytes_in_per_second=n.bytes_in_per_second,
            stored_bytes=0.0,
            retention_seconds=n.retention_seconds,
            partitions=n.partitions,
        )
        for n in scenario.add
    ]
    before = sum(t.bytes_in_per_second for t in usage.tenants) + usage.other_bytes_in_per_second
    after = sum(t.bytes_in_per_second for t in tenants) + usage.other_bytes_in_per_second
    load = after / before if before > 0 else 1.0
    return replace(usage, tenants=tuple(tenants)), load


# Inputs of the plan that can be missing (no series in the window): what, and what then cannot be computed.
MISSING = {
    "brokers": (
        "broker series (kafka_host_filesystem_size_bytes, kafka_broker_partitions, "
        "kafka_broker_request_handler_idle_ratio)",
        "no broker to plan with",
    ),
    "topics": (
        "topic series (kafka_topic_bytes_in_total, kafka_topic_log_size_bytes, kafka_topic_partitions)",
        "ingress and stored bytes read as 0",
    ),
    "disk_size": (
        "a broker's log-dir filesystem size (kafka_host_filesystem_size_bytes)",
        "disk full time and brokers needed for disk unknown",
    ),
    "handler_idle": (
        "a broker's request-handler idle ratio (kafka_broker_request_handler_idle_ratio)",
        "handler headroom and brokers needed for handler threads unknown",
    ),
    "network_idle": (
        "a broker's network-processor idle ratio (kafka_broker_network_processor_avg_idle_ratio)",
        "network headroom and brokers needed for network threads unknown",
    ),
}


def describe_missing(key: str) -> str:
    what, then = MISSING[key]
    return f"missing {what}: {then}"


def missing_inputs(usage: ClusterUsage) -> tuple[str, ...]:
    """The keys of ``MISSING`` that hold for ``usage``. A broker's sizes and idle ratios are never really 0 / absent,
    so 0 (the shell's value for "no series") means missing; a figure over brokers is unknown if any broker lacks
    its input (a sum over the others would understate it)."""
    b = usage.brokers
    topics = (
        any(t.bytes_in_per_second or t.stored_bytes or t.partitions for t in usage.tenants)
        or usage.other_bytes_in_per_second
        or usage.other_stored_bytes
    )
    out = {
        "brokers": not b,
        "topics": not topics,
        "disk_size": any(x.disk_size_bytes <= 0 for x in b),
        "handler_idle": any(x.handler_idle_at_peak is None for x in b),
        "network_idle": any(x.network_idle_at_peak is None for x in b),
    }
    return tuple(k for k in MISSING if out[k])


def plan(usage: ClusterUsage, limits: Limits = Limits(), scenario: Scenario = Scenario()) -> Plan:
    """The plan for ``usage`` (with ``scenario`` applied). Callers must not plan a cluster with no brokers (``missing``
    holds "brokers"): every cluster-wide figure would be made of zeros."""
    missing = missing_inputs(usage)
    base_partitions = sum(b.partitions for b in usage.brokers)
    added_partitions = sum(n.partitions for n in scenario.add) * usage.replication_factor
    added_leaders = sum(n.partitions for n in scenario.add)  # one leader per partition
    usage, load = apply_scenario(usage, scenario)
    tenants = []
    growers = []  # (bytes/s, bytes until the steady state) of everything still filling its retention
    for t in usage.tenants:
        rf = t.replication_factor or usage.replication_factor
        steady = steady_storage_bytes(t.bytes_in_per_second, t.retention_seconds, rf)
        growers.append((t.bytes_in_per_second * rf, steady - t.stored_bytes))
        tenants.append(
            TenantPlan(
                tenant=t.tenant,
                bytes_in_per_second=t.bytes_in_per_second,
                stored_bytes=t.stored_bytes,
                retention_seconds=t.retention_seconds,
                replication_factor=rf,
                steady_storage_bytes=steady,
                budget_bytes=t.budget_bytes,
                budget_full_in_seconds=seconds_until(t.budget_bytes, t.stored_bytes, t.bytes_in_per_second, rf, steady)
                if t.budget_bytes
                else None,
            )
        )
    other_steady = max(
        usage.other_stored_bytes,
        steady_storage_bytes(
            usage.other_bytes_in_per_second, limits.default_retention_seconds, usage.replication_factor
        ),
    )
    growers.append(
        (usage.other_bytes_in_per_second * usage.replication_factor, other_steady - usage.other_stored_bytes)
    )
    steady_total = sum(t.steady_storage_bytes for t in tenants) + other_steady
    disk_total, disk_used = disk_totals(usage.brokers)  # a filesystem brokers share (one host) counted once
    disk_known = "disk_size" not in missing and disk_total > 0
    # Each tenant fills at its own rate until its retention starts deleting: the disks fill piecewise linearly.
    full_in = fill_time(disk_total * limits.max_disk_fill, disk_used, growers) if disk_known else None
    n = len(usage.brokers)

    def busy(idle: list[float | None]) -> float | None:
        return None if not idle or None in idle else sum(1.0 - i for i in idle) * load

    needed = brokers_for(
        # Disk needed: the larger of what is on disk now (besides Kafka: other files) and the steady state.
        disk_needed_bytes=max(steady_total, disk_used),
        disk_per_broker_bytes=disk_total / n if disk_known else None,
        partition_replicas=base_partitions + added_partitions,
        leaders=sum(b.leaders for b in usage.brokers) + added_leaders,
        handler_busy=busy([b.handler_idle_at_peak for b in usage.brokers]),
        network_busy=busy([b.network_idle_at_peak for b in usage.brokers]),
        limits=limits,
    )
    heads = [thread_headroom(b.handler_idle_at_peak, limits.handler_idle_floor) for b in usage.brokers]
    nets = [thread_headroom(b.network_idle_at_peak, limits.network_idle_floor) for b in usage.brokers]
    return Plan(
        cluster=usage.cluster,
        replication_factor=usage.replication_factor,
        tenants=tuple(tenants),
        brokers=n,
        disk_total_bytes=disk_total,
        disk_used_bytes=disk_used,
        steady_storage_bytes=steady_total,
        disk_full_in_seconds=full_in,
        partitions_per_broker_max=max((b.partitions for b in usage.brokers), default=0.0)
        + (added_partitions / n if n else 0.0),
        leaders_per_broker_max=max((b.leaders for b in usage.brokers), default=0.0) + (added_leaders / n if n else 0.0),
        handler_headroom=_min_over_brokers(heads, load),
        network_headroom=_min_over_brokers(nets, load),
        brokers_needed=needed,
        limits=limits,
        scenario=scenario,
        missing=missing,
    )


def _min_over_brokers(values: list[float | None], load: float) -> float | None:
    """The smallest headroom over brokers, after ``load``; None if any broker's is unknown (the minimum of the others
    could hide the saturated one)."""
    if not values or None in values:
        return None
    return min(values) / load
