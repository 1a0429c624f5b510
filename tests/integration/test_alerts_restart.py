"""Persistence and delivery on a real store (SQLite file and PostgreSQL) with a real HTTP webhook receiver:
a restart mid-incident neither re-pages nor loses the resolve; a webhook that is down then up loses nothing;
dead letters are kept and replayable."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import select

from alerts import repo
from alerts.component import AlertService
from alerts.models import AlertInstance, DeadLetter, EngineHeartbeat, OutboxEntry
from alerts.notify import DeliveryPolicy
from monitor.core.config import (
    AlertmanagerSettings,
    Config,
    TenantConfig,
    TenantReceivers,
    TenantSelector,
)
from monitor.core.store import Store
from monitor.core.times import as_utc
from monitor.schema import create_all
from monitor.stack import Stack, StackLayout
from tests.conftest import wait_until
from tests.integration.alerts_helpers import ScriptedSource, WebhookReceiver, run_cli

pytestmark = pytest.mark.integration
T0 = datetime(2026, 11, 22, 1, 0, tzinfo=timezone.utc)


def _config(tmp_path, hook_url: str, store_url: str) -> Config:
    base = Stack(StackLayout(dir=tmp_path, port_base=19350)).config(store_url=store_url)  # config only, no process
    tenant = TenantConfig(
        name="shop",
        selectors=(TenantSelector(cluster="local", topic_prefixes=("orders.",)),),
        receivers=TenantReceivers(alertmanager=False, webhooks=(hook_url,)),
    )
    return base.model_copy(update={"tenants": (tenant,), "alertmanager": AlertmanagerSettings(url=None)})


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'alerts.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def store(store_url):
    s = Store(store_url)
    from monitor.core.store import Base

    Base.metadata.drop_all(s.engine)
    create_all(s)
    yield s
    s.dispose()


def _service(config, store, source, **kw):
    return AlertService(config, store=store, registry=CollectorRegistry(), source=source, **kw)


@pytest.fixture
def hook():
    receiver = WebhookReceiver().start()
    yield receiver
    receiver.stop()


def _broker_down(tmp_path, store, store_url, hook, broker, **kw):
    """A service whose source reports ``broker`` down, delivering to ``hook`` for tenant shop."""
    config = _config(tmp_path, hook.url, store_url)
    src = ScriptedSource()
    src.down = {broker}
    return config, src, _service(config, store, src, **kw)


def _broker_alerts(hook):
    return [a for a in hook.alerts() if a[1] == "KafkaBrokerUnreachable"]


def test_restart_mid_incident_neither_repages_nor_loses_the_resolve(tmp_path, store, store_url, hook):
    config, src, a = _broker_down(tmp_path, store, store_url, hook, "2")
    a.run_once(T0)
    a.run_once(T0 + timedelta(seconds=30))  # for: 30s -> firing, delivered
    assert _broker_alerts(hook) == [("firing", "KafkaBrokerUnreachable", "shop")]
    a.stop()  # a clean restart gives the lease up (tests/integration/test_alerts_ha.py: one that dies)
    b = _service(config, store, src)  # "restart": a new service object on the same store
    b.run_once(T0 + timedelta(seconds=45))
    assert _broker_alerts(hook) == [("firing", "KafkaBrokerUnreachable", "shop")]  # no second page
    src.down = set()
    # Crash after the evaluation committed but before delivery: the resolve sits in the outbox.
    b.evaluate(T0 + timedelta(seconds=60))
    b.lease.release()  # b died: on PostgreSQL its lease expires (here at once) and c takes over
    c = _service(config, store, src)
    c.run_once(T0 + timedelta(seconds=75))
    assert _broker_alerts(hook) == [
        ("firing", "KafkaBrokerUnreachable", "shop"),
        ("resolved", "KafkaBrokerUnreachable", "shop"),
    ]
    c.run_once(T0 + timedelta(seconds=90))
    assert len(_broker_alerts(hook)) == 2
    with store.session() as s:
        row = s.scalars(select(AlertInstance).where(AlertInstance.rule == "KafkaBrokerUnreachable")).one()
        assert (row.state, row.tenant, row.broker, row.notified_state) == ("resolved", "shop", "2", "resolved")
        hb = s.get(EngineHeartbeat, "local")
        assert hb.data_ok and as_utc(hb.evaluated_at) == T0 + timedelta(seconds=90)
    doc = next(d for d in hook.received if d["alerts"][0]["labels"]["alertname"] == "KafkaBrokerUnreachable")
    assert doc["version"] == "4" and doc["alerts"][0]["annotations"]["summary"].startswith("Broker 2")


def test_webhook_down_then_up_loses_nothing_and_dead_letters_replay(tmp_path, store, store_url):
    hook = WebhookReceiver()  # not listening yet: connection refused
    config = _config(tmp_path, hook.url, store_url)
    src = ScriptedSource()
    src.down = {"1"}
    svc = _service(config, store, src, policy=DeliveryPolicy(max_attempts=3, base_backoff_seconds=10))
    svc.run_once(T0)
    svc.run_once(T0 + timedelta(seconds=30))  # fires; delivery fails (attempt 1) -> retry at +10 s
    with store.session() as s:
        [row] = [
            r
            for r in s.scalars(select(OutboxEntry))
            if r.kind == "firing" and r.payload["labels"]["alertname"] == "KafkaBrokerUnreachable"
        ]
        assert row.attempts == 1 and as_utc(row.next_attempt_at) == T0 + timedelta(seconds=40)
        assert "unreachable" in row.last_error and hook.url not in row.last_error
    svc.deliver(T0 + timedelta(seconds=35))  # not due yet: no attempt
    with store.session() as s:
        assert s.get(OutboxEntry, row.id).attempts == 1
    hook.start()
    try:
        svc.deliver(T0 + timedelta(seconds=41))
        assert _broker_alerts(hook) == [("firing", "KafkaBrokerUnreachable", "shop")]
        # Now the receiver refuses with 503 until it dies: after 3 attempts the resolve is a dead letter.
        hook.status = 503
        src.down = set()
        svc.run_once(T0 + timedelta(seconds=60))  # attempt 1
        svc.deliver(T0 + timedelta(seconds=71))  # attempt 2 (backoff 10 s)
        svc.deliver(T0 + timedelta(seconds=92))  # attempt 3 (backoff 20 s) -> dead
        with store.session() as s:
            dead = list(s.scalars(select(DeadLetter)))
            assert [(d.kind, d.attempts) for d in dead] == [("resolved", 3)] and "503" in dead[0].last_error
            assert repo.outbox_depth(session=s) == 0
        hook.status = 200
        with store.session() as s:
            assert repo.replay_dead_letters(now=T0 + timedelta(seconds=100), session=s) == 1
        svc.deliver(T0 + timedelta(seconds=100))
        assert _broker_alerts(hook) == [
            ("firing", "KafkaBrokerUnreachable", "shop"),
            ("resolved", "KafkaBrokerUnreachable", "shop"),
        ]
    finally:
        hook.stop()


def test_unrecoverable_answer_dead_letters_at_once(tmp_path, store, store_url, hook):
    hook.status = 400
    _, _, svc = _broker_down(tmp_path, store, store_url, hook, "3")
    svc.run_once(T0)
    svc.run_once(T0 + timedelta(seconds=30))
    with store.session() as s:
        assert [d.attempts for d in s.scalars(select(DeadLetter))] == [1]
    text = svc.metrics.dead._value.get()  # exported health metric follows the table
    assert text == 1


def test_a_stored_silence_holds_the_page_until_it_is_expired(tmp_path, store, store_url, hook):
    _, _, svc = _broker_down(tmp_path, store, store_url, hook, "2")
    with store.session() as s:
        sil = repo.create_silence(
            [{"name": "alertname", "value": "KafkaBroker.*", "is_regex": True, "is_equal": True}],
            T0,
            T0 + timedelta(hours=1),
            created_by="t",
            comment="",
            tenant=None,
            now=T0,
            session=s,
        )
    svc.run_once(T0)
    svc.run_once(T0 + timedelta(seconds=30))
    assert _broker_alerts(hook) == []
    with store.session() as s:
        row = s.scalars(select(AlertInstance).where(AlertInstance.rule == "KafkaBrokerUnreachable")).one()
        assert (row.state, row.muted_by) == ("firing", f"silence:{sil.id}")
        repo.expire_silence(sil.id, now=T0 + timedelta(seconds=40), session=s)
    svc.run_once(T0 + timedelta(seconds=45))
    assert _broker_alerts(hook) == [("firing", "KafkaBrokerUnreachable", "shop")]


def test_cli_silences_and_outbox_replay(tmp_path, monkeypatch, capsys):
    db = tmp_path / "cli.db"
    cfg = tmp_path / "kh.yaml"
    cfg.write_text(f"store: {{url: 'sqlite:///{db}'}}\n")  # an empty database: the CLI migrates it, as serve does

    def cli(*args):
        return run_cli(monkeypatch, capsys, *args, "--config", str(cfg))

    rc, out, err = cli("silences", "create", "alertname=KafkaDiskFullRisk", "broker!=3", "--duration", "30m")
    assert rc == 0, err
    sid = out.strip()
    rc, out, _ = cli("silences", "list")
    assert sid in out and "active" in out and "alertname=KafkaDiskFullRisk,broker!=3" in out
    assert cli("silences", "expire", sid)[0] == 0
    assert "expired" in cli("silences", "list")[1]
    rc, _, err = cli("silences", "create", "nonsense")
    assert rc == 1 and "not a matcher" in err and "Traceback" not in err
    rc, _, err = cli("silences", "expire", "no-such-id")
    assert rc == 1 and "not found" in err
    store = Store(f"sqlite:///{db}")
    with store.session() as s:
        s.add(
            DeadLetter(
                target="alertmanager",
                fingerprint="f",
                group_key="g",
                kind="firing",
                payload={"x": 1},
                attempts=8,
                created_at=T0,
                dead_at=T0,
                last_error="HTTP 503",
            )
        )
    rc, out, _ = cli("outbox", "replay")
    assert rc == 0 and out.startswith("1 dead letter")
    with store.session() as s:
        assert [(r.target, r.attempts) for r in s.scalars(select(OutboxEntry))] == [("alertmanager", 0)]
        assert repo.dead_letter_count(session=s) == 0
    store.dispose()


def test_component_thread_evaluates_on_its_interval_and_stops(tmp_path, store, store_url, hook):
    config, src, _ = _broker_down(tmp_path, store, store_url, hook, "1")
    config = config.model_copy(update={"rules": config.rules.model_copy(update={"evaluation_interval_seconds": 0.2})})
    svc = _service(config, store, src)
    assert not svc.ready()
    svc.start()
    try:
        wait_until(
            lambda: svc.metrics.cycles.labels("ok")._value.get() >= 2, 30, interval=0.1, what="two evaluation cycles"
        )
        assert svc.ready()
        with store.session() as s:
            assert s.get(EngineHeartbeat, "local").data_ok
    finally:
        svc.stop()
    assert not svc._thread.is_alive()
