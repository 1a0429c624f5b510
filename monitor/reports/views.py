"""REST: ``GET /api/v1/tenants/{tenant}/reports`` (paginated) and ``.../reports/{week}`` (JSON, or HTML on
``Accept: text/html``). A tenant principal asking for another tenant's reports gets 404, as if they did not exist."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse

from monitor.api.pagination import Page, PagingParams, page_of
from monitor.api.principal import Principal, current_principal
from monitor.errors import NotFound
from monitor.reports import service

router = APIRouter(prefix="/api/v1", tags=["reports"])


def _visible(principal: Principal, tenant: str) -> None:
    if not principal.can_see(tenant):
        raise NotFound("tenant not found")  # the same words for absent and foreign


def _lake(request: Request) -> Path:
    return Path(request.app.state.config.lake.path)


@router.get("/tenants/{tenant}/reports")
def list_reports(tenant: str, request: Request, paging: PagingParams,
                 principal: Principal = Depends(current_principal)) -> Page:
    _visible(principal, tenant)
    with request.app.state.store.session() as s:
        rows = service.list_reports(db_session=s, tenant=tenant, limit=paging.limit + 1, before_week=paging.after)
    return page_of(rows, paging, key=lambda r: r.week, convert=lambda r: {
        "tenant": r.tenant, "week": r.week, "status": r.status, "problems": r.problems,
        "generated_at": r.generated_at.isoformat(), "url": f"/api/v1/tenants/{r.tenant}/reports/{r.week}"})


@router.get("/tenants/{tenant}/reports/{week}", response_model=None)
def get_report(tenant: str, week: str, request: Request,
               principal: Principal = Depends(current_principal)) -> JSONResponse | HTMLResponse:
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
