"""The alert state machine: a pure function of (previous instance, condition result, now, rule).

    inactive --cond--> pending --cond for `for`--> firing --no cond for `keep_firing_for`--> resolved
        ^                 |                                                                     |
        +---- no cond ----+                            resolved --cond--> pending (a new incident)

As in Prometheus (rules/alerting.go): ``for=0`` fires on the first true evaluation; a pending alert whose condition
clears is dropped without notification; ``keep_firing_for`` keeps a firing alert firing for a while after its
condition clears (``keep_firing_since`` records when it cleared), and a condition that returns in that window simply
continues the incident. A resolved instance is kept (the store keeps it for history and the REST API), and only the
transitions into firing and into resolved are notified, so replaying the same inputs after a restart pages nobody
twice.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from alerts.models import AlertState
from alerts.types import Decision, Instance, Observation, Rule


def step(
    prev: Instance | None, obs: Observation | None, now: datetime, rule: Rule, labels: dict[str, str] | None = None
) -> tuple[Instance | None, Decision]:
    """Advance one instance by one evaluation. ``obs`` is the condition result (None: condition false).

    ``labels`` is the instance identity (needed when ``prev`` is None). Returns (the new instance or None when there is
    nothing to keep, the notification decision). Never reads the clock: ``now`` is the evaluation time.
    """
    for_ = timedelta(seconds=rule.for_seconds)
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
            base = Instance(rule=rule.name, labels=dict(labels if labels is not None else prev.labels),  # type: ignore[union-attr]
                            state=AlertState.PENDING, severity=rule.severity)
            inst = base.evolve(active_at=now, fired_at=None, resolved_at=None, **fresh)
            if for_ <= timedelta(0):
                return inst.evolve(state=AlertState.FIRING, fired_at=now), Decision.NOTIFY_FIRING
            return inst, Decision.NONE
        if prev.state is AlertState.PENDING:
            if now - prev.active_at >= for_:  # type: ignore[operator]
                return prev.evolve(state=AlertState.FIRING, fired_at=now, **fresh), Decision.NOTIFY_FIRING
            return prev.evolve(**fresh), Decision.NONE
        # firing: the condition holds (again); any keep_firing_for window is cancelled.
        return prev.evolve(**fresh), Decision.NONE

    # condition false
    if prev is None:
        return None, Decision.NONE
    if prev.state is AlertState.PENDING or prev.state is AlertState.INACTIVE:
        return None, Decision.NONE  # never fired: drop silently, as Prometheus does
    if prev.state is AlertState.RESOLVED:
        return prev.evolve(last_evaluated_at=now), Decision.NONE
    # firing and the condition cleared
    if keep > timedelta(0):
        since = prev.keep_firing_since or now
        if now - since < keep:
            return prev.evolve(keep_firing_since=since, last_evaluated_at=now), Decision.NONE
    return (
        prev.evolve(state=AlertState.RESOLVED, resolved_at=now, keep_firing_since=None, last_evaluated_at=now),
        Decision.NOTIFY_RESOLVED,
    )
