"""Disk-full risk: when will a broker's log-dir filesystem be full, given recent growth? And whose data fills it?

Retention makes usage a sawtooth: it grows as producers write and drops when old segments are deleted. A steady
state bounded by retention must not alarm, however steep each tooth is. So the projection uses the *envelope*: when
retention deletions (drops) are seen in the window, the growth rate is the trend of the peaks before each drop plus
the current level (if it is above the last peak); no drop seen means plain least-squares growth over the window.

A log dir whose filesystem changed size in the window (a volume resized, the dir moved to another mount) is judged
on the points since the change only: usage measured on another filesystem says nothing about this one's growth.

Whose growth it is (``split_growth``, then ``attribute``): the filesystem's growth is split into Kafka's, from the
log size of the partitions of every broker whose log dir is on that filesystem (``kafka_topic_log_size_bytes``,
per tenant through the tenant index; Kafka data no tenant owns, internal topics included, apart), and the rest:
logs, core dumps, another service. Each part's rate is measured like the filesystem's (envelope when retention
drops show). The routing follows the split (rules numbered as in ``attribute``):

    1. Kafka's log sizes unknown (no series on the cluster): the growth is not attributed; operators only.
    2. Kafka's part below ``kafka_share`` (0.5) of the growth: "not Kafka data"; operators only, no tenant.
    3. tenants whose own part is at least ``tenant_share`` (0.25) of the growth, the ``top`` (3) largest: one
       alert per tenant, naming it and its share. A tenant is never told its data fills a disk it does not.
    4. otherwise Kafka data of no single tenant (internal topics, unowned topics, many small tenants): operators.

Shares are of the growth: a part's rate over the sum of the parts that grew (so a part that shrank, such as files
deleted meanwhile, neither counts nor makes the others' shares exceed 100 %). Log dirs of several brokers on one
filesystem (one host) are one filesystem: one alert, under its first log dir, the others in the evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum

from alerts.detectors.context import DetectorContext, window_seconds
from alerts.types import Observation, Rule, Severity
from monitor.advisor.capacity import LogDirDisk, same_filesystems
from monitor.core.humanize import (
    humanize_bytes,
    humanize_rate,
    humanize_seconds,
    humanize_share,
)
from monitor.core.metric_names import M
from monitor.core.prom import Series

DROP_RATIO = 0.002  # a fall of usage by more than this share of the filesystem is a retention deletion


@dataclass(frozen=True)
class DiskForecast:
    eta_seconds: float  # time until full at the projected rate
    growth_bytes_per_second: float
    used_bytes: float
    size_bytes: float
    method: str  # "linear" (no retention drop seen) or "envelope" (sawtooth)
    drops: int


def _slope(xs: list[float], ys: list[float]) -> float:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    return 0.0 if den == 0 else sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den


def growth_rate(times: Sequence[float], values: Sequence[float], drop_floor: float) -> tuple[float | None, str, int]:
    """(bytes/s, method, drops) of one series: the envelope's slope when falls larger than ``drop_floor`` (retention
    deletions) are seen, else the least-squares slope. The rate is None when retention bounds the series (one cycle
    seen and the level now below its peak)."""
    drops = [i for i in range(1, len(values)) if values[i - 1] - values[i] > drop_floor]
    if not drops:
        return _slope(list(times), list(values)), "linear", 0
    xs = [times[i - 1] for i in drops]
    ys = [values[i - 1] for i in drops]
    if values[-1] > ys[-1]:
        xs.append(times[-1])
        ys.append(values[-1])
    if len(xs) < 2:
        return None, "envelope", len(drops)
    return _slope(xs, ys), "envelope", len(drops)


def forecast_disk_full(
    times: list[float], used: list[float], size: float, *, min_points: int = 8
) -> DiskForecast | None:
    """Projected time to full, or None when usage is not growing (or too few points to say)."""
    if len(times) < min_points or size <= 0:
        return None
    now_used = used[-1]
    if now_used >= size:
        return DiskForecast(0.0, 0.0, now_used, size, "full", 0)
    rate, method, drops = growth_rate(times, used, size * DROP_RATIO)
    if rate is None or rate <= 0:
        return None  # bounded by retention, flat or shrinking
    return DiskForecast((size - now_used) / rate, rate, now_used, size, method, drops)


# ------------------------------------------------------------------------------------------------ whose growth

Points = tuple[Sequence[float], Sequence[float]]  # (unix seconds, values) of one series


@dataclass(frozen=True)
class GrowthSplit:
    """The growth of one filesystem split into Kafka's (per tenant, and Kafka data no tenant owns) and the rest.
    Rates in bytes/s over the same window; ``total`` is the filesystem's net growth, which sets the ETA."""

    eta_seconds: float
    free_bytes: float
    size_bytes: float
    total_bytes_per_second: float
    tenants: tuple[tuple[str, float], ...]  # (tenant, bytes/s), fastest first
    untenanted_bytes_per_second: float  # Kafka data no tenant owns: internal topics, unowned topics
    method: str  # the filesystem's: "linear", "envelope" or "full"
    drops: int

    @property
    def kafka_bytes_per_second(self) -> float:
        return sum(r for _, r in self.tenants) + self.untenanted_bytes_per_second

    @property
    def rest_bytes_per_second(self) -> float:
        """What is not Kafka data: the filesystem's growth less Kafka's (negative when other files shrank)."""
        return self.total_bytes_per_second - self.kafka_bytes_per_second

    @property
    def gross_bytes_per_second(self) -> float:
        """The sum of the parts that grew: what shares are of."""
        parts = [r for _, r in self.tenants] + [self.untenanted_bytes_per_second, self.rest_bytes_per_second]
        return sum(r for r in parts if r > 0)

    def share(self, rate: float) -> float:
        gross = self.gross_bytes_per_second
        return max(rate, 0.0) / gross if gross > 0 else 0.0


def split_growth(
    times: Sequence[float],
    free: Sequence[float],
    size: float,
    kafka: Mapping[str | None, Sequence[Points]],
    *,
    min_points: int = 8,
) -> GrowthSplit | None:
    """The split of a filesystem's growth over the window, or None when it is not growing (``forecast_disk_full``).

    ``free``: the filesystem's available bytes at ``times``; ``kafka``: per tenant (None: no tenant's) the log-size
    series of its topics on the brokers whose log dirs are on this filesystem. Each Kafka series is measured over
    the filesystem's window only, by ``growth_rate`` with the filesystem's drop floor (a series bounded by retention
    grows at 0); a tenant's rate is the sum of its series'. Pure."""
    used = [size - f for f in free]
    fc = forecast_disk_full(list(times), used, size, min_points=min_points)
    if fc is None:
        return None
    lo, hi = times[0], times[-1]
    rates: dict[str | None, float] = {}
    for owner, series in kafka.items():
        for ts, vs in series:
            kept = [(t, v) for t, v in zip(ts, vs) if lo <= t <= hi]
            if len(kept) < 2:
                continue
            rate, _, _ = growth_rate([t for t, _ in kept], [v for _, v in kept], size * DROP_RATIO)
            rates[owner] = rates.get(owner, 0.0) + (rate or 0.0)
    tenants = tuple(sorted(((t, r) for t, r in rates.items() if t is not None), key=lambda x: (-x[1], x[0])))
    return GrowthSplit(
        eta_seconds=fc.eta_seconds,
        free_bytes=size - fc.used_bytes,
        size_bytes=size,
        total_bytes_per_second=fc.growth_bytes_per_second,
        tenants=tenants,
        untenanted_bytes_per_second=rates.get(None, 0.0),
        method=fc.method,
        drops=fc.drops,
    )


class Cause(str, Enum):
    """Whose data drives the ETA, and so who is told."""

    UNKNOWN = "unknown"  # Kafka's log sizes unknown: operators only
    NOT_KAFKA = "not_kafka"  # operators only: "not Kafka data"
    TENANTS = "tenants"  # one alert per driving tenant
    KAFKA = "kafka"  # Kafka data of no single tenant: operators only


# The ``filled_by`` label of an operator's alert (the summary shows it); a tenant's says "tenant <name>". None when
# Kafka's log sizes are unknown: the label is left out, so the alert keeps the identity it had before the split.
FILLED_BY = {Cause.UNKNOWN: None, Cause.NOT_KAFKA: "not Kafka data", Cause.KAFKA: "Kafka data of no single tenant"}


@dataclass(frozen=True)
class Attribution:
    cause: Cause
    tenants: tuple[tuple[str, float], ...] = ()  # (tenant, share of the growth) driving the ETA, largest first


def attribute(
    split: GrowthSplit, *, kafka_known: bool, kafka_share: float = 0.5, tenant_share: float = 0.25, top: int = 3
) -> Attribution:
    """Who is told of the split (the rules of the module docstring, in order). Pure."""
    if not kafka_known:  # 1
        return Attribution(Cause.UNKNOWN)
    if split.share(split.kafka_bytes_per_second) < kafka_share:  # 2
        return Attribution(Cause.NOT_KAFKA)
    drivers = [(t, split.share(r)) for t, r in split.tenants if split.share(r) >= tenant_share]  # 3
    if drivers:
        return Attribution(Cause.TENANTS, tuple(drivers[:top]))
    return Attribution(Cause.KAFKA)  # 4


def current_filesystem_start(times: list[float], size_times: list[float], sizes: list[float], size: float) -> int:
    """Index of the first of ``times`` measured on the current filesystem: after the last size sample that differs
    from the current ``size``. 0 when the size never changed (or its history is unknown)."""
    changed = [t for t, v in zip(size_times, sizes) if v != size]
    if not changed:
        return 0
    last = max(changed)
    return next((i for i, t in enumerate(times) if t > last), len(times))


def severity_for_eta(eta: float, *, warning: float, critical: float) -> Severity | None:
    if eta < critical:
        return Severity.CRITICAL
    if eta < warning:
        return Severity.WARNING
    return None


def detect(rule: Rule, ctx: DetectorContext) -> list[Observation]:
    window = window_seconds(rule, default="6h")
    step = max(window / 120, 15)
    start = ctx.now - timedelta(seconds=window)
    by = "cluster, host, broker, path"
    used = {
        _key(s.labels): s
        for s in ctx.source.query_range(f"max by ({by}) ({M['fs_size']} - {M['fs_avail']})", start, ctx.now, step)
        if s.values
    }
    # the filesystem's device label (host collector) from the current sizes only: the ranges stay keyed by log dir,
    # so a log dir moved to another filesystem in the window is one series (current_filesystem_start cuts it)
    now_sizes = ctx.source.query(f"max by ({by}, device) ({M['fs_size']})", ctx.now)
    sizes = {_key(s.labels): s.value for s in now_sizes}
    devices = {_key(s.labels): s.labels.get("device", "") for s in now_sizes}
    size_history = {
        _key(s.labels): s for s in ctx.source.query_range(f"max by ({by}) ({M['fs_size']})", start, ctx.now, step)
    }
    logs = ctx.source.query_range(f"sum by (cluster, broker, topic) ({M['topic_size']})", start, ctx.now, step)
    params = rule.params
    out = []
    for cluster, group in _filesystems(used, sizes, devices):
        first = group[0]
        series = used[_key_of(cluster, first)]
        times, values = list(series.times), list(series.values)
        hist = size_history.get(_key_of(cluster, first))
        if hist is not None:
            cut = current_filesystem_start(times, list(hist.times), list(hist.values), first.size_bytes)
            times, values = times[cut:], values[cut:]
        kafka = _kafka_series(logs, cluster, {d.broker for d in group}, ctx)
        split = split_growth(
            times,
            [first.size_bytes - v for v in values],
            first.size_bytes,
            kafka,
            min_points=int(params.get("min_points", 8)),
        )
        if split is None:
            continue
        sev = severity_for_eta(split.eta_seconds, warning=float(params["warning"]), critical=float(params["critical"]))
        if sev is None:
            continue
        # "unknown" is Kafka's log sizes missing on the whole cluster (JMX down); a broker with no partitions on
        # a cluster that has them holds no Kafka data: its growth is not Kafka's
        known = any(s.labels.get("cluster", "") == cluster for s in logs)
        verdict = attribute(
            split,
            kafka_known=known,
            kafka_share=float(params.get("kafka_share", 0.5)),
            tenant_share=float(params.get("tenant_share", 0.25)),
            top=int(params.get("top", 3)),
        )
        place = {"cluster": cluster, "broker": first.broker, "path": first.path}
        out += [
            Observation(labels=labels, value=round(split.eta_seconds), severity=sev, evidence=evidence)
            for labels, evidence in observations(place, split, verdict, group, window=window)
        ]
    return out


def observations(
    place: dict[str, str], split: GrowthSplit, verdict: Attribution, group: Sequence[LogDirDisk], *, window: float
) -> list[tuple[dict[str, str], dict]]:
    """(labels, evidence) of the alerts one filesystem's verdict gives: one per driving tenant (its copy names no
    other tenant), else one for operators (no ``tenant`` label) with the whole split. Pure."""
    common = _common_evidence(split, group, window)
    where = f"Log dir {place['path']} of broker {place['broker']} ({place['cluster']})"
    eta = (
        f"predicted full in {humanize_seconds(split.eta_seconds)} ({humanize_bytes(split.free_bytes)} free, "
        f"growing {humanize_rate(split.total_bytes_per_second)})"
    )
    if verdict.cause is Cause.TENANTS:
        out = []
        for tenant, share in verdict.tenants:
            own = dict(split.tenants)[tenant]
            others = split.kafka_bytes_per_second - own
            out.append(
                (
                    {**place, "tenant": tenant, "filled_by": f"tenant {tenant}"},
                    {
                        **common,
                        "cause": verdict.cause.value,
                        "tenant": tenant,
                        "tenant_bytes_per_second": round(own, 1),
                        "tenant_share": round(share, 3),
                        "other_kafka_bytes_per_second": round(others, 1),
                        "summary": f"{where} {eta}: tenant {tenant}'s data, {humanize_share(share)} of the growth",
                    },
                )
            )
        return out
    filled_by = FILLED_BY[verdict.cause]
    labels = {**place, "filled_by": filled_by} if filled_by else dict(place)
    parts = {
        Cause.UNKNOWN: "growth not attributed (Kafka's log sizes unknown)",
        Cause.NOT_KAFKA: f"not Kafka data, {humanize_share(split.share(split.rest_bytes_per_second))} of the growth",
        Cause.KAFKA: "Kafka data of no single tenant",
    }
    named = ", ".join(f"tenant {t} {humanize_share(split.share(r))}" for t, r in split.tenants[:3] if r > 0)
    detail = f"; Kafka {humanize_share(split.share(split.kafka_bytes_per_second))}" + (f" ({named})" if named else "")
    evidence = {
        **common,
        "cause": verdict.cause.value,
        "tenants": [
            {"tenant": t, "bytes_per_second": round(r, 1), "share": round(split.share(r), 3)} for t, r in split.tenants
        ],
        "untenanted_kafka_bytes_per_second": round(split.untenanted_bytes_per_second, 1),
        "summary": f"{where} {eta}: {parts[verdict.cause]}" + ("" if verdict.cause is Cause.UNKNOWN else detail),
    }
    return [(labels, evidence)]


def _common_evidence(split: GrowthSplit, group: Sequence[LogDirDisk], window: float) -> dict:
    return {
        "eta_seconds": round(split.eta_seconds),
        "eta_hours": round(split.eta_seconds / 3600, 2),
        "eta": humanize_seconds(split.eta_seconds),
        "free": f"{humanize_bytes(split.free_bytes)} free",
        "growth_bytes_per_second": round(split.total_bytes_per_second, 1),
        "used_bytes": split.size_bytes - split.free_bytes,
        "size_bytes": split.size_bytes,
        "free_bytes": split.free_bytes,
        "method": split.method,
        "retention_drops_seen": split.drops,
        "kafka_bytes_per_second": round(split.kafka_bytes_per_second, 1),
        "not_kafka_bytes_per_second": round(split.rest_bytes_per_second, 1),
        "kafka_share": round(split.share(split.kafka_bytes_per_second), 3),
        "not_kafka_share": round(split.share(split.rest_bytes_per_second), 3),
        "log_dirs": [f"{d.broker}:{d.path}" for d in group],  # every broker log dir on this filesystem
        "window_seconds": window,
    }


def _filesystems(
    used: Mapping[tuple, Series], sizes: Mapping[tuple, float], devices: Mapping[tuple, str] = {}
) -> list[tuple[str, tuple[LogDirDisk, ...]]]:
    """(cluster, log dirs) per filesystem: the log dirs with usage and a size, grouped per cluster, then per
    filesystem (several brokers of one host share one): by ``devices`` (log dir -> device label) where known, else
    by size and free space (``same_filesystems``)."""
    dirs: dict[str, list[LogDirDisk]] = {}
    for key, series in used.items():
        size = sizes.get(key)
        if size is None:
            continue
        cluster, host, broker, path = key
        # free space from the usage series' last point: every log dir compared at the same evaluation
        dirs.setdefault(cluster, []).append(
            LogDirDisk(
                broker=broker,
                path=path,
                host=host,
                size_bytes=size,
                avail_bytes=size - series.values[-1],
                device=devices.get(key, ""),
            )
        )
    return [(cluster, group) for cluster in sorted(dirs) for group in same_filesystems(dirs[cluster])]


def _kafka_series(
    logs: Sequence[Series], cluster: str, brokers: set[str], ctx: DetectorContext
) -> dict[str | None, list[Points]]:
    """Per tenant (None: no tenant's, internal topics included), the topics' log-size series on ``brokers``."""
    out: dict[str | None, list[Points]] = {}
    for s in logs:
        if s.labels.get("cluster", "") != cluster or s.labels.get("broker", "") not in brokers:
            continue
        topic = s.labels.get("topic", "")
        owner = None if topic.startswith("__") else ctx.tenants.for_topic(cluster, topic)
        out.setdefault(owner, []).append((s.times, s.values))
    return out


def _key(labels: dict[str, str]) -> tuple[str, str, str, str]:
    return labels.get("cluster", ""), labels.get("host", ""), labels.get("broker", ""), labels.get("path", "")


def _key_of(cluster: str, d: LogDirDisk) -> tuple[str, str, str, str]:
    return (cluster, d.host, d.broker, d.path)
