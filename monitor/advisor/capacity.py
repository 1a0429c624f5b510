"""Capacity planning: pure formulas over observed usage (``monitor.advisor.source`` reads it from Prometheus).

Every formula is written out in docs/advisor.md with its source. The model, in one paragraph: a tenant's steady
storage is what it writes during its retention, on every replica (ingress x retention x replication factor); until
it gets there its storage grows at ingress x replication factor; broker threads are loaded in proportion to
ingress; a broker holds at most ``max_partitions_per_broker`` replicas and should keep its log disk below
``max_disk_fill``. Nothing here queries or reads the clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

DAY = 86400.0


@dataclass(frozen=True)
class Limits:
    max_disk_fill: float = 0.8  # keep log disks below 80%: room for reassignment and segment roll-over
    max_partitions_per_broker: int = 4000  # replicas per broker (Kafka operations guidance for ZK/KRaft brokers)
    max_leaders_per_broker: int = 2000
    handler_idle_floor: float = 0.2  # KafkaRequestHandlerSaturation's threshold
    network_idle_floor: float = 0.3  # KafkaNetworkProcessorSaturation's threshold
    default_retention_seconds: float = 7 * DAY  # Kafka's log.retention.hours=168


@dataclass(frozen=True)
class BrokerUsage:
    broker: str
    disk_size_bytes: float
    disk_avail_bytes: float
    partitions: float
    leaders: float
    handler_idle_at_peak: float | None  # lowest request-handler idle ratio in the window
    network_idle_at_peak: float | None

    @property
    def disk_used_bytes(self) -> float:
        return max(self.disk_size_bytes - self.disk_avail_bytes, 0.0)


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


def seconds_until(level_bytes: float, stored_bytes: float, bytes_in_per_second: float,
                  replication_factor: float, steady_bytes: float) -> float | None:
    """When storage reaches ``level_bytes``: 0 if already there, None if it never will (steady state below it or no
    ingress). Storage grows at ingress x RF until it reaches the steady state."""
    if stored_bytes >= level_bytes:
        return 0.0
    growth = bytes_in_per_second * replication_factor
    if steady_bytes < level_bytes or growth <= 0:
        return None
    return (level_bytes - stored_bytes) / growth


def thread_headroom(idle_at_peak: float | None, floor: float) -> float | None:
    """How many times the peak load can grow before idle falls to ``floor``: (1 - floor) / (1 - idle)."""
    if idle_at_peak is None:
        return None
    busy = 1.0 - idle_at_peak
    return math.inf if busy <= 0 else (1.0 - floor) / busy


def brokers_for(*, disk_needed_bytes: float, disk_per_broker_bytes: float, partition_replicas: float,
                handler_busy: float, network_busy: float, limits: Limits) -> dict[str, int]:
    """Brokers each constraint needs (the answer is the largest): disk at ``max_disk_fill``, replicas per broker,
    and request-handler / network thread busy time (summed over brokers) kept above their idle floors."""
    def ceil(x: float) -> int:
        return max(1, math.ceil(x - 1e-9))

    return {
        "disk": ceil(disk_needed_bytes / (disk_per_broker_bytes * limits.max_disk_fill))
        if disk_per_broker_bytes else 0,
        "partitions": ceil(partition_replicas / limits.max_partitions_per_broker),
        "request_handler_threads": ceil(handler_busy / (1.0 - limits.handler_idle_floor)),
        "network_threads": ceil(network_busy / (1.0 - limits.network_idle_floor)),
    }


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
    brokers_needed: dict[str, int]
    limits: Limits
    scenario: Scenario = field(default_factory=Scenario)

    @property
    def brokers_required(self) -> int:
        return max(self.brokers_needed.values(), default=0)

    def as_json(self, *, cluster_wide: bool = True) -> dict:
        out = {"cluster": self.cluster, "replication_factor": _r(self.replication_factor),
               "tenants": [t.as_json() for t in self.tenants]}
        if cluster_wide:
            out.update({
                "brokers": self.brokers, "disk_total_bytes": _r(self.disk_total_bytes),
                "disk_used_bytes": _r(self.disk_used_bytes), "steady_storage_bytes": _r(self.steady_storage_bytes),
                "disk_full_in_seconds": _r(self.disk_full_in_seconds),
                "partitions_per_broker_max": self.partitions_per_broker_max,
                "leaders_per_broker_max": self.leaders_per_broker_max,
                "handler_headroom": _r(self.handler_headroom), "network_headroom": _r(self.network_headroom),
                "brokers_needed": self.brokers_needed, "brokers_required": self.brokers_required,
                "limits": dict(self.limits.__dict__),
                "scenario": {"grow": dict(self.scenario.grow),
                             "add": [dict(n.__dict__) for n in self.scenario.add]}})
        return out


def _r(v):
    if isinstance(v, float):
        return None if math.isinf(v) or math.isnan(v) else round(v, 3)
    return v


def apply_scenario(usage: ClusterUsage, scenario: Scenario) -> tuple[ClusterUsage, float]:
    """The usage the scenario implies, and the factor by which total ingress (so thread load) changes."""
    grow = dict(scenario.grow)
    tenants = [replace(t, bytes_in_per_second=t.bytes_in_per_second * grow.get(t.tenant, 1.0),
                       partitions=t.partitions) for t in usage.tenants]
    tenants += [TenantUsage(tenant=n.name, bytes_in_per_second=n.bytes_in_per_second, stored_bytes=0.0,
                            retention_seconds=n.retention_seconds, partitions=n.partitions) for n in scenario.add]
    before = sum(t.bytes_in_per_second for t in usage.tenants) + usage.other_bytes_in_per_second
    after = sum(t.bytes_in_per_second for t in tenants) + usage.other_bytes_in_per_second
    load = after / before if before > 0 else 1.0
    return replace(usage, tenants=tuple(tenants)), load


def plan(usage: ClusterUsage, limits: Limits = Limits(), scenario: Scenario = Scenario()) -> Plan:
    base_partitions = sum(b.partitions for b in usage.brokers)
    added_partitions = sum(n.partitions for n in scenario.add) * usage.replication_factor
    usage, load = apply_scenario(usage, scenario)
    tenants = []
    growth = 0.0
    for t in usage.tenants:
        rf = t.replication_factor or usage.replication_factor
        steady = steady_storage_bytes(t.bytes_in_per_second, t.retention_seconds, rf)
        if t.stored_bytes < steady:
            growth += t.bytes_in_per_second * rf
        tenants.append(TenantPlan(
            tenant=t.tenant, bytes_in_per_second=t.bytes_in_per_second, stored_bytes=t.stored_bytes,
            retention_seconds=t.retention_seconds, replication_factor=rf, steady_storage_bytes=steady,
            budget_bytes=t.budget_bytes,
            budget_full_in_seconds=seconds_until(t.budget_bytes, t.stored_bytes, t.bytes_in_per_second, rf, steady)
            if t.budget_bytes else None))
    other_steady = max(usage.other_stored_bytes,
                       steady_storage_bytes(usage.other_bytes_in_per_second, limits.default_retention_seconds,
                                            usage.replication_factor))
    steady_total = sum(t.steady_storage_bytes for t in tenants) + other_steady
    disk_total = sum(b.disk_size_bytes for b in usage.brokers)
    disk_used = sum(b.disk_used_bytes for b in usage.brokers)
    usable = disk_total * limits.max_disk_fill
    # Disk fills at the summed growth of tenants not yet at their steady state; it stops growing once all are.
    headroom_to_steady = steady_total - sum(t.stored_bytes for t in tenants) - usage.other_stored_bytes
    if disk_used >= usable:
        full_in = 0.0
    elif growth <= 0 or headroom_to_steady < usable - disk_used:
        full_in = None
    else:
        full_in = (usable - disk_used) / growth
    n = len(usage.brokers)
    handler_busy = sum(1.0 - b.handler_idle_at_peak for b in usage.brokers if b.handler_idle_at_peak is not None)
    network_busy = sum(1.0 - b.network_idle_at_peak for b in usage.brokers if b.network_idle_at_peak is not None)
    needed = brokers_for(
        # Disk needed: the larger of what is on disk now (besides Kafka: other files) and the steady state.
        disk_needed_bytes=max(steady_total, disk_used), disk_per_broker_bytes=disk_total / n if n else 0.0,
        partition_replicas=base_partitions + added_partitions, handler_busy=handler_busy * load,
        network_busy=network_busy * load, limits=limits)
    heads = [thread_headroom(b.handler_idle_at_peak, limits.handler_idle_floor) for b in usage.brokers]
    nets = [thread_headroom(b.network_idle_at_peak, limits.network_idle_floor) for b in usage.brokers]
    return Plan(
        cluster=usage.cluster, replication_factor=usage.replication_factor, tenants=tuple(tenants), brokers=n,
        disk_total_bytes=disk_total, disk_used_bytes=disk_used, steady_storage_bytes=steady_total,
        disk_full_in_seconds=full_in,
        partitions_per_broker_max=max((b.partitions for b in usage.brokers), default=0.0)
        + (added_partitions / n if n else 0.0),
        leaders_per_broker_max=max((b.leaders for b in usage.brokers), default=0.0),
        handler_headroom=_min_known(heads, load), network_headroom=_min_known(nets, load),
        brokers_needed=needed, limits=limits, scenario=scenario)


def _min_known(values: list[float | None], load: float) -> float | None:
    known = [v for v in values if v is not None]
    return min(known) / load if known else None
