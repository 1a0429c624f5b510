"""REST routes of the alert engine: alerts and silences. Views only translate (query params -> repo calls,
rows -> JSON, missing or foreign -> NotFound); the tenant boundary is enforced here, once per route:
a tenant token sees only its tenant's alerts and silences, and anything else answers 404 as if it did not exist.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from alerts import repo
from alerts.models import AlertInstance, Silence
from alerts.mute import (
    MAX_ACTIVE_SILENCES_PER_TENANT,
    MAX_REGEX_LENGTH,
    PatternError,
    compile_regex,
)
from alerts.types import AlertState
from monitor.core.api.deps import CurrentPrincipal, DbSession, request_now
from monitor.core.api.pagination import Page, Paging, PagingParams, page_of
from monitor.core.api.principal import Principal, current_principal
from monitor.core.api.schema import IsoTime
from monitor.core.errors import Conflict, Invalid, NotFound
from monitor.core.times import as_utc, iso_utc
from monitor.tenants import service as tenant_service
from monitor.tenants.scope import TENANT_NOT_FOUND, TenantName

router = APIRouter(tags=["alerts"])
StateParam = Literal["firing", "pending", "resolved"]


class MatcherIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=128, pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")
    value: str = Field(max_length=1024)
    is_regex: bool = False
    is_equal: bool = True


class SilenceIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    matchers: list[MatcherIn] = Field(min_length=1, max_length=32)
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    duration_seconds: float | None = Field(default=None, gt=0, le=90 * 86400)
    comment: str = Field(default="", max_length=1000)


# Response models: exactly what alert_json and silence_json build (times as their isoformat strings).


class AlertInstanceRead(BaseModel):
    fingerprint: str
    alertname: str
    state: str = Field(description="inactive | pending | firing | resolved")
    severity: str = Field(description="warning | critical")
    cluster: str | None
    broker: str | None
    tenant: str | None
    labels: dict[str, Any]
    annotations: dict[str, Any] = Field(description="summary, description, runbook_url (absolute), runbook (docs path)")
    evidence: dict[str, Any] = Field(description="the values that made it fire")
    value: float | None
    active_at: IsoTime | None
    fired_at: IsoTime | None
    resolved_at: IsoTime | None
    muted_by: str | None = Field(description="what mutes it: silence:<id> or inhibited:<alertname>; null if nothing")


class MatcherRead(BaseModel):
    name: str
    value: str
    is_regex: bool
    is_equal: bool


class SilenceRead(BaseModel):
    id: str
    matchers: list[MatcherRead]
    starts_at: IsoTime
    ends_at: IsoTime
    created_by: str = Field(description="id of the token that created it (or the CLI author)")
    comment: str
    tenant: str | None = Field(description="the tenant it is confined to; null for an operator's silence")
    state: str = Field(description="pending | active | expired, at the time of the answer")


def _in_utc(dt: datetime | None, field: str) -> datetime | None:
    """A time from a request, in UTC: the store keeps times without their offset (SQLite), read back as UTC."""
    try:
        return as_utc(dt).astimezone(timezone.utc) if dt is not None else None
    except OverflowError:
        raise Invalid("out of range once converted to UTC", field=field) from None


def _iso(dt: datetime | None) -> str | None:
    return iso_utc(dt) if dt else None


def alert_json(row: AlertInstance) -> dict:
    return {
        "fingerprint": row.fingerprint,
        "alertname": row.rule,
        "state": row.state,
        "severity": row.severity,
        "cluster": row.cluster,
        "broker": row.broker,
        "tenant": row.tenant,
        "labels": row.labels,
        "annotations": row.annotations,
        "evidence": row.evidence,
        "value": row.value,
        "active_at": _iso(row.active_at),
        "fired_at": _iso(row.fired_at),
        "resolved_at": _iso(row.resolved_at),
        "muted_by": row.muted_by,
    }


def silence_json(row: Silence, now: datetime) -> dict:
    starts, ends = row.starts_at, row.ends_at
    state = "expired" if ends <= now else "active" if starts <= now else "pending"
    return {
        "id": row.id,
        "matchers": row.matchers,
        "starts_at": _iso(starts),
        "ends_at": _iso(ends),
        "created_by": row.created_by,
        "comment": row.comment,
        "tenant": row.tenant,
        "state": state,
    }


def _alerts_page(db_session: Session, tenant: str | None, state: StateParam | None, paging: Paging) -> Page:
    """``tenant=None``: every instance. A tenant: the instances its health is judged on (``repo.list_instances``)."""
    owner = None
    if tenant is not None:
        # A tenant deleted since its token was checked owns nothing but what is labelled with its name.
        owner = tenant_service.get_config(db_session=db_session, name=tenant) or repo.Owner(tenant)
    rows = repo.list_instances(
        session=db_session,
        tenant=owner,
        state=AlertState(state) if state else None,
        after=paging.after,
        limit=paging.limit + 1,
    )
    return page_of(rows, paging, key=lambda r: r.fingerprint, convert=alert_json)


@router.get(
    "/api/v1/alerts",
    response_model=Page[AlertInstanceRead],
    operation_id="listAlerts",
    summary="Alert instances (operators: every one; a tenant token: its tenant's)",
)
def list_alerts(
    db_session: DbSession, principal: CurrentPrincipal, paging: PagingParams, state: StateParam | None = None
) -> Page:
    """Pending, firing and resolved alert instances (resolved ones are kept 7 days), a page at a time. Each carries
    its labels, annotations (summary, description, runbook_url), evidence and state times. An operator token lists
    every instance; a tenant token lists its own tenant's only, with other tenants' clients scrubbed from labels
    and evidence."""
    return _alerts_page(db_session, None if principal.is_operator else principal.tenant, state, paging)


@router.get(
    "/api/v1/tenants/{tenant}/alerts",
    response_model=Page[AlertInstanceRead],
    operation_id="listTenantAlerts",
    summary="This tenant's alert instances (the same answer as /alerts with its token)",
)
def tenant_alerts(
    name: TenantName,
    db_session: DbSession,
    paging: PagingParams,
    state: Annotated[StateParam | None, Query(description="only instances in this state")] = None,
) -> Page:
    """The alert instances attributed to one tenant, optionally only those in one state. A tenant token may ask
    for its own tenant only: any other name answers 404, as an unknown one does."""
    if tenant_service.get(db_session=db_session, name=name) is None:
        raise NotFound(TENANT_NOT_FOUND)
    return _alerts_page(db_session, name, state, paging)


@router.post(
    "/api/v1/silences",
    status_code=201,
    response_model=SilenceRead,
    operation_id="createSilence",
    summary="Silence the alerts that match some labels for a while",
)
def create_silence(body: SilenceIn, request: Request, principal: Principal = Depends(current_principal)) -> dict:
    """Create a silence: label matchers (`=`, `!=`, `=~`, `!~`; regexes are RE2, fully matched, as in
    Alertmanager) and an end (`ends_at`, or `duration_seconds` from `starts_at`, default now). Matching alerts
    are still evaluated and listed, but not notified while it lasts. A tenant token's silence is confined to its
    own tenant (a `tenant` matcher naming another answers 404), and a tenant may hold a limited number at once
    (409). A silence that matches everything is refused (422)."""
    # Every refusal here is a 422 naming the field (the API's error contract), like the body's schema checks.
    now = request_now(request)
    starts = _in_utc(body.starts_at, "starts_at") or now
    if body.ends_at is not None:
        ends, end_field = _in_utc(body.ends_at, "ends_at"), "ends_at"
    elif body.duration_seconds is not None:
        end_field = "duration_seconds"
        try:
            ends = starts + timedelta(seconds=body.duration_seconds)
        except OverflowError:
            raise Invalid("starts_at plus duration_seconds is past the year 9999", field=end_field) from None
    else:
        raise Invalid("give ends_at or duration_seconds", field="ends_at")
    if ends <= starts:
        raise Invalid("the silence must end after it starts", field=end_field)
    if ends <= now:
        raise Invalid("the silence must end in the future", field=end_field)
    matchers = [m.model_dump() for m in body.matchers]
    for i, m in enumerate(matchers):
        if m["is_regex"]:
            # The engine's own compiler (RE2, Alertmanager's syntax): what is accepted here is what it runs.
            try:
                compile_regex(m["value"])
            except PatternError as exc:
                raise Invalid(
                    f"invalid regex (RE2 syntax, at most {MAX_REGEX_LENGTH} characters): {exc}",
                    field=f"matchers[{i}].value",
                ) from None
    tenant = None
    if not principal.is_operator:
        tenant = principal.tenant
        for m in matchers:
            if m["name"] == "tenant" and not (m["is_equal"] and not m["is_regex"] and m["value"] == tenant):
                raise NotFound(TENANT_NOT_FOUND)
        # A tenant's silence can only ever match its own alerts.
        matchers = [m for m in matchers if m["name"] != "tenant"] + [
            {"name": "tenant", "value": tenant, "is_regex": False, "is_equal": True}
        ]
    if all(m["value"] in ("", ".*") and (m["is_regex"] or not m["is_equal"]) for m in matchers):
        raise Invalid("a silence must match something specific", field="matchers")
    with request.app.state.store.session() as s:
        if tenant is not None:
            n = repo.count_unexpired_silences(tenant, now=now, session=s)
            if n >= MAX_ACTIVE_SILENCES_PER_TENANT:
                raise Conflict(
                    f"the tenant has {n} active or pending silences, the most allowed "
                    f"({MAX_ACTIVE_SILENCES_PER_TENANT}): expire some (DELETE /api/v1/silences/{{id}}) "
                    f"or widen one"
                )
        row = repo.create_silence(
            matchers,
            starts,
            ends,
            created_by=principal.token_id,
            comment=body.comment,
            tenant=tenant,
            now=now,
            session=s,
        )
        return silence_json(row, now)


@router.get(
    "/api/v1/silences",
    response_model=Page[SilenceRead],
    operation_id="listSilences",
    summary="Silences, active, pending and expired",
)
def list_silences(request: Request, paging: PagingParams, principal: Principal = Depends(current_principal)) -> Page:
    """Silences with their matchers, times and state (pending, active, expired), a page at a time. An operator
    token lists every silence; a tenant token lists its tenant's."""
    now = request_now(request)
    with request.app.state.store.session() as s:
        rows = repo.list_silences(
            session=s,
            tenant=principal.tenant,
            all_tenants=principal.is_operator,
            limit=paging.limit + 1,
            after_id=paging.after,
        )
        return page_of(rows, paging, key=lambda r: r.id, convert=lambda r: silence_json(r, now))


@router.delete(
    "/api/v1/silences/{silence_id}",
    response_model=SilenceRead,
    operation_id="expireSilence",
    summary="End a silence now",
)
def expire_silence(silence_id: str, request: Request, principal: Principal = Depends(current_principal)) -> dict:
    """Expire the silence (it is kept, expired, for the record) and answer it. Alerts it held back are notified
    at the next evaluation if they still fire. A tenant token may expire its tenant's silences only (404
    otherwise)."""
    now = request_now(request)
    with request.app.state.store.session() as s:
        row = repo.get_silence(silence_id, session=s)
        if not principal.is_operator and row.tenant != principal.tenant:
            raise NotFound("silence not found")
        return silence_json(repo.expire_silence(silence_id, now=now, session=s), now)
