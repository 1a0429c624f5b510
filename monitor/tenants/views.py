"""Tenant endpoints (list, create, read, replace, delete) and the cluster list. Views only translate: fetch, call the
service, map None to 404 (``monitor.tenants.scope`` decides what a token may see).

Threading, on purpose: the path's tenant (or cluster) is checked for visibility by an ``async`` dependency that does
no I/O, and the row is fetched once, inside the endpoint (a plain ``def``, run in the thread pool) together with the
request's other queries. So a request makes one hop to the pool, and never holds a database connection across hops:
with the lookup in a dependency of its own, requests parked between hops held pooled connections while the threads
that could finish them waited for one (bench/api.py, 32 concurrent clients, froze the server).

Health and alert answers, which read the alert engine's instances, are ``monitor.health.views``.
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from pydantic import BaseModel

from monitor.core.api.deps import (
    AppConfig,
    CurrentPrincipal,
    DbSession,
    Now,
    OperatorPrincipal,
)
from monitor.core.api.pagination import Page, PagingParams, page_in_memory, page_of
from monitor.tenants import service
from monitor.tenants.models import TenantCreate, TenantRead, TenantSpec
from monitor.tenants.scope import TenantName, principal_tenant, tenant_row

router = APIRouter(prefix="/api/v1", tags=["tenants"])
clusters_router = APIRouter(prefix="/api/v1", tags=["clusters"])


@router.get("/tenants", response_model=Page[TenantRead], summary="List tenants (a tenant token sees only its own)")
def list_tenants(principal: CurrentPrincipal, db_session: DbSession, paging: PagingParams) -> Page[TenantRead]:
    rows = service.get_page(db_session=db_session, after=paging.after, limit=paging.limit + 1,
                            only=None if principal.is_operator else principal.tenant)
    return page_of(rows, paging, key=lambda r: r.name, convert=TenantRead.of)


@router.post("/tenants", response_model=TenantRead, status_code=201, summary="Create a tenant (operator)")
def create_tenant(tenant_in: TenantCreate, _: OperatorPrincipal, db_session: DbSession, config: AppConfig,
                  now: Now) -> TenantRead:
    cfg = tenant_in.to_config(tenant_in.name)
    row = service.create(db_session=db_session, tenant_in=cfg, clusters=[c.name for c in config.clusters], now=now)
    return TenantRead.of(row)


@router.get("/tenants/{tenant}", response_model=TenantRead, summary="One tenant's definition")
def get_tenant(name: TenantName, db_session: DbSession) -> TenantRead:
    return TenantRead.of(tenant_row(db_session, name))


@router.put("/tenants/{tenant}", response_model=TenantRead,
            summary="Replace an API tenant's definition (operator; config tenants are read-only)")
def update_tenant(name: TenantName, tenant_in: TenantSpec, _: OperatorPrincipal, db_session: DbSession,
                  config: AppConfig, now: Now) -> TenantRead:
    tenant = tenant_row(db_session, name)
    row = service.update(db_session=db_session, tenant=tenant, tenant_in=tenant_in.to_config(tenant.name),
                         clusters=[c.name for c in config.clusters], now=now)
    return TenantRead.of(row)


@router.delete("/tenants/{tenant}", status_code=204, response_class=Response,
               summary="Delete an API tenant and its tokens (operator)")
def delete_tenant(name: TenantName, _: OperatorPrincipal, db_session: DbSession) -> Response:
    service.delete(db_session=db_session, tenant=tenant_row(db_session, name))
    return Response(status_code=204)


class ClusterRead(BaseModel):
    name: str
    brokers: list[int]
    whole: bool  # for a tenant token: whether the tenant owns the whole cluster; operators: always true


@clusters_router.get("/clusters", response_model=Page[ClusterRead], summary="Clusters (a tenant sees those it is on)")
def list_clusters(principal: CurrentPrincipal, db_session: DbSession, config: AppConfig,
                  paging: PagingParams) -> Page[ClusterRead]:
    own = principal_tenant(principal, db_session)
    visible = [c for c in config.clusters if own is None or c.name in service.clusters_of(own)]
    return page_in_memory(
        visible, paging, key=lambda c: c.name,
        convert=lambda c: ClusterRead(name=c.name, brokers=[b.id for b in c.brokers],
                                      whole=own is None or c.name in own.whole_clusters),
    )


def routers() -> list[APIRouter]:
    return [router, clusters_router]
