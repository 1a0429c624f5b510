"""Tenant and cluster endpoints. Views only translate: fetch, call the service or the pure health function, map
None to 404. A tenant token asking for any other tenant gets the same 404 as for a tenant that does not exist, with
a message that names nothing.

Threading, on purpose: the path's tenant (or cluster) is checked for visibility by an ``async`` dependency that does
no I/O, and the row is fetched once, inside the endpoint (a plain ``def``, run in the thread pool) together with the
request's other queries. So a request makes one hop to the pool, and never holds a database connection across hops:
with the lookup in a dependency of its own, requests parked between hops held pooled connections while the threads
that could finish them waited for one (bench/api.py, 32 concurrent clients, froze the server).

Tenant health, the endpoint clients poll, is an ``async`` endpoint answered from ``AnswerMemo`` while the store's
change marks stand still (``monitor.api.watch``): no thread hop, no query. A miss makes one hop that reads the
tenant, the heartbeats and then the firing instances, and remembers the serialized answer.
"""

from __future__ import annotations

from datetime import timedelta
from functools import lru_cache
from typing import Annotated, Any

import anyio
import anyio.to_thread
from fastapi import APIRouter, Depends, Path, Query, Request, Response
from pydantic import BaseModel, Field
from sqlalchemy import and_, bindparam, or_, select
from sqlalchemy.orm import Session

from alerts.models import AlertInstance, AlertState, EngineHeartbeat
from monitor.core.api.deps import AppConfig, CurrentPrincipal, DbSession, Now, OperatorPrincipal
from monitor.core.api.pagination import Page, PagingParams, page_in_memory, page_of
from monitor.core.api.principal import Principal
from monitor.api.watch import AnswerMemo, Marks, read_heartbeats
from monitor.core.config import Config, TenantConfig
from monitor.core.errors import NotFound
from monitor.core.store import Store
from monitor.tenants import service
from monitor.tenants.health import Component, HealthStatus, UtcDatetime, assess, data_gap, steady_until
from monitor.tenants.models import Tenant, TenantCreate, TenantRead, TenantSpec

router = APIRouter(prefix="/api/v1", tags=["tenants"])
clusters_router = APIRouter(prefix="/api/v1", tags=["clusters"])

TENANT_NOT_FOUND = "tenant not found"
CLUSTER_NOT_FOUND = "cluster not found"


async def _visible_tenant(
    tenant: Annotated[str, Path(max_length=64, description="tenant name")],
    principal: CurrentPrincipal,
) -> str:
    """The tenant named in the path, if this token may see it; else the same 404 as for a tenant that does not exist.

    Visibility is decided before existence, so "not yours" and "does not exist" are indistinguishable.
    """
    if not principal.can_see(tenant):
        raise NotFound(TENANT_NOT_FOUND)
    return tenant


TenantName = Annotated[str, Depends(_visible_tenant)]


def _tenant_row(db_session: Session, name: str) -> Tenant:
    row = service.get(db_session=db_session, name=name)
    if row is None:
        raise NotFound(TENANT_NOT_FOUND)
    return row


def _stale_after(config: Config) -> timedelta:
    # Three missed evaluation cycles: one late cycle is jitter, three mean the engine is not evaluating.
    return timedelta(seconds=3 * config.rules.evaluation_interval_seconds)


def _heartbeats(db_session: Session, clusters: set[str]) -> dict[str, EngineHeartbeat]:
    if not clusters:
        return {}
    rows = db_session.scalars(select(EngineHeartbeat).where(EngineHeartbeat.cluster.in_(sorted(clusters))))
    return {r.cluster: r for r in rows}


@lru_cache(maxsize=None)
def _tenant_alerts_clause(*, whole: bool, in_clusters: bool):
    """A tenant's instances: labelled with it, or unlabelled on a cluster it owns whole (all of it is theirs).

    Built once per shape with bound parameters (``tenant``, ``whole``, ``clusters``): SQLAlchemy then reuses the
    statement's cache key and compiled SQL instead of rebuilding them on every request."""
    cond = AlertInstance.tenant == bindparam("tenant")
    if whole:
        cond = or_(cond, and_(AlertInstance.tenant.is_(None),
                              AlertInstance.cluster.in_(bindparam("whole", expanding=True))))
    if in_clusters:
        cond = and_(cond, AlertInstance.cluster.in_(bindparam("clusters", expanding=True)))
    return cond


def _tenant_alerts_filter(cfg: TenantConfig, clusters: set[str] | None = None) -> tuple[Any, dict]:
    """The clause selecting ``cfg``'s instances (on ``clusters`` only, if given) and its parameters."""
    whole = sorted(set(cfg.whole_clusters) & clusters if clusters is not None else set(cfg.whole_clusters))
    params: dict = {"tenant": cfg.name}
    if whole:
        params["whole"] = whole
    if clusters is not None:
        params["clusters"] = sorted(clusters)
    return _tenant_alerts_clause(whole=bool(whole), in_clusters=clusters is not None), params


_REASON_COLUMNS = (AlertInstance.rule, AlertInstance.state, AlertInstance.severity, AlertInstance.cluster,
                   AlertInstance.broker, AlertInstance.labels, AlertInstance.annotations, AlertInstance.evidence)


@lru_cache(maxsize=None)
def _firing_query(cond):
    return select(*_REASON_COLUMNS).where(AlertInstance.state == AlertState.FIRING.value, cond)


def _firing(db_session: Session, cond, params: dict | None = None) -> list:
    """Firing instances as plain rows with just what ``assess`` reads: Core on the session's connection, no ORM
    identity work on the hot path."""
    return list(db_session.connection().execute(_firing_query(cond), params or {}))


# ---------------------------------------------------------------------------------------------------------------
# Tenants


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
    return TenantRead.of(_tenant_row(db_session, name))


@router.put("/tenants/{tenant}", response_model=TenantRead,
            summary="Replace an API tenant's definition (operator; config tenants are read-only)")
def update_tenant(name: TenantName, tenant_in: TenantSpec, _: OperatorPrincipal, db_session: DbSession,
                  config: AppConfig, now: Now) -> TenantRead:
    tenant = _tenant_row(db_session, name)
    row = service.update(db_session=db_session, tenant=tenant, tenant_in=tenant_in.to_config(tenant.name),
                         clusters=[c.name for c in config.clusters], now=now)
    return TenantRead.of(row)


@router.delete("/tenants/{tenant}", status_code=204, response_class=Response,
               summary="Delete an API tenant and its tokens (operator)")
def delete_tenant(name: TenantName, _: OperatorPrincipal, db_session: DbSession) -> Response:
    service.delete(db_session=db_session, tenant=_tenant_row(db_session, name))
    return Response(status_code=204)


class TenantHealth(BaseModel):
    tenant: str
    status: HealthStatus
    score: int = Field(ge=0, le=100)
    as_of: UtcDatetime
    components: list[Component]


@router.get("/tenants/{tenant}/health", response_model=TenantHealth,
            summary="Is this tenant's Kafka healthy, and if not, why (with evidence)")
async def tenant_health(name: TenantName, request: Request, config: AppConfig, now: Now) -> Response:
    state = request.app.state
    marks = state.store_watch.current()  # before anything is read: see AnswerMemo.put
    body = state.health_memo.get(name, marks, now)
    if body is None:
        body = await anyio.to_thread.run_sync(_tenant_health_json, state.store, state.health_memo, name, marks,
                                              config, now, limiter=_miss_limiter(state))
    return Response(body, media_type="application/json")


def _miss_limiter(state) -> anyio.CapacityLimiter:
    # After a new evaluation every tenant misses at once; 32 threads computing together spent more CPU passing the
    # GIL around than computing. A few at a time, the rest wait their turn (created here: it needs the event loop).
    limiter = getattr(state, "health_miss_limiter", None)
    if limiter is None:
        limiter = state.health_miss_limiter = anyio.CapacityLimiter(4)
    return limiter


def _tenant_health_json(store: Store, memo: AnswerMemo, name: str, marks: Marks | None, config: Config,
                        now) -> bytes:
    with store.session() as s:
        cfg = memo.input(name, marks, lambda: service.get_config(db_session=s, name=name))
        if cfg is None:
            raise NotFound(TENANT_NOT_FOUND)
        # Heartbeats before instances: the answer is at least as new as the heartbeats it is remembered under.
        beats = read_heartbeats(s)
        firing = _firing(s, *_tenant_alerts_filter(cfg))
    clusters = service.clusters_of(cfg)
    by_cluster = {b.cluster: b for b in beats}
    stale_after = _stale_after(config)
    result = assess(clusters=clusters, firing=firing, heartbeats=by_cluster, now=now, stale_after=stale_after)
    body = TenantHealth(tenant=cfg.name, status=result.status, score=result.score, as_of=result.as_of,
                        components=result.components).model_dump_json().encode()
    if marks is not None:
        memo.put(name, registry=marks.registry, heartbeats=beats, body=body,
                 until=steady_until(clusters=clusters, heartbeats=by_cluster, now=now, stale_after=stale_after))
    return body


class AlertRead(BaseModel):
    fingerprint: str
    rule: str
    state: AlertState
    severity: str
    cluster: str | None
    broker: str | None
    tenant: str | None
    labels: dict
    annotations: dict
    evidence: dict
    value: float | None
    active_at: UtcDatetime | None
    fired_at: UtcDatetime | None
    resolved_at: UtcDatetime | None

    @classmethod
    def of(cls, row: AlertInstance) -> "AlertRead":
        return cls.model_validate(row, from_attributes=True)


@router.get("/tenants/{tenant}/alerts", response_model=Page[AlertRead], summary="This tenant's alert instances")
def tenant_alerts(
    name: TenantName,
    db_session: DbSession,
    paging: PagingParams,
    state: Annotated[AlertState | None, Query(description="only instances in this state")] = None,
) -> Page[AlertRead]:
    tenant = _tenant_row(db_session, name)
    cond, params = _tenant_alerts_filter(tenant.to_config())
    q = select(AlertInstance).where(cond)
    q = q.where(AlertInstance.state == state.value) if state else q.where(
        AlertInstance.state != AlertState.INACTIVE.value)
    if paging.after is not None:
        q = q.where(AlertInstance.fingerprint > paging.after)
    rows = list(db_session.scalars(q.order_by(AlertInstance.fingerprint).limit(paging.limit + 1), params))
    return page_of(rows, paging, key=lambda r: r.fingerprint, convert=AlertRead.of)


# ---------------------------------------------------------------------------------------------------------------
# Clusters: operators see all of every cluster; a tenant sees the clusters it is on, and only its slice of them.


def _principal_tenant(principal: Principal, db_session: Session) -> TenantConfig | None:
    if principal.is_operator:
        return None
    row = service.get(db_session=db_session, name=principal.tenant or "")
    if row is None:  # the tenant was deleted after the token was checked: it sees nothing
        raise NotFound(CLUSTER_NOT_FOUND)
    return row.to_config()


async def _visible_cluster(
    cluster: Annotated[str, Path(max_length=128, description="cluster name")],
    config: AppConfig,
) -> str:
    if cluster not in {c.name for c in config.clusters}:
        raise NotFound(CLUSTER_NOT_FOUND)
    return cluster


ClusterName = Annotated[str, Depends(_visible_cluster)]


def _cluster_scope(db_session: Session, principal: Principal, cluster: str) -> TenantConfig | None:
    """The tenant whose slice of ``cluster`` is shown (None: an operator sees everything); 404 if it is not on it."""
    own = _principal_tenant(principal, db_session)
    if own is not None and cluster not in service.clusters_of(own):
        raise NotFound(CLUSTER_NOT_FOUND)
    return own


class ClusterRead(BaseModel):
    name: str
    brokers: list[int]
    whole: bool  # for a tenant token: whether the tenant owns the whole cluster; operators: always true


@clusters_router.get("/clusters", response_model=Page[ClusterRead], summary="Clusters (a tenant sees those it is on)")
def list_clusters(principal: CurrentPrincipal, db_session: DbSession, config: AppConfig,
                  paging: PagingParams) -> Page[ClusterRead]:
    own = _principal_tenant(principal, db_session)
    visible = [c for c in config.clusters if own is None or c.name in service.clusters_of(own)]
    return page_in_memory(
        visible, paging, key=lambda c: c.name,
        convert=lambda c: ClusterRead(name=c.name, brokers=[b.id for b in c.brokers],
                                      whole=own is None or c.name in own.whole_clusters),
    )


class ClusterHealth(BaseModel):
    cluster: str
    status: HealthStatus
    score: int = Field(ge=0, le=100)
    as_of: UtcDatetime
    components: list[Component]


def _cluster_firing(db_session: Session, cluster: str, own: TenantConfig | None) -> list:
    if own is None:
        return _firing(db_session, AlertInstance.cluster == bindparam("cluster"), {"cluster": cluster})
    return _firing(db_session, *_tenant_alerts_filter(own, {cluster}))


@clusters_router.get("/clusters/{cluster}/health", response_model=ClusterHealth,
                     summary="A cluster's health (for a tenant token: its slice of the cluster)")
def cluster_health(cluster: ClusterName, principal: CurrentPrincipal, db_session: DbSession, config: AppConfig,
                   now: Now) -> ClusterHealth:
    own = _cluster_scope(db_session, principal, cluster)
    result = assess(
        clusters={cluster},
        firing=_cluster_firing(db_session, cluster, own),
        heartbeats=_heartbeats(db_session, {cluster}),
        now=now,
        stale_after=_stale_after(config),
    )
    return ClusterHealth(cluster=cluster, status=result.status, score=result.score, as_of=result.as_of,
                         components=result.components)


class BrokerRead(BaseModel):
    id: int
    host: str
    status: HealthStatus
    alerts: list[str]  # names of firing alerts on this broker (for a tenant: those attributed to it)


@clusters_router.get("/clusters/{cluster}/brokers", response_model=Page[BrokerRead],
                     summary="The cluster's brokers from the config, with their latest known status")
def cluster_brokers(cluster: ClusterName, principal: CurrentPrincipal, db_session: DbSession, config: AppConfig,
                    now: Now, paging: PagingParams) -> Page[BrokerRead]:
    own = _cluster_scope(db_session, principal, cluster)
    gap = data_gap(cluster, _heartbeats(db_session, {cluster}).get(cluster), now=now,
                   stale_after=_stale_after(config))
    by_broker: dict[str, list] = {}
    for a in _cluster_firing(db_session, cluster, own):
        broker = a.broker or (a.labels or {}).get("broker")
        if broker not in (None, ""):
            by_broker.setdefault(str(broker), []).append(a)

    def status_of(alerts: list) -> HealthStatus:
        if any(a.severity == "critical" for a in alerts):
            return HealthStatus.CRITICAL
        if gap is not None:
            return HealthStatus.UNKNOWN
        return HealthStatus.DEGRADED if alerts else HealthStatus.OK

    def convert(b) -> BrokerRead:
        alerts = by_broker.get(str(b.id), [])
        return BrokerRead(id=b.id, host=b.host, status=status_of(alerts), alerts=sorted({a.rule for a in alerts}))

    # Sort key zero-padded so the cursor order matches numeric order.
    return page_in_memory(config.cluster(cluster).brokers, paging, key=lambda b: f"{b.id:010d}", convert=convert)


def routers() -> list[APIRouter]:
    return [router, clusters_router]

