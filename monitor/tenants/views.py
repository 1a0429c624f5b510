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


@router.get(
    "/tenants",
    response_model=Page[TenantRead],
    operation_id="listTenants",
    summary="List tenants (a tenant token sees only its own)",
)
def list_tenants(principal: CurrentPrincipal, db_session: DbSession, paging: PagingParams) -> Page[TenantRead]:
    """Every tenant, from the configuration file and from the API alike, by name, a page at a time: selectors,
    contract (quotas, storage budget, retention), receivers, and where it was defined."""
    rows = service.get_page(
        db_session=db_session,
        after=paging.after,
        limit=paging.limit + 1,
        only=None if principal.is_operator else principal.tenant,
    )
    return page_of(rows, paging, key=lambda r: r.name, convert=TenantRead.of)


@router.post(
    "/tenants",
    response_model=TenantRead,
    status_code=201,
    operation_id="createTenant",
    summary="Create a tenant (operator)",
)
def create_tenant(
    tenant_in: TenantCreate, _: OperatorPrincipal, db_session: DbSession, config: AppConfig, now: Now
) -> TenantRead:
    """Create a tenant from its definition: whole clusters and selectors (topic, principal, client-id and group
    prefixes), contract and receivers. Every component follows within one cycle, without a restart. 409 when
    the name exists or a selector overlaps another tenant's; a re-used name inherits nothing."""
    cfg = tenant_in.to_config(tenant_in.name)
    row = service.create(db_session=db_session, tenant_in=cfg, clusters=[c.name for c in config.clusters], now=now)
    return TenantRead.of(row)


@router.get("/tenants/{tenant}", response_model=TenantRead, operation_id="getTenant", summary="One tenant's definition")
def get_tenant(name: TenantName, db_session: DbSession) -> TenantRead:
    """The tenant's definition as stored. A tenant token may read its own only (404 for any other name)."""
    return TenantRead.of(tenant_row(db_session, name))


@router.put(
    "/tenants/{tenant}",
    response_model=TenantRead,
    operation_id="replaceTenant",
    summary="Replace an API tenant's definition (operator; config tenants are read-only)",
)
def update_tenant(
    name: TenantName, tenant_in: TenantSpec, _: OperatorPrincipal, db_session: DbSession, config: AppConfig, now: Now
) -> TenantRead:
    """Replace the whole definition of a tenant created through the API. A tenant from the configuration file
    answers 409 (change the file instead), and so do selectors that overlap another tenant's."""
    tenant = tenant_row(db_session, name)
    row = service.update(
        db_session=db_session,
        tenant=tenant,
        tenant_in=tenant_in.to_config(tenant.name),
        clusters=[c.name for c in config.clusters],
        now=now,
    )
    return TenantRead.of(row)


@router.delete(
    "/tenants/{tenant}",
    status_code=204,
    response_class=Response,
    operation_id="deleteTenant",
    summary="Delete an API tenant and its tokens (operator)",
)
def delete_tenant(name: TenantName, _: OperatorPrincipal, db_session: DbSession) -> Response:
    """Delete a tenant created through the API with its tokens, alert instances, silences and report index, so a
    tenant created again under the same name inherits nothing. A tenant from the configuration file answers 409
    (remove it from the file)."""
    service.delete(db_session=db_session, tenant=tenant_row(db_session, name))
    return Response(status_code=204)


class ClusterRead(BaseModel):
    name: str
    brokers: list[int]
    whole: bool  # for a tenant token: whether the tenant owns the whole cluster; operators: always true


@clusters_router.get(
    "/clusters",
    response_model=Page[ClusterRead],
    operation_id="listClusters",
    summary="Clusters (a tenant sees those it is on)",
)
def list_clusters(
    principal: CurrentPrincipal, db_session: DbSession, config: AppConfig, paging: PagingParams
) -> Page[ClusterRead]:
    """The configured clusters with their broker ids. For a tenant token: only the clusters it has data on, and
    whether it owns each whole or a slice of it."""
    own = principal_tenant(principal, db_session)
    visible = [c for c in config.clusters if own is None or c.name in service.clusters_of(own)]
    return page_in_memory(
        visible,
        paging,
        key=lambda c: c.name,
        convert=lambda c: ClusterRead(
            name=c.name, brokers=[b.id for b in c.brokers], whole=own is None or c.name in own.whole_clusters
        ),
    )


def routers() -> list[APIRouter]:
    return [router, clusters_router]
