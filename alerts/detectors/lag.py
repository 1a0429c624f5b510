"""Consumer lag with Burrow's statuses (core/internal/evaluator/caching.go), plus lag in seconds.

Burrow evaluates a window of offset commits per partition; we evaluate per (group, topic) with offsets summed over
partitions (the collectors export per topic, not per partition). When committed offsets are not exported, they are
derived up to a constant as (messages produced since the window start) - lag, snapped to ignore sampling jitter. The rules, applied in this order, first match wins
(only when the lag is non-zero now and was non-zero at every commit of the window, Rule 1):

    Rule 2  REWIND  the committed offset decreased between two commits
    Rule 3  STOP    now - last commit > last commit - first commit (the group stopped committing)
    Rule 4  STALL   committing, but the offset never changes
    Rule 5  WARN    offsets advance but the lag never decreases (the consumer is slower than the producers)
    else    OK

Prometheus samples the committed offset; it does not see commits. A sample counts as a commit when the offset
changed, or when the group has active members (an active group commits on its interval even without progress).
So a group with no members and a frozen offset is STOP, and one with members and a frozen offset is STALL.
A (group, topic) whose samples span less than half the window (a group or a collector that just started) is not
judged by rules 2-5 (Burrow marks such a window incomplete): one or two samples make any group look stopped or
stalled. Our own extension: ERR when the lag in seconds (the collectors' ``kafka_consumergroup_lag_seconds``: age of the
oldest unconsumed message) exceeds ``lag_seconds_warning`` while the status would be OK/WARN.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import Enum

from alerts.detectors import DetectorContext, window_seconds
from alerts.types import Observation, Rule, Severity
from monitor.core.metric_names import M


class LagStatus(str, Enum):
    OK = "OK"
    WARN = "WARN"
    ERR = "ERR"
    STOP = "STOP"
    STALL = "STALL"
    REWIND = "REWIND"

    @property
    def order(self) -> int:
        return list(LagStatus).index(self)


@dataclass(frozen=True)
class Commit:
    timestamp: float  # seconds
    offset: float
    lag: float


def lag_always_nonzero(commits: list[Commit]) -> bool:  # Rule 1
    return all(c.lag > 0 for c in commits)


def offsets_rewind(commits: list[Commit]) -> bool:  # Rule 2
    return any(b.offset < a.offset for a, b in zip(commits, commits[1:]))


def offsets_stopped(commits: list[Commit], now: float) -> bool:  # Rule 3
    first, last = commits[0].timestamp, commits[-1].timestamp
    return now - last > last - first


def offsets_stalled(commits: list[Commit]) -> bool:  # Rule 4
    return all(b.offset == a.offset for a, b in zip(commits, commits[1:]))


def lag_not_decreasing(commits: list[Commit]) -> bool:  # Rule 5
    return all(b.lag >= a.lag for a, b in zip(commits, commits[1:]))


def burrow_status(commits: list[Commit], current_lag: float, now: float) -> LagStatus:
    if not commits:
        return LagStatus.OK
    if current_lag > 0 and lag_always_nonzero(commits):
        if offsets_rewind(commits):
            return LagStatus.REWIND
        if offsets_stopped(commits, now):
            return LagStatus.STOP
        if offsets_stalled(commits):
            return LagStatus.STALL
        if lag_not_decreasing(commits):
            return LagStatus.WARN
    return LagStatus.OK


def window_complete(times: list[float], window: float) -> bool:
    """Enough history to judge: the samples span at least half the window."""
    return bool(times) and times[-1] - times[0] >= window / 2


def commits_from_samples(times: list[float], offsets: list[float], lags: list[float],
                         members: list[float] | None) -> list[Commit]:
    """Turn sampled committed offsets into Burrow's commit window (see the module docstring)."""
    out: list[Commit] = []
    for i, (t, o, lag) in enumerate(zip(times, offsets, lags)):
        active = bool(members) and members[min(i, len(members) - 1)] > 0
        if not out or o != out[-1].offset or active:
            out.append(Commit(t, o, lag))
    return out


def snap(offsets: list[float], tolerance: float) -> list[float]:
    """Treat moves within ``tolerance`` as no move (offsets derived from two sampled series jitter)."""
    out: list[float] = []
    for o in offsets:
        out.append(out[-1] if out and abs(o - out[-1]) <= tolerance else o)
    return out


def pseudo_offsets(produced_per_step: list[float], lags: list[float]) -> list[float]:
    """Committed offset up to a constant, when it is not exported: messages produced since the window start minus
    the lag. A consumer that stops keeps it flat; one that is reset back makes it fall (REWIND)."""
    out, total = [], 0.0
    for produced, lag in zip(produced_per_step, lags):
        total += produced
        out.append(total - lag)
    return out


def detect(rule: Rule, ctx: DetectorContext) -> list[Observation]:
    window = window_seconds(rule, default="10m")
    start, step = ctx.now - timedelta(seconds=window), max(window / 10, 15)
    now = ctx.now.timestamp()
    by = "cluster, group, topic"
    lags = ctx.source.query_range(f"sum by ({by}) ({M['group_lag']})", start, ctx.now, step)
    if not lags:
        return []
    committed = {_k(s.labels): s for s in ctx.source.query_range(
        f"sum by ({by}) ({M['group_committed_offset']})", start, ctx.now, step)}
    produced = {} if committed else {(s.labels.get("cluster"), s.labels.get("topic")): s for s in ctx.source.query_range(
        f"sum by (cluster, topic) (increase({M['topic_messages_in']}[{int(step)}s]))", start, ctx.now, step)}
    members = {(s.labels.get("cluster"), s.labels.get("group")): s for s in ctx.source.query_range(
        f"max by (cluster, group) ({M['group_members']})", start, ctx.now, step)}
    lag_secs = {_k(s.labels): s.value for s in ctx.source.query(
        f"max by ({by}) ({M['group_lag_seconds']})", ctx.now)}
    limit = float(rule.params.get("lag_seconds_warning", 600))
    out = []
    for lag_series in lags:
        key = _k(lag_series.labels)
        lag_at = dict(zip(lag_series.times, lag_series.values))
        if key in committed:
            c = committed[key]
            times = [t for t in c.times if t in lag_at]
            offsets = [v for t, v in zip(c.times, c.values) if t in lag_at]
            source = "committed_offset"
        else:
            p = produced.get((key[0], key[2]))
            if p is None:
                continue
            prod_at = dict(zip(p.times, p.values))
            times = [t for t in lag_series.times if t in prod_at]
            raw = pseudo_offsets([prod_at[t] for t in times], [lag_at[t] for t in times])
            # jitter of two series sampled at different moments: 1% of what was produced, at least one message
            offsets = snap(raw, max(1.0, 0.01 * sum(prod_at[t] for t in times)))
            source = "produced_minus_lag"
        if not times:
            continue
        m = members.get((key[0], key[1]))
        m_at = dict(zip(m.times, m.values)) if m else {}
        commits = commits_from_samples(times, offsets, [lag_at[t] for t in times],
                                       [m_at.get(t, 0.0) for t in times] if m else None)
        current_lag = lag_series.values[-1]
        status = burrow_status(commits, current_lag, now) if window_complete(times, window) else LagStatus.OK
        secs = lag_secs.get(key, 0.0)
        if status in (LagStatus.OK, LagStatus.WARN) and secs > limit:
            status = LagStatus.ERR
        if status is LagStatus.OK:
            continue
        out.append(Observation(
            labels={"cluster": key[0], "group": key[1], "topic": key[2], "status": status.value},
            value=round(secs, 1), severity=Severity.WARNING if status is LagStatus.WARN else Severity.CRITICAL,
            evidence={"status": status.value, "lag_messages": current_lag, "lag_seconds": round(secs, 1),
                      "offsets_from": source, "commits_in_window": len(commits),
                      "active_members": (m.values[-1] if m and m.values else 0), "window_seconds": window}))
    return out


def _k(labels: dict[str, str]) -> tuple[str, str, str]:
    return labels.get("cluster", ""), labels.get("group", ""), labels.get("topic", "")
