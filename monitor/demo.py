"""``kafka-health demo``: the README's main job, on embedded defaults.

Brings the local stack up (or reuses a running one), registers two demo tenants on the shared cluster, runs a small
producer + consumer load per tenant, serves API + exporter + alert engine, prints the URLs, and on Ctrl-C (or after
``--duration``) stops everything it started — and only that: a stack that was already running stays up.

The story (unless ``--calm``): after ``CALM_SECONDS`` the tenant payments starts a badly batching producer
(``BAD_CLIENT``, authenticated as User:payments-app like the tenant's other clients); within a few minutes
KafkaClientHurtsOtherTenants names the tenant and that client, and the advice endpoint says what to change.

The console is for a person: the first screen (URLs, tokens, client configs, where the log is), one line per story
event, and a status line (``Console``): redrawn in place on a terminal, a line at most every 30 s otherwise. Every
log record goes to ``logs/demo.log`` in the stack dir; only errors reach the console.
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
from typing import TextIO

import httpx

from alerts.rules import builtin_variant
from monitor import serve
from monitor.api import tokens
from monitor.core.config import (
    TenantConfig,
    TenantContract,
    TenantSelector,
    load_config,
)
from monitor.core.errors import ComponentFailed, PortInUse
from monitor.core.logs import divert_to_file
from monitor.core.store import Store
from monitor.loadgen import LoadGenerator, TenantLoad
from monitor.stack import Stack
from monitor.stack import kafka as stack_kafka
from monitor.stack.cli import add_stack_args, layout_from_args
from monitor.stack.kcat import KcatLine, clients_accepted, printed_kcat_line
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

# Producers that batch: at a few dozen records a second, linger.ms=200 fills a request with several KiB. With the
# loadgen's 20 ms and 700/300-byte records most requests carried one record, and the advisor's norm (the best other
# producer's broker thread-seconds per MiB) sat so close to the story's bad client that it measured 4.9 times the
# norm (poor_batching asks 5); with 200 ms alone, 6.4 and flapping. Now the bad client is well over 5.
GOOD_BATCHING = {"linger.ms": 200, "batch.size": 262144}
DEMO_LOAD = [
    TenantLoad("payments", ("payments.orders", "payments.refunds"), "payments-api", "payments-ledger", 40.0, 2000,
               producer_settings=GOOD_BATCHING),
    TenantLoad("search", ("search.queries", "search.clicks"), "search-frontend", "search-indexer", 25.0, 1000,
               producer_settings=GOOD_BATCHING),
]

# The story's misbehaving client: a producer of payments with no linger and one 10-byte record per request, the
# advisor's poor_batching (tests/integration/test_advisor_stack.py proves the same client is named). Producer only:
# its records land in payments.orders, which the tenant's own consumer reads anyway.
BAD_CLIENT = TenantLoad("payments", ("payments.orders",), "payments-batch-import", None, messages_per_second=400,
                        message_bytes=10,
                        producer_settings={"linger.ms": 0, "batch.num.messages": 1, "batch.size": 200})
STORY_ALERT = "KafkaClientHurtsOtherTenants"
CALM_SECONDS = 60.0
# The built-in rule judges a client over 10 minutes and waits 10 more before it fires: right for production, where
# a client's start is not how it runs, but a demo must show it in minutes. A client is judged once seen for 0.9 of
# the window, then `for` runs: about 2 + 0.5 minutes and a few collection cycles. The advice curl uses the same window.
STORY_WINDOW, STORY_FOR = "2m", "30s"
STATUS_EVERY_SECONDS = 5.0  # how often the status line asks the API
PIPE_STATUS_EVERY_SECONDS = 30.0  # not a terminal: a status line at most this often


def register(sub) -> None:
    p = sub.add_parser("demo", help="start the local stack, two demo tenants with load, and the service; after a "
                                    "calm minute one badly batching client, and the alert naming it")
    add_stack_args(p)
    p.add_argument("--duration", type=float, default=None, help="stop by itself after this many seconds")
    p.add_argument("--calm", action="store_true", help="no badly behaving client: the tenants' steady load only")
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
    log_file = L.logs_dir / "demo.log"
    warnings = WarningCount()
    logging.getLogger().addHandler(warnings)
    divert_to_file(log_file)
    console = Console(sys.stdout)
    already_up = all(s.healthy for s in stack.status())
    if not already_up:
        console.say(f"starting the local stack in {L.dir} (first run downloads Kafka jars) ...")
        stack.up()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    tenant_conns = onboard_demo_tenants(stack)
    load = LoadGenerator(stack.admin_settings(), DEMO_LOAD, tenant_conns=tenant_conns)
    story = None if args.calm else Story(LoadGenerator(stack.admin_settings(), [BAD_CLIENT],
                                                       tenant_conns=tenant_conns))
    server: threading.Thread | None = None
    demo_tokens: dict[str, tuple[str, str]] = {}
    config = None
    try:
        # The demo runs on the file it writes, so the archive/report commands it prints (--config) see the same.
        config_file = stack.write_config(_with_story_rule(stack.config(tenants=DEMO_TENANTS), L.dir))
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
        console.say(demo_text(L, demo_tokens, config_file, today=datetime.now(timezone.utc).date(), cli=_cli(),
                              log_file=log_file, calm=args.calm,
                              kcat=printed_kcat_line(L, "payments") if L.secured else None))
        _watch(L, demo_tokens, console, stop, server, load, story, warnings,
               deadline=time.monotonic() + args.duration if args.duration else None)
        if server is not None and not server.is_alive() and not stop.is_set():
            console.say(f"error: the service stopped unexpectedly (see {log_file})")
            return 1
    except KeyboardInterrupt:
        pass
    finally:
        console.end_status()
        console.say("\nstopping the demo ...")
        stop.set()
        if story is not None:
            story.stop()
        load.stop()
        if server is not None:
            server.join(15)
        if demo_tokens and config is not None:
            _revoke_demo_tokens(config, demo_tokens)
            write_scrape_token(L, SCRAPE_TOKEN_PLACEHOLDER)
        if not already_up:
            stack.down()
        produced = sum(load.produced.values()) + (sum(story.load.produced.values()) if story else 0)
        console.say(f"demo stopped; produced {produced} and consumed {sum(load.consumed.values())} messages")
    return 0


def _with_story_rule(config, directory: Path):
    """The config with the story's alert on the demo's short window (a rules file beside the config)."""
    path = directory / "demo-rules.yaml"
    path.write_text(builtin_variant(STORY_ALERT, for_=STORY_FOR, window=STORY_WINDOW))
    return config.model_copy(update={"rules": config.rules.model_copy(update={"files": (str(path),)})})


def _watch(L: StackLayout, demo_tokens, console: Console, stop: threading.Event, server: threading.Thread,
           load: LoadGenerator, story: Story | None, warnings: WarningCount, *, deadline: float | None) -> None:
    """Until Ctrl-C, SIGTERM, ``deadline`` or the service's end: the story's steps, and the status line from the
    demo's own API (the operator token), every STATUS_EVERY_SECONDS."""
    auth = {"Authorization": f"Bearer {demo_tokens['operator'][1]}"}
    advice = f'{_as(demo_tokens, "payments")} "{L.service_url}/api/v1/tenants/payments/advice?window={STORY_WINDOW}"'
    calm_until = time.monotonic() + CALM_SECONDS
    next_poll = 0.0
    with httpx.Client(base_url=L.service_url, headers=auth, timeout=10) as api:
        while not stop.is_set() and server.is_alive():
            now = time.monotonic()
            if deadline and now > deadline:
                return
            if story is not None and not story.started and now >= calm_until:
                console.say(story.start())
            if now >= next_poll:
                next_poll = now + STATUS_EVERY_SECONDS
                firing, tenants = _read_api(api)
                if story is not None and firing is not None and (line := story.check(firing, advice)):
                    console.say(line)
                clients = load.clients + (story.load.clients if story and story.started else 0)
                console.status(status_text(firing, tenants, clients, warnings.count,
                                           now=datetime.now().astimezone()))
            stop.wait(1.0)


def _read_api(api: httpx.Client) -> tuple[list[dict] | None, int | None]:
    """(firing alert instances, number of tenants) from the demo's API; None where it did not answer."""
    firing = tenants = None
    try:
        r = api.get("/api/v1/alerts", params={"state": "firing", "limit": 200})
        if r.status_code == 200:
            firing = r.json()["items"]
        r = api.get("/api/v1/tenants", params={"limit": 200})
        if r.status_code == 200:
            tenants = len(r.json()["items"])
    except httpx.HTTPError as exc:
        log.warning("status: the demo's API did not answer: %s", exc)
    return firing, tenants


def status_text(firing: list[dict] | None, tenants: int | None, clients: int, warnings: int, *,
                now: datetime) -> str:
    """The one status line: alerts firing (the watchdog apart: it always fires, to prove the pipeline lives),
    tenants, load clients, warnings in the log. Pure, for the tests."""
    if firing is None:
        alerts = "alerts: API not answering"
    else:
        named = [a for a in firing if a["alertname"] != "KafkaHealthWatchdog"]
        alerts = f"alerts firing: {len(named)}"
        if named:
            alerts += " (" + ", ".join(_alert_label(a) for a in named[:2]) + (", ..." if len(named) > 2 else "") + ")"
    parts = [now.strftime("%H:%M:%S"), alerts, f"tenants: {'?' if tenants is None else tenants}",
             f"clients: {clients}"]
    if warnings:
        parts.append(f"log: {warnings} warning{'s' if warnings != 1 else ''}")
    return " | ".join(parts)


def _alert_label(a: dict) -> str:
    labels = a.get("labels") or {}
    who = "/".join(v for v in (labels.get("tenant"), labels.get("client_id") or labels.get("broker")) if v)
    return f"{a['alertname']} {who}".strip()


class Story:
    """One badly behaving client of one tenant: ``start`` it after the calm spell, then ``check`` the firing alerts
    for the one naming it. Each returns the line to print (or None)."""

    def __init__(self, load: LoadGenerator):
        self.load = load
        self.client = load.loads[0]
        self.started_at: float | None = None
        self.fired = False

    @property
    def started(self) -> bool:
        return self.started_at is not None

    def start(self) -> str:
        self.load.start()
        self.started_at = time.monotonic()
        c = self.client
        return (f"{_clock()} story: tenant {c.tenant} starts client {c.client_id}, a producer with linger.ms=0 and "
                f"one {c.message_bytes}-byte record per request ({c.messages_per_second:.0f}/s); expect "
                f"{STORY_ALERT} naming it within ~3 minutes")

    def check(self, firing: list[dict], advice_curl: str) -> str | None:
        if self.fired or self.started_at is None:
            return None
        for a in firing:
            labels = a.get("labels") or {}
            if (a["alertname"] == STORY_ALERT and labels.get("tenant") == self.client.tenant
                    and labels.get("client_id") == self.client.client_id):
                self.fired = True
                after = time.monotonic() - self.started_at
                return (f"{_clock()} alert {STORY_ALERT} firing {int(after // 60)}m{int(after % 60):02d}s after the "
                        f"client started: tenant {self.client.tenant}, client {self.client.client_id} "
                        f"({labels.get('finding', '')}); what to change: {advice_curl}")
        return None

    def stop(self) -> None:
        if self.started:
            self.load.stop()


def _clock() -> str:
    return datetime.now().astimezone().strftime("%H:%M:%S")


class WarningCount(logging.Handler):
    """Counts WARNING and above records: the console does not show them (they are in the log file); the status line
    says how many there are."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


class Console:
    """The demo's screen: lines that stay (``say``) and one status line (``status``). On a terminal the status line
    is redrawn in place below the lines; on anything else (a pipe, a file, CI) it is printed as a line of its own
    at most every ``every`` seconds, so a captured console stays short."""

    def __init__(self, stream: TextIO, *, tty: bool | None = None, every: float = PIPE_STATUS_EVERY_SECONDS,
                 clock=time.monotonic):
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.every = every
        self.clock = clock
        self._status = ""
        self._printed_at: float | None = None

    def say(self, text: str) -> None:
        self._clear()
        self.stream.write(text + "\n")
        self._draw()
        self.stream.flush()

    def status(self, text: str) -> None:
        if self.tty:
            self._clear()
            self._status = text
            self._draw()
        else:
            now = self.clock()
            if self._printed_at is None or now - self._printed_at >= self.every:
                self._printed_at = now
                self.stream.write(text + "\n")
        self.stream.flush()

    def end_status(self) -> None:
        """No status line from here on (the demo stops): the last one is wiped on a terminal."""
        self._clear()
        self._status = ""
        self.stream.flush()

    def _clear(self) -> None:
        if self.tty and self._status:
            self.stream.write("\r\x1b[2K")

    def _draw(self) -> None:
        if self.tty and self._status:
            width = shutil.get_terminal_size((120, 24)).columns
            self.stream.write(self._status[:width - 1])


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


def _security_lines(L: StackLayout, kcat: KcatLine | None) -> str:
    if not L.secured:
        return "  Kafka security:          none (PLAINTEXT, anonymous clients)\n"
    kcat = kcat or KcatLine(f"kcat -F {shlex.quote(str(L.clients_dir / 'payments.properties'))} -L")
    return (f"  Kafka security:          secured: SASL_SSL with SCRAM-SHA-512, ACLs, per-tenant user quotas\n"
            f"  Client configs:          {L.clients_dir}/ (NAME: admin, payments, search)\n"
            f"                           {clients_accepted(L.kafka_version)}\n"
            f"  payments' topics (kcat): {kcat.command}\n"
            + (f"                           ({kcat.note})\n" if kcat.note else ""))


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


def _as(demo_tokens: dict[str, tuple[str, str]], who: str) -> str:
    return f'curl -H "Authorization: Bearer {demo_tokens.get(who, ("", "<none>"))[1]}"'


def story_line(*, calm: bool) -> str:
    """What the demo will show, in one line (the README says the same)."""
    if calm:
        return "Story: none (--calm): the two tenants' steady load only, nothing should fire"
    return (f"Story: calm for {CALM_SECONDS:.0f} s, then tenant payments starts a badly batching producer; within "
            f"minutes {STORY_ALERT} names it below and the advice says what to change")


def demo_text(L: StackLayout, demo_tokens: dict[str, tuple[str, str]], config_file: Path, *, today: date,
              cli: str, log_file: Path, calm: bool = False, kcat: KcatLine | None = None) -> str:
    """What the demo prints once it runs: where everything is, and what to try. Pure, for the tests: ``kcat`` is the
    line to list payments' topics with (``monitor.stack.kcat.printed_kcat_line``; None: the plain one)."""
    url = L.service_url
    op = demo_tokens.get("operator", ("", "<none>"))[1]
    pay = demo_tokens.get("payments", ("", "<none>"))[1]
    year, week_no, _ = today.isocalendar()
    week = f"{year}-W{week_no:02d}"
    cfg = shlex.quote(str(config_file))
    as_pay, as_op = _as(demo_tokens, "payments"), _as(demo_tokens, "operator")
    return f"""
kafka-health demo is running (Ctrl-C stops everything it started)

  Service (API, /metrics): {url}
    health:                {url}/healthz
    metrics:               {url}/metrics (operator token; Prometheus scrapes it with its own)
    API docs:              {url}/docs
  Prometheus:              {L.prometheus_url}
  Alertmanager:            {L.alertmanager_url}
  Kafka bootstrap:         {L.client_bootstrap}
{_security_lines(L, kcat)}  Config (YAML):           {config_file}
  Log (service, clients):  {log_file} (the console shows errors only)

  Tenants: {_tenant_line(L, "payments")}, {_tenant_line(L, "search")}

  Demo API tokens (valid until the demo stops):
    operator:        {op}
    tenant payments: {pay}

  Try the API (the tenant token sees payments only, the operator token everything):
    health:            {as_pay} {url}/api/v1/tenants/payments/health
    client advice:     {as_pay} "{url}/api/v1/tenants/payments/advice?window={STORY_WINDOW}"
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

{story_line(calm=calm)}
"""
