"""Consumer lag per (group, topic): Burrow's statuses (core/internal/evaluator/caching.go, as of 2025), told apart with
what Burrow lacks (the group's membership), each group judged against its own commit cadence, plus lag in seconds.

Burrow evaluates, per partition, its last ``intervals`` offset commits and the recent high watermarks; we evaluate per
(group, topic) with offsets summed over partitions (the collectors export per topic, not per partition). When
committed offsets are not exported, they are derived up to a constant as (messages produced since the range start) -
lag, snapped to ignore sampling jitter. The high watermark at a sample is committed offset + lag.

``judge`` decides; only when the lag now is over ``allowed_lag`` is anything judged; then, first match wins:

    M   STOP    members gone: the group had members within ``lookback``, has had none for ``members_gone_for``
                (30 s), and its lag grew since the last member was seen. Decided by membership: a crash pages after
                the consumers' session timeout (45 s by default), not after a commit silence.
    C1  STOP /  commits silent: no commit for longer than the silence limit (``cadence_factor`` x the group's
        STALL   commit cadence + one query step), unless a recent high watermark was <= the last commit (the group
                had caught up moments ago). STALL when members are still there (alive, not progressing: a hung poll
                loop, a poison record retried, commits failing), STOP when there are none.
    R2  REWIND  the committed offset decreased between two commits and has not come back to where it was
    C2  WARN    commits overdue: no commit for longer than one cadence + two steps while the lag grew since the
                last commit (not yet the silence limit: a member that stays but stops committing is never OK)
    R1  (gate)  the lag was over ``allowed_lag`` at every commit judged; otherwise OK
    R5  WARN    offsets advance but the lag never decreases and grew over the commits judged (slower than the
                producers). A group that merely slows is WARN, never critical.
    E   ERR     the lag in seconds exceeds ``lag_seconds_warning`` beyond what the group's cadence explains
                (a warning, like WARN: the group is behind, not stopped)
    else OK

Rule numbers R1, R2, R5 are Burrow's (its numbered test table, tests/unit/test_lag_burrow.py, runs against
``burrow_status``, Burrow's evaluator kept as it is); Burrow's Rule 3 (STOP after a silence longer than the span of
the commits judged) is the silence limit of a group whose cadence cannot be learned, and its Rule 4 (STALL: the same
offset re-committed) is C1 with members present, since Prometheus cannot see a commit that repeats an offset.

**Commits are events, not samples.** Prometheus samples the committed offset every step; a sample is a new commit
only when the offset changed, stamped with the first sample that showed it; the offset already there when the range
starts was committed at an unknown time and is not one of them. Like Burrow's ring of ``intervals`` commits, the
commits judged are the last ``intervals`` found within ``lookback`` (six windows).

**The cadence is learned, not assumed.** A group's commit cadence is the median interval between the commit events
of the lookback (at least one query step: faster commits are seen once per step), so a consumer checkpointing every
11 minutes is judged against 11 minutes and one committing every 5 s against the step. What cannot be learned (a
group with one commit in the lookback, a batch consumer that leaves between runs) is set per group or per tenant in
the rule's ``groups`` param (``commit_interval``, ``members_gone_for``, ``lag_seconds_warning``); without it Burrow's
span rule decides. The lag in seconds of a checkpointing group is naturally about one cadence (its committed
position is that old), so ERR is read as lag seconds - cadence > ``lag_seconds_warning``.

A (group, topic) whose samples span less than half the window (a group or a collector that just started) is not
judged by the commit rules (Burrow marks such a window incomplete): one or two samples make any group look stopped.
Membership (M) and lag seconds (E) still apply.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from itertools import pairwise
from typing import Any

from alerts.detectors.context import DetectorContext, window_seconds
from alerts.types import Observation, Rule, Severity
from monitor.core.metric_names import M
from monitor.core.times import parse_duration


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

    @property
    def severity(self) -> Severity:
        """Warning for a group that is behind (WARN, ERR), critical for one that does not progress as it should."""
        return Severity.WARNING if self in (LagStatus.WARN, LagStatus.ERR) else Severity.CRITICAL


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


def lag_grew(commits: Sequence[Commit]) -> bool:
    """The lag at the last commit is above the lag at the first (a constant lag is a group that keeps up)."""
    lags = [c.lag for c in commits if c.lag is not None]
    return len(lags) > 1 and lags[-1] > lags[0]


def recently_caught_up(commits: Sequence[Commit], watermarks: Sequence[float]) -> bool:  # the exception to Rule 3
    """A recent high watermark at or below the last commit: the group had read everything moments ago."""
    return any(w <= commits[-1].offset for w in watermarks)


def burrow_status(
    commits: Sequence[Commit],
    current_lag: float,
    now: float,
    *,
    recent_watermarks: Sequence[float] = (),
    allowed_lag: float = 0,
) -> LagStatus:
    """Burrow's own evaluator, as it is (its numbered table runs against it); the detector decides with ``judge``."""
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


# ------------------------------------------------------------------------------------------------ the group's view


@dataclass(frozen=True)
class Policy:
    """How one group is judged: the rule's params, with the group's entry of ``groups`` (if any) over them."""

    allowed_lag: float = 0
    intervals: int = 10
    cadence_factor: float = 3
    members_gone_for: float = 30
    lag_seconds_warning: float = 600
    commit_interval: float | None = None  # None: learned from the group's commits


@dataclass(frozen=True)
class Membership:
    """What the group coordinator says of the group's members (``kafka_consumergroup_members``)."""

    recent: float | None  # the most members seen over the last ``members_gone_for``; None: not exported
    seen_in_lookback: bool = False  # the group had members at some sample of the lookback
    lag_when_last_seen: float | None = None  # the lag at the last sample that showed members


@dataclass(frozen=True)
class Verdict:
    status: LagStatus
    decided_by: str  # the rule that matched: members, commits, commits+members, offsets, lag, lag_seconds, ""
    cadence_seconds: float | None = None
    cadence_from: str = ""  # learned, configured, or "" (Burrow's span rule)
    silence_seconds: float | None = None  # since the last commit seen
    silence_limit_seconds: float | None = None


def learned_cadence(commits: Sequence[Commit], step: float) -> float | None:
    """The median interval between commit events, at least one step; None with fewer than two commits."""
    if len(commits) < 2:
        return None
    return max(step, statistics.median(b.timestamp - a.timestamp for a, b in pairwise(commits)))


def members_gone(m: Membership, current_lag: float) -> bool:  # Rule M
    return m.recent == 0 and m.seen_in_lookback and (m.lag_when_last_seen is None or current_lag > m.lag_when_last_seen)


def judge(
    events: Sequence[Commit],
    current_lag: float,
    now: float,
    *,
    step: float,
    policy: Policy,
    membership: Membership,
    recent_watermarks: Sequence[float] = (),
    lag_seconds: float = 0.0,
    complete: bool = True,
) -> Verdict:
    """The status of one (group, topic) (module docstring). ``events``: every commit event of the lookback, oldest
    first; ``step``: the query step the events were sampled at; ``now`` in the events' seconds."""
    if current_lag <= policy.allowed_lag:
        return Verdict(LagStatus.OK, "lag")
    cadence, cadence_from = policy.commit_interval, "configured"
    if cadence is None:
        cadence, cadence_from = learned_cadence(events, step), "learned"
    commits = list(events[-policy.intervals :])
    silence = now - commits[-1].timestamp if commits else None
    limit = None
    if commits:  # the silence limit: cadences where one is known, else Burrow's Rule 3 (the commits' span)
        limit = policy.cadence_factor * cadence + step if cadence else commits[-1].timestamp - commits[0].timestamp
    verdict = Verdict(LagStatus.OK, "", cadence, cadence_from if cadence else "", silence, limit)
    if members_gone(membership, current_lag):  # Rule M
        return _with(verdict, LagStatus.STOP, "members")
    if complete and silence is not None and limit is not None:
        caught_up = recently_caught_up(commits, recent_watermarks)
        alive = bool(membership.recent)
        if silence > limit and not caught_up:  # Rule C1
            return _with(
                verdict, LagStatus.STALL if alive else LagStatus.STOP, "commits+members" if alive else "commits"
            )
        rewound = rewind_index(commits)
        if rewound is not None and not rewind_recovered(commits, rewound):  # Rule 2
            return _with(verdict, LagStatus.REWIND, "offsets")
        last_lag = commits[-1].lag
        if (
            cadence and silence > cadence + 2 * step and not caught_up and (last_lag is None or current_lag > last_lag)
        ):  # Rule C2
            return _with(verdict, LagStatus.WARN, "commits")
        if (
            len(commits) > 1
            and lag_always_over(commits, policy.allowed_lag)
            and lag_not_decreasing(commits)
            and lag_grew(commits)
        ):  # Rules 1 and 5
            return _with(verdict, LagStatus.WARN, "lag")
    if lag_seconds - (cadence or 0.0) > policy.lag_seconds_warning:  # Rule E
        return _with(verdict, LagStatus.ERR, "lag_seconds")
    return verdict


def _with(v: Verdict, status: LagStatus, decided_by: str) -> Verdict:
    return Verdict(status, decided_by, v.cadence_seconds, v.cadence_from, v.silence_seconds, v.silence_limit_seconds)


# ------------------------------------------------------------------------------------------------ samples -> events


def window_complete(times: list[float], window: float) -> bool:
    """Enough history to judge: the samples span at least half the window."""
    return bool(times) and times[-1] - times[0] >= window / 2


def commits_from_samples(
    times: list[float],
    offsets: list[float],
    lags: list[float],
    members: list[float] | None = None,
    intervals: int | None = None,
    *,
    since: float | None = None,
) -> list[Commit]:
    """Sampled committed offsets -> the commit events among them, the last ``intervals`` of them (see the module
    docstring). A sample repeating the previous offset is not a commit. ``members`` (for ``burrow_status`` only):
    an active group's latest sample stands for the same-offset commits Prometheus cannot see; ``judge`` reads
    membership as its own signal instead, so the detector passes none.

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


def membership_from(
    times: Sequence[float], lags: Sequence[float], member_at: Mapping[float, float] | None, recent: float | None
) -> Membership:
    """The group's membership from its members series (sampled at ``times``; None: not exported) and the most
    members seen over the last ``members_gone_for`` (None: no sample then: the last sampled value stands)."""
    if member_at is None:
        return Membership(recent)
    seen = [(t, lag) for t, lag in zip(times, lags) if member_at.get(t, 0.0) > 0]
    if recent is None and member_at:
        recent = member_at[max(member_at)]
    return Membership(recent, bool(seen), seen[-1][1] if seen else None)


# ------------------------------------------------------------------------------------------------ per-group policy


GROUP_KEYS = {"group_prefix", "tenant", "commit_interval", "members_gone_for", "lag_seconds_warning", "allowed_lag"}


def group_problems(params: Mapping[str, Any]) -> list[str]:
    """What is wrong with the rule's ``groups`` entries, for the rule loader (so check-config reports it, not the
    first evaluation): an entry that is not a mapping, an unknown key, a duration or number that does not parse."""
    entries = params.get("groups") or []
    if not isinstance(entries, list):
        return ["groups must be a list of entries"]
    problems = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            problems.append(f"groups[{i}] must be a mapping")
            continue
        unknown = sorted(set(entry) - GROUP_KEYS)
        if unknown:
            problems.append(f"groups[{i}]: unknown keys {unknown} (known: {sorted(GROUP_KEYS)})")
        try:
            for key in ("commit_interval", "members_gone_for"):
                if key in entry:
                    parse_duration(entry[key])
            for key in ("lag_seconds_warning", "allowed_lag"):
                if key in entry:
                    float(entry[key])
        except (AttributeError, TypeError, ValueError) as exc:  # parse_duration(None): AttributeError
            problems.append(f"groups[{i}]: {exc}")
    return problems


def policy_for(params: Mapping[str, Any], *, group: str, tenant: str | None) -> Policy:
    """The rule's params, with the first entry of ``groups`` that matches the group (``group_prefix``) and its
    tenant (``tenant``) over them: what cannot be learned, set where it applies."""
    base = dict(params)
    for entry in params.get("groups") or ():
        unknown = set(entry) - GROUP_KEYS
        if unknown:
            raise ValueError(f"consumer_lag groups entry {entry!r}: unknown keys {sorted(unknown)}")
        if group.startswith(str(entry.get("group_prefix", ""))) and entry.get("tenant", tenant) == tenant:
            base.update({k: v for k, v in entry.items() if k not in ("group_prefix", "tenant")})
            break
    commit_interval = base.get("commit_interval")
    return Policy(
        allowed_lag=float(base.get("allowed_lag", 0)),
        intervals=int(base.get("intervals", 10)),
        cadence_factor=float(base.get("cadence_factor", 3)),
        members_gone_for=parse_duration(base.get("members_gone_for", "30s")),
        lag_seconds_warning=float(base.get("lag_seconds_warning", 600)),
        commit_interval=parse_duration(commit_interval) if commit_interval else None,
    )


# ------------------------------------------------------------------------------------------------ the shell


def detect(rule: Rule, ctx: DetectorContext) -> list[Observation]:
    window = window_seconds(rule, default="10m")
    # Commits are looked for over a longer range than the window, so that a group committing less often than the
    # sampling step still shows Burrow's ``intervals`` commits and its cadence (module docstring). Both defaults
    # follow the window, so a short window (tests, benches) does not judge a group by its commits of an hour ago.
    lookback = max(window, window_seconds(rule, "lookback") if "lookback" in rule.params else 6 * window)
    grace = window_seconds(rule, "caught_up_grace") if "caught_up_grace" in rule.params else window / 5
    start, step = ctx.now - timedelta(seconds=lookback), max(window / 10, 15)
    now = ctx.now.timestamp()
    by = "cluster, group, topic"
    lags = ctx.source.query_range(f"sum by ({by}) ({M['group_lag']})", start, ctx.now, step)
    if not lags:
        return []
    committed = {
        _k(s.labels): s
        for s in ctx.source.query_range(f"sum by ({by}) ({M['group_committed_offset']})", start, ctx.now, step)
    }
    produced = (
        {}
        if committed
        else {
            (s.labels.get("cluster"), s.labels.get("topic")): s
            for s in ctx.source.query_range(
                f"sum by (cluster, topic) (increase({M['topic_messages_in']}[{int(step)}s]))", start, ctx.now, step
            )
        }
    )
    members = {
        (s.labels.get("cluster"), s.labels.get("group")): s
        for s in ctx.source.query_range(f"max by (cluster, group) ({M['group_members']})", start, ctx.now, step)
    }
    # Members over the last members_gone_for, every sample (not the step's): the rule's default here; a group whose
    # policy asks for longer is judged on the range's samples of that span.
    gone_for = parse_duration(rule.params.get("members_gone_for", "30s"))
    recent_members = {
        (s.labels.get("cluster"), s.labels.get("group")): s.value
        for s in ctx.source.query(
            f"max by (cluster, group) (max_over_time({M['group_members']}[{int(gone_for)}s]))", ctx.now
        )
    }
    lag_secs = {_k(s.labels): s.value for s in ctx.source.query(f"max by ({by}) ({M['group_lag_seconds']})", ctx.now)}
    member_lags = _member_lags(ctx)
    out = []
    for lag_series in lags:
        key = _k(lag_series.labels)
        samples = _offsets(lag_series, committed, produced, key, window, lookback)
        if samples is None:
            continue
        times, offsets, lag_values, source = samples
        policy = policy_for(rule.params, group=key[1], tenant=ctx.tenants.for_group(key[0], key[1]))
        m = members.get((key[0], key[1]))
        member_at = dict(zip(m.times, m.values)) if m else None
        recent = recent_members.get((key[0], key[1]))
        if member_at is not None and policy.members_gone_for > gone_for:
            recent = max((v for t, v in member_at.items() if t >= now - policy.members_gone_for), default=recent)
        membership = membership_from(times, lag_values, member_at, recent)
        events = commits_from_samples(times, offsets, lag_values, since=start.timestamp() + step)
        current_lag = lag_series.values[-1]
        secs = lag_secs.get(key, 0.0)
        verdict = judge(
            events,
            current_lag,
            now,
            step=step,
            policy=policy,
            membership=membership,
            recent_watermarks=recent_watermarks(times, offsets, lag_values, now - grace),
            lag_seconds=secs,
            complete=window_complete(times, window),
        )
        if verdict.status is LagStatus.OK:
            continue
        out.append(
            Observation(
                labels={"cluster": key[0], "group": key[1], "topic": key[2], "status": verdict.status.value},
                value=round(secs, 1),
                severity=verdict.status.severity,
                evidence=_evidence(
                    verdict, current_lag, secs, source, events, policy, membership, window, member_lags.get(key, [])
                ),
            )
        )
    return out


def _offsets(lag_series, committed, produced, key, window: float, lookback: float):
    """(times, offsets, lags, where the offsets come from) of one (group, topic); None when nothing can be said."""
    lag_at = dict(zip(lag_series.times, lag_series.values))
    if key in committed:
        c = committed[key]
        times = [t for t in c.times if t in lag_at]
        offsets = [v for t, v in zip(c.times, c.values) if t in lag_at]
        source = "committed_offset"
    else:
        p = produced.get((key[0], key[2]))
        if p is None:
            return None
        prod_at = dict(zip(p.times, p.values))
        times = [t for t in lag_series.times if t in prod_at]
        raw = pseudo_offsets([prod_at[t] for t in times], [lag_at[t] for t in times])
        # jitter of two series sampled at different moments: 1% of what was produced in a window, at least one
        offsets = snap(raw, max(1.0, 0.01 * sum(prod_at[t] for t in times) * window / lookback))
        source = "produced_minus_lag"
    if not times:
        return None
    return times, offsets, [lag_at[t] for t in times], source


def _member_lags(ctx: DetectorContext) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    """Per (group, topic): its members' lag, assigned partitions, client id and host, most lag first."""
    lags = ctx.source.query(
        f"max by (cluster, group, topic, client_id, client_host) ({M['group_member_lag']})", ctx.now
    )
    parts = {
        (_k(s.labels), s.labels.get("client_id", ""), s.labels.get("client_host", "")): s.value
        for s in ctx.source.query(
            f"max by (cluster, group, topic, client_id, client_host) ({M['group_member_partitions']})", ctx.now
        )
    }
    out: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for s in lags:
        cid, host = s.labels.get("client_id", ""), s.labels.get("client_host", "")
        # "group" makes each entry the group's tenant's in its copy of the alert (alerts/attribution.py): a client id
        # no selector names is still that tenant's member; one another tenant's selectors name is redacted.
        out.setdefault(_k(s.labels), []).append(
            {
                "client_id": cid,
                "client_host": host,
                "group": s.labels.get("group"),
                "lag_messages": s.value,
                "partitions": int(parts.get((_k(s.labels), cid, host), 0)),
            }
        )
    for members in out.values():
        members.sort(key=lambda e: (-e["lag_messages"], e["client_id"]))
    return out


MAX_MEMBERS_IN_EVIDENCE = 5


def _evidence(
    v: Verdict,
    current_lag: float,
    secs: float,
    source: str,
    events: Sequence[Commit],
    policy: Policy,
    membership: Membership,
    window: float,
    members: list[dict[str, Any]],
) -> dict[str, Any]:
    ev: dict[str, Any] = {
        "status": v.status.value,
        "decided_by": v.decided_by,
        "lag_messages": current_lag,
        "lag_seconds": round(secs, 1),
        "offsets_from": source,
        "commits_in_window": len(events[-policy.intervals :]),
        "active_members": membership.recent if membership.recent is not None else 0,
        "members_seen_in_lookback": membership.seen_in_lookback,
        "window_seconds": window,
    }
    if v.cadence_seconds:
        ev["commit_cadence_seconds"], ev["cadence_from"] = round(v.cadence_seconds, 1), v.cadence_from
    if v.silence_seconds is not None:
        ev["last_commit_age_seconds"] = round(v.silence_seconds, 1)
        ev["silence_limit_seconds"] = round(v.silence_limit_seconds or 0.0, 1)
    if members:
        ev["lagging_members"] = members[:MAX_MEMBERS_IN_EVIDENCE]
    return ev


def _k(labels: dict[str, str]) -> tuple[str, str, str]:
    return labels.get("cluster", ""), labels.get("group", ""), labels.get("topic", "")
