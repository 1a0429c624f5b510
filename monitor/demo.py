"""``kafka-health demo``: the README's main job, on embedded defaults.

Brings the local stack up (or reuses a running one), registers two demo tenants on the shared cluster, runs a small
producer + consumer load per tenant, serves API + exporter + alert engine, prints the URLs, and on Ctrl-C (or after
``--duration``) stops everything it started — and only that: a stack that was already running stays up.
"""

from __future__ import annotations

import logging
import signal
import threading
import time

from monitor.config import TenantConfig, TenantContract, TenantSelector
from monitor.loadgen import LoadGenerator, TenantLoad
from monitor.stack import Stack
from monitor.stack.cli import add_stack_args, layout_from_args

log = logging.getLogger(__name__)

DEMO_TENANTS = (
    TenantConfig(
        name="payments",
        display_name="Payments team",
        selectors=(TenantSelector(cluster="local", topic_prefixes=("payments.",), client_id_prefixes=("payments-",),
                                  group_prefixes=("payments-",)),),
        contract=TenantContract(produce_quota_bytes_per_second=5_000_000, fetch_quota_bytes_per_second=10_000_000,
                                storage_budget_bytes=2 * 1024**3, retention_hours=168),
    ),
    TenantConfig(
        name="search",
        display_name="Search team",
        selectors=(TenantSelector(cluster="local", topic_prefixes=("search.",), client_id_prefixes=("search-",),
                                  group_prefixes=("search-",)),),
        contract=TenantContract(produce_quota_bytes_per_second=2_000_000, fetch_quota_bytes_per_second=4_000_000,
                                storage_budget_bytes=1024**3, retention_hours=72),
    ),
)

DEMO_LOAD = [
    TenantLoad("payments", ("payments.orders", "payments.refunds"), "payments-api", "payments-ledger", 40.0, 700),
    TenantLoad("search", ("search.queries", "search.clicks"), "search-frontend", "search-indexer", 25.0, 300),
]


def register(sub) -> None:
    p = sub.add_parser("demo", help="start the local stack, two demo tenants with load, and the service")
    add_stack_args(p)
    p.add_argument("--duration", type=float, default=None, help="stop by itself after this many seconds")
    p.set_defaults(func=run_demo)


def run_demo(args) -> int:
    from monitor import serve

    stack = Stack(layout_from_args(args))
    L = stack.layout
    already_up = all(s.healthy for s in stack.status())
    if not already_up:
        print(f"starting the local stack in {L.dir} (first run downloads Kafka jars) ...", flush=True)
        stack.up()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    load = LoadGenerator(L.bootstrap_servers, DEMO_LOAD)
    server: threading.Thread | None = None
    demo_tokens: dict[str, tuple[str, str]] = {}
    config = None
    try:
        load.start()
        config = stack.config(tenants=DEMO_TENANTS)
        server = threading.Thread(
            target=serve.run, args=(config, config.service.roles, "127.0.0.1", L.service_port),
            kwargs={"stop_event": stop}, name="serve", daemon=True,
        )
        server.start()
        _wait_ready(L.service_url, server)
        demo_tokens = _issue_demo_tokens(config)
        _print_urls(stack, demo_tokens)
        deadline = time.monotonic() + args.duration if args.duration else None
        while not stop.is_set() and server.is_alive():
            if deadline and time.monotonic() > deadline:
                break
            stop.wait(1.0)
        if server is not None and not server.is_alive() and not stop.is_set():
            print("error: the service stopped unexpectedly (see the log above)")
            return 1
    except KeyboardInterrupt:
        pass
    finally:
        print("\nstopping the demo ...", flush=True)
        stop.set()
        load.stop()
        if server is not None:
            server.join(15)
        if demo_tokens and config is not None:
            _revoke_demo_tokens(config, demo_tokens)
        if not already_up:
            stack.down()
        print(f"demo stopped; produced {sum(load.produced.values())} and consumed "
              f"{sum(load.consumed.values())} messages", flush=True)
    return 0


def _wait_ready(url: str, server: threading.Thread, timeout: float = 60.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and server.is_alive():
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)


def _issue_demo_tokens(config) -> dict[str, tuple[str, str]]:
    """An operator token and a tenant token for the demo, revoked when it stops. {who: (token id, token)}."""
    from datetime import datetime, timezone

    from monitor.api import tokens
    from monitor.store.base import Store

    store = Store(config.store.url)
    now = datetime.now(timezone.utc)
    out = {}
    try:
        with store.session() as s:
            row, secret = tokens.create(db_session=s, kind=tokens.TokenKind.OPERATOR, tenant=None,
                                        name="demo-operator", now=now)
            out["operator"] = (row.id, secret)
            row, secret = tokens.create(db_session=s, kind=tokens.TokenKind.TENANT, tenant="payments",
                                        name="demo-payments", now=now)
            out["payments"] = (row.id, secret)
    finally:
        store.dispose()
    return out


def _revoke_demo_tokens(config, demo_tokens: dict[str, tuple[str, str]]) -> None:
    from datetime import datetime, timezone

    from monitor.api import tokens
    from monitor.store.base import Store

    store = Store(config.store.url)
    try:
        with store.session() as s:
            for token_id, _ in demo_tokens.values():
                row = tokens.get(db_session=s, token_id=token_id)
                if row is not None:
                    tokens.revoke(db_session=s, token=row, now=datetime.now(timezone.utc))
    finally:
        store.dispose()


def _print_urls(stack: Stack, demo_tokens: dict[str, tuple[str, str]]) -> None:
    L = stack.layout
    op = demo_tokens.get("operator", ("", "<none>"))[1]
    pay = demo_tokens.get("payments", ("", "<none>"))[1]
    print(f"""
kafka-health demo is running (Ctrl-C stops everything it started)

  Service (API, /metrics): {L.service_url}
    health:                {L.service_url}/healthz
    metrics:               {L.service_url}/metrics
    API docs:              {L.service_url}/docs
  Prometheus:              {L.prometheus_url}
  Alertmanager:            {L.alertmanager_url}
  Kafka bootstrap:         {L.bootstrap_servers}

  Tenants: payments (topics payments.*, clients payments-*), search (topics search.*, clients search-*)

  Demo API tokens (valid until the demo stops):
    operator:        {op}
    tenant payments: {pay}
  Try:
    curl -H "Authorization: Bearer {pay}" {L.service_url}/api/v1/tenants/payments/health
    curl -H "Authorization: Bearer {op}" {L.service_url}/api/v1/alerts
""", flush=True)
