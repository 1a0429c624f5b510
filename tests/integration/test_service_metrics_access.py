"""Who reads the service's own /metrics: it names every tenant (contracts, alert instances, advisor findings with
client ids), so where the API is served only an operator token reads it; a collector-only process (no API, no
tokens, no store) serves it to Prometheus on its private port."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from fastapi.testclient import TestClient

from monitor.api import tokens
from monitor.serve import build_app
from tests.api_fixtures import make_config

pytestmark = pytest.mark.integration


@pytest.fixture
def config(tmp_path):
    c = make_config()
    return c.model_copy(update={"store": c.store.model_copy(update={"url": f"sqlite:///{tmp_path / 'kh.db'}"})})


def test_metrics_of_a_process_serving_the_api_is_an_operators_to_read(config):
    app = build_app(config, ("api",))
    with TestClient(app) as client:
        with app.state.store.session() as s:
            now = datetime.now(timezone.utc)
            _, operator = tokens.create(db_session=s, kind=tokens.TokenKind.OPERATOR, tenant=None, name="o", now=now)
            _, acme = tokens.create(db_session=s, kind=tokens.TokenKind.TENANT, tenant="acme", name="a", now=now)
        none = client.get("/metrics")
        assert none.status_code == 401 and none.json()["error"]["code"] == "unauthorized"
        tenant = client.get("/metrics", headers={"Authorization": f"Bearer {acme}"})
        assert tenant.status_code == 403 and "globex" not in tenant.text
        wrong = client.get("/metrics", headers={"Authorization": "Bearer kh_000000000000_nope"})
        assert wrong.status_code == 401
        ok = client.get("/metrics", headers={"Authorization": f"Bearer {operator}"})
        assert ok.status_code == 200
        # The positive control: what the tenant was refused does name the other tenant.
        assert 'tenant="globex"' in ok.text and "kafka_health_build_info" in ok.text


def test_a_collector_only_process_serves_metrics_to_prometheus_without_a_token(config):
    with TestClient(build_app(config, ("collector",))) as client:
        r = client.get("/metrics")
        assert r.status_code == 200 and "kafka_health_build_info" in r.text
