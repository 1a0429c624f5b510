"""A remembered tenant health answer is sent before routing (monitor/health/hits.py, issue 33 item 4): the same bytes
and headers as the route's, counted under the route's template, and only after authentication, within the token's
rate limit, to a token that may see that tenant. Everything else reaches the route, which answers as before."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from alerts.models import AlertInstance
from monitor.core.store import Store
from monitor.health.hits import polled_tenant
from monitor.health.share_groups import ShareGroupBoard
from monitor.health.slo import SloBoard
from monitor.health.streams_groups import StreamsGroupBoard
from monitor.serve import build_app
from tests.api_fixtures import NOW, alert, beat, make_config, new_token
from tests.harness.fake_source import FakeSource

pytestmark = pytest.mark.unit
HEALTH = "/api/v1/tenants/{}/health"


class CountingMemo:
    """The app's AnswerMemo, counting its look-ups: one per request answered before routing, two when the request
    went on to the route (which looks again before computing)."""

    def __init__(self, memo):
        self.memo, self.gets = memo, 0

    def get(self, *args):
        self.gets += 1
        return self.memo.get(*args)

    def __getattr__(self, name):
        return getattr(self.memo, name)


@pytest.fixture
def served(request, tmp_path):
    c = make_config()
    service = c.service.model_copy(update=getattr(request, "param", {}))  # the rate limit, where a test sets it
    store_settings = c.store.model_copy(update={"url": f"sqlite:///{tmp_path / 'kh.db'}"})
    app = build_app(c.model_copy(update={"store": store_settings, "service": service}), ("api",))
    app.state.clock = lambda: NOW
    store: Store = app.state.store
    with store.session() as s:
        s.add_all([beat("shared"), beat("acme-only"), beat("globex-only")])
        s.add(alert("f1", tenant="acme", labels={"topic": "acme.orders"}))
    for name, board in (
        ("slo_board", SloBoard),
        ("share_board", ShareGroupBoard),
        ("streams_board", StreamsGroupBoard),
    ):
        setattr(app.state, name, board(lambda config: FakeSource()))
    with TestClient(app, raise_server_exceptions=False) as client:
        app.state.store_watch.refresh()
        app.state.health_memo = memo = CountingMemo(app.state.health_memo)
        yield client, store, memo


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_remembered_answer_is_sent_before_routing_with_the_routes_bytes_and_headers(served):
    client, store, memo = served
    acme = _auth(new_token(store, "acme"))
    first = client.get(HEALTH.format("acme"), headers=acme)
    assert first.status_code == 200 and first.json()["status"] == "degraded"
    assert memo.gets == 2  # a miss: looked at before routing, then by the route, which computed and remembered it
    again = client.get(HEALTH.format("acme"), headers=acme)
    assert memo.gets == 3  # answered before routing
    assert again.content == first.content
    assert {k: again.headers[k] for k in ("content-type", "content-length")} == {
        "content-type": "application/json",
        "content-length": str(len(first.content)),
    }
    operator = _auth(new_token(store, None))
    metrics = client.get("/metrics", headers=operator).text
    count = re.search(
        r'kafka_health_http_request_duration_seconds_count\{method="GET",route="/api/v1/tenants/\{tenant\}/health",'
        r'status="200"\} (\S+)',
        metrics,
    )
    assert count is not None and float(count.group(1)) == 2


def test_a_new_evaluation_is_answered_from_the_store_not_from_what_was_remembered(served):
    client, store, memo = served
    acme = _auth(new_token(store, "acme"))
    before = [client.get(HEALTH.format("acme"), headers=acme).json() for _ in range(2)]  # the second remembered
    with store.session() as s:  # the engine's next evaluation: new heartbeats, and the alert resolved
        for cluster in ("shared", "acme-only"):
            s.merge(beat(cluster, age_s=1))
        s.get(AlertInstance, "f1").state = "resolved"
    client.app.state.store_watch.refresh()  # as its thread would within 0.25 s
    gets = memo.gets
    after = client.get(HEALTH.format("acme"), headers=acme).json()
    assert memo.gets == gets + 2  # not sent before routing: the route computed it again
    assert before[0] == before[1] and before[1]["status"] == "degraded"
    assert after["status"] == "ok" and after["as_of"] != before[1]["as_of"]


def test_another_tenants_remembered_answer_is_never_sent_and_its_404_is_the_routes(served):
    client, store, memo = served
    operator, globex = _auth(new_token(store, None)), _auth(new_token(store, "globex"))
    assert client.get(HEALTH.format("acme"), headers=operator).status_code == 200  # acme's answer is remembered
    gets = memo.gets
    refused = client.get(HEALTH.format("acme"), headers=globex)
    unknown = client.get(HEALTH.format("no-such-tenant"), headers=globex)
    assert refused.status_code == unknown.status_code == 404
    assert refused.json() == unknown.json()
    assert "acme" not in refused.text
    assert memo.gets == gets  # refused on visibility, here and by the route, before anything remembered was asked


@pytest.mark.parametrize("served", [{"api_rate_limit_per_second": 0.01, "api_rate_limit_burst": 3}], indirect=True)
def test_a_remembered_answer_needs_a_valid_token_and_respects_its_rate_limit(served):
    client, store, memo = served
    operator = _auth(new_token(store, None))
    assert client.get(HEALTH.format("acme"), headers=operator).status_code == 200
    assert client.get(HEALTH.format("acme"), headers=operator).status_code == 200  # remembered
    gets = memo.gets
    assert client.get(HEALTH.format("acme")).status_code == 401
    assert client.get(HEALTH.format("acme"), headers=_auth("kh_000000000000_" + "x" * 43)).status_code == 401
    assert client.get(HEALTH.format("acme"), headers=operator).status_code == 200  # the burst's third
    assert client.get(HEALTH.format("acme"), headers=operator).status_code == 429  # past it, remembered or not
    assert memo.gets == gets + 1  # only the request within the limit looked at what is remembered


@pytest.mark.parametrize(
    "method,path,root,expected",
    [
        ("GET", "/api/v1/tenants/acme/health", "", "acme"),
        ("HEAD", "/api/v1/tenants/acme/health", "", None),
        ("POST", "/api/v1/tenants/acme/health", "", None),
        ("GET", "/api/v1/tenants//health", "", None),
        ("GET", "/api/v1/tenants/a/b/health", "", None),
        ("GET", "/api/v1/tenants/acme/health/", "", None),
        ("GET", "/api/v1/tenants/acme", "", None),
        ("GET", "/api/v1/tenants/acme/health", "/proxy", None),
    ],
)
def test_only_a_get_of_one_tenants_health_is_looked_up(method, path, root, expected):
    assert polled_tenant({"method": method, "path": path, "root_path": root}) == expected
