"""REST: ``GET /api/v1/tenants/{tenant}/reports`` (paginated) and ``.../reports/{week}`` (JSON, or HTML on
``Accept: text/html``). A tenant principal asking for another tenant's reports gets 404, as if they did not exist."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, Field

from monitor.core.api.pagination import Page, PagingParams, page_of
from monitor.core.api.principal import Principal, current_principal
from monitor.core.api.schema import IsoTime, Number, OpenModel
from monitor.core.errors import NotFound
from monitor.core.times import iso_utc
from monitor.reports import service

router = APIRouter(prefix="/api/v1", tags=["reports"])


class ReportRead(BaseModel):
    """One row of the report index."""

    tenant: str
    week: str = Field(description="ISO week, e.g. 2026-W47")
    status: str = Field(description="ok | partial | no_data")
    problems: int = Field(description="how many problems the report names (missing or partial data)")
    generated_at: IsoTime
    url: str = Field(description="where the report itself is (JSON, or HTML with Accept: text/html)")


# The report documents (monitor.reports.document) as stored in the lake. Top-level fields are typed; the figures
# inside are open-ended tables, kept loose. Extra keys are allowed: a newer job may add sections.


class ReportPeriod(BaseModel):
    start: str = Field(description="first day (ISO date), a Monday")
    end: str = Field(description="the day after the last (ISO date)")


class Compared(OpenModel):
    """One figure of the week against the previous week and the mean of the four before."""

    this_week: Number | None
    previous_week: Number | None
    previous4_mean: Number | None
    previous4_weeks: Number | None
    growth_wow: Number | None = Field(description="this_week / previous_week - 1")
    vs_previous4: Number | None = Field(description="this_week / previous4_mean - 1")


class ReportAlerts(OpenModel):
    raised: Number
    firing_minutes: Number
    by_name: list[dict[str, Any]]


class _Report(OpenModel):
    version: int
    week: str
    period: ReportPeriod
    generated_at: IsoTime
    status: str = Field(description="ok | partial | no_data")
    problems: list[str] = Field(description="what is missing or partial, in words")


class TenantReport(_Report):
    kind: Literal["kafka-health/tenant-report"]
    tenant: str
    throughput: dict[str, Compared]
    storage: dict[str, Any]
    latency: dict[str, Compared]
    throttling: dict[str, Compared]
    consumer_lag: dict[str, Compared]
    alerts: ReportAlerts
    availability: dict[str, Any]
    slo: dict[str, Any] | None = Field(
        default=None,
        description=(
            "availability against the tenant's objective and the error budget burned, this week and per week "
            "(absent from reports written before tenant SLOs)"
        ),
    )
    noisiest_clients: list[dict[str, Any]]
    client_findings: list[dict[str, Any]]
    history: list[dict[str, Any]] = Field(description="this week and the four before, one row per week")
    daily: dict[str, list[Any]] = Field(description="per-day series over five weeks; `dates` names the days")


class OperatorReport(_Report):
    """The platform team's summary of the week, indexed under the tenant name ``_operator`` (operators only)."""

    kind: Literal["kafka-health/operator-report"]
    tenants: list[dict[str, Any]]
    clusters: list[dict[str, Any]]
    attention: list[str] = Field(description="what will run out first")


ReportDocument = Annotated[TenantReport | OperatorReport, Field(discriminator="kind")]


def _visible(principal: Principal, tenant: str) -> None:
    if not principal.can_see(tenant):
        raise NotFound("tenant not found")  # the same words for absent and foreign


def _lake(request: Request) -> Path:
    return Path(request.app.state.config.lake.path)


@router.get(
    "/tenants/{tenant}/reports",
    response_model=Page[ReportRead],
    operation_id="listTenantReports",
    summary="The tenant's weekly reports, newest week first",
)
def list_reports(
    tenant: str, request: Request, paging: PagingParams, principal: Principal = Depends(current_principal)
) -> Page:
    """The index of the tenant's weekly trend reports: ISO week, status, problems met while computing it, when
    it was generated, and the URL of the report itself. A tenant token sees its own tenant's only (404 for any
    other)."""
    _visible(principal, tenant)
    with request.app.state.store.session() as s:
        rows = service.list_reports(db_session=s, tenant=tenant, limit=paging.limit + 1, before_week=paging.after)
    return page_of(
        rows,
        paging,
        key=lambda r: r.week,
        convert=lambda r: {
            "tenant": r.tenant,
            "week": r.week,
            "status": r.status,
            "problems": r.problems,
            "generated_at": iso_utc(r.generated_at),
            "url": f"/api/v1/tenants/{r.tenant}/reports/{r.week}",
        },
    )


# The answer is sent as read from the lake (a Response: FastAPI does not re-validate it); the model documents it.
@router.get(
    "/tenants/{tenant}/reports/{week}",
    response_model=ReportDocument,
    responses={
        200: {
            "description": "The report: its JSON document, or with `Accept: text/html` the HTML page with charts",
            "content": {"text/html": {"schema": {"type": "string"}}},
        }
    },
    operation_id="getTenantReport",
    summary="One weekly report of the tenant, as JSON or HTML",
)
def get_report(
    tenant: str, week: str, request: Request, principal: Principal = Depends(current_principal)
) -> JSONResponse | HTMLResponse:
    """The tenant's report for an ISO week (`2026-W47`): throughput and growth, storage and weeks until full,
    latency, throttling, consumer lag, alerts and availability. JSON by default; the HTML page with charts when
    the request's `Accept` names `text/html`. 404 when no report of that week exists (or the tenant is not the
    token's)."""
    _visible(principal, tenant)
    with request.app.state.store.session() as s:
        row = service.get_report(db_session=s, tenant=tenant, week=week)
    if row is None:
        raise NotFound("report not found")
    want_html = "text/html" in request.headers.get("accept", "")
    path = _lake(request) / (row.html_path if want_html else row.json_path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        raise NotFound("report not found (indexed, but its file is gone from the lake)") from None
    if want_html:
        return HTMLResponse(text)
    return JSONResponse(json.loads(text))
