"""A real scrape of a running service passes Prometheus' linter, ``promtool check metrics``: the API, collector and
alert roles on the local stack, read with an operator token like Prometheus' scrape config does (the JMX catalog
alone is linted in tests/unit/test_exposition_promtool.py)."""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime, timezone

import pytest
from fastapi.testclient import TestClient

from monitor.api import tokens
from monitor.serve import build_app
from tests.conftest import wait_until

pytestmark = pytest.mark.integration
PROMTOOL = shutil.which("promtool")


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (apt-get install prometheus)")
def test_the_service_scrape_passes_promtool_check_metrics(stack, tmp_path):
    app = build_app(stack.config(store_url=f"sqlite:///{tmp_path / 'kh.db'}"), ("api", "collector", "alerts"))
    with TestClient(app) as client:
        with app.state.store.session() as s:
            _, operator = tokens.create(
                db_session=s,
                kind=tokens.TokenKind.OPERATOR,
                tenant=None,
                name="prometheus",
                now=datetime.now(timezone.utc),
            )
        auth = {"Authorization": f"Bearer {operator}"}
        client.get("/api/v1/tenants", headers=auth)

        def scrape() -> str:
            text = client.get("/metrics", headers=auth).text
            # the brokers' request latency (the summary) and the service's own metrics, all in one exposition
            wanted = (
                "kafka_broker_request_latency_seconds{",
                "kafka_health_http_request_duration_seconds_count{",
                "process_cpu_seconds_total",
                "kafka_health_alert_evaluations_total",
            )
            return text if all(w in text for w in wanted) else ""

        text = wait_until(scrape, timeout=120, interval=2, what="a scrape with broker, HTTP and process metrics")
    res = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
