"""Consumer lag with Burrow's statuses (core/internal/evaluator/caching.go, as of 2025), plus lag in seconds.

Burrow evaluates, per partition, its last ``intervals`` offset commits and the recent high watermarks; we evaluate per
(group, topic) with offsets summed over partitions (the collectors export per topic, not per partition). When
committed offsets are not exported, they are derived up to a constant as (messages produced since the range start) -
lag, snapped to ignore sampling jitter. The high watermark at a sample is committed offset + lag.

Only when the lag now is over ``allowed_lag`` is anything judged; then the rules, in this order, first match wins:

    Rule 3  STOP    now - last commit > last commit - first commit (the group stopped committing),
                    unless a recent high watermark was <= the last commit (the group had caught up moments ago)
    Rule 2  REWIND  the committed offset decreased between two commits and has not come back to where it was
                    (a rebalance that re-commits an older offset and then catches up is not held against the group)
    Rule 1  (gate)  the lag was over ``allowed_lag`` at every commit; otherwise OK
    Rule 4  STALL   committing, but the offset never changes
    Rule 5  WARN    offsets advance but the lag never decreases (the consumer is slower than the producers)
    else    OK

STOP comes first because a stop is a problem even when the group had no lag earlier in its history. The rule numbers
are Burrow's, kept so its numbered test table (tests/unit/test_lag_burrow.py) reads against ours.

Commits are events, not samples. Prometheus samples the committed offset every step; a sample is a new commit only
when the offset changed (repeated samples of one offset are the same commit, seen again), stamped with the first
sample that showed it; the offset already there when the range starts was committed at an unknown time and is not
one of them. Like Burrow's ring of ``intervals`` commits, the window is the last ``intervals`` commits found within
``lookback`` (six windows), so a healthy group's status does not depend on how often it commits relative to the
sampling step or the window: only one committing less often than every ``lookback``/2 can read STOP while healthy.
Prometheus cannot see a commit that repeats the same offset, which is what tells STALL from STOP; a group with active
members stands for it (members commit on their interval), so such a group gets one commit at its latest sample.
A (group, topic) whose samples span less than half the window (a group or a collector that just started) is not
judged (Burrow marks such a window incomplete): one or two samples make any group look stopped or stalled.
Our own extension: ERR when the lag in seconds (the collectors' ``kafka_consumergroup_lag_seconds``: age of the
oldest unconsumed message) exceeds ``lag_seconds_warning`` while the status would be OK/WARN.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from itertools import pairwise

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
    lag: float | None  # None: the lag at that commit is unknown (Burrow: a commit seen before any watermark)


def lag_always_over(commits: Sequence[Commit], allowed_lag: float = 0) -> bool:  # Rule 1
    return all(c.lag is None or c.lag > allowed_lag for c in commits)


def rewind_index(commits: Sequence[Commit]) -> int | None:  # Rule 2: the first commit below its predecessor
    return next((i for i in range(1, len(commits)) if commits[i].offset < commits[i - 1].offset), None)


def rewind_recovered(commits: Sequence[Commit], index: int) -> bool:  # Rule 2, part 2
    before = commits[index - 1].offset
    return any(c.offset >= before for c in commits[index:])


def offsets_stopped(commits: Sequence[Commit], now: float) -> bool:  # Rule 3
    first, last = commits[0].timestamp, commits[-1].timestamp
    return now - last > last - first


def offsets_stalled(commits: Sequence[Commit]) -> bool:  # Rule 4
    return all(b.offset == a.offset for a, b in pairwise(commits))


def lag_not_decreasing(commits: Sequence[Commit]) -> bool:  # Rule 5 (commits of unknown lag are skipped)
    lags = [c.lag for c in commits if c.lag is not None]
    return all(b >= a for a, b in pairwise(lags))


def recently_caught_up(commits: Sequence[Commit], watermarks: Sequence[float]) -> bool:  # the exception to Rule 3
    """A recent high watermark at or below the last commit: the group had read everything moments ago."""
    return any(w <= commits[-1].offset for w in watermarks)


def burrow_status(commits: Sequence[Commit], current_lag: float, now: float, *,
                  recent_watermarks: Sequence[float] = (), allowed_lag: float = 0) -> LagStatus:
    """Burrow's status of one commit window (see the module docstring); ``now`` in the commits' seconds."""
    if not commits or current_lag <= allowed_lag:
        return LagStatus.OK
    if offsets_stopped(commits, now) and not recently_caught_up(commits, recent_watermarks):
        return LagStatus.STOP
    rewound = rewind_index(commits)
    if rewound is not None and not rewind_recovered(commits, rewound):
        return LagStatus.REWIND
    if lag_always_over(commits, allowed_lag):
        if offsets_stalled(commits):
            return LagStatus.STALL
        if lag_not_decreasing(commits):
            return LagStatus.WARN
    return LagStatus.OK


def window_complete(times: list[float], window: float) -> bool:
    """Enough history to judge: the samples span at least half the window."""
    return bool(times) and times[-1] - times[0] >= window / 2


def commits_from_samples(times: list[float], offsets: list[float], lags: list[float],
                         members: list[float] | None = None, intervals: int | None = None, *,
                         since: float | None = None) -> list[Commit]:
    """Sampled committed offsets -> the commit events among them, the last ``intervals`` of them (see the module
    docstring). A sample repeating the previous offset is not a commit; an active group's latest sample is.

    ``since``: where the range queried starts. An offset already there when the range starts was committed at an
    unknown time before it: it is not a commit of the window (Burrow never holds one), unless nothing was committed
    after it (then it is all there is, and its silence counts from the range start). A series that starts inside
    the range starts with the group's first commit."""
    out: list[Commit] = []
    for t, o, lag in zip(times, offsets, lags):
        if not out or o != out[-1].offset:
            out.append(Commit(t, o, lag))
    if since is not None and len(out) > 1 and out[0].timestamp <= since:
        out = out[1:]
    if out and members and members[-1] > 0 and times[-1] > out[-1].timestamp:
        out.append(Commit(times[-1], offsets[-1], lags[-1]))
    return out[-intervals:] if intervals else out


def snap(offsets: list[float], tolerance: float) -> list[float]:
    """Treat moves within ``tolerance`` as no move (offsets derived from two sampled series jitter)."""
    out: list[float] = []
    for o in offsets:
        out.append(out[-1] if out and abs(o - out[-1]) <= tolerance else o)
    return out


def pseudo_offsets(produced_per_step: list[float], lags: list[float]) -> list[float]:
    """Committed offset up to a constant, when it is not exported: messages produced since the range start minus
    the lag. A consumer that stops keeps it flat; one that is reset back makes it fall (REWIND)."""
    out, total = [], 0.0
    for produced, lag in zip(produced_per_step, lags):
        total += produced
        out.append(total - lag)
    return out


def recent_watermarks(times: list[float], offsets: list[float], lags: list[float], since: float) -> list[float]:
    """High watermarks (committed offset + lag) sampled at or after ``since``: Burrow's recent broker offsets."""
    return [o + lag for t, o, lag in zip(times, offsets, lags) if t >= since]


def detect(rule: Rule, ctx: DetectorContext) -> list[Observation]:
    window = window_seconds(rule, default="10m")
    # Commits are looked for over a longer range than the window, so that a group committing less often than the
    # sampling step still shows Burrow's ``intervals`` commits (module docstring). Both defaults follow the window,
    # so a short window (tests, benches) does not judge a group by its commits of an hour ago: Burrow keeps as many
    # watermarks as commits, minutes at its refresh.
    lookback = max(window, window_seconds(rule, "lookback") if "lookback" in rule.params else 6 * window)
    grace = window_seconds(rule, "caught_up_grace") if "caught_up_grace" in rule.params else window / 5
    intervals = int(rule.params.get("intervals", 10))
    allowed_lag = float(rule.params.get("allowed_lag", 0))
    start, step = ctx.now - timedelta(seconds=lookback), max(window / 10, 15)
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
            # jitter of two series sampled at different moments: 1% of what was produced in a window, at least one
            offsets = snap(raw, max(1.0, 0.01 * sum(prod_at[t] for t in times) * window / lookback))
            source = "produced_minus_lag"
        if not times:
            continue
        lag_values = [lag_at[t] for t in times]
        m = members.get((key[0], key[1]))
        m_at = dict(zip(m.times, m.values)) if m else {}
        commits = commits_from_samples(times, offsets, lag_values, [m_at.get(t, 0.0) for t in times] if m else None,
                                       intervals, since=start.timestamp() + step)
        current_lag = lag_series.values[-1]
        status = (burrow_status(commits, current_lag, now, allowed_lag=allowed_lag,
                                recent_watermarks=recent_watermarks(times, offsets, lag_values, now - grace))
                  if window_complete(times, window) else LagStatus.OK)
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
