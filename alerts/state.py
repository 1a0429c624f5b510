"""The alert state machine: a pure function of (previous instance, condition result, now, rule), then the one
decision on what to notify.

    inactive --cond--> pending --cond for `for`--> firing --no cond for `keep_firing_for`--> resolved
        ^                 |                                                                     |
        +---- no cond ----+                            resolved --cond--> pending (a new incident)

As in Prometheus (rules/alerting.go): ``for=0`` fires on the first true evaluation; a pending alert whose condition
clears is dropped without notification; ``keep_firing_for`` keeps a firing alert firing for a while after its
condition clears (``keep_firing_since`` records when it cleared), and a condition that returns in that window simply
continues the incident. A resolved instance is kept (the store keeps it for history and the REST API).

    advance   the transition above
    decide    what the receiver must be told, from what it was last told (``notified_state``): a firing not yet
              sent (held back while muted), a resolve of a firing that was sent, a refresh of a firing it holds

The engine (``alerts.engine``) takes them in its cycle: it advances every instance, mutes them, then decides.

Deciding from what was told rather than from the transition is what makes notifications idempotent: replaying the
same inputs after a restart pages nobody twice and loses no resolve, and a page a mute held back goes out when the
mute ends.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from alerts.types import AlertState, Decision, Instance, Observation, Rule


def advance(
    prev: Instance | None, obs: Observation | None, now: datetime, rule: Rule, labels: dict[str, str] | None = None
) -> Instance | None:
    """Advance one instance by one evaluation. ``obs`` is the condition result (None: condition false).

    ``labels`` is the instance identity (needed when ``prev`` is None). Returns the new instance, or None when there
    is nothing to keep. Never reads the clock: ``now`` is the evaluation time.
    """
    # An observation may carry its own ``for`` (alerts.types.Observation); a pending instance fires as soon as the
    # current observation's wait has passed since it became active.
    for_ = timedelta(seconds=rule.for_seconds if obs is None or obs.for_seconds is None else obs.for_seconds)
    keep = timedelta(seconds=rule.keep_firing_for_seconds)

    if obs is not None:
        fresh = dict(
            value=obs.value,
            evidence=obs.evidence,
            severity=obs.severity or rule.severity,
            annotations=dict(rule.annotations),
            last_evaluated_at=now,
            keep_firing_since=None,
        )
        if prev is None or prev.state in (AlertState.INACTIVE, AlertState.RESOLVED):
            # a new incident starts with a new instance: nothing of it has been told yet
            base = Instance(
                rule=rule.name,
                labels=dict(labels if labels is not None else prev.labels),  # type: ignore[union-attr]  # no prev: labels given
                state=AlertState.PENDING,
                severity=rule.severity,
            )
            inst = base.evolve(active_at=now, fired_at=None, resolved_at=None, **fresh)
            if for_ <= timedelta(0):
                return inst.evolve(state=AlertState.FIRING, fired_at=now)
            return inst
        if prev.state is AlertState.PENDING:
            if now - prev.active_at >= for_:  # type: ignore[operator]  # pending: active_at set
                return prev.evolve(state=AlertState.FIRING, fired_at=now, **fresh)
            return prev.evolve(**fresh)
        # firing: the condition holds (again); any keep_firing_for window is cancelled.
        return prev.evolve(**fresh)

    # condition false
    if prev is None:
        return None
    if prev.state is AlertState.PENDING or prev.state is AlertState.INACTIVE:
        return None  # never fired: drop silently, as Prometheus does
    if prev.state is AlertState.RESOLVED:
        return prev.evolve(last_evaluated_at=now)
    # firing and the condition cleared
    if keep > timedelta(0):
        since = prev.keep_firing_since or now
        if now - since < keep:
            return prev.evolve(keep_firing_since=since, last_evaluated_at=now)
    return prev.evolve(state=AlertState.RESOLVED, resolved_at=now, keep_firing_since=None, last_evaluated_at=now)


def decide(inst: Instance, now: datetime, *, resend_seconds: float | None = None) -> tuple[Instance, Decision]:
    """Alertmanager's dedup stage: the notification due for ``inst`` (already muted or not for this evaluation),
    and the instance with the hand-off recorded (``notified_state``, ``last_sent_at``) when one is due.

    ``resend_seconds``: how often a firing already sent is refreshed (None: never).
    """
    told = inst.notified_state
    if inst.state is AlertState.FIRING:
        if told is not AlertState.FIRING:
            # A mute holds back a page not yet sent; it goes out when the mute ends, if the alert still fires.
            decision = Decision.NONE if inst.muted_by else Decision.NOTIFY_FIRING
        # Refresh whatever Alertmanager already holds as firing, muted or not (Prometheus too keeps sending firing
        # alerts whatever Alertmanager's silences say): else Alertmanager times its copy out and reports a false
        # resolve, and the end of the silence pages again. Refreshes never go to webhooks
        # (alerts.notify.targets_for).
        elif (
            resend_seconds is not None
            and inst.last_sent_at is not None
            and now - inst.last_sent_at >= timedelta(seconds=resend_seconds)
        ):
            decision = Decision.REFRESH
        else:
            decision = Decision.NONE
    elif inst.state is AlertState.RESOLVED and told is AlertState.FIRING:
        decision = Decision.NOTIFY_RESOLVED  # muted or not: the receiver was told it fires
    else:
        decision = Decision.NONE  # pending, or resolved without a firing ever sent
    if decision is Decision.NONE:
        return inst, decision
    return inst.evolve(notified_state=inst.state, last_sent_at=now), decision
