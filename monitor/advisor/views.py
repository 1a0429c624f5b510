"""``GET /api/v1/tenants/{tenant}/advice`` and ``GET /api/v1/clusters/{cluster}/capacity``. Views only translate.

Visibility is the tenants router's (reused, not repeated): a tenant token asking about another tenant, or about a
cluster it is not on, gets the same 404 as for one that does not exist. On capacity a tenant token sees only its own
row, never cluster-wide totals (they describe the other tenants' usage), and may only grow itself in a what-if.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from alerts.prom import PrometheusSource
from monitor.advisor import service
from monitor.api.deps import AppConfig, CurrentPrincipal, DbSession, Now
from monitor.errors import Invalid
from monitor.tenants import service as tenant_service
from monitor.tenants.views import ClusterName, TenantName, _cluster_scope, _tenant_row

router = APIRouter(prefix="/api/v1", tags=["advisor"])

WINDOW = service.WINDOW


def _source(config) -> PrometheusSource:
    return PrometheusSource(config.prometheus.url, timeout=config.prometheus.timeout_seconds)


@router.get("/tenants/{tenant}/advice", summary="What this tenant's clients should change, with evidence")
def tenant_advice(name: TenantName, db_session: DbSession, config: AppConfig, now: Now,
                  window: Annotated[str, Query(pattern=WINDOW, description="look-back window, e.g. 10m")] = "10m"
                  ) -> dict:
    tenant = _tenant_row(db_session, name).to_config()
    tenants = tenant_service.get_all_configs(db_session=db_session)
    db_session.close()  # nothing more from the database: do not hold a connection while Prometheus answers
    source = _source(config)
    try:
        return service.tenant_advice(source=source, tenant=tenant, tenants=tenants, now=now, window=window)
    finally:
        source.close()


@router.get("/clusters/{cluster}/capacity",
            summary="Capacity plan: storage per tenant, time to full, partitions, thread headroom; what-if")
def cluster_capacity(
    cluster: ClusterName, principal: CurrentPrincipal, db_session: DbSession, config: AppConfig, now: Now,
    grow: Annotated[list[str] | None, Query(max_length=20, description="what-if TENANT:FACTOR, e.g. shop:3")] = None,
    add: Annotated[list[str] | None,
                   Query(max_length=20, description="what-if new tenant NAME:MB_PER_S:DAYS[:PARTITIONS]")] = None,
    window: Annotated[str, Query(pattern=WINDOW, description="look-back window, e.g. 1h")] = "1h",
) -> dict:
    own = _cluster_scope(db_session, principal, cluster)
    tenants = tenant_service.get_all_configs(db_session=db_session)
    db_session.close()
    scenario = service.parse_scenario(grow or (), add or ())
    on_cluster = {t.name for t in tenants if cluster in service.clusters_of(t)}
    for name, _ in scenario.grow:
        if own is not None and name != own.name:
            raise Invalid("a tenant token can only grow its own tenant", field="grow")
        if name not in on_cluster:
            raise Invalid(f"no tenant {name!r} on this cluster", field="grow")
    source = _source(config)
    try:
        return service.cluster_capacity(source=source, cluster=cluster, tenants=tenants, now=now,
                                        only_tenant=own.name if own is not None else None, window=window,
                                        scenario=scenario)
    finally:
        source.close()
