"""The service's own /metrics has prometheus-client's process metrics and every HTTP request by method, route
template and status: bounded labels (a tenant's name or a junk path never becomes a label value), and the requests
authentication refuses before routing counted under their route too."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest
from fastapi.testclient import TestClient

from monitor.api import tokens
from monitor.serve import build_app
from tests.api_fixtures import make_config

pytestmark = pytest.mark.unit
HTTP = "kafka_health_http_request_duration_seconds"


@pytest.fixture
def served(tmp_path):
    c = make_config()
    config = c.model_copy(update={"store": c.store.model_copy(update={"url": f"sqlite:///{tmp_path / 'kh.db'}"})})
    app = build_app(config, ("api",))
    with TestClient(app) as client:
        with app.state.store.session() as s:
            _, operator = tokens.create(
                db_session=s, kind=tokens.TokenKind.OPERATOR, tenant=None, name="o", now=datetime.now(timezone.utc)
            )
        yield client, {"Authorization": f"Bearer {operator}"}


def _counts(text: str) -> dict[tuple[str, str, str], float]:
    out = {}
    for labels, value in re.findall(rf"^{HTTP}_count\{{(.*)\}} (\S+)$", text, flags=re.MULTILINE):
        d = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        out[(d["method"], d["route"], d["status"])] = float(value)
    return out


def test_requests_are_counted_by_route_template_and_status(served):
    client, operator = served
    assert client.get("/api/v1/tenants/acme", headers=operator).status_code == 200
    assert client.get("/api/v1/tenants/globex", headers=operator).status_code == 200
    assert client.get("/api/v1/tenants/no-such-tenant-7f3a", headers=operator).status_code == 404
    assert client.get("/api/v1/tenants/acme").status_code == 401  # refused before routing
    assert client.get("/wp-login.php-4b1c", headers=operator).status_code == 404
    text = client.get("/metrics", headers=operator).text
    counts = _counts(text)
    assert counts[("GET", "/api/v1/tenants/{tenant}", "200")] == 2
    assert counts[("GET", "/api/v1/tenants/{tenant}", "404")] == 1
    assert counts[("GET", "/api/v1/tenants/{tenant}", "401")] == 1
    assert counts[("GET", "unmatched", "404")] == 1
    http_lines = "\n".join(line for line in text.splitlines() if line.startswith(HTTP))
    assert not re.search(r"acme|globex|no-such-tenant|wp-login", http_lines)


def test_process_metrics_are_exported(served):
    client, operator = served
    text = client.get("/metrics", headers=operator).text
    for name in (
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
        "python_info",
    ):
        assert re.search(rf"^{name}(\{{.*\}})? ", text, flags=re.MULTILINE), name


def test_the_paths_remembered_for_their_template_are_bounded(monkeypatch):
    import asyncio

    from prometheus_client import CollectorRegistry

    from monitor.api import httpmetrics

    monkeypatch.setattr(httpmetrics, "MAX_PATHS_SEEN", 5)
    app = build_app(make_config(), ("collector",))

    async def answer(scope, receive, send):
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def noop(message):
        pass

    middleware = httpmetrics.RequestMetricsMiddleware(
        answer, duration=httpmetrics.request_duration(CollectorRegistry())
    )
    sizes = []
    for path in [*(f"/junk-{i}" for i in range(12)), "/" + "x" * 500]:
        asyncio.run(middleware({"type": "http", "method": "GET", "path": path, "app": app}, None, noop))
        sizes.append(len(middleware._seen))
    assert max(sizes) == 5  # emptied when full, never past it
    assert not any(len(p) > httpmetrics.MAX_PATH_SEEN for _, p in middleware._seen)
