"""Tenant SLOs against the session stack's real Prometheus: the engine's and the API's queries (1-minute subqueries
over the burn windows and over the 28-day SLO window) run there, and the tenant health answer carries its ``slo``.

The hand-computed values are proved by tests/unit/test_tenant_slo.py and the exported rules by promtool
(tests/integration/test_alerts_promtool.py); this proves the seam: real Prometheus accepts and answers them."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from fastapi.testclient import TestClient

from alerts.detectors import DetectorContext
from alerts.detectors import slo as slo_detector
from alerts.rules import load_rules
from monitor.core.config import (
    PrometheusSettings,
    TenantConfig,
    TenantContract,
    TenantSelector,
)
from monitor.core.prom import prometheus_source
from monitor.core.store import Store
from monitor.core.tenancy import TenantIndex
from monitor.health.slo import SloBoard
from monitor.store.migrate import upgrade
from tests.api_fixtures import build_api, new_token

pytestmark = pytest.mark.integration

TENANTS = (
    TenantConfig(name="shop", selectors=(TenantSelector(cluster="local", topic_prefixes=("orders.",)),)),
    TenantConfig(
        name="ads",
        selectors=(TenantSelector(cluster="local", topic_prefixes=("clicks.",)),),
        contract=TenantContract(availability_objective=0.99),
    ),
)


@pytest.fixture(scope="module")
def config(stack):
    return stack.config(tenants=TENANTS).model_copy(
        update={"prometheus": PrometheusSettings(url=stack.layout.prometheus_url)}
    )


def test_the_engines_burn_rate_queries_run_on_real_prometheus(config):
    now = datetime.now(timezone.utc)
    source = prometheus_source(config.prometheus)
    try:
        ctx = DetectorContext(source=source, now=now, config=config, tenants=TenantIndex(config.tenants))
        for rule in (r for r in load_rules(config.rules) if r.detector == "slo_burn"):
            observations = slo_detector.detect(rule, ctx)  # a QueryError (bad PromQL) would raise here
            assert all(o.labels.get("tenant") in {"shop", "ads"} for o in observations), observations
        brokers, topics = slo_detector._causes(ctx, "5m")
        assert isinstance(brokers, dict) and isinstance(topics, dict)
        assert source.queries >= 6
    finally:
        source.close()


def test_tenant_health_carries_its_slo_from_real_prometheus(config, tmp_path):
    board = SloBoard()
    availability = board.availability(config, datetime.now(timezone.utc))
    assert availability is not None  # Prometheus answered the 28-day subquery (empty if no tenant minute is known)
    assert all(0.0 <= v <= 1.0 for v in availability.values()), availability

    store = Store(f"sqlite:///{tmp_path / 'kh.db'}")
    upgrade(store)
    try:
        app = build_api(config, store, now=datetime.now(timezone.utc))
        with TestClient(app) as client:
            app.state.slo_board = board
            ads = {"Authorization": f"Bearer {new_token(store, 'ads')}"}
            body = client.get("/api/v1/tenants/ads/health", headers=ads).json()
    finally:
        store.dispose()
    slo = body["slo"]
    assert (slo["objective"], slo["window"]) == (0.99, "28d")
    expected = availability.get(("local", "ads"))
    assert slo["availability"] == (None if expected is None else round(expected, 6))
