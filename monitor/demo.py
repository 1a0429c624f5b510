"""``kafka-health demo``: the README's main job, on embedded defaults.

Brings the local stack up (or reuses a running one), registers two demo tenants on the shared cluster, runs a small
producer + consumer load per tenant, serves API + exporter + alert engine, prints the URLs, and on Ctrl-C (or after
``--duration``) stops everything it started — and only that: a stack that was already running stays up.
"""

from __future__ import annotations

import logging
import shlex
import shutil
import signal
import sys
import threading
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from monitor import serve
from monitor.api import tokens
from monitor.core.config import (
    TenantConfig,
    TenantContract,
    TenantSelector,
    load_config,
)
from monitor.core.errors import ComponentFailed, PortInUse
from monitor.core.store import Store
from monitor.loadgen import LoadGenerator, TenantLoad
from monitor.stack import Stack
from monitor.stack import kafka as stack_kafka
from monitor.stack.cli import add_stack_args, layout_from_args
from monitor.stack.layout import StackLayout
from monitor.stack.observability import SCRAPE_TOKEN_PLACEHOLDER, write_scrape_token
from monitor.stack.packaged import dashboards_json_dir, grafana_provisioning_dir
from monitor.stack.procs import port_open
from monitor.tenants import quotas

log = logging.getLogger(__name__)

DEMO_TENANTS = (
    TenantConfig(
        name="payments",
        display_name="Payments team",
        selectors=(TenantSelector(cluster="local", topic_prefixes=("payments.",), client_id_prefixes=("payments-",),
                                  group_prefixes=("payments-",), principals=("User:payments-app",)),),
        contract=TenantContract(produce_quota_bytes_per_second=5_000_000, fetch_quota_bytes_per_second=10_000_000,
                                storage_budget_bytes=2 * 1024**3, retention_hours=168),
    ),
    TenantConfig(
        name="search",
        display_name="Search team",
        selectors=(TenantSelector(cluster="local", topic_prefixes=("search.",), client_id_prefixes=("search-",),
                                  group_prefixes=("search-",), principals=("User:search-app",)),),
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
    stack = Stack(layout_from_args(args))
    L = stack.layout
    # The service port is the demo's own (not the stack's): check it before anything starts, so another demo or any
    # other process there is one clear line instead of URLs followed by "service stopped".
    if port_open(L.service_port):
        raise PortInUse(f"the demo's service port {L.service_port} (--port-base {L.port_base} + 30) is in use by "
                        "another process (another demo?): stop it, or pick another --port-base")
    stack.prepare_dir()  # it holds the demo's config, store and lake too: an unusable --dir fails here, in one line
    already_up = all(s.healthy for s in stack.status())
    if not already_up:
        print(f"starting the local stack in {L.dir} (first run downloads Kafka jars) ...", flush=True)
        stack.up()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    load = LoadGenerator(stack.admin_settings(), DEMO_LOAD, tenant_conns=onboard_demo_tenants(stack))
    server: threading.Thread | None = None
    demo_tokens: dict[str, tuple[str, str]] = {}
    config = None
    try:
        # The demo runs on the file it writes, so the archive/report commands it prints (--config) see the same.
        config_file = stack.write_config(stack.config(tenants=DEMO_TENANTS))
        config = load_config(config_file)
        load.start()
        server = threading.Thread(
            target=serve.run, args=(config, config.service.roles, "127.0.0.1", L.service_port),
            kwargs={"stop_event": stop, "config_label": str(config_file)}, name="serve", daemon=True,
        )
        server.start()
        _wait_ready(L.service_url, L.service_port, server)
        demo_tokens = _issue_demo_tokens(config)
        # Prometheus scrapes the service's /metrics with an operator token of its own (a tenant could not read it).
        write_scrape_token(L, demo_tokens["prometheus"][1])
        print(demo_text(L, demo_tokens, config_file, today=datetime.now(timezone.utc).date(), cli=_cli()),
              flush=True)
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
            write_scrape_token(L, SCRAPE_TOKEN_PLACEHOLDER)
        if not already_up:
            stack.down()
        print(f"demo stopped; produced {sum(load.produced.values())} and consumed "
              f"{sum(load.consumed.values())} messages", flush=True)
    return 0


def _wait_ready(url: str, port: int, server: threading.Thread, timeout: float = 120.0) -> None:
    """Until the embedded service answers /healthz; a service that dies or never answers is a one-line error."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and server.is_alive():
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    if not server.is_alive():
        # Someone took the port between the check and the bind (uvicorn logged "address already in use" above).
        raise ComponentFailed("service", f"stopped during start-up on port {port} (see the log above; if the port "
                                         "is taken, pick another --port-base)")
    raise ComponentFailed("service", f"did not answer {url}/healthz within {timeout:.0f}s")


def _issue_demo_tokens(config) -> dict[str, tuple[str, str]]:
    """An operator token, a tenant token and Prometheus' scrape token for the demo, revoked when it stops.
    {who: (token id, token)}."""
    store = Store.from_settings(config.store)
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
            row, secret = tokens.create(db_session=s, kind=tokens.TokenKind.OPERATOR, tenant=None,
                                        name="demo-prometheus-scrape", now=now)
            out["prometheus"] = (row.id, secret)
    finally:
        store.dispose()
    return out


def _revoke_demo_tokens(config, demo_tokens: dict[str, tuple[str, str]]) -> None:
    store = Store.from_settings(config.store)
    try:
        with store.session() as s:
            for token_id, _ in demo_tokens.values():
                row = tokens.get(db_session=s, token_id=token_id)
                if row is not None:
                    tokens.revoke(db_session=s, token=row, now=datetime.now(timezone.utc))
    finally:
        store.dispose()


def _cli() -> str:
    """How to call this kafka-health in a shell, so the printed commands work verbatim (venv active or not)."""
    venv_script = Path(sys.executable).parent / "kafka-health"
    on_path = shutil.which("kafka-health")
    if on_path and (not venv_script.exists() or Path(on_path).resolve() == venv_script.resolve()):
        return "kafka-health"
    if venv_script.exists():
        return shlex.quote(str(venv_script))
    return f"{shlex.quote(sys.executable)} -m monitor.cli"


def _tenant_line(L: StackLayout, t: str) -> str:
    principal = f", principal User:{t}-app" if L.secured else ""
    return f"{t} (topics {t}.*, clients {t}-*{principal})"


def _security_lines(L: StackLayout) -> str:
    if not L.secured:
        return "  Kafka security:          none (PLAINTEXT, anonymous clients)\n"
    return (f"  Kafka security:          secured: SASL_SSL with SCRAM-SHA-512, ACLs, per-tenant user quotas\n"
            f"  Client configs:          {L.clients_dir}/ (admin, payments, search; "
            f"kcat -F {L.clients_dir / 'payments.properties'} -L)\n")


def onboard_demo_tenants(stack: Stack) -> dict[str, dict[str, str]]:
    """On a secured stack, what a platform team does for each tenant: a principal ``User:<tenant>-app`` with rights
    on its own topics and groups, ``clients/<tenant>.properties`` to connect with, its contract as a user quota.
    Returns each tenant's client settings (they hold its password); empty on a plaintext stack."""
    L = stack.layout
    if not L.secured:
        return {}
    conns = {}
    for t in DEMO_TENANTS:
        s = t.selectors[0]
        user = s.principals[0].removeprefix("User:")
        conns[t.name] = stack.add_principal(user, topic_prefixes=s.topic_prefixes, group_prefixes=s.group_prefixes,
                                            properties_name=t.name)
    java = stack_kafka.require_java()
    for q in quotas.plan(DEMO_TENANTS, "local"):
        stack_kafka.run_config_command(L, java, L.logs_dir / "setup.log", quotas.config_command_args(q),
                                       what=f"the quota of User:{q.user}")
    return conns


def demo_text(L: StackLayout, demo_tokens: dict[str, tuple[str, str]], config_file: Path, *, today: date,
              cli: str) -> str:
    """What the demo prints once it runs: where everything is, and what to try. Pure, for the tests."""
    url = L.service_url
    op = demo_tokens.get("operator", ("", "<none>"))[1]
    pay = demo_tokens.get("payments", ("", "<none>"))[1]
    year, week_no, _ = today.isocalendar()
    week = f"{year}-W{week_no:02d}"
    cfg = shlex.quote(str(config_file))
    as_pay, as_op = f'curl -H "Authorization: Bearer {pay}"', f'curl -H "Authorization: Bearer {op}"'
    return f"""
kafka-health demo is running (Ctrl-C stops everything it started)

  Service (API, /metrics): {url}
    health:                {url}/healthz
    metrics:               {url}/metrics (operator token; Prometheus scrapes it with its own)
    API docs:              {url}/docs
  Prometheus:              {L.prometheus_url}
  Alertmanager:            {L.alertmanager_url}
  Kafka bootstrap:         {L.client_bootstrap}
{_security_lines(L)}  Config (YAML):           {config_file}

  Tenants: {_tenant_line(L, "payments")}, {_tenant_line(L, "search")}

  Demo API tokens (valid until the demo stops):
    operator:        {op}
    tenant payments: {pay}

  Try the API (the tenant token sees payments only, the operator token everything):
    health:            {as_pay} {url}/api/v1/tenants/payments/health
    client advice:     {as_pay} {url}/api/v1/tenants/payments/advice
    alerts:            {as_op} {url}/api/v1/alerts
    cluster capacity:  {as_op} {url}/api/v1/clusters/local/capacity
    weekly reports:    {as_pay} {url}/api/v1/tenants/payments/reports

  A weekly report from the demo's data (in another terminal while the demo runs; Spark takes a minute or two):
    {cli} archive --config {cfg} --from {today} --to {today + timedelta(days=1)}
    {cli} report --config {cfg} --week {week}
    {as_pay} -H "Accept: text/html" {url}/api/v1/tenants/payments/reports/{week} > payments-{week}.html

  Grafana dashboards (Grafana itself is not part of the demo):
    JSON:          {dashboards_json_dir()}/*.json
    provisioning:  {grafana_provisioning_dir()}/ (set the datasource url to {L.prometheus_url})
"""
