"""REST: ``GET /api/v1/tenants/{tenant}/reports`` (paginated) and ``.../reports/{week}`` (JSON, or HTML on
``Accept: text/html``). A tenant principal asking for another tenant's reports gets 404, as if they did not exist."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse

from monitor.api.principal import Principal, current_principal
from monitor.errors import NotFound
from monitor.reports import service

router = APIRouter(prefix="/api/v1", tags=["reports"])


def _visible(principal: Principal, tenant: str) -> None:
    if not principal.can_see(tenant):
        raise NotFound(f"no reports for tenant {tenant!r}")


def _lake(request: Request) -> Path:
    return Path(request.app.state.config.lake.path)


@router.get("/tenants/{tenant}/reports")
def list_reports(tenant: str, request: Request, limit: int = Query(20, ge=1, le=200), offset: int = Query(0, ge=0),
                 principal: Principal = Depends(current_principal)) -> dict:
    _visible(principal, tenant)
    with request.app.state.store.session() as s:
        rows, total = service.list_reports(db_session=s, tenant=tenant, limit=limit, offset=offset)
    items = [{"tenant": r.tenant, "week": r.week, "status": r.status, "problems": r.problems,
              "generated_at": r.generated_at.isoformat(),
              "url": f"/api/v1/tenants/{r.tenant}/reports/{r.week}"} for r in rows]
    return {"items": items, "total": total, "limit": limit, "offset": offset}


@router.get("/tenants/{tenant}/reports/{week}", response_model=None)
def get_report(tenant: str, week: str, request: Request,
               principal: Principal = Depends(current_principal)) -> JSONResponse | HTMLResponse:
    _visible(principal, tenant)
    with request.app.state.store.session() as s:
        row = service.get_report(db_session=s, tenant=tenant, week=week)
    if row is None:
        raise NotFound(f"no report for tenant {tenant!r} and week {week!r}")
    want_html = "text/html" in request.headers.get("accept", "")
    path = _lake(request) / (row.html_path if want_html else row.json_path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        raise NotFound(f"report {week} of {tenant!r} is indexed but its file is gone from the lake") from None
    if want_html:
        return HTMLResponse(text)
    return JSONResponse(json.loads(text))
