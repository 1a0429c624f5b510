"""Persistence of the alert engine: instances, silences, outbox, dead letters, heartbeats.

Functions take ``*, session`` (a SQLAlchemy session from ``Store.session()``) and never commit: the caller's unit of
work decides, so a cycle's instances and the notifications it enqueues are committed together or not at all.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any, NamedTuple, Protocol

from sqlalchemy import Text, and_, bindparam, cast, delete, func, or_, select
from sqlalchemy.orm import Session

from alerts.models import (
    AlertInstance,
    DeadLetter,
    EngineHeartbeat,
    OutboxEntry,
    Silence,
)
from alerts.mute import Matcher, SilenceView
from alerts.types import AlertState, Instance, Severity
from monitor.core.errors import NotFound

# ------------------------------------------------------------------------------------------------ instances


@cache
def _tenant_alerts_clause(*, whole: bool, in_clusters: bool):
    """A tenant's instances: labelled with it, or unlabelled on a cluster it owns whole (all of it is theirs).

    Built once per shape with bound parameters (``tenant``, ``whole``, ``clusters``): SQLAlchemy then reuses the
    statement's cache key and compiled SQL instead of rebuilding them on every request."""
    cond = AlertInstance.tenant == bindparam("tenant")
    if whole:
        cond = or_(
            cond, and_(AlertInstance.tenant.is_(None), AlertInstance.cluster.in_(bindparam("whole", expanding=True)))
        )
    if in_clusters:
        cond = and_(cond, AlertInstance.cluster.in_(bindparam("clusters", expanding=True)))
    return cond


class AlertOwner(Protocol):
    """Whom instances belong to: the instances labelled with ``name``, and the unlabelled ones on the clusters it owns
    whole. A ``TenantConfig`` is one; ``Owner`` is one for a name alone."""

    name: str
    whole_clusters: Sequence[str]


@dataclass(frozen=True)
class Owner:
    name: str
    whole_clusters: tuple[str, ...] = ()


def tenant_alerts_filter(cfg: AlertOwner, clusters: set[str] | None = None) -> tuple[Any, dict]:
    """The clause selecting ``cfg``'s instances (on ``clusters`` only, if given) and its parameters."""
    whole = sorted(set(cfg.whole_clusters) & clusters if clusters is not None else set(cfg.whole_clusters))
    params: dict = {"tenant": cfg.name}
    if whole:
        params["whole"] = whole
    if clusters is not None:
        params["clusters"] = sorted(clusters)
    return _tenant_alerts_clause(whole=bool(whole), in_clusters=clusters is not None), params


_REASON_COLUMNS = (
    AlertInstance.rule,
    AlertInstance.state,
    AlertInstance.severity,
    AlertInstance.cluster,
    AlertInstance.broker,
    AlertInstance.labels,
    AlertInstance.annotations,
    AlertInstance.evidence,
)


@cache
def _firing_query(cond):
    return select(*_REASON_COLUMNS).where(AlertInstance.state == AlertState.FIRING.value, cond)


def firing_reasons(db_session: Session, cond, params: dict | None = None) -> list:
    """Firing instances as plain rows with just what ``assess`` reads: Core on the session's connection, no ORM
    identity work on the hot path."""
    return list(db_session.connection().execute(_firing_query(cond), params or {}))


class FiringRow(NamedTuple):
    """A firing instance as ``assess`` reads it (``firing_reasons``' columns)."""

    rule: str
    state: str
    severity: str
    cluster: str | None
    broker: str | None
    labels: dict[str, Any] | None
    annotations: dict[str, Any] | None
    evidence: dict[str, Any] | None


def _json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class FiringIndex:
    """Every firing instance, read in one query and split by owner: ``of(owner)`` holds in memory what
    ``firing_reasons(db, *tenant_alerts_filter(owner))`` reads, the rows labelled with the owner's name and the
    unlabelled ones on the clusters it owns whole, and nothing else. Rows are kept as read, their JSON columns as
    text: cheap to read and to compare; ``decode`` turns one owner's into ``FiringRow``s when they are needed."""

    def __init__(self, rows: Iterable[Any]):
        self._labelled: dict[str, list[Any]] = {}
        self._unlabelled: dict[str, list[Any]] = {}  # cluster -> rows without a tenant
        for r in rows:
            if r.tenant is None:
                self._unlabelled.setdefault(r.cluster, []).append(r)
            else:
                self._labelled.setdefault(r.tenant, []).append(r)

    def of(self, owner: AlertOwner) -> list[Any]:
        rows = list(self._labelled.get(owner.name, ()))
        for cluster in sorted(set(owner.whole_clusters)):
            rows += self._unlabelled.get(cluster, ())
        return rows

    @staticmethod
    def decode(rows: Iterable[Any]) -> list[FiringRow]:
        return [
            FiringRow(
                r.rule,
                r.state,
                r.severity,
                r.cluster,
                r.broker,
                _json(r.labels),
                _json(r.annotations),
                _json(r.evidence),
            )
            for r in rows
        ]


# The JSON columns as text (a CAST, so PostgreSQL's driver does not decode them either): 6,000 rows decoded took most
# of the read, and most owners' rows are only compared with the previous evaluation's.
_ALL_FIRING = select(
    AlertInstance.tenant,
    *(c for c in _REASON_COLUMNS if c.key not in ("labels", "annotations", "evidence")),
    *(cast(c, Text).label(c.key) for c in (AlertInstance.labels, AlertInstance.annotations, AlertInstance.evidence)),
).where(AlertInstance.state == AlertState.FIRING.value)


def read_firing(db_session: Session, *, cap: int) -> FiringIndex | None:
    """Every firing instance in one query, or None when there are more than ``cap``: then the caller reads each
    owner's own (``firing_reasons``) rather than hold them all."""
    rows = db_session.connection().execute(_ALL_FIRING.limit(cap + 1)).all()
    return FiringIndex(rows) if len(rows) <= cap else None


def list_instances(
    *, session: Session, tenant: AlertOwner | None, state: AlertState | None, after: str | None, limit: int
) -> list[AlertInstance]:
    """The one query for "alert instances", every tenant's (``tenant=None``, operators) or one tenant's (the same set
    ``tenant_alerts_filter`` gives its health): in ``state``, else every state but inactive; keyset-paged on the
    fingerprint, which stays stable while the engine adds and resolves instances between pages."""
    q = select(AlertInstance)
    params: dict = {}
    if tenant is not None:
        cond, params = tenant_alerts_filter(tenant)
        q = q.where(cond)
    q = (
        q.where(AlertInstance.state == state.value)
        if state
        else q.where(AlertInstance.state != AlertState.INACTIVE.value)
    )
    if after is not None:
        q = q.where(AlertInstance.fingerprint > after)
    return list(session.scalars(q.order_by(AlertInstance.fingerprint).limit(limit), params))


def to_instance(row: AlertInstance) -> Instance:
    return Instance(
        rule=row.rule,
        labels=dict(row.labels or {}),
        state=AlertState(row.state),
        severity=Severity(row.severity),
        annotations=dict(row.annotations or {}),
        evidence=dict(row.evidence or {}),
        value=row.value,
        active_at=row.active_at,
        fired_at=row.fired_at,
        resolved_at=row.resolved_at,
        keep_firing_since=row.keep_firing_since,
        last_evaluated_at=row.last_evaluated_at,
        notified_state=AlertState(row.notified_state) if row.notified_state else None,
        last_sent_at=row.last_sent_at,
        muted_by=row.muted_by,
    )


def _fill(row: AlertInstance, inst: Instance) -> None:
    row.rule, row.state, row.severity = inst.rule, inst.state.value, inst.severity.value
    row.cluster, row.broker, row.tenant = (
        inst.labels.get("cluster"),
        inst.labels.get("broker"),
        inst.labels.get("tenant"),
    )
    row.labels, row.annotations, row.evidence, row.value = inst.labels, inst.annotations, inst.evidence, inst.value
    row.active_at, row.fired_at, row.resolved_at = inst.active_at, inst.fired_at, inst.resolved_at
    row.keep_firing_since, row.last_evaluated_at = inst.keep_firing_since, inst.last_evaluated_at
    row.notified_state = inst.notified_state.value if inst.notified_state else None
    row.last_sent_at, row.muted_by = inst.last_sent_at, inst.muted_by


def load_instances(*, session: Session) -> dict[str, Instance]:
    return {r.fingerprint: to_instance(r) for r in session.scalars(select(AlertInstance))}


def save_instances(instances: dict[str, Instance], deleted: Iterable[str], *, session: Session) -> None:
    existing = {r.fingerprint: r for r in session.scalars(select(AlertInstance))}
    for fp, inst in instances.items():
        row = existing.get(fp)
        if row is None:
            row = AlertInstance(fingerprint=fp)
            session.add(row)
        _fill(row, inst)
    gone = [fp for fp in deleted if fp in existing]
    if gone:
        session.execute(delete(AlertInstance).where(AlertInstance.fingerprint.in_(gone)))


def prune_resolved(older_than: datetime, *, session: Session) -> int:
    res = session.execute(
        delete(AlertInstance).where(
            AlertInstance.state == AlertState.RESOLVED.value, AlertInstance.resolved_at < older_than
        )
    )
    return res.rowcount or 0


def upsert_heartbeat(cluster: str, at: datetime, data_ok: bool, detail: str, *, session: Session) -> None:
    row = session.get(EngineHeartbeat, cluster)
    if row is None:
        row = EngineHeartbeat(cluster=cluster)
        session.add(row)
    row.evaluated_at, row.data_ok, row.detail = at, data_ok, detail[:500]


# ------------------------------------------------------------------------------------------------ silences


def create_silence(
    matchers: list[dict],
    starts_at: datetime,
    ends_at: datetime,
    *,
    created_by: str,
    comment: str,
    tenant: str | None,
    now: datetime,
    session: Session,
) -> Silence:
    row = Silence(
        id=str(uuid.uuid4()),
        matchers=matchers,
        starts_at=starts_at,
        ends_at=ends_at,
        created_by=created_by,
        comment=comment,
        tenant=tenant,
        created_at=now,
    )
    session.add(row)
    session.flush()
    return row


def list_silences(
    *,
    session: Session,
    tenant: str | None = None,
    all_tenants: bool = True,
    limit: int = 100,
    after_id: str | None = None,
) -> list[Silence]:
    """Silences ordered by id (keyset pagination: ``after_id`` is the last id of the previous page)."""
    q = select(Silence).order_by(Silence.id)
    if not all_tenants:
        q = q.where(Silence.tenant == tenant)
    if after_id:
        q = q.where(Silence.id > after_id)
    return list(session.scalars(q.limit(limit)))


def get_silence(silence_id: str, *, session: Session) -> Silence:
    row = session.get(Silence, silence_id)
    if row is None:
        raise NotFound("silence not found")
    return row


def expire_silence(silence_id: str, *, now: datetime, session: Session) -> Silence:
    row = get_silence(silence_id, session=session)
    if row.ends_at > now:
        row.ends_at = now
    row.expired_at = row.expired_at or now
    return row


def active_silences(now: datetime, *, session: Session) -> list[SilenceView]:
    rows = session.scalars(select(Silence).where(Silence.ends_at > now))
    return [
        SilenceView(r.id, tuple(Matcher.from_dict(m) for m in r.matchers), r.starts_at, r.ends_at, r.tenant)
        for r in rows
    ]


def count_unexpired_silences(tenant: str, *, now: datetime, session: Session) -> int:
    """The tenant's silences that are active or pending at ``now`` (what MAX_ACTIVE_SILENCES_PER_TENANT caps)."""
    return (
        session.scalar(select(func.count()).select_from(Silence).where(Silence.tenant == tenant, Silence.ends_at > now))
        or 0
    )


# ------------------------------------------------------------------------------------------------ outbox


def enqueue(
    target: str, fingerprint: str, group_key: str, kind: str, payload: dict, *, now: datetime, session: Session
) -> None:
    if kind == "refresh":
        # A refresh only matters if nothing for this alert is already waiting for the target.
        waiting = session.scalar(
            select(OutboxEntry.id).where(OutboxEntry.target == target, OutboxEntry.fingerprint == fingerprint).limit(1)
        )
        if waiting is not None:
            return
    session.add(
        OutboxEntry(
            target=target,
            fingerprint=fingerprint,
            group_key=group_key,
            kind=kind,
            payload=payload,
            attempts=0,
            next_attempt_at=now,
            created_at=now,
        )
    )


def due_groups(now: datetime, *, session: Session, limit: int = 500) -> list[tuple[str, str]]:
    """The (target, group key) pairs with rows due, the group holding the oldest row first."""
    rows = session.execute(
        select(OutboxEntry.target, OutboxEntry.group_key)
        .where(OutboxEntry.next_attempt_at <= now)
        .group_by(OutboxEntry.target, OutboxEntry.group_key)
        .order_by(func.min(OutboxEntry.id))
        .limit(limit)
    )
    return [(r[0], r[1]) for r in rows]


def claim_group(target: str, group_key: str, now: datetime, *, session: Session, limit: int = 500) -> list[OutboxEntry]:
    """Lock the due rows of one (target, group key) for this transaction, row by row ``FOR UPDATE SKIP LOCKED``: rows
    another engine is sending are skipped, never sent twice. If any due row of the group is taken, nothing is claimed
    (sending the rest would reorder the group: a resolve before its firing). SQLite has one writer and ignores the
    clause."""
    due = (OutboxEntry.target == target, OutboxEntry.group_key == group_key, OutboxEntry.next_attempt_at <= now)
    rows = list(
        session.scalars(
            select(OutboxEntry).where(*due).order_by(OutboxEntry.id).limit(limit).with_for_update(skip_locked=True)
        )
    )
    total = int(session.scalar(select(func.count()).select_from(OutboxEntry).where(*due)) or 0)
    return rows if len(rows) >= min(total, limit) else []


def outbox_depth(*, session: Session) -> int:
    from sqlalchemy import func

    return int(session.scalar(select(func.count()).select_from(OutboxEntry)) or 0)


def dead_letter_count(*, session: Session) -> int:
    from sqlalchemy import func

    return int(session.scalar(select(func.count()).select_from(DeadLetter)) or 0)


def delivered(ids: list[int], *, session: Session) -> None:
    if ids:
        session.execute(delete(OutboxEntry).where(OutboxEntry.id.in_(ids)))


def failed(
    ids: list[int],
    error: str,
    *,
    recoverable: bool,
    now: datetime,
    max_attempts: int,
    base_backoff: float,
    max_backoff: float,
    session: Session,
) -> int:
    """Record a failed attempt: retry later with exponential backoff, or move to dead letters. Returns how many died."""
    died = 0
    for row in session.scalars(select(OutboxEntry).where(OutboxEntry.id.in_(ids))):
        row.attempts += 1
        row.last_error = error[:2000]
        if not recoverable or row.attempts >= max_attempts:
            session.add(
                DeadLetter(
                    target=row.target,
                    fingerprint=row.fingerprint,
                    group_key=row.group_key,
                    kind=row.kind,
                    payload=row.payload,
                    attempts=row.attempts,
                    created_at=row.created_at,
                    dead_at=now,
                    last_error=row.last_error,
                )
            )
            session.delete(row)
            died += 1
        else:
            row.next_attempt_at = now + timedelta(seconds=backoff(row.attempts, base_backoff, max_backoff))
    return died


def backoff(attempts: int, base: float, cap: float) -> float:
    """Seconds before retry number ``attempts`` (1-based): base, 2*base, 4*base... capped."""
    return min(cap, base * 2 ** (attempts - 1))


def replay_dead_letters(*, now: datetime, session: Session, target: str | None = None) -> int:
    q = select(DeadLetter).order_by(DeadLetter.id)
    if target:
        q = q.where(DeadLetter.target == target)
    n = 0
    for row in session.scalars(q):
        session.add(
            OutboxEntry(
                target=row.target,
                fingerprint=row.fingerprint,
                group_key=row.group_key,
                kind=row.kind,
                payload=row.payload,
                attempts=0,
                next_attempt_at=now,
                created_at=row.created_at,
                last_error=row.last_error,
            )
        )
        session.delete(row)
        n += 1
    return n
