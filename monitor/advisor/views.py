"""``GET /api/v1/tenants/{tenant}/advice`` and ``GET /api/v1/clusters/{cluster}/capacity``. Views only translate.

Visibility is the tenants router's (reused, not repeated): a tenant token asking about another tenant, or about a
cluster it is not on, gets the same 404 as for one that does not exist. On capacity a tenant token sees only its own
row, never cluster-wide totals (they describe the other tenants' usage), and may only grow itself in a what-if.

Both answers cost some twenty Prometheus queries per cluster, so neither may let one tenant starve the rest:

- everything the caller chooses is bounded before any work: ``window`` (advice at most ``ADVICE_MAX_WINDOW``,
  capacity ``CAPACITY_MAX_WINDOW``; the subquery resolution is a tenth of it) and every what-if figure
  (``service.parse_scenario``): 422 naming the parameter;
- they are ``async`` and run their work through ``CostlyWork`` (``monitor.core.api.deps``): a few per token (429), a
  few per server on threads of their own (503 when none frees in time), a deadline (504); the Prometheus source stops
  querying at that deadline (``service.DeadlineSource``);
- advice answers are remembered per (tenant, window) for ``ADVICE_TTL_SECONDS`` while the registry version stands
  still (a tenant change answers afresh), so a dashboard polling advice costs Prometheus one answer per interval.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import Field

from monitor.advisor import service
from monitor.core.api.deps import AppConfig, Costly, CostlyWork, CurrentPrincipal, Now
from monitor.core.api.principal import Principal
from monitor.core.api.schema import IsoTime, Number, OpenModel
from monitor.core.config import Config
from monitor.core.errors import Invalid
from monitor.core.prom import PrometheusSource, prometheus_source
from monitor.core.store import Store
from monitor.tenants import service as tenant_service
from monitor.tenants.scope import ClusterName, TenantName, cluster_scope, tenant_row

router = APIRouter(prefix="/api/v1", tags=["advisor"])

WINDOW = service.WINDOW
ADVICE_TTL_SECONDS = 15.0
ADVICE_CACHE_ENTRIES = 512


# Response models: exactly the dicts monitor.advisor.service builds. Statuses and kinds stay plain strings, and extra
# keys pass through, so what the service adds (a finding kind, a cluster status, a figure) is answered, never refused
# with a 500 or dropped by the response model.


class ClusterStatusRead(OpenModel):
    cluster: str
    status: str = Field(description="ok | no_data (Prometheus holds none of the series) | unavailable (query failed)")
    message: str = Field(description="the reason when not ok; empty otherwise")


class FindingRead(OpenModel):
    kind: str = Field(description="poor_batching, request_storm, throttled_by_quota, ... (docs/advisor.md)")
    severity: str = Field(description="info | warning")
    cluster: str
    tenant: str | None
    client_id: str = Field(description="empty when Kafka cannot say which client (cluster-level evidence)")
    user: str
    group: str
    evidence: dict[str, Any] = Field(description="the figures behind the finding")
    metrics: list[str] = Field(description="the exported metrics the evidence comes from")
    cause: str
    fix: str = Field(description="the concrete setting(s) to change")
    suspects: list[str] = Field(description="clients that may cause a cluster-level finding (correlation)")
    hurts_other_tenants: bool = Field(
        description="the client's measured cost on shared broker threads is material: "
        "the finding pages (KafkaClientHurtsOtherTenants); otherwise advice only"
    )
    candidates: list[str] = Field(
        [],
        description="a tenant-and-topic finding whose culprit is not identified yet: "
        "the tenant's clients that may cause it (not a name)",
    )
    material: bool = True
    basis: str = Field(
        "",
        description="what the finding rests on, best first: client_telemetry (what the client "
        "pushed, KIP-714), topic_records_per_request (brokers' per-topic counts), thread_time_per_mib "
        "(request time relative to the cluster's other clients), client_software (KIP-511/KIP-896)",
    )


class TenantAdvice(OpenModel):
    tenant: str
    as_of: IsoTime
    window: str
    clusters: list[ClusterStatusRead] = Field(description="each cluster the tenant is on, and whether it could be read")
    findings: list[FindingRead]


class TenantPlanRead(OpenModel):
    """One tenant's row of a plan. Null figures: never at this rate, or no budget."""

    tenant: str
    bytes_in_per_second: Number | None
    stored_bytes: Number | None
    retention_seconds: Number | None
    replication_factor: Number | None
    steady_storage_bytes: Number | None
    budget_bytes: Number | None
    budget_full_in_seconds: Number | None


class PlanRead(OpenModel):
    """A plan as a tenant token sees it: its own row, no cluster-wide totals."""

    cluster: str
    replication_factor: Number | None
    tenants: list[TenantPlanRead]


class NewTenantRead(OpenModel):
    name: str
    bytes_in_per_second: Number
    retention_seconds: Number
    partitions: Number


class ScenarioRead(OpenModel):
    grow: dict[str, Number] = Field(description="tenant -> ingress factor")
    add: list[NewTenantRead]


class ClusterPlanRead(PlanRead):
    """A plan as an operator sees it: every tenant's row and the cluster-wide figures."""

    brokers: int
    disk_total_bytes: Number | None
    disk_used_bytes: Number | None
    steady_storage_bytes: Number | None
    disk_full_in_seconds: Number | None = Field(description="until log disks reach max_disk_fill; null: never")
    partitions_per_broker_max: Number
    leaders_per_broker_max: Number
    handler_headroom: Number | None = Field(description="load multiplier before the request-handler idle floor")
    network_headroom: Number | None
    brokers_needed: dict[str, int] = Field(description="brokers each constraint needs (absent: input missing)")
    brokers_required: int = Field(description="the largest of brokers_needed")
    missing: dict[str, str] = Field(
        default_factory=dict,
        description=("inputs with no series, and what could therefore not be computed (those figures are null)"),
    )
    limits: dict[str, Number]
    scenario: ScenarioRead


# The operator's shape first: it is the one with every field (pydantic tries union members left to right).
AnyPlan = Annotated[ClusterPlanRead | PlanRead, Field(union_mode="left_to_right")]


class ClusterCapacity(OpenModel):
    cluster: str
    as_of: IsoTime
    window: str
    status: str = Field(description="ok | no_data (no plan: no broker series) | unavailable (query failed)")
    message: str = Field(description="why there is no plan, or which inputs are missing from it; empty otherwise")
    plan: AnyPlan | None
    what_if: AnyPlan | None = Field(description="the plan with grow/add applied; null without a scenario")


def _source(config) -> PrometheusSource:
    return prometheus_source(config.prometheus)  # URL, timeout and basic auth as every component builds them


def _deadline_source(config: Config, costly: Costly) -> service.DeadlineSource:
    return service.DeadlineSource(_source(config), deadline=costly.deadline, clock=costly.clock)


def _advice_cache(state) -> service.AnswerCache:
    cache = getattr(state, "advice_cache", None)
    if cache is None:
        cache = state.advice_cache = service.AnswerCache(ttl=ADVICE_TTL_SECONDS, max_entries=ADVICE_CACHE_ENTRIES)
    return cache


def _advice(store: Store, config: Config, name: str, now, window: str, costly: Costly) -> dict:
    """On the gate's thread: the tenants from the store (connection handed back first), then Prometheus."""
    with store.session() as s:
        tenant = tenant_row(s, name).to_config()
        tenants = tenant_service.get_all_configs(db_session=s)
    source = _deadline_source(config, costly)
    try:
        return service.tenant_advice(source=source, tenant=tenant, tenants=tenants, now=now, window=window)
    finally:
        source.inner.close()


@router.get(
    "/tenants/{tenant}/advice",
    response_model=TenantAdvice,
    operation_id="getTenantAdvice",
    summary="What this tenant's clients should change, with evidence",
)
async def tenant_advice(
    name: TenantName,
    request: Request,
    config: AppConfig,
    now: Now,
    costly: CostlyWork,
    window: Annotated[
        str, Query(pattern=WINDOW, description=(f"look-back window, e.g. 10m; at most {service.ADVICE_MAX_WINDOW}"))
    ] = "10m",
) -> dict:
    """The client advisor's findings for the tenant's own clients over the window: each names the client, what
    its configuration costs the brokers (small batches, aggressive polling, ...), the metrics that show it, the
    likely cause and the settings to change. Other tenants' clients never appear. A costly request: it may
    answer 429 or 503 when the server is busy and 504 past its deadline (see Retry-After)."""
    service.check_window(window, most=service.ADVICE_MAX_WINDOW)
    state = request.app.state
    watch = getattr(state, "store_watch", None)
    marks = watch.current() if watch is not None else None  # before the store is read: see AnswerMemo.put
    cache = _advice_cache(state)
    if marks is not None and (hit := cache.get((name, window), marks.registry)) is not None:
        return hit
    try:
        answer = await costly.run(_advice, state.store, config, name, now, window, costly)
    except service.DeadlineExceeded:
        raise costly.deadline_passed() from None
    if marks is not None:
        cache.put((name, window), marks.registry, answer)
    return answer


def _capacity(
    store: Store, config: Config, principal: Principal, cluster: str, now, window: str, scenario, costly: Costly
) -> dict:
    with store.session() as s:
        own = cluster_scope(s, principal, cluster)
        tenants = tenant_service.get_all_configs(db_session=s)
    on_cluster = {t.name for t in tenants if cluster in service.clusters_of(t)}
    for name, _ in scenario.grow:
        if own is not None and name != own.name:
            raise Invalid("a tenant token can only grow its own tenant", field="grow")
        if name not in on_cluster:
            raise Invalid(f"no tenant {name!r} on this cluster", field="grow")
    source = _deadline_source(config, costly)
    try:
        return service.cluster_capacity(
            source=source,
            cluster=cluster,
            tenants=tenants,
            now=now,
            only_tenant=own.name if own is not None else None,
            window=window,
            scenario=scenario,
        )
    finally:
        source.inner.close()


# exclude_unset: a field with a default (plan.missing) is answered only when the service sets it, so the answer is the
# service's dict exactly.
@router.get(
    "/clusters/{cluster}/capacity",
    response_model=ClusterCapacity,
    response_model_exclude_unset=True,
    operation_id="getClusterCapacity",
    summary="Capacity plan: storage per tenant, time to full, partitions, thread headroom; what-if",
)
async def cluster_capacity(
    cluster: ClusterName,
    request: Request,
    principal: CurrentPrincipal,
    config: AppConfig,
    now: Now,
    costly: CostlyWork,
    grow: Annotated[
        list[str] | None,
        Query(max_length=20, description=("what-if TENANT:FACTOR, e.g. shop:3 (factor > 0, at most 1000)")),
    ] = None,
    add: Annotated[
        list[str] | None,
        Query(
            max_length=20,
            description=(
                "what-if new tenant NAME:MB_PER_S:DAYS[:PARTITIONS] (MB/s at most 100000, days at most 3650, "
                "partitions a whole number at most 1000000)"
            ),
        ),
    ] = None,
    window: Annotated[
        str, Query(pattern=WINDOW, description=(f"look-back window, e.g. 1h; at most {service.CAPACITY_MAX_WINDOW}"))
    ] = "1h",
) -> dict:
    """The cluster's capacity plan from its recent growth: storage per tenant and time until the disks are full,
    partitions per broker, request and network thread headroom; with `grow` and `add`, the same for a what-if
    scenario. A tenant token sees its own share of the cluster and may only grow its own tenant. A costly
    request: it may answer 429 or 503 when the server is busy and 504 past its deadline."""
    service.check_window(window, most=service.CAPACITY_MAX_WINDOW)
    scenario = service.parse_scenario(grow or (), add or ())  # refused before any work
    try:
        return await costly.run(
            _capacity, request.app.state.store, config, principal, cluster, now, window, scenario, costly
        )
    except service.DeadlineExceeded:
        raise costly.deadline_passed() from None
