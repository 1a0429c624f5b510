"""Tenant health: a pure function of firing alert instances, engine heartbeats and ``now``.

``assess`` decides; the views only fetch rows and call it. The rules, in order:

1. Each cluster in scope needs a fresh heartbeat from the alert engine with ``data_ok``. A missing heartbeat, one
   older than ``stale_after`` (about three evaluation intervals), or ``data_ok`` false makes that cluster's component
   ``unknown`` with the reason. Without data the answer is never ``ok``.
2. Each firing instance is a reason on one component, chosen from its labels: ``client_id``/``user`` -> client,
   ``group`` -> consumergroup, ``topic`` -> topic, ``broker`` -> broker, else the cluster itself.
3. A component's status, and the overall status, is the worst of its reasons in the order
   ``critical > unknown > degraded > ok``: a known critical problem is reported as such even if other data is
   missing, but missing data outranks warnings because what we cannot see may be worse.
4. ``score`` = 100 - 30 per critical reason - 10 per warning reason, floored at 0, then capped by status
   (degraded <= 90, unknown <= 50, critical <= 40) so the score never contradicts the status.
5. ``as_of`` is the oldest heartbeat among the clusters in scope (the answer is as fresh as its stalest input),
   or ``now`` when there is none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Protocol

from pydantic import BaseModel, Field

from monitor.core.api.schema import UtcDatetime
from monitor.core.times import as_utc


class HealthStatus(str, Enum):
    OK = "ok"
    DEGRADED = "degraded"
    UNKNOWN = "unknown"
    CRITICAL = "critical"

    @property
    def order(self) -> int:
        return _ORDER[self]


_ORDER = {HealthStatus.OK: 0, HealthStatus.DEGRADED: 1, HealthStatus.UNKNOWN: 2, HealthStatus.CRITICAL: 3}
_CAP = {HealthStatus.OK: 100, HealthStatus.DEGRADED: 90, HealthStatus.UNKNOWN: 50, HealthStatus.CRITICAL: 40}
_PENALTY = {"critical": 30, "warning": 10}


class ComponentKind(str, Enum):
    CLUSTER = "cluster"
    BROKER = "broker"
    TOPIC = "topic"
    CONSUMERGROUP = "consumergroup"
    CLIENT = "client"


class AlertLike(Protocol):
    """What ``assess`` reads of an alert instance (``alerts.models.AlertInstance`` fits)."""

    rule: str
    state: str
    severity: str
    cluster: str | None
    broker: str | None
    labels: dict
    annotations: dict
    evidence: dict


class HeartbeatLike(Protocol):
    cluster: str
    evaluated_at: datetime
    data_ok: bool
    detail: str


class Reason(BaseModel):
    alert: str = Field(
        description="alert name, or KafkaHealthNoEvaluation/KafkaHealthEvaluationStale/"
        "KafkaHealthNoData when data is missing"
    )
    severity: str = Field(description="warning or critical")
    summary: str
    evidence: dict[str, Any] = Field(default_factory=dict, description="the values that made it fire")


class Component(BaseModel):
    kind: ComponentKind
    id: str = Field(description="topic, group, client id, broker id, or the cluster name")
    cluster: str
    status: HealthStatus
    reasons: list[Reason]


class Assessment(BaseModel):
    status: HealthStatus
    score: int = Field(ge=0, le=100)
    as_of: UtcDatetime
    components: list[Component]


def component_of(alert: AlertLike) -> tuple[ComponentKind, str, str]:
    labels = alert.labels or {}
    cluster = alert.cluster or labels.get("cluster") or ""
    if labels.get("client_id") or labels.get("user"):
        return ComponentKind.CLIENT, cluster, str(labels.get("client_id") or labels.get("user"))
    if labels.get("group"):
        return ComponentKind.CONSUMERGROUP, cluster, str(labels["group"])
    if labels.get("topic"):
        return ComponentKind.TOPIC, cluster, str(labels["topic"])
    broker = alert.broker or labels.get("broker")
    if broker not in (None, ""):
        return ComponentKind.BROKER, cluster, str(broker)
    return ComponentKind.CLUSTER, cluster, cluster


def data_gap(cluster: str, beat: HeartbeatLike | None, *, now: datetime, stale_after: timedelta) -> Reason | None:
    """Why this cluster's alerts cannot be trusted right now, or None when they can."""
    if beat is None:
        return Reason(
            alert="KafkaHealthNoEvaluation",
            severity="warning",
            summary=f"the alert engine has not evaluated cluster {cluster} yet",
        )
    age = (now - as_utc(beat.evaluated_at)).total_seconds()
    if age > stale_after.total_seconds():
        return Reason(
            alert="KafkaHealthEvaluationStale",
            severity="warning",
            summary=f"the alert engine last evaluated cluster {cluster} {age:.0f}s ago",
            evidence={
                "evaluated_at": as_utc(beat.evaluated_at).isoformat(),
                "age_seconds": round(age, 1),
                "stale_after_seconds": stale_after.total_seconds(),
            },
        )
    if not beat.data_ok:
        return Reason(
            alert="KafkaHealthNoData",
            severity="warning",
            summary=f"rule inputs for cluster {cluster} had no data" + (f": {beat.detail}" if beat.detail else ""),
            evidence={"detail": beat.detail} if beat.detail else {},
        )
    return None


def steady_until(
    *, clusters: Iterable[str], heartbeats: Mapping[str, HeartbeatLike], now: datetime, stale_after: timedelta
) -> datetime | None:
    """Until when ``assess`` over these heartbeats (and the same instances) gives the same answer as at ``now``: the
    moment the oldest heartbeat turns stale. None when the answer already moves with ``now``: no heartbeat at all
    (``as_of`` is ``now``) or a stale one (its age is in the reason)."""
    times = [as_utc(heartbeats[c].evaluated_at) for c in set(clusters) if c in heartbeats]
    if not times or any((now - t).total_seconds() > stale_after.total_seconds() for t in times):
        return None
    return min(times) + stale_after


@dataclass
class _Acc:
    status: HealthStatus
    reasons: list[Reason]


def assess(
    *,
    clusters: Iterable[str],
    firing: Iterable[AlertLike],
    heartbeats: Mapping[str, HeartbeatLike],
    now: datetime,
    stale_after: timedelta,
) -> Assessment:
    """Health of one scope (a tenant, or a cluster or a tenant's slice of it). See the module docstring."""
    clusters = sorted(set(clusters))
    comps: dict[tuple[ComponentKind, str, str], _Acc] = {}
    criticals = warnings = 0
    status = HealthStatus.OK if clusters else HealthStatus.UNKNOWN

    def worse(a: HealthStatus, b: HealthStatus) -> HealthStatus:
        return a if a.order >= b.order else b

    for c in clusters:
        gap = data_gap(c, heartbeats.get(c), now=now, stale_after=stale_after)
        if gap is not None:
            comps[(ComponentKind.CLUSTER, c, c)] = _Acc(HealthStatus.UNKNOWN, [gap])
            status = worse(status, HealthStatus.UNKNOWN)
    for a in firing:
        if a.state != "firing":
            continue
        crit = a.severity == "critical"
        criticals += crit
        warnings += not crit
        s = HealthStatus.CRITICAL if crit else HealthStatus.DEGRADED
        status = worse(status, s)
        annotations = a.annotations or {}
        reason = Reason(
            alert=a.rule,
            severity=a.severity,
            summary=str(annotations.get("summary") or a.rule),
            evidence=dict(a.evidence or {}),
        )
        key = component_of(a)
        acc = comps.setdefault(key, _Acc(HealthStatus.OK, []))
        acc.status = worse(acc.status, s)
        acc.reasons.append(reason)

    score = max(0, 100 - _PENALTY["critical"] * criticals - _PENALTY["warning"] * warnings)
    score = min(score, _CAP[status])
    beats = [as_utc(heartbeats[c].evaluated_at) for c in clusters if c in heartbeats]
    components = [
        Component(
            kind=kind,
            id=ident,
            cluster=cluster,
            status=acc.status,
            reasons=sorted(acc.reasons, key=lambda r: (-_PENALTY.get(r.severity, 0), r.alert, r.summary)),
        )
        for (kind, cluster, ident), acc in comps.items()
    ]
    components.sort(key=lambda c: (-c.status.order, c.cluster, c.kind.value, c.id))
    return Assessment(status=status, score=score, as_of=min(beats) if beats else now, components=components)
