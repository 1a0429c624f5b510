"""The state machine, minute by minute. Each case: rule timing, a string of condition results (one per minute,
'1' true / '0' false), and the expected state and decision after each minute.

Each minute goes through the engine's own decision steps (``alerts.engine``: advance every instance, mute, decide),
so the table proves what the engine does, not a copy of it."""

from datetime import datetime, timedelta, timezone

import pytest

from alerts.engine import _advance_instances, _decide_notifications, _mute, _RuleResults
from alerts.types import AlertState, Decision, Instance, Observation, Rule, Scope, Severity

T0 = datetime(2026, 11, 22, 0, 0, tzinfo=timezone.utc)
I, P, F, R = "-", "P", "F", "R"  # noqa: E741 - the table's letters; inactive (no instance), pending, firing, resolved
N, NF, NR = ".", "f", "r"  # decisions: none, notify firing, notify resolved
LETTER = {AlertState.PENDING: P, AlertState.FIRING: F, AlertState.RESOLVED: R}

CASES = [
    # (no, for_min, keep_min, conditions, states, decisions)
    (1, 0, 0, "0000", "----", "...."),
    (2, 0, 0, "1100", "FFRR", "f.r."),  # for=0 fires on first true evaluation
    (3, 2, 0, "1110", "PPFR", "..fr"),  # fires once `for` elapsed (at minute 2)
    (4, 2, 0, "1101", "PP-P", "...."),  # pending dropped silently when the condition clears
    (5, 3, 0, "11111", "PPPFF", "...f."),
    (6, 0, 2, "10001", "FFFRF", "f..rf"),  # keep_firing_for 2: stays firing 2 minutes after clearing
    (7, 0, 2, "1010", "FFFF", "f..."),  # flapping inside keep_firing_for is one incident
    (8, 1, 0, "110110", "PFRPFR", ".fr.fr"),  # a new incident after resolve pages again (once)
    (9, 0, 0, "1", "F", "f"),
    (10, 1, 3, "1100001", "PFFFFRP", ".f...r."),  # resolves 3 minutes after clearing
]


class _Muted:
    """A silence that mutes everything it is asked about (the mute stage's verdict for one minute)."""

    def __init__(self, reason: str):
        self.reason = reason

    def mutes(self, labels: dict[str, str]) -> str | None:
        return self.reason


def step(
    prev: Instance | None,
    obs: Observation | None,
    now: datetime,
    rule: Rule,
    labels: dict[str, str] | None = None,
    *,
    muted_by: str | None = None,
    resend_seconds: float | None = None,
) -> tuple[Instance | None, Decision]:
    """One instance of ``rule`` through one evaluation of the engine: ``_advance_instances`` (the rule evaluated and
    observed ``obs``, or nothing), ``_mute`` (a silence ``muted_by``, or none), ``_decide_notifications``."""
    fp = "fp"
    results = _RuleResults(
        rules={rule.name: rule},
        observed={rule.name: {fp: (labels if labels is not None else prev.labels, obs)} if obs is not None else {}},
    )
    kept, _ = _advance_instances({fp: prev} if prev is not None else {}, results, now)
    muted = _mute(kept, _Muted(muted_by) if muted_by else None, ())
    decided, notes = _decide_notifications(muted, now, resend_seconds)  # resend None: never refreshed
    assert len(notes) <= 1 and all(n.instance is decided[fp] for n in notes)
    return decided.get(fp), notes[0].decision if notes else Decision.NONE


def _rule(for_min: int, keep_min: int) -> Rule:
    return Rule(
        name="KafkaTest",
        severity=Severity.WARNING,
        scope=Scope.CLUSTER,
        for_seconds=for_min * 60,
        keep_firing_for_seconds=keep_min * 60,
        annotations={"summary": "s"},
    )


@pytest.mark.unit
@pytest.mark.parametrize("no,for_min,keep_min,conds,states,decisions", CASES, ids=[f"case{c[0]}" for c in CASES])
def test_state_machine_minute_by_minute(no, for_min, keep_min, conds, states, decisions):
    rule = _rule(for_min, keep_min)
    labels = {"alertname": "KafkaTest", "cluster": "c1"}
    inst = None
    got_states, got_decisions = "", ""
    for minute, c in enumerate(conds):
        now = T0 + timedelta(minutes=minute)
        obs = Observation(labels=labels, value=float(minute)) if c == "1" else None
        inst, decision = step(inst, obs, now, rule, labels)
        got_states += I if inst is None else LETTER[inst.state]
        got_decisions += {Decision.NONE: N, Decision.NOTIFY_FIRING: NF, Decision.NOTIFY_RESOLVED: NR}[decision]
    assert (got_states, got_decisions) == (states, decisions)


@pytest.mark.unit
def test_timestamps_follow_prometheus_semantics():
    rule = _rule(2, 1)
    labels = {"alertname": "KafkaTest"}
    t = [T0 + timedelta(minutes=m) for m in range(6)]
    inst, _ = step(None, Observation(labels, 1.0, {"x": 1}), t[0], rule, labels)
    assert inst.active_at == t[0] and inst.fired_at is None
    inst, _ = step(inst, Observation(labels, 2.0), t[1], rule)
    inst, d = step(inst, Observation(labels, 3.0), t[2], rule)
    assert d is Decision.NOTIFY_FIRING and inst.fired_at == t[2] and inst.active_at == t[0] and inst.value == 3.0
    inst, _ = step(inst, None, t[3], rule)
    assert inst.state is AlertState.FIRING and inst.keep_firing_since == t[3]
    inst, d = step(inst, None, t[4], rule)
    assert d is Decision.NOTIFY_RESOLVED and inst.resolved_at == t[4] and inst.keep_firing_since is None
    inst, _ = step(inst, Observation(labels, 9.0), t[5], rule)
    assert inst.state is AlertState.PENDING and inst.active_at == t[5] and inst.resolved_at is None


@pytest.mark.unit
def test_observation_severity_overrides_rule():
    rule = _rule(0, 0)
    inst, _ = step(None, Observation({"a": "b"}, 1.0, severity=Severity.CRITICAL), T0, rule, {"a": "b"})
    assert inst.severity is Severity.CRITICAL


RF = "~"  # decision: refresh
M = "M"  # muted this minute (by a silence or inhibition)

NOTIFY_CASES = [
    # (no, for_min, keep_min, resend_min, conditions, muted, states, decisions); resend None: never refreshed
    (1, 0, 0, None, "1111", "....", "FFFF", "f..."),  # told once
    (2, 0, 0, 2, "11111", ".....", "FFFFF", "f.~.~"),  # a firing already sent is refreshed every resend interval
    (3, 0, 0, 1, "1100", "....", "FFRR", "f~r."),  # a resolve is sent once, never refreshed
    (4, 0, 0, None, "1111", "MM..", "FFFF", "..f."),  # a page held back by a mute goes out when the mute ends
    (5, 1, 0, None, "1110", "MMM.", "PFFR", "...."),  # never sent, so no resolve either
    (6, 0, 0, 1, "11110", ".MMMM", "FFFFR", "f~~~r"),  # muted after paging: refreshed, not paged again; resolved
    (7, 0, 0, None, "1011", "M...", "FRFF", "..f."),  # a new incident is told afresh, whatever the old one was
]


@pytest.mark.unit
@pytest.mark.parametrize(
    "no,for_min,keep_min,resend_min,conds,muted,states,decisions",
    NOTIFY_CASES,
    ids=[f"notify{c[0]}" for c in NOTIFY_CASES],
)
def test_notifications_minute_by_minute(no, for_min, keep_min, resend_min, conds, muted, states, decisions):
    rule = _rule(for_min, keep_min)
    labels = {"alertname": "KafkaTest", "cluster": "c1"}
    resend = None if resend_min is None else resend_min * 60
    inst = None
    got_states, got_decisions = "", ""
    for minute, (c, m) in enumerate(zip(conds, muted)):
        now = T0 + timedelta(minutes=minute)
        obs = Observation(labels=labels, value=float(minute)) if c == "1" else None
        inst, decision = step(
            inst, obs, now, rule, labels, muted_by="silence:s1" if m == M else None, resend_seconds=resend
        )
        got_states += I if inst is None else LETTER[inst.state]
        got_decisions += {
            Decision.NONE: N,
            Decision.NOTIFY_FIRING: NF,
            Decision.NOTIFY_RESOLVED: NR,
            Decision.REFRESH: RF,
        }[decision]
    assert (got_states, got_decisions) == (states, decisions)


@pytest.mark.unit
def test_a_replayed_evaluation_loses_no_resolve_and_sends_nothing_twice():
    """A restart replays the evaluation from the stored instance: the one stored before the hand-off was saved
    decides the resolve again; the one stored after decides nothing."""
    rule, labels = _rule(0, 0), {"alertname": "KafkaTest"}
    firing, _ = step(None, Observation(labels, 1.0), T0, rule, labels)
    t1 = T0 + timedelta(minutes=1)
    resolved, decision = step(firing, None, t1, rule)
    assert decision is Decision.NOTIFY_RESOLVED and resolved.notified_state is AlertState.RESOLVED
    assert step(firing, None, t1, rule) == (resolved, Decision.NOTIFY_RESOLVED)
    assert step(resolved, None, t1, rule) == (resolved, Decision.NONE)
