"""``kafka-health serve``: API, collectors' exporter and alert engine in one process (``--role`` splits them).

This module only wires. Each role contributes a ``Component`` (start/stop/ready); the FastAPI app always serves
``/healthz`` (process alive), ``/readyz`` (every started component ready) and ``/metrics`` (this process's registry:
collector output and the service's own ``kafka_health_*`` metrics).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import os
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import uvicorn
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Gauge,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from sqlalchemy.engine import make_url

from alerts.component import AlertService
from collectors.component import CollectionService, shard_lease_name
from collectors.contract import TenantContractCollector
from monitor import __version__
from monitor.api.app import mount_api
from monitor.api.errors import error_response
from monitor.api.httpmetrics import RequestMetricsMiddleware, request_duration
from monitor.config_source import add_config_args, config_args, config_from_args, find_config
from monitor.core.api.principal import current_principal
from monitor.core.config import Config
from monitor.core.lease import Lease
from monitor.core.lifecycle import Component, stop_all
from monitor.core.store import Store
from monitor.core.tenancy import FixedTenants, Tenants
from monitor.reports.schedule import ReportScheduler, report_command
from monitor.store import open_store
from monitor.tenants.live import LiveTenants
from monitor.tenants.presence import ServicePresence
from monitor.tenants.service import ConfigOrigin

log = logging.getLogger(__name__)
ROLES = ("api", "collector", "alerts")
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def build_app(
    config: Config,
    roles: tuple[str, ...],
    *,
    registry: CollectorRegistry | None = None,
    report_args: list[str] | None = None,
    config_label: str = "",
) -> FastAPI:
    """The ASGI app for ``roles``. Components start on app startup and stop on shutdown.

    With ``config.reports.schedule`` set, the process serving the API also runs the weekly report at those times,
    as ``kafka-health report <report_args> --week W`` (``report_args`` say where the config is); each slot is
    claimed in the store first, so several API replicas on one store run it once.
    """
    registry = _process_registry(registry or CollectorRegistry(), roles)
    components: list[Component] = []
    app = FastAPI(
        title="kafka-health", version=__version__, docs_url="/docs", redoc_url=None, lifespan=_lifespan(components)
    )
    app.state.config = config
    app.state.registry = registry
    app.state.components = components
    _mount_store_and_api(app, config, roles, config_label)
    # Added last, so it runs first: requests the API's body limit, authentication and rate limit refuse count too.
    app.add_middleware(RequestMetricsMiddleware, duration=request_duration(registry))
    tenants = _live_tenants(app, config, registry)
    components += _components(config, roles, getattr(app.state, "store", None), registry, tenants, report_args)
    _add_probes(app, components, registry, roles)
    return app


def _process_registry(registry: CollectorRegistry, roles: tuple[str, ...]) -> CollectorRegistry:
    """The process's registry: its build info and prometheus-client's default collectors (process_*, python_info,
    python_gc_*), as on its global registry."""
    info = Gauge("kafka_health_build_info", "kafka-health version and roles", ["version", "roles"], registry=registry)
    info.labels(__version__, ",".join(roles)).set(1)
    for default in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        registry.register(default)
    return registry


def _lifespan(components: list[Component]):
    """Start ``components`` (as they are when the app starts) in order; stop them in reverse."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        for c in components:
            log.info("starting %s", c.name)
            c.start()
        try:
            yield
        finally:
            # Within STOP_BOUND_SECONDS whatever a component is doing; a busy one is named and abandoned (daemon
            # threads).
            stop_all(list(reversed(components)))

    return lifespan


def _mount_store_and_api(app: FastAPI, config: Config, roles: tuple[str, ...], config_label: str) -> None:
    """The store (migrated) where the API, the engine or a collector shard's lease needs it, and the API's routers
    and middleware."""
    if "api" in roles or "alerts" in roles or ("collector" in roles and config.collection.shard_lease):
        app.state.store = open_store(config.store)
        if "api" in roles:  # the config file's tenants into the store before anyone reads the set
            mount_api(
                app,
                config=config,
                store=app.state.store,
                origin=ConfigOrigin.of(config, config_label) if config_label else None,
            )


def _live_tenants(app: FastAPI, config: Config, registry: CollectorRegistry) -> Tenants:
    """One live tenant set for every component of the process: a tenant created or deleted through the API is
    labelled, attributed, routed and shown from the next round, cycle or scrape on, without a restart. Their
    contracts (quotas, budget) become series for the dashboards: config, not a measurement."""
    tenants = _tenant_set(config, getattr(app.state, "store", None))
    app.state.tenants = tenants
    registry.register(TenantContractCollector(tenants))
    return tenants


def _components(
    config: Config,
    roles: tuple[str, ...],
    store: Store | None,
    registry: CollectorRegistry,
    tenants: Tenants,
    report_args: list[str] | None,
) -> list[Component]:
    """What each role runs, in start order."""
    out: list[Component] = []
    if "collector" in roles:
        out.append(CollectionService(config, registry=registry, tenants=tenants, lease=_shard_lease(config, store)))
    if "alerts" in roles:
        out.append(AlertService(config, store=store, registry=registry, tenants=tenants))
    if "api" in roles:
        out.append(ServicePresence(store))
        if config.reports.schedule:
            out.append(
                ReportScheduler(
                    config.reports.schedule,
                    lake=Path(config.lake.path),
                    command=report_command(report_args or []),
                    registry=registry,
                    store=store,  # each slot claimed there: once across API replicas (issue 31)
                )
            )
    return out


def _shard_lease(config: Config, store: Store | None) -> Lease | None:
    """With ``collection.shard_lease``, the collector shard's lease: several processes of one shard, one collects."""
    if not config.collection.shard_lease or store is None:
        return None
    return Lease(
        store,
        interval_seconds=config.collection.interval_seconds,
        name=shard_lease_name(config.collection.shard),
    )


def _add_probes(app: FastAPI, components: list[Component], registry: CollectorRegistry, roles: tuple[str, ...]) -> None:
    """``/healthz`` (the process lives), ``/readyz`` (every component ready), ``/metrics`` (the registry)."""

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/readyz", include_in_schema=False)
    def readyz() -> JSONResponse:
        states = {c.name: c.ready() for c in components}
        ok = all(states.values())
        # A component of a pair says which member it is (the alert engine: active or standby, issue 31); a standby
        # is ready: it takes over by itself.
        roles_now = {c.name: role for c in components if isinstance(role := getattr(c, "role", None), str)}
        body: dict = {"ready": ok, "components": states, **({"roles": roles_now} if roles_now else {})}
        return JSONResponse(body, status_code=200 if ok else 503)

    @app.get("/metrics", include_in_schema=False)
    def metrics(request: Request) -> Response:
        # The exposition names tenants, their contracts, alert instances and client ids: where the API is served (and
        # tenant tokens exist) only an operator token reads it. A collector-only process has no API and no store;
        # its port is for Prometheus on the private network (docs/operations.md, "Who can read /metrics").
        # The API's auth middleware (mounted with the API) has already answered 401 to a missing or invalid token,
        # with its failed-authentication limits; what is left is who the token is.
        if "api" in roles and not current_principal(request).is_operator:
            return error_response(403, "this needs an operator token")
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def _tenant_set(config: Config, store: Store | None) -> Tenants:
    """The live tenant set on the process's store. A collector-only process opens the store only to read it (no
    migration); where the store is a SQLite file that does not exist, nothing was ever created through the API, so
    the config file's tenants are the set."""
    if store is None:
        url = make_url(config.store.url)
        if url.get_backend_name() == "sqlite" and not (url.database and Path(url.database).exists()):
            return FixedTenants(config.tenants)
        store = Store.from_settings(config.store)
    return LiveTenants(config, store)


def run(
    config: Config,
    roles: tuple[str, ...],
    host: str,
    port: int,
    *,
    stop_event: threading.Event | None = None,
    report_args: list[str] | None = None,
    config_label: str = "",
    workers: int = 1,
):
    if workers > 1:
        _run_workers(
            workers, host, port, lambda: build_app(config, roles, report_args=report_args, config_label=config_label)
        )
        return
    server = uvicorn.Server(
        _uvicorn_config(build_app(config, roles, report_args=report_args, config_label=config_label), host, port)
    )
    if stop_event is not None:  # embedded (demo): stop when asked
        threading.Thread(target=lambda: (stop_event.wait(), setattr(server, "should_exit", True)), daemon=True).start()
    log.info("kafka-health serving on http://%s:%d (roles: %s)", host, port, ",".join(roles))
    server.run()


def _uvicorn_config(app: FastAPI | None, host: str, port: int) -> uvicorn.Config:
    # Open requests get a few seconds on shutdown, not forever: the whole stop stays within the stated bound.
    # log_config=None: uvicorn's records go through the CLI's handler (its format, its redaction) instead of
    # handlers of uvicorn's own; no access log (kafka_health_http_request_duration_seconds counts requests).
    return uvicorn.Config(
        app,  # type: ignore[arg-type]  # None only to bind the socket in _run_workers, never served
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        log_config=None,
        timeout_graceful_shutdown=3,
    )


def _run_workers(workers: int, host: str, port: int, make_app: Callable[[], FastAPI]) -> None:
    """``--workers N`` (the API role alone): one listening socket, bound here, and N forked processes accepting on
    it, each with its own app (``make_app`` runs in the child, after the fork: no thread crosses it). Each worker
    is what a replica is (issue 31): its own store connections, memo and rate limits, all on the one store. A
    worker that exits ends the others and the command (exit status 1), for the supervisor to restart: a server
    quietly down to fewer workers would only be slower. SIGTERM or Ctrl-C stops every worker."""
    sock = _uvicorn_config(None, host, port).bind_socket()
    children: list[int] = []
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:  # the worker
            status = 1
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)  # uvicorn installs its own handlers as it starts
                _exit_with_parent()
                uvicorn.Server(_uvicorn_config(make_app(), host, port)).run(sockets=[sock])
                status = 0
            except BaseException:
                log.exception("API worker %d failed", os.getpid())
            finally:
                os._exit(status)
        children.append(pid)
    sock.close()
    log.info("kafka-health serving on http://%s:%d (roles: api; %d workers: %s)", host, port, workers, children)
    try:
        ended, status = os.wait()
    except KeyboardInterrupt:  # SIGTERM (see _serve) or Ctrl-C: a requested stop
        _stop_workers(children)
        return
    log.error("API worker %d ended (%d); stopping the other workers", ended, os.waitstatus_to_exitcode(status))
    children.remove(ended)
    _stop_workers(children)
    raise SystemExit(1)


def _exit_with_parent() -> None:
    """A worker whose parent is gone (killed with SIGKILL: nothing could stop the workers) gets SIGTERM and stops, as
    on ``kafka-health``'s own SIGTERM, rather than go on holding the port (Linux's PR_SET_PDEATHSIG)."""
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):  # not Linux: the supervisor must stop the workers itself
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # gone before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _stop_workers(children: list[int], grace: float = 5.0) -> None:
    """SIGTERM to every worker, then SIGKILL to those not ended within ``grace`` seconds (uvicorn's own graceful
    stop is 3 s)."""
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for pid in children:
        while not _reaped(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not _reaped(pid):
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def _reaped(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG) != (0, 0)
    except ChildProcessError:  # reaped already
        return True


def roles_arg(text: str) -> tuple[str, ...]:
    """argparse ``type`` for ``--role``: a bad role is a usage error (exit 2), found before the config is read."""
    roles = tuple(r.strip() for r in text.split(","))
    bad = [r for r in roles if r not in ROLES]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown role(s) {', '.join(map(repr, bad))}; choose from {', '.join(ROLES)}")
    return roles


def register(sub) -> None:
    p = sub.add_parser("serve", help="run API, collectors' exporter and alert engine")
    p.add_argument("--role", type=roles_arg, default=None, help="comma-separated subset of api,collector,alerts")
    p.add_argument("--host", default=None)
    p.add_argument("--port", type=int, default=None)
    p.add_argument("--shard", default=None, help="i/n: this collector process scrapes the i-th of n target shards")
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="API processes sharing the port (--role api only; docs/api.md, Performance): one per core",
    )
    add_config_args(p)
    p.set_defaults(func=_serve)


def _serve(args) -> int:
    config = config_from_args(args)
    roles = args.role or config.service.roles
    if args.workers < 1 or (args.workers > 1 and tuple(roles) != ("api",)):
        # Collectors and the alert engine must not run once per worker: shards and the engine lease say who runs.
        log.error("--workers %d: only the api role runs in several workers (use --role api)", args.workers)
        return 2
    if args.shard:
        config = config.model_copy(update={"collection": config.collection.model_copy(update={"shard": args.shard})})
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    run(
        config,
        roles,
        args.host or config.service.host,
        args.port or config.service.port,
        report_args=config_args(args),
        config_label=find_config(args).label,
        workers=args.workers,
    )
    return 0
