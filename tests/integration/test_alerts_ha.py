"""Two alert engines on one real PostgreSQL store (issue 31): the lease decides who evaluates, its epoch fences every
write, and the outbox is claimed FOR UPDATE SKIP LOCKED. A real HTTP webhook receiver counts deliveries.

The engines are two ``AlertService`` objects in this process, each with its own lease holder and its own connections;
a frozen engine (SIGSTOP) is one whose cycles are not run while real time passes. The evaluation interval is 1 s here
(the lease expires 1.5 s after its last renewal, on the database's clock), so a takeover costs 2 s of wall time.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import select

from alerts import repo
from alerts.component import AlertService
from alerts.lease import Deposed
from alerts.models import AlertInstance, EngineLease, OutboxEntry
from tests.integration import test_alerts_restart as restart
from tests.integration.alerts_helpers import ScriptedSource

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
        tmp_path, store, pg_url, hook):
    config = _config(tmp_path, hook.url, pg_url)
    config = config.model_copy(update={"rules": config.rules.model_copy(
        update={"evaluation_interval_seconds": INTERVAL})})
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
        ("firing", "KafkaBrokerUnreachable", "shop")]
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
    assert _pages(hook) == [("firing", "KafkaBrokerUnreachable", "shop"),
                            ("resolved", "KafkaBrokerUnreachable", "shop")]


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
