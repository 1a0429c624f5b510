"""Consumer lag with Burrow's statuses (core/internal/evaluator/caching.go), plus lag in seconds.

Burrow evaluates a window of offset commits per partition; we evaluate per (group, topic) with offsets summed over
partitions (the collectors export per topic, not per partition). The rules, applied in this order, first match wins
(only when the lag is non-zero now and was non-zero at every commit of the window, Rule 1):

    Rule 2  REWIND  the committed offset decreased between two commits
    Rule 3  STOP    now - last commit > last commit - first commit (the group stopped committing)
    Rule 4  STALL   committing, but the offset never changes
    Rule 5  WARN    offsets advance but the lag never decreases (the consumer is slower than the producers)
    else    OK

Prometheus samples the committed offset; it does not see commits. A sample counts as a commit when the offset
changed, or when the group has active members (an active group commits on its interval even without progress).
So a group with no members and a frozen offset is STOP, and one with members and a frozen offset is STALL.
Our own extension: ERR when the lag in seconds exceeds ``lag_seconds_warning`` while the status would be OK/WARN.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import Enum

from alerts.detectors import DetectorContext, window_seconds
from alerts.inputs import M
from alerts.models import Severity
from alerts.types import Observation, Rule


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


def commits_from_samples(times: list[float], offsets: list[float], lags: list[float],
                         members: list[float] | None) -> list[Commit]:
    """Turn sampled committed offsets into Burrow's commit window (see the module docstring)."""
    out: list[Commit] = []
    for i, (t, o, lag) in enumerate(zip(times, offsets, lags)):
        active = bool(members) and members[min(i, len(members) - 1)] > 0
        if not out or o != out[-1].offset or active:
            out.append(Commit(t, o, lag))
    return out


def lag_seconds(committed_now: float, leo_times: list[float], leo_values: list[float], now: float) -> tuple[float, bool]:
    """How long ago the log end offset was at the group's committed offset: the age of the oldest unconsumed
    message. Returns (seconds, exact); exact=False means "at least this much" (beyond the history we have)."""
    if not leo_values or committed_now >= leo_values[-1]:
        return 0.0, True
    for i in range(len(leo_values) - 1, 0, -1):
        t0, v0, t1, v1 = leo_times[i - 1], leo_values[i - 1], leo_times[i], leo_values[i]
        if v0 <= committed_now:  # the log end passed the committed offset between t0 and t1
            frac = 0.0 if v1 == v0 else (committed_now - v0) / (v1 - v0)
            return max(0.0, now - (t0 + frac * (t1 - t0))), True
    return now - leo_times[0], False


def detect(rule: Rule, ctx: DetectorContext) -> list[Observation]:
    window = window_seconds(rule, default="10m")
    start, step = ctx.now - timedelta(seconds=window), max(window / 10, 15)
    now = ctx.now.timestamp()
    by = "cluster, group, topic"
    offsets = ctx.source.query_range(f"sum by ({by}) ({M['group_committed_offset']})", start, ctx.now, step)
    if not offsets:
        return []
    lags = {_k(s.labels): s for s in ctx.source.query_range(f"sum by ({by}) ({M['group_lag']})", start, ctx.now, step)}
    members = {(s.labels.get("cluster"), s.labels.get("group")): s for s in ctx.source.query_range(
        f"max by (cluster, group) ({M['group_members']})", start, ctx.now, step)}
    leo_hist = max(window * 6, 3600)
    leos = {(s.labels.get("cluster"), s.labels.get("topic")): s for s in ctx.source.query_range(
        f"sum by (cluster, topic) ({M['topic_log_end_offset']})", ctx.now - timedelta(seconds=leo_hist), ctx.now,
        max(leo_hist / 240, 15))}
    limit = float(rule.params.get("lag_seconds_warning", 600))
    out = []
    for s in offsets:
        key = _k(s.labels)
        lag_series = lags.get(key)
        if lag_series is None or not s.values or not lag_series.values:
            continue
        lag_at = dict(zip(lag_series.times, lag_series.values))
        pts = [(t, o, lag_at[t]) for t, o in zip(s.times, s.values) if t in lag_at]
        if not pts:
            continue
        m = members.get((key[0], key[1]))
        m_at = dict(zip(m.times, m.values)) if m else {}
        commits = commits_from_samples([p[0] for p in pts], [p[1] for p in pts], [p[2] for p in pts],
                                       [m_at.get(p[0], 0.0) for p in pts] if m else None)
        current_lag = lag_series.values[-1]
        status = burrow_status(commits, current_lag, now)
        leo = leos.get((key[0], key[2]))
        secs, exact = lag_seconds(s.values[-1], list(leo.times), list(leo.values), now) if leo else (0.0, False)
        if status in (LagStatus.OK, LagStatus.WARN) and secs > limit:
            status = LagStatus.ERR
        if status is LagStatus.OK:
            continue
        out.append(Observation(
            labels={"cluster": key[0], "group": key[1], "topic": key[2], "status": status.value},
            value=round(secs, 1), severity=Severity.WARNING if status is LagStatus.WARN else Severity.CRITICAL,
            evidence={"status": status.value, "lag_messages": current_lag, "lag_seconds": round(secs, 1),
                      "lag_seconds_exact": exact, "committed_offset": s.values[-1], "commits_in_window": len(commits),
                      "active_members": (m.values[-1] if m and m.values else 0), "window_seconds": window}))
    return out


def _k(labels: dict[str, str]) -> tuple[str, str, str]:
    return labels.get("cluster", ""), labels.get("group", ""), labels.get("topic", "")
