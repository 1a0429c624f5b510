"""Disk-full risk: when will a broker's log-dir filesystem be full, given recent growth?

Retention makes usage a sawtooth: it grows as producers write and drops when old segments are deleted. A steady
state bounded by retention must not alarm, however steep each tooth is. So the projection uses the *envelope*: when
retention deletions (drops) are seen in the window, the growth rate is the trend of the peaks before each drop plus
the current level (if it is above the last peak); no drop seen means plain least-squares growth over the window.

A log dir whose filesystem changed size in the window (a volume resized, the dir moved to another mount) is judged
on the points since the change only: usage measured on another filesystem says nothing about this one's growth.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from alerts.detectors import DetectorContext, window_seconds
from alerts.types import Observation, Rule, Severity
from monitor.core.metric_names import M


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


def find_drops(used: list[float], size: float, min_drop_ratio: float = 0.002) -> list[int]:
    """Indexes i where used falls from used[i-1] by more than ``min_drop_ratio`` of the filesystem: deletions."""
    floor = size * min_drop_ratio
    return [i for i in range(1, len(used)) if used[i - 1] - used[i] > floor]


def forecast_disk_full(times: list[float], used: list[float], size: float, *, min_points: int = 8) -> DiskForecast | None:
    """Projected time to full, or None when usage is not growing (or too few points to say)."""
    if len(times) < min_points or size <= 0:
        return None
    now_used = used[-1]
    if now_used >= size:
        return DiskForecast(0.0, 0.0, now_used, size, "full", 0)
    drops = find_drops(used, size)
    if drops:
        xs = [times[i - 1] for i in drops]
        ys = [used[i - 1] for i in drops]
        if now_used > ys[-1]:
            xs.append(times[-1])
            ys.append(now_used)
        if len(xs) < 2:
            return None  # one cycle seen and we are below its peak: bounded by retention
        rate = _slope(xs, ys)
        method = "envelope"
    else:
        rate = _slope(times, used)
        method = "linear"
    if rate <= 0:
        return None
    return DiskForecast((size - now_used) / rate, rate, now_used, size, method, len(drops))


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
    by = "cluster, broker, path"
    used = ctx.source.query_range(f"max by ({by}) ({M['fs_size']} - {M['fs_avail']})", start, ctx.now, step)
    sizes = {_key(s.labels): s.value for s in ctx.source.query(f"max by ({by}) ({M['fs_size']})", ctx.now)}
    size_history = {_key(s.labels): s for s in
                    ctx.source.query_range(f"max by ({by}) ({M['fs_size']})", start, ctx.now, step)}
    out = []
    for series in used:
        size = sizes.get(_key(series.labels))
        if size is None or not series.values:
            continue
        times, values = list(series.times), list(series.values)
        hist = size_history.get(_key(series.labels))
        if hist is not None:
            first = current_filesystem_start(times, list(hist.times), list(hist.values), size)
            times, values = times[first:], values[first:]
        fc = forecast_disk_full(times, values, size, min_points=int(rule.params.get("min_points", 8)))
        if fc is None:
            continue
        sev = severity_for_eta(fc.eta_seconds, warning=float(rule.params["warning"]),
                               critical=float(rule.params["critical"]))
        if sev is None:
            continue
        labels = {k: series.labels.get(k, "") for k in ("cluster", "broker", "path")}
        out.append(Observation(labels=labels, value=round(fc.eta_seconds), severity=sev, evidence={
            "eta_seconds": round(fc.eta_seconds), "eta_hours": round(fc.eta_seconds / 3600, 2),
            "growth_bytes_per_second": round(fc.growth_bytes_per_second, 1), "used_bytes": fc.used_bytes,
            "size_bytes": fc.size_bytes, "method": fc.method, "retention_drops_seen": fc.drops,
            "window_seconds": window}))
    return out


def _key(labels: dict[str, str]) -> tuple:
    return (labels.get("cluster"), labels.get("broker"), labels.get("path"))
