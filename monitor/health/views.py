"""Health answers: a tenant's or a cluster's health and its brokers' status. Each reads
the alert engine's instances and heartbeats and judges them with the pure ``monitor.tenants.health.assess``.

Tenant health, the endpoint clients poll, is an ``async`` endpoint answered from ``AnswerMemo`` while the store's
change marks stand still (``monitor.health.watch``): no thread hop, no query. After a new evaluation every polled
tenant misses once. Such a miss is computed on the event loop from what the server already holds: the marks'
heartbeats, their firing instances (``Marks.firing``, read once per evaluation for all tenants), the tenant's
definition and the Prometheus parts as remembered. No I/O, no thread hop. Only when one of these is not in memory
(a new registry version, a Prometheus part due again, more firing instances than the watch holds, marks that cannot
be read) does the miss make one hop that reads the tenant, the heartbeats and then its firing instances. Concurrent
misses of one tenant under the same marks then make one hop together (``OneMiss``). A hop reads the store as it is,
which may be newer than the marks (the watch re-reads them every 0.25 s): until the marks catch up, that tenant's
misses hop again rather than answer from the older marks, which would send a client an older answer after a newer
one (``AnswerMemo.ahead_of``).

Before, each miss made that hop: 0.35 ms of CPU per tenant (0.52 with the hop), 1,000 tenants at once after each
evaluation, and requests queued behind that burst for 0.9-6.2 s at 80 % of the rate (bench/api.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import anyio
import anyio.to_thread
from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field, TypeAdapter
from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from alerts.models import AlertInstance, EngineHeartbeat
from alerts.repo import firing_reasons, tenant_alerts_filter
from collectors.capabilities import capability_table, configured_sources
from monitor.core.api.deps import AppConfig, CurrentPrincipal, DbSession, Now
from monitor.core.api.pagination import Page, PagingParams, page_in_memory
from monitor.core.api.schema import UtcDatetime
from monitor.core.config import BrokerTarget, Config, TenantConfig
from monitor.core.errors import KafkaHealthError, NotFound
from monitor.core.prom import Source, prometheus_source
from monitor.core.store import Store
from monitor.core.times import as_utc
from monitor.health.share_groups import Row as ShareGroupRow
from monitor.health.share_groups import ShareGroupBoard, ShareGroupRead, tenant_share_groups
from monitor.health.slo import Availability, SloBoard, TenantSloRead, tenant_slo
from monitor.health.streams_groups import Row as StreamsGroupRow
from monitor.health.streams_groups import StreamsGroupBoard, StreamsGroupRead, tenant_streams_groups
from monitor.health.watch import AnswerMemo, Beat, Marks, read_heartbeats
from monitor.tenants import service
from monitor.tenants.health import (
    Component,
    HealthStatus,
    assess,
    data_gap,
    steady_until,
)
from monitor.tenants.scope import (
    TENANT_NOT_FOUND,
    ClusterName,
    TenantName,
    cluster_scope,
)

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api/v1", tags=["tenants"])
clusters_router = APIRouter(prefix="/api/v1", tags=["clusters"])


def _stale_after(config: Config) -> timedelta:
    # Three missed evaluation cycles: one late cycle is jitter, three mean the engine is not evaluating.
    return timedelta(seconds=3 * config.rules.evaluation_interval_seconds)


def _heartbeats(db_session: Session, clusters: set[str]) -> dict[str, EngineHeartbeat]:
    if not clusters:
        return {}
    rows = db_session.scalars(select(EngineHeartbeat).where(EngineHeartbeat.cluster.in_(sorted(clusters))))
    return {r.cluster: r for r in rows}


class TenantHealth(BaseModel):
    tenant: str
    status: HealthStatus
    score: int = Field(ge=0, le=100)
    as_of: UtcDatetime
    components: list[Component]
    slo: TenantSloRead = Field(
        description=(
            "the tenant's availability objective, the SLO window, its availability over the window and the error "
            "budget left (docs/alerts.md, 'Tenant SLOs')"
        )
    )
    share_groups: list[ShareGroupRead] | None = Field(
        default=None,
        description=(
            "the tenant's share groups (KIP-932) with the status and records waiting the collectors last exported; "
            "empty on clusters without share groups, null when Prometheus did not answer"
        ),
    )
    streams_groups: list[StreamsGroupRead] | None = Field(
        default=None,
        description=(
            "the tenant's Kafka Streams groups (KIP-1071, group.protocol=streams) with the state, members and lag the "
            "collectors last exported; empty when it has none, null when Prometheus did not answer"
        ),
    )


@router.get(
    "/tenants/{tenant}/health",
    response_model=TenantHealth,
    operation_id="getTenantHealth",
    summary="Is this tenant's Kafka healthy, and if not, why (with evidence)",
)
async def tenant_health(name: TenantName, request: Request, config: AppConfig, now: Now) -> Response:
    """The tenant's health now: a status (ok, degraded, critical, unknown when its data is stale) and a score
    from 0 to 100, with each affected component (cluster, broker, topic, client, group) and the firing alerts
    that make it so, their severity, summary and evidence. Built from the alert engine's state, never from
    another tenant's details."""
    state = request.app.state
    marks = state.store_watch.current()  # before anything is read: see AnswerMemo.put
    body = state.health_memo.get(name, marks, now)
    if body is None:
        body = _from_memory(state, name, marks, config, now)
    if body is None:
        # Under the same marks a second miss of this tenant waits for the first's hop instead of making its own.
        key = None if marks is None else (name, marks.registry, marks.heartbeats)
        body = await _one_miss(state).run(
            key,
            lambda: anyio.to_thread.run_sync(
                _tenant_health_json,
                state.store,
                state.health_memo,
                name,
                marks,
                config,
                now,
                _slo_board(state),
                _share_board(state),
                _streams_board(state),
                limiter=_miss_limiter(state),
            ),
        )
    return Response(body, media_type="application/json")


class OneMiss:
    """Concurrent computations of one key (a tenant under one set of marks) made once: the first caller computes,
    the others wait for its answer or its error. A ``None`` key is never shared. Event-loop only (no lock)."""

    def __init__(self) -> None:
        self._running: dict[Hashable, asyncio.Future[bytes]] = {}

    async def run(self, key: Hashable, compute: Callable[[], Awaitable[bytes]]) -> bytes:
        running = self._running.get(key) if key is not None else None
        if running is not None:
            try:
                return await asyncio.shield(running)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not running.cancelled() or (task is not None and task.cancelling()):
                    raise  # this request was cancelled, not the first one
            # the first request was cancelled (its client left): compute it here
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        if key is not None:
            self._running[key] = future
        try:
            body = await compute()
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: a failure no one else waited for is not logged as never retrieved
            raise
        except BaseException:
            future.cancel()
            raise
        else:
            future.set_result(body)
            return body
        finally:
            if key is not None and self._running.get(key) is future:
                del self._running[key]


def _one_miss(state) -> OneMiss:
    misses = getattr(state, "health_misses", None)
    if misses is None:
        misses = state.health_misses = OneMiss()
    return misses


def _miss_limiter(state) -> anyio.CapacityLimiter:
    # Misses that read the store (after a registry change every tenant's does) may come all at once; 32 threads
    # computing together spent more CPU passing the GIL around than computing. A few at a time, the rest wait their
    # turn (created here: it needs the event loop).
    limiter = getattr(state, "health_miss_limiter", None)
    if limiter is None:
        limiter = state.health_miss_limiter = anyio.CapacityLimiter(4)
    return limiter


def _slo_board(state) -> SloBoard:
    board = getattr(state, "slo_board", None)
    if board is None:
        board = state.slo_board = SloBoard()
    return board


def _share_board(state) -> ShareGroupBoard:
    board = getattr(state, "share_board", None)
    if board is None:  # remembered one evaluation interval: an answer is recomputed after each evaluation
        board = state.share_board = ShareGroupBoard(ttl=state.config.rules.evaluation_interval_seconds)
    return board


def _streams_board(state) -> StreamsGroupBoard:
    board = getattr(state, "streams_board", None)
    if board is None:  # remembered one evaluation interval, as the share groups
        board = state.streams_board = StreamsGroupBoard(ttl=state.config.rules.evaluation_interval_seconds)
    return board


def _from_memory(state, name: str, marks: Marks | None, config: Config, now: datetime) -> bytes | None:
    """The answer from what this server holds, on the event loop; None when any part is not in memory (then the
    caller reads the store in a thread). Never waits: no query, no Prometheus, no lock held by another."""
    if marks is None or marks.firing is None:
        return None
    known, cfg = state.health_memo.known_input(name, marks)
    if not known:
        return None
    if not isinstance(cfg, TenantConfig):  # remembered as not existing under these marks
        raise NotFound(TENANT_NOT_FOUND)
    if state.health_memo.ahead_of(name, marks):  # the last answer read the store after these marks: read it again
        return None
    slo_known, availability = _slo_board(state).remembered(config)
    share_known, share_rows = _share_board(state).remembered()
    streams_known, streams_rows = _streams_board(state).remembered()
    if not (slo_known and share_known and streams_known):
        return None
    return _answer(
        state.health_memo,
        name,
        cfg,
        marks,
        marks.heartbeats,  # read before marks.firing: the order the store path keeps
        marks.firing.of(cfg),
        config,
        now,
        (availability, share_rows, streams_rows),
        decode=marks.firing.decode,
    )


def _tenant_health_json(
    store: Store,
    memo: AnswerMemo,
    name: str,
    marks: Marks | None,
    config: Config,
    now,
    slo_board: SloBoard,
    share_board: ShareGroupBoard,
    streams_board: StreamsGroupBoard,
) -> bytes:
    with store.session() as s:
        cfg = memo.input(name, marks, lambda: service.get_config(db_session=s, name=name))
        if cfg is None:
            raise NotFound(TENANT_NOT_FOUND)
        # Heartbeats before instances: the answer is at least as new as the heartbeats it is remembered under.
        beats = read_heartbeats(s)
        firing = firing_reasons(s, *tenant_alerts_filter(cfg))
    prometheus = (  # after the store: no session held
        slo_board.availability(config, now),
        share_board.rows(config, now),
        streams_board.rows(config, now),
    )
    return _answer(memo, name, cfg, marks, beats, firing, config, now, prometheus)


@dataclass(frozen=True, eq=False)
class Basis:
    """What a tenant's answer is computed from, but for the time of the evaluation. Under new marks (a new evaluation)
    an answer with the same basis and no stale heartbeat is the previous answer's bytes with only ``as_of`` moved
    (``restamp``): ``assess`` reads a heartbeat's time only for ``as_of`` and staleness, and nothing else here moves.
    So after an evaluation a tenant whose firing instances, heartbeat verdicts and Prometheus parts did not change
    costs a comparison, not an assessment and a serialization. Compared by ``same``: the definition, the config and
    the Prometheus parts by identity (remembered objects, replaced when they change), the rest by value."""

    cfg: TenantConfig
    config: Config
    firing: list[Any]
    # per cluster of the tenant: (cluster, has a heartbeat, its data_ok, its detail)
    verdicts: tuple[tuple[str, bool, bool, str], ...]
    prometheus: tuple[object, object, object]
    as_of: datetime | None  # the answer's as_of (None: not steady); not compared

    def same(self, other: object) -> bool:
        return (
            isinstance(other, Basis)
            and other.cfg is self.cfg
            and other.config is self.config
            and all(a is b for a, b in zip(other.prometheus, self.prometheus))
            and other.verdicts == self.verdicts
            and other.firing == self.firing
        )


_AS_OF_FIELD = b'"as_of":'
_AS_OF_JSON = TypeAdapter(UtcDatetime)


def restamp(body: bytes, old: datetime, new: datetime) -> bytes | None:
    """Pure: ``body`` (a serialized ``TenantHealth``) with its ``as_of`` moved from ``old`` to ``new``; None if its
    ``as_of`` is not ``old``. The top-level field is the first one: only the tenant's name, status and score precede
    it, none of which can hold it."""
    was = _AS_OF_FIELD + _AS_OF_JSON.dump_json(old)
    at = body.find(was)
    if at < 0 or body.find(_AS_OF_FIELD) != at:
        return None
    return body[:at] + _AS_OF_FIELD + _AS_OF_JSON.dump_json(new) + body[at + len(was) :]


def _answer(
    memo: AnswerMemo,
    name: str,
    cfg: TenantConfig,
    marks: Marks | None,
    beats: tuple[Beat, ...],
    firing: list[Any],
    config: Config,
    now: datetime,
    prometheus: tuple[Availability | None, list[ShareGroupRow] | None, list[StreamsGroupRow] | None],
    *,
    decode: Callable[[list[Any]], list[Any]] | None = None,
) -> bytes:
    """Pure but for ``memo``: the serialized answer from its inputs, remembered under ``marks`` and ``beats``; the
    previous answer re-stamped when its ``Basis`` is the same (see there). ``firing`` as given is compared with the
    previous basis; ``decode`` (if any) makes it what ``assess`` reads, only when it must run."""
    availability, share_rows, streams_rows = prometheus
    clusters = service.clusters_of(cfg)
    by_cluster = {b.cluster: b for b in beats}
    stale_after = _stale_after(config)
    until = steady_until(clusters=clusters, heartbeats=by_cluster, now=now, stale_after=stale_after)
    verdicts = tuple(
        (c, True, b.data_ok, b.detail) if (b := by_cluster.get(c)) is not None else (c, False, False, "")
        for c in sorted(clusters)
    )
    # Steady (``until``): a heartbeat for some of the tenant's clusters and none stale; as_of is then the oldest.
    as_of = min(as_utc(b.evaluated_at) for c in clusters if (b := by_cluster.get(c)) is not None) if until else None
    basis = Basis(cfg, config, firing, verdicts, prometheus, as_of)
    body = None
    last = memo.last(name) if marks is not None else None
    if as_of is not None and last is not None and isinstance(last.basis, Basis) and basis.same(last.basis):
        body = restamp(last.body, last.basis.as_of, as_of) if last.basis.as_of is not None else None
    if body is None:
        rows = decode(firing) if decode is not None else firing
        result = assess(clusters=clusters, firing=rows, heartbeats=by_cluster, now=now, stale_after=stale_after)
        body = (
            TenantHealth(
                tenant=cfg.name,
                status=result.status,
                score=result.score,
                as_of=result.as_of,
                components=result.components,
                slo=tenant_slo(cfg, clusters, availability, config),
                share_groups=tenant_share_groups(cfg.name, clusters, share_rows),
                streams_groups=tenant_streams_groups(cfg.name, clusters, streams_rows),
            )
            .model_dump_json()
            .encode()
        )
    if marks is not None:
        memo.put(name, registry=marks.registry, heartbeats=beats, body=body, until=until, basis=basis)
    return body


class NotObservable(BaseModel):
    """Catalog signals no configured source of the cluster gives, and what would enable one (kafka-health sources)."""

    enable: str
    signals: list[str]


class ClusterHealth(BaseModel):
    cluster: str
    status: HealthStatus
    score: int = Field(ge=0, le=100)
    as_of: UtcDatetime
    components: list[Component]
    sources: list[str] = Field(default_factory=list, description="the sources the cluster's config turns on")
    not_observable: list[NotObservable] = Field(
        default_factory=list,
        description=(
            "what this health cannot see on the cluster: no alert judges these signals (collectors.capabilities)"
        ),
    )


def _not_observable(config: Config, cluster: str) -> tuple[list[str], list[NotObservable]]:
    try:
        c = config.cluster(cluster)
    except KeyError:  # a cluster known to the store only: nothing to say from the config
        return [], []
    groups: dict[str, list[str]] = {}
    for cap in capability_table(c):
        if not cap.observable:
            groups.setdefault(cap.hint(), []).append(cap.signal)
    return list(configured_sources(c)), [NotObservable(enable=h, signals=s) for h, s in groups.items()]


def _cluster_firing(db_session: Session, cluster: str, own: TenantConfig | None) -> list:
    if own is None:
        return firing_reasons(db_session, AlertInstance.cluster == bindparam("cluster"), {"cluster": cluster})
    return firing_reasons(db_session, *tenant_alerts_filter(own, {cluster}))


@clusters_router.get(
    "/clusters/{cluster}/health",
    response_model=ClusterHealth,
    operation_id="getClusterHealth",
    summary="A cluster's health (for a tenant token: its slice of the cluster)",
)
def cluster_health(
    cluster: ClusterName, principal: CurrentPrincipal, db_session: DbSession, config: AppConfig, now: Now
) -> ClusterHealth:
    """The cluster's status and score with the components its firing alerts name. An operator sees every alert
    of the cluster; a tenant token only those attributed to its tenant (404 for a cluster it is not on)."""
    own = cluster_scope(db_session, principal, cluster)
    result = assess(
        clusters={cluster},
        firing=_cluster_firing(db_session, cluster, own),
        heartbeats=_heartbeats(db_session, {cluster}),
        now=now,
        stale_after=_stale_after(config),
    )
    sources, blind = _not_observable(config, cluster)
    return ClusterHealth(
        cluster=cluster,
        status=result.status,
        score=result.score,
        as_of=result.as_of,
        components=result.components,
        sources=sources,
        not_observable=blind,
    )


class BrokerRead(BaseModel):
    id: int
    host: str
    status: HealthStatus
    alerts: list[str]  # names of firing alerts on this broker (for a tenant: those attributed to it)


@clusters_router.get(
    "/clusters/{cluster}/brokers",
    response_model=Page[BrokerRead],
    operation_id="listClusterBrokers",
    summary="The cluster's brokers (configured, and discovered ones), with their latest known status",
)
def cluster_brokers(
    cluster: ClusterName,
    principal: CurrentPrincipal,
    db_session: DbSession,
    config: AppConfig,
    now: Now,
    paging: PagingParams,
) -> Page[BrokerRead]:
    """Each configured broker with its host, a status from the alerts firing on it (unknown when the cluster's
    data is stale) and those alerts' names; for a tenant token, only the alerts attributed to its tenant."""
    own = cluster_scope(db_session, principal, cluster)
    gap = data_gap(cluster, _heartbeats(db_session, {cluster}).get(cluster), now=now, stale_after=_stale_after(config))
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
    return page_in_memory(_brokers(config, cluster, now), paging, key=lambda b: f"{b.id:010d}", convert=convert)


# How long a discovered broker stays listed after its last kafka_cluster_broker_up sample (an unregistered broker's
# series end; one that is down keeps them, at 0).
DISCOVERED_LOOKBACK = "5m"


def _brokers(config: Config, cluster: str, now: datetime) -> list[BrokerTarget]:
    """The configured brokers and, on a cluster that discovers its brokers (collectors.discovery), those its
    collectors expect: from Prometheus, ``kafka_cluster_broker_up`` of the last ``DISCOVERED_LOOKBACK`` (host from
    the protocol's log-dir series). Prometheus failing leaves the configured ones, said in the log."""
    c = config.cluster(cluster)
    if not c.discovers:
        return list(c.brokers)
    try:
        found = discovered_brokers(prometheus_source(config.prometheus), cluster, now)
    except KafkaHealthError as exc:
        log.warning("cluster %s: discovered brokers not read from Prometheus: %s", cluster, exc)
        found = {}
    listed = {b.id: b for b in c.brokers}
    return [*listed.values(), *(BrokerTarget(id=i, host=h) for i, h in sorted(found.items()) if i not in listed)]


def discovered_brokers(source: Source, cluster: str, now: datetime) -> dict[int, str]:
    """Node id -> host of the brokers the collectors of ``cluster`` expected lately (host "" where unknown)."""
    sel = f'{{cluster="{cluster}"}}'  # a cluster name is [a-z0-9_.-]: safe inside the quotes
    up = source.query(f"max by (broker) (last_over_time(kafka_cluster_broker_up{sel}[{DISCOVERED_LOOKBACK}]))", now)
    hosts = source.query(
        f"max by (broker, host) (last_over_time(kafka_host_filesystem_size_bytes{sel}[{DISCOVERED_LOOKBACK}]))", now
    )
    host_of = {s.labels.get("broker", ""): s.labels.get("host", "") for s in hosts}
    return {int(b): host_of.get(b, "") for b in (s.labels.get("broker", "") for s in up) if b.isdigit()}


def routers() -> list[APIRouter]:
    return [router, clusters_router]
