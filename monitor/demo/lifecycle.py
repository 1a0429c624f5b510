"""The demo's lifecycle: check the port, bring the stack up (or reuse it), onboard the tenants and start their load,
serve API + exporter + alert engine, print the first screen, watch until stopped, and stop exactly what it started.
``run_demo`` is these steps in order; ``DemoRun`` is what they share."""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from monitor import serve
from monitor.api import tokens
from monitor.core.config import Config, load_config
from monitor.core.errors import ComponentFailed, PortInUse
from monitor.core.healthz import Wait, wait_healthy
from monitor.core.logs import divert_to_file
from monitor.core.store import Store
from monitor.core.times import utc_now
from monitor.demo.console import (
    STATUS_EVERY_SECONDS,
    Console,
    WarningCount,
    as_user,
    cli_command,
    demo_text,
    status_text,
)
from monitor.demo.story import BAD_CLIENT, CALM_SECONDS, DEMO_LOAD, DEMO_TENANTS, STORY_WINDOW, Story, with_story_rule
from monitor.loadgen import LoadGenerator
from monitor.stack import Stack
from monitor.stack import kafka as stack_kafka
from monitor.stack.cli import add_stack_args, layout_from_args
from monitor.stack.kcat import printed_kcat_line
from monitor.stack.layout import StackLayout
from monitor.stack.observability import SCRAPE_TOKEN_PLACEHOLDER, write_scrape_token
from monitor.stack.procs import port_open
from monitor.tenants import quotas

log = logging.getLogger(__name__)


def register(sub) -> None:
    p = sub.add_parser(
        "demo",
        help="start the local stack, two demo tenants with load, and the service; after a "
        "calm minute one badly batching client, and the alert naming it",
    )
    add_stack_args(p)
    p.add_argument("--duration", type=float, default=None, help="stop by itself after this many seconds")
    p.add_argument("--calm", action="store_true", help="no badly behaving client: the tenants' steady load only")
    p.set_defaults(func=run_demo)


@dataclass
class DemoRun:
    """What the steps of one demo share; ``end`` stops what the others started, and only that."""

    stack: Stack
    console: Console
    warnings: WarningCount
    log_file: Path
    already_up: bool
    load: LoadGenerator
    story: Story | None
    stop: threading.Event = field(default_factory=threading.Event)
    config: Config | None = None
    server: threading.Thread | None = None
    demo_tokens: dict[str, tuple[str, str]] = field(default_factory=dict)


def run_demo(args) -> int:
    stack = Stack(layout_from_args(args))
    check_service_port(stack.layout)
    run = begin(stack, calm=args.calm)
    try:
        config_file = start_service(run)
        announce(run, config_file, calm=args.calm)
        _watch(run, deadline=time.monotonic() + args.duration if args.duration else None)
        if run.server is not None and not run.server.is_alive() and not run.stop.is_set():
            run.console.say(f"error: the service stopped unexpectedly (see {run.log_file})")
            return 1
    except KeyboardInterrupt:
        pass
    finally:
        end(run)
    return 0


def check_service_port(L: StackLayout) -> None:
    """The service port is the demo's own (not the stack's): checked before anything starts, so another demo or any
    other process there is one clear line instead of URLs followed by "service stopped"."""
    if port_open(L.service_port):
        raise PortInUse(
            f"the demo's service port {L.service_port} (--port-base {L.port_base} + 30) is in use by "
            "another process (another demo?): stop it, or pick another --port-base"
        )


def begin(stack: Stack, *, calm: bool) -> DemoRun:
    """The directory, the log and the console; the stack up unless it already runs; the tenants onboarded and their
    load (and the story's bad client) ready to start."""
    L = stack.layout
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
    story = None if calm else Story(LoadGenerator(stack.admin_settings(), [BAD_CLIENT], tenant_conns=tenant_conns))
    return DemoRun(
        stack=stack,
        console=console,
        warnings=warnings,
        log_file=log_file,
        already_up=already_up,
        load=load,
        story=story,
        stop=stop,
    )


def start_service(run: DemoRun) -> Path:
    """The demo's config written and loaded, the load started, the service serving in a thread and answering, the
    demo's tokens issued. The demo runs on the file it writes, so the archive/report commands it prints (--config)
    see the same; returns that file."""
    stack, L = run.stack, run.stack.layout
    config_file = stack.write_config(with_story_rule(stack.config(tenants=DEMO_TENANTS), L.dir))
    run.config = config = load_config(config_file)
    run.load.start()
    run.server = threading.Thread(
        target=serve.run,
        args=(config, config.service.roles, "127.0.0.1", L.service_port),
        kwargs={"stop_event": run.stop, "config_label": str(config_file)},
        name="serve",
        daemon=True,
    )
    run.server.start()
    _wait_ready(L.service_url, L.service_port, run.server)
    run.demo_tokens = _issue_demo_tokens(config)
    # Prometheus scrapes the service's /metrics with an operator token of its own (a tenant could not read it).
    write_scrape_token(L, run.demo_tokens["prometheus"][1])
    return config_file


def announce(run: DemoRun, config_file: Path, *, calm: bool) -> None:
    """The first screen."""
    L = run.stack.layout
    run.console.say(
        demo_text(
            L,
            run.demo_tokens,
            config_file,
            today=utc_now().date(),
            cli=cli_command(),
            log_file=run.log_file,
            calm=calm,
            kcat=printed_kcat_line(L, "payments") if L.secured else None,
        )
    )


def end(run: DemoRun) -> None:
    """Stop what the demo started, in reverse: the story and the load, the service, the tokens, the stack (only if
    the demo brought it up); then what the load did."""
    console, story, load = run.console, run.story, run.load
    console.end_status()
    console.say("\nstopping the demo ...")
    run.stop.set()
    if story is not None:
        story.stop()
    load.stop()
    if run.server is not None:
        run.server.join(15)
    if run.demo_tokens and run.config is not None:
        _revoke_demo_tokens(run.config, run.demo_tokens)
        write_scrape_token(run.stack.layout, SCRAPE_TOKEN_PLACEHOLDER)
    if not run.already_up:
        run.stack.down()
    produced = sum(load.produced.values()) + (sum(story.load.produced.values()) if story else 0)
    console.say(f"demo stopped; produced {produced} and consumed {sum(load.consumed.values())} messages")


def _watch(run: DemoRun, *, deadline: float | None) -> None:
    """Until Ctrl-C, SIGTERM, ``deadline`` or the service's end: the story's steps, and the status line from the
    demo's own API (the operator token), every STATUS_EVERY_SECONDS."""
    L, demo_tokens, console, stop, load, story = (
        run.stack.layout,
        run.demo_tokens,
        run.console,
        run.stop,
        run.load,
        run.story,
    )
    server = run.server
    assert server is not None, "the service runs before it is watched"
    auth = {"Authorization": f"Bearer {demo_tokens['operator'][1]}"}
    advice_url = f"{L.service_url}/api/v1/tenants/payments/advice?window={STORY_WINDOW}"
    advice = f'{as_user(demo_tokens, "payments")} "{advice_url}"'
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
                console.status(status_text(firing, tenants, clients, run.warnings.count, now=utc_now().astimezone()))
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


def _wait_ready(url: str, port: int, server: threading.Thread, timeout: float = 120.0) -> None:
    """Until the embedded service answers /healthz; a service that dies or never answers is a one-line error."""
    ended = wait_healthy(url, alive=server.is_alive, timeout=timeout)
    if ended is Wait.UP:
        return
    if ended is Wait.EXITED:
        # Someone took the port between the check and the bind (uvicorn logged "address already in use" above).
        raise ComponentFailed(
            "service",
            f"stopped during start-up on port {port} (see the log above; if the port "
            "is taken, pick another --port-base)",
        )
    raise ComponentFailed("service", f"did not answer {url}/healthz within {timeout:.0f}s")


def _issue_demo_tokens(config) -> dict[str, tuple[str, str]]:
    """An operator token, a tenant token and Prometheus' scrape token for the demo, revoked when it stops.
    {who: (token id, token)}."""
    store = Store.from_settings(config.store)
    now = utc_now()
    out = {}
    try:
        with store.session() as s:
            row, secret = tokens.create(
                db_session=s, kind=tokens.TokenKind.OPERATOR, tenant=None, name="demo-operator", now=now
            )
            out["operator"] = (row.id, secret)
            row, secret = tokens.create(
                db_session=s, kind=tokens.TokenKind.TENANT, tenant="payments", name="demo-payments", now=now
            )
            out["payments"] = (row.id, secret)
            row, secret = tokens.create(
                db_session=s, kind=tokens.TokenKind.OPERATOR, tenant=None, name="demo-prometheus-scrape", now=now
            )
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
                    tokens.revoke(db_session=s, token=row, now=utc_now())
    finally:
        store.dispose()


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
        conns[t.name] = stack.add_principal(
            user, topic_prefixes=s.topic_prefixes, group_prefixes=s.group_prefixes, properties_name=t.name
        )
    java = stack_kafka.require_java()
    for q in quotas.plan(DEMO_TENANTS, "local"):
        stack_kafka.run_config_command(
            L, java, L.logs_dir / "setup.log", quotas.config_command_args(q), what=f"the quota of User:{q.user}"
        )
    return conns
