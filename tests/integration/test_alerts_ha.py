"""Two alert engines on one real PostgreSQL store (issue 31): the lease decides who evaluates, its epoch fences every
write, and the outbox is claimed FOR UPDATE SKIP LOCKED. A real HTTP webhook receiver counts deliveries; in the
real-process test, a real gossiping pair of Alertmanagers shows what the engines posted.

The engines are two ``AlertService`` objects in this process, each with its own lease holder and its own connections;
a frozen engine (SIGSTOP) is one whose cycles are not run while real time passes. The evaluation interval is 1 s here
(the lease expires 1.5 s after its last renewal, on the database's clock), so a takeover costs 2 s of wall time.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import create_engine, make_url, select, text

from alerts import repo
from alerts.component import AlertService
from alerts.lease import Deposed
from alerts.models import AlertInstance, EngineLease, OutboxEntry
from alerts.notify import DeliveryPolicy, WebhookNotifier
from alerts.rules import load_rules
from monitor.api import tokens
from monitor.core.store import Store
from tests.conftest import wait_until
from tests.harness.engine import engine_role
from tests.harness.tcp_cut import CuttablePath
from tests.integration import test_alerts_restart as restart
from tests.integration.alerts_helpers import (
    IncidentExporter,
    ScriptedSource,
    WebhookReceiver,
    alertmanager_pair,
    alertmanager_peers,
    free_port,
    own_prometheus,
)

pytestmark = pytest.mark.integration
T0 = datetime(2026, 11, 26, 3, 0, tzinfo=timezone.utc)
INTERVAL = 1.0
store, hook, _config = restart.store, restart.hook, restart._config  # the fixtures, on PostgreSQL alone


@pytest.fixture
def store_url(pg_url):
    """PostgreSQL only: what ``store`` (tests/integration/test_alerts_restart.py) builds the schema in."""
    return pg_url


def _pages(hook):
    return [a for a in hook.alerts() if a[1] == "KafkaBrokerUnreachable"]


def _broker_row(store):
    with store.session() as s:
        row = s.scalars(select(AlertInstance).where(AlertInstance.rule == "KafkaBrokerUnreachable")).one()
        return row.state, row.notified_state, row.active_at


def test_standby_takes_over_from_the_stored_state_and_the_deposed_engine_writes_and_sends_nothing(
    tmp_path, store, pg_url, hook
):
    config = _config(tmp_path, hook.url, pg_url)
    config = config.model_copy(
        update={"rules": config.rules.model_copy(update={"evaluation_interval_seconds": INTERVAL})}
    )
    src = ScriptedSource()
    src.down = {"2"}
    a, b = (AlertService(config, store=store, registry=CollectorRegistry(), source=src) for _ in range(2))
    a.run_once(T0)
    assert b.run_once(T0) is None and (a.role, b.role) == ("active", "standby")
    assert _broker_row(store)[0] == "pending"
    active_at = _broker_row(store)[2]
    a.run_once(T0 + timedelta(seconds=30))  # for: 30s -> firing, paged once
    assert _pages(hook) == [("firing", "KafkaBrokerUnreachable", "shop")]
    with store.session() as s:
        assert s.get(EngineLease, "alerts").epoch == 1

    time.sleep(1.5 * INTERVAL + 0.3)  # a is frozen: no renewal; its lease expires on the database's clock
    b.run_once(T0 + timedelta(seconds=45))
    assert b.role == "active" and b.lease.epoch == 2
    assert _pages(hook) == [("firing", "KafkaBrokerUnreachable", "shop")]  # taken over from the store: no re-page
    assert _broker_row(store)[:2] == ("firing", "firing") and _broker_row(store)[2] == active_at

    src.down = set()
    b.evaluate(T0 + timedelta(seconds=60))  # b resolves; the resolve waits in the outbox
    with store.session() as s:
        queued = [(r.kind, r.target) for r in s.scalars(select(OutboxEntry))]
    assert queued == [("resolved", hook.url)]

    # a wakes (SIGCONT) in the middle of its cycle, still believing in epoch 1: it sends nothing...
    assert a.lease.epoch == 1
    assert a.deliver(T0 + timedelta(seconds=61)).delivered == 0 and _pages(hook) == [
        ("firing", "KafkaBrokerUnreachable", "shop")
    ]
    # ... and writes nothing: with the broker down again in its view, its cycle would re-fire the alert.
    src.down = {"2"}
    a.lease.epoch = 1  # the same frozen cycle, now at its write
    before = _broker_row(store)
    with store.session() as s:
        depth = repo.outbox_depth(session=s)
    assert a.run_once(T0 + timedelta(seconds=62)) is None  # its next cycle: another engine holds the lease
    a.lease.epoch = 1
    with pytest.raises(Deposed, match="no longer the lease.s"):
        a.evaluate(T0 + timedelta(seconds=62))
    assert _broker_row(store) == before
    with store.session() as s:
        assert repo.outbox_depth(session=s) == depth
    assert a.role == "standby" and a.metrics.deposed._value.get() >= 1

    src.down = set()
    b.run_once(T0 + timedelta(seconds=75))  # the active engine delivers the resolve, once
    b.run_once(T0 + timedelta(seconds=90))
    assert _pages(hook) == [
        ("firing", "KafkaBrokerUnreachable", "shop"),
        ("resolved", "KafkaBrokerUnreachable", "shop"),
    ]


class _FrozenAfterSend:
    """The webhook notifier of an engine that freezes right after its POST went out, before it reads the answer and
    commits: what a SIGSTOP there looks like to the database (the claiming transaction idle, its rows locked) and to
    the receiver (the batch received). No timeout runs in a frozen process, so none runs here: it waits for ``wake``."""

    def __init__(self, url: str):
        self.real = WebhookNotifier(url)
        self.sent, self.wake = threading.Event(), threading.Event()

    def notify(self, alerts: list[dict], *, now: datetime) -> tuple[bool, str | None]:
        answer = self.real.notify(alerts, now=now)
        self.sent.set()
        self.wake.wait()
        return answer


def test_an_engine_frozen_in_a_delivery_blocks_its_group_only_until_the_hold_ends(tmp_path, store, pg_url, hook):
    """An engine frozen in the middle of a delivery (its firing sent, the answer not yet read: the claiming
    transaction idle, the rows locked) blocks that group only for ``DeliveryPolicy.hold_seconds``: then PostgreSQL
    ends its transaction, and the engine that took over sends the group, the resolve included. At least once (the
    firing a second time, before its resolve), never lost. Before the fix the group stayed locked for as long as the
    engine was frozen: the resolve was not sent at all meanwhile."""
    config = _config(tmp_path, hook.url, pg_url)
    config = config.model_copy(
        update={"rules": config.rules.model_copy(update={"evaluation_interval_seconds": INTERVAL})}
    )
    src = ScriptedSource()
    src.down = {"2"}
    policy = DeliveryPolicy(hold_seconds=2.0)
    freezing = _FrozenAfterSend(hook.url)
    a = AlertService(config, store=store, registry=CollectorRegistry(), source=src, policy=policy)
    a._notifier_for = lambda target: freezing
    b = AlertService(config, store=store, registry=CollectorRegistry(), source=src, policy=policy)
    a.run_once(T0)
    assert b.run_once(T0) is None
    frozen = threading.Thread(target=a.run_once, args=(T0 + timedelta(seconds=30),), daemon=True)
    frozen.start()
    firing, resolved = ("firing", "KafkaBrokerUnreachable", "shop"), ("resolved", "KafkaBrokerUnreachable", "shop")
    try:
        assert freezing.sent.wait(10) and _pages(hook) == [firing]  # a is frozen inside its delivery
        src.down = set()
        cycles = iter(range(45, 1000))

        def resolve_sent() -> bool:  # b takes over once a's lease expired, resolves, and sends what it can
            b.run_once(T0 + timedelta(seconds=next(cycles)))
            return resolved in _pages(hook)

        wait_until(resolve_sent, timeout=20, what=lambda: f"the resolve while a is frozen (got {_pages(hook)})")
    finally:
        freezing.wake.set()
        frozen.join(timeout=30)
    assert b.lease.epoch == 2
    assert _pages(hook) == [firing, firing, resolved]
    with store.session() as s:
        assert repo.outbox_depth(session=s) == 0


def test_a_clean_stop_hands_the_lease_over_at_the_next_look(tmp_path, store, pg_url, hook):
    config = _config(tmp_path, hook.url, pg_url)
    src = ScriptedSource()
    a, b = (AlertService(config, store=store, registry=CollectorRegistry(), source=src) for _ in range(2))
    a.run_once(T0)
    assert b.run_once(T0) is None
    a.stop()
    b.run_once(T0 + timedelta(seconds=15))
    assert b.role == "active" and b.lease.epoch == 2


def test_two_engines_never_claim_the_same_outbox_rows(store):
    with store.session() as s:
        for gk in ("g1", "g1", "g2"):
            repo.enqueue("http://hook", "fp", gk, "firing", {"x": gk}, now=T0, session=s)
    one, two = store._sessions(), store._sessions()  # two engines' transactions, open together
    try:
        mine = repo.claim_group("http://hook", "g1", T0, session=one)
        assert len(mine) == 2
        assert repo.claim_group("http://hook", "g1", T0, session=two) == []  # locked: skipped, not waited for
        assert len(repo.claim_group("http://hook", "g2", T0, session=two)) == 1  # another group is free
        repo.delivered([r.id for r in mine], session=one)
        one.commit()
        two.rollback()
        assert repo.claim_group("http://hook", "g1", T0, session=two) == []  # sent and gone
    finally:
        one.close()
        two.close()


# A stand-in for ``kafka-health report`` (a real one starts Spark: ~55 s): it appends "<serve pid> <week>" to RUNS.
FAKE_REPORT = """import os, sys
with open(%r, "a") as f:
    f.write(f"{os.getppid()} {sys.argv[-1]}\\n")
"""
# serve as the console script runs it, with the report command pointed at the stand-in; everything else is real.
SERVE = (
    "import sys, monitor.serve as serve; "
    "serve.report_command = lambda args: [sys.executable, %r, *args]; "
    "from monitor.cli import main; sys.exit(main(sys.argv[1:]))"
)
# The processes' evaluation interval: 2 s, not 1 s, so that a process starved for 1.5 s on a loaded machine (load
# average 45-86 seen in CI) does not lose its lease and flap; a takeover then takes up to 3.5 s.
SERVE_INTERVAL = 2.0
SLOTS = "* * * * * */3"  # a report slot every 3 s (croniter's sixth field is seconds): ticks of 0.75 s
HA_CONFIG = """service: {host: 127.0.0.1, port: %(port)d}
store: {url: '%(url)s'}
prometheus: {url: 'http://127.0.0.1:%(prom)d'}
alertmanager: {urls: %(ams)s}
rules: {evaluation_interval_seconds: %(interval)s, files: ['%(rules)s'], overrides: {%(off)s}}
lake: {path: '%(lake)s'}
reports: {schedule: '%(slots)s'}
clusters: [{name: c1, bootstrap_servers: '127.0.0.1:1', brokers: [{id: 1}]}]
tenants: [{name: shop, selectors: [{cluster: c1, topic_prefixes: [orders.]}], receivers: {webhooks: ['%(hook)s']}}]
"""
# The incidents: one rule over a metric the test serves (IncidentExporter) through a real Prometheus, so an incident
# fires and resolves within a scrape and a cycle; the 34 built-in rules are off (they would only say "no data").
INCIDENT_RULES = """rules:
  - name: KhTestIncident
    severity: critical
    scope: topic
    expr: max by (cluster, topic) (kh_test_incident) > 0
    annotations: {summary: "incident on {{ $labels.topic }}"}
"""


def _serve(tmp_path, name: str, url: str, *, prom: int, hook: str, ams: list[str]) -> tuple[subprocess.Popen, int]:
    """``kafka-health serve --role api,alerts``, its own lake (as replicas on separate volumes), one shared store."""
    port = free_port()
    cfg = tmp_path / f"{name}.yaml"
    lake = tmp_path / name / "lake"
    rules = tmp_path / "incident_rules.yaml"
    rules.write_text(INCIDENT_RULES)
    off = ", ".join(f"{r.name}: {{enabled: false}}" for r in load_rules())
    values = dict(
        port=port,
        url=url,
        prom=prom,
        interval=SERVE_INTERVAL,
        lake=lake,
        slots=SLOTS,
        rules=rules,
        off=off,
        hook=hook,
        ams=ams,
    )
    cfg.write_text(HA_CONFIG % values)
    fake = tmp_path / "fake_report.py"
    fake.write_text(FAKE_REPORT % str(tmp_path / "runs"))
    log = (tmp_path / f"{name}.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE % str(fake), "serve", "--config", str(cfg), "--role", "api,alerts"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    return proc, port


def _report_runs(tmp_path) -> list[int]:
    """The serve pid of each report run, in order."""
    path = tmp_path / "runs"
    return [int(line.split()[0]) for line in path.read_text().splitlines()] if path.exists() else []


def _claims(url: str) -> list[tuple[str, str, str, int]]:
    """(slot, holder, state, attempt) of every report slot claimed, oldest first."""
    engine = create_engine(url)
    try:
        with engine.connect() as c:
            rows = c.execute(
                text("SELECT slot, holder, state, attempt FROM job_runs WHERE job = 'report' ORDER BY slot")
            )
            return [tuple(r) for r in rows]
    finally:
        engine.dispose()


def _ledger(tmp_path, url: str, at_least: int):
    """(report runs, claims) read together: at least ``at_least`` claims, none running, and no run began between the
    two reads (the runs file is read before and after the claims)."""
    runs, rows = _report_runs(tmp_path), _claims(url)
    if len(rows) < at_least or any(r[2] == "running" for r in rows) or _report_runs(tmp_path) != runs:
        return None
    return runs, rows


def _tenants(port: int, token: str) -> tuple[int, object]:
    r = httpx.get(f"http://127.0.0.1:{port}/api/v1/tenants", headers={"Authorization": f"Bearer {token}"}, timeout=5)
    return r.status_code, r.json()


def _transitions(hook: WebhookReceiver) -> Counter[tuple[str, str]]:
    """How often the receiver got each (incident topic, firing|resolved) of KhTestIncident."""
    return Counter(
        (a["labels"]["topic"], a["status"])
        for doc in list(hook.received)
        for a in doc["alerts"]
        if a["labels"]["alertname"] == "KhTestIncident"
    )


def _am_incidents(url: str) -> list[tuple[str, str]]:
    """(topic, fingerprint) of each KhTestIncident alert an Alertmanager shows now (a resolved one it shows no more)."""
    alerts = httpx.get(f"{url}/api/v2/alerts", params={"filter": 'alertname="KhTestIncident"'}, timeout=5).json()
    return sorted((a["labels"]["topic"], a["fingerprint"]) for a in alerts)


def _ams_show(urls: list[str], firing: set[str]) -> bool:
    """Each of ``urls`` shows each incident of ``firing`` once and nothing else, under the same fingerprint."""
    views = [_am_incidents(u) for u in urls]
    return all([t for t, _ in v] == sorted(firing) for v in views) and all(v == views[0] for v in views)


def _epoch_seen(port: int, scrape: str) -> float | None:
    """The lease epoch a process last read (``kafka_health_alert_engine_lease_epoch``)."""
    try:
        text_ = httpx.get(
            f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {scrape}"}, timeout=5
        ).text
    except httpx.HTTPError:
        return None
    line = next((x for x in text_.splitlines() if x.startswith("kafka_health_alert_engine_lease_epoch ")), None)
    return float(line.split()[1]) if line else None


def test_two_serve_processes_share_the_lease_the_schedule_and_the_answers(tmp_path, pg_url):
    """Two real ``kafka-health serve --role api,alerts`` processes on a fresh PostgreSQL database (migrated by serve),
    a real Prometheus scraping the test's incident exporter, and the tenant's webhook a real HTTP receiver here.

    Alert engine, through three faults of the active process, each with an incident in flight: kill -9, SIGSTOP (then
    SIGCONT: the woken one stands by), and its database connections cut (every connection of its path to PostgreSQL
    reset and new ones refused, then mended). At each fault the incident firing before it resolves during the
    failover and a new one starts: the receiver gets every firing and every resolve exactly once (no miss, no
    duplicate, the deposed engine sends nothing). Schedules: each report slot runs once with both up (one claim, one
    run), and only the survivor runs them after the kill; the config's tenants are synced once. Answers: one token,
    the same answer from both; revoked through the store, refused by both.

    Alertmanager: both engines post to a real gossiping pair (``alertmanager.urls``). After each fault both show each
    incident firing once (same fingerprint, no second copy from the other engine) and the resolved one no more; with
    the second one killed before the last fault, the first still receives, the webhook counts are still exact, and the
    dead one's rows wait in the outbox for it (retried, not lost, not dead-lettered)."""
    db = f"kh_ha_{uuid.uuid4().hex[:8]}"
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f"CREATE DATABASE {db}"))
    url = pg_url.rsplit("/", 1)[0] + f"/{db}"
    pg = make_url(url)
    # each process reaches the store through its own path, which the test can cut
    paths = {n: CuttablePath(pg.host or "127.0.0.1", pg.port or 5432).start() for n in ("a", "b")}
    url_via = {n: pg.set(host="127.0.0.1", port=p.port).render_as_string(hide_password=False) for n, p in paths.items()}
    hook, exporter = WebhookReceiver().start(), IncidentExporter("c1").start()
    prom, prom_port = own_prometheus(tmp_path, [exporter.port])
    ams = alertmanager_pair(tmp_path)
    am_urls = [u for _, u in ams]
    serve = lambda name, path: _serve(tmp_path, name, url_via[path], prom=prom_port, hook=hook.url, ams=am_urls)  # noqa: E731 - one call site each
    procs = dict(a=serve("a", "a"), b=serve("b", "b"))
    path_of = {"a": "a", "b": "b"}
    logs = lambda: [(tmp_path / f"{n}.log").read_text()[-2000:] for n in path_of]  # noqa: E731 - a failure's detail
    expected: Counter[tuple[str, str]] = Counter()
    takeovers: dict[str, float] = {}

    def incident(on: str, off: str | None = None) -> None:
        exporter.on(on)
        expected[(on, "firing")] = 1
        if off:
            exporter.off(off)
            expected[(off, "resolved")] = 1

    def delivered() -> bool:  # everything expected so far has arrived (more than once shows in the final count)
        return all(_transitions(hook)[k] >= 1 for k in expected)

    def firing() -> set[str]:
        return {t for (t, kind), n in expected.items() if kind == "firing" and (t, "resolved") not in expected}

    def alertmanagers_show(urls: list[str]) -> None:
        what = lambda: f"{[_am_incidents(u) for u in urls]} for {firing()}"  # noqa: E731 - a failure's detail
        assert wait_until(lambda: _ams_show(urls, firing()), timeout=30, what=what)

    def fault(kind: str, survivor: str, alertmanagers: list[str]) -> None:
        t0 = time.monotonic()
        assert wait_until(lambda: engine_role(procs[survivor][1]) == "active", timeout=30, what=logs)
        takeovers[kind] = time.monotonic() - t0
        wait_until(delivered, timeout=30, what=lambda: f"{dict(_transitions(hook))} of {dict(expected)}")
        alertmanagers_show(alertmanagers)

    try:
        assert wait_until(
            lambda: sorted(str(engine_role(p)) for _, p in procs.values()) == ["active", "standby"], timeout=90
        ), logs()
        incident("orders.i1")  # it fires while the schedule and the answers are checked
        # the weekly report schedule: each slot claimed once and run once, whichever replica looked first
        runs, both = wait_until(lambda: _ledger(tmp_path, url, 2), timeout=30, what=logs)
        assert len(runs) == len(both) and {(r[2], r[3]) for r in both} == {("success", 1)}, (runs, both)
        assert set(runs) <= {procs["a"][0].pid, procs["b"][0].pid}

        # one token, the same answer from both replicas; revoked, refused by both
        store = Store(url)
        with store.session() as s:
            row, token = _operator_token(s, "ha")
            _, scrape = _operator_token(s, "scrape")
        answers = [_tenants(p, token) for _, p in procs.values()]
        assert (
            answers[0] == answers[1]
            and answers[0][0] == 200
            and [t["name"] for t in answers[0][1]["items"]] == ["shop"]
        ), answers
        with store.session() as s:
            tokens.revoke(db_session=s, token=s.get(tokens.ApiToken, row.id), now=datetime.now(timezone.utc))
        assert wait_until(lambda: [_tenants(p, token)[0] for _, p in procs.values()] == [401, 401], timeout=10)
        store.dispose()
        wait_until(delivered, timeout=30, what=lambda: f"{dict(_transitions(hook))} of {dict(expected)}")
        assert wait_until(lambda: all(alertmanager_peers(u) == 2 for u in am_urls), timeout=30)  # the pair gossips
        alertmanagers_show(am_urls)

        # fault 1: kill -9 of the active engine; i1 resolves and i2 starts during the failover
        active = next(n for n, (_, p) in procs.items() if engine_role(p) == "active")
        standby = "b" if active == "a" else "a"
        procs[active][0].send_signal(signal.SIGKILL)
        incident("orders.i2", off="orders.i1")
        fault("kill", standby, am_urls)
        procs[active][0].wait()
        # the survivor runs every slot from now on
        # (a run the killed one had begun stays claimed until a newer slot supersedes it: then "abandoned")
        before = len(_claims(url))
        runs, rows = wait_until(lambda: _ledger(tmp_path, url, before + 2), timeout=30, what=logs)
        after = rows[before:]
        assert {(r[1].split(":")[1], r[2]) for r in after} == {(str(procs[standby][0].pid), "success")}, after
        assert runs[-len(after) :] == [procs[standby][0].pid] * len(after)

        procs[active] = serve(active + "2", active)  # the killed one comes back as the standby
        path_of[active + "2"] = active
        assert wait_until(lambda: engine_role(procs[active][1]) == "standby", timeout=90)

        # fault 2: SIGSTOP of the active engine; i2 resolves and i3 starts while it is frozen; SIGCONT: it stands by
        frozen, other = standby, active
        procs[frozen][0].send_signal(signal.SIGSTOP)
        incident("orders.i3", off="orders.i2")
        fault("stop", other, am_urls)
        procs[frozen][0].send_signal(signal.SIGCONT)
        assert wait_until(lambda: engine_role(procs[frozen][1]) == "standby", timeout=30)
        metrics = httpx.get(
            f"http://127.0.0.1:{procs[frozen][1]}/metrics", headers={"Authorization": f"Bearer {scrape}"}, timeout=5
        ).text
        assert "kafka_health_alert_engine_active 0.0" in metrics

        # the pair's second Alertmanager dies: the first keeps receiving, its rows wait in the outbox for it
        ams[1][0].kill()
        ams[1][0].wait()

        # fault 3: the active engine's database connections cut (reset, new ones refused); i3 resolves, i4 starts
        cut, survivor = other, frozen
        paths[cut].cut()
        incident("orders.i4", off="orders.i3")
        fault("cut", survivor, am_urls[:1])
        paths[cut].mend()
        with create_engine(url).connect() as c:
            epoch = c.execute(text("SELECT epoch FROM engine_lease")).scalar()
        # mended, it reads the lease again (the new epoch); whatever it does next, the counts below show it sent
        # nothing twice (its role is not asserted: on a starved CI machine the survivor may lose the lease to it)
        assert wait_until(lambda: (_epoch_seen(procs[cut][1], scrape) or 0) >= epoch, timeout=30, what=logs)
        # one takeover per fault at least; a process starved past its lease on a loaded machine is one more
        assert epoch >= 4

        exporter.off("orders.i4")  # the engine active now resolves it
        expected[("orders.i4", "resolved")] = 1
        wait_until(delivered, timeout=30, what=lambda: f"{dict(_transitions(hook))} of {dict(expected)}")
        alertmanagers_show(am_urls[:1])
        time.sleep(2 * SERVE_INTERVAL)  # a late duplicate from any engine would arrive within two cycles
        assert _transitions(hook) == expected, (dict(_transitions(hook)), hook.received)
        assert _ams_show(am_urls[:1], set())
        with create_engine(url).connect() as c:  # what the dead one missed is kept for it, none dead-lettered yet
            waiting = c.execute(text("SELECT target, kind, attempts FROM alert_outbox")).all()
            dead = c.execute(text("SELECT count(*) FROM alert_dead_letters")).scalar()
        assert {(t, k) for t, k, _ in waiting} >= {("alertmanager#2", "firing"), ("alertmanager#2", "resolved")}
        assert {t for t, _, _ in waiting} == {"alertmanager#2"} and min(a for *_, a in waiting) >= 1 and dead == 0
        print(f"takeover seconds (fault to the survivor's /readyz active): {takeovers}")

        # the config's tenants were added by one replica; the others (the restarted one too) found nothing to do
        synced = [f.name for f in tmp_path.glob("*.log") if "config tenants synced: added" in f.read_text()]
        assert len(synced) == 1, synced
    finally:
        for proc, _ in procs.values():
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            proc.wait()
        prom.kill()
        prom.wait()
        for am, _ in ams:
            am.kill()
            am.wait()
        hook.stop()
        exporter.stop()
        for p in paths.values():
            p.stop()
        with admin.connect() as c:
            c.execute(text(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
        admin.dispose()


def _operator_token(s, name: str):
    return tokens.create(
        db_session=s, kind=tokens.TokenKind.OPERATOR, tenant=None, name=name, now=datetime.now(timezone.utc)
    )
