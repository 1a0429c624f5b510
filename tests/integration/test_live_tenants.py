"""A tenant created through the API (or CLI) is live everywhere within one cycle, without a restart, and a deleted
one stops being attributed: the live tenant set over a real store, read by the alert engine's service (attribution
and webhook routing) and by the collectors' tenant lookup and contract series."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import select

from alerts.component import AlertService
from alerts.models import OutboxEntry
from collectors.catalog import TenantLookup
from collectors.contract import TenantContractCollector
from monitor.core.config import TenantConfig, TenantContract, TenantReceivers, TenantSelector, parse_config
from monitor.core.metric_names import M
from monitor.core.prom import InstantSample
from monitor.core.store import Store
from monitor.store.migrate import upgrade
from monitor.tenants import service
from monitor.tenants.live import LiveTenants
from tests.harness.fake_source import FakeSource

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
HOOK = "https://hooks.example/ledger/abc"
CONFIG = parse_config("""
alertmanager: {url: null}
clusters: [{name: c1, bootstrap_servers: "127.0.0.1:1", brokers: [{id: 1}]}]
tenants:
  - name: shop
    selectors: [{cluster: c1, topic_prefixes: [orders.]}]
""")
LEDGER = TenantConfig(
    name="ledger",
    selectors=(TenantSelector(cluster="c1", topic_prefixes=("ledger.",), principals=("User:ledger-app",)),),
    contract=TenantContract(produce_quota_bytes_per_second=1234567),
    receivers=TenantReceivers(webhooks=(HOOK,)),
)


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'kh.db'}")
    upgrade(s)
    with s.session() as db:
        service.sync_config(db_session=db, config=CONFIG, now=T0)
    yield s
    s.dispose()


def _offline(topic: str) -> FakeSource:
    sample = InstantSample({"cluster": "c1", "topic": topic}, 1.0)
    return FakeSource({M["topic_offline_partitions"]: [sample]}, present=M.values())


def _tenants_of(result, rule="KafkaOfflinePartitions") -> set:
    return {i.labels.get("tenant") for i in result.instances.values() if i.rule == rule and i.state.value == "firing"}


def test_a_tenant_created_and_deleted_through_the_registry_is_followed_from_the_next_cycle(store):
    clock = Clock()
    live = LiveTenants(CONFIG, store, check_seconds=5, clock=clock)
    svc = AlertService(
        CONFIG, store=store, registry=CollectorRegistry(), source=_offline("ledger.events"), tenants=live
    )
    assert _tenants_of(svc.run_once(T0)) == {None}  # nobody owns ledger.events yet: operators only

    with store.session() as db:
        service.create(db_session=db, tenant_in=LEDGER, clusters=["c1"], now=T0)
    clock.t += 5  # the next check of the registry (a cycle is 15 s by default)
    result = svc.run_once(T0 + timedelta(seconds=15))
    assert "ledger" in _tenants_of(result)
    with store.session() as db:  # and its notification goes to its own webhook
        targets = {r.target for r in db.scalars(select(OutboxEntry))}
    assert HOOK in targets

    # The collectors' lookup and the contract series follow too.
    lookup = TenantLookup(live, "c1")
    assert lookup.topic("ledger.events") == "ledger" and lookup.client("x", "User:ledger-app") == "ledger"
    contracts = [s for m in TenantContractCollector(live).collect() for s in m.samples]
    assert any(s.labels.get("tenant") == "ledger" and s.value == 1234567 for s in contracts)

    with store.session() as db:
        service.delete(db_session=db, tenant=service.get(db_session=db, name="ledger"))
    clock.t += 5
    result = svc.run_once(T0 + timedelta(seconds=30))
    assert "ledger" not in _tenants_of(result) and lookup.topic("ledger.events") == ""


def test_a_store_that_cannot_be_read_keeps_the_last_known_set(store, tmp_path):
    clock = Clock()
    live = LiveTenants(CONFIG, store, check_seconds=1, clock=clock)
    with store.session() as db:
        service.create(db_session=db, tenant_in=LEDGER, clusters=["c1"], now=T0)
    assert [t.name for t in live.current()] == ["shop", "ledger"]
    store.engine.dispose()
    (tmp_path / "kh.db").unlink()  # the database is gone: every read fails
    (tmp_path / "kh.db").mkdir()
    clock.t += 1
    assert [t.name for t in live.current()] == ["shop", "ledger"]


def test_commands_work_on_the_whole_registry(store):
    """report, advice and capacity read the file's tenants and the store's: an API tenant has its report too."""
    from monitor.tenants.live import with_stored_tenants

    with store.session() as db:
        service.create(db_session=db, tenant_in=LEDGER, clusters=["c1"], now=T0)
    merged = with_stored_tenants(CONFIG, store)
    assert [t.name for t in merged.tenants] == ["shop", "ledger"] and [t.name for t in CONFIG.tenants] == ["shop"]


def test_a_name_used_again_inherits_nothing_of_the_deleted_tenant(store):
    from alerts import repo
    from alerts.models import AlertInstance
    from monitor.api import tokens

    with store.session() as db:
        service.create(db_session=db, tenant_in=LEDGER, clusters=["c1"], now=T0)
        tokens.create(db_session=db, kind=tokens.TokenKind.TENANT, tenant="ledger", name="app", now=T0)
        repo.create_silence(
            [{"name": "alertname", "value": "X", "is_regex": False, "is_equal": True}],
            T0,
            T0 + timedelta(hours=1),
            created_by="t",
            comment="",
            tenant="ledger",
            now=T0,
            session=db,
        )
        db.add(
            AlertInstance(
                fingerprint="fp-ledger",
                rule="KafkaOfflinePartitions",
                state="firing",
                severity="critical",
                cluster="c1",
                broker=None,
                tenant="ledger",
                labels={"tenant": "ledger"},
                annotations={},
                evidence={},
            )
        )
    with store.session() as db:
        service.delete(db_session=db, tenant=service.get(db_session=db, name="ledger"))
        service.create(db_session=db, tenant_in=LEDGER, clusters=["c1"], now=T0)
    with store.session() as db:
        assert tokens.get_all(db_session=db, tenant="ledger") == []
        assert repo.list_silences(session=db, limit=100) == []
        assert db.get(AlertInstance, "fp-ledger") is None
