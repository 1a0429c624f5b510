"""A remembered tenant health answer is sent before routing (monitor/health/hits.py, issue 33 item 4): the same bytes
and headers as the route's, counted under the route's template, and only after authentication, within the token's
rate limit, to a token that may see that tenant. Everything else reaches the route, which answers as before."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from alerts.models import AlertInstance
from alerts.repo import Owner, firing_reasons, read_firing, tenant_alerts_filter
from monitor.core.store import Store
from monitor.health import views
from monitor.health.hits import polled_tenant
from monitor.health.share_groups import ShareGroupBoard
from monitor.health.slo import SloBoard
from monitor.health.streams_groups import StreamsGroupBoard
from monitor.health.views import OneMiss
from monitor.health.watch import AnswerMemo
from monitor.schema import create_all
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


# ---------------------------------------------------------------------------------------------------------------
# After a new evaluation: each answer from memory (the watch's firing instances), and one miss per tenant at a time


class Statements:
    """SQL statements run on ``store`` while inside the ``with``, those naming ``table``."""

    def __init__(self, store: Store, table: str):
        self.store, self.table, self.seen = store, table, 0

    def _record(self, conn, cursor, statement, *args) -> None:
        self.seen += self.table in statement

    def __enter__(self) -> Statements:
        event.listen(self.store.engine, "before_cursor_execute", self._record)
        return self

    def __exit__(self, *exc) -> None:
        event.remove(self.store.engine, "before_cursor_execute", self._record)


def _evaluate(store: Store) -> None:
    """The engine's next evaluation: new heartbeats, acme's alert resolved, a new one for globex, one unlabelled on
    acme's whole cluster."""
    with store.session() as s:
        for cluster in ("shared", "acme-only", "globex-only"):
            s.merge(beat(cluster, age_s=1))
        s.get(AlertInstance, "f1").state = "resolved"
        s.add(alert("f2", rule="KafkaConsumerLag", tenant="globex", labels={"client_id": "globex-app"}))
        s.add(alert("f3", rule="KafkaOfflinePartitions", cluster="acme-only", severity="critical"))


def test_after_a_new_evaluation_each_tenants_answer_is_computed_without_a_query_and_is_the_stores(served):
    client, store, memo = served
    tokens = {t: _auth(new_token(store, t)) for t in ("acme", "globex")}
    for t, auth in tokens.items():
        assert client.get(HEALTH.format(t), headers=auth).status_code == 200
    _evaluate(store)
    with Statements(store, "alert_instances") as read:
        marks = client.app.state.store_watch.refresh()
    assert read.seen == 1  # every tenant's firing instances in one query, with the marks
    gets = memo.gets
    with Statements(store, "alert_instances") as read:
        after = {t: client.get(HEALTH.format(t), headers=auth) for t, auth in tokens.items()}
    assert read.seen == 0  # before: two queries (heartbeats, instances) and a thread hop per tenant
    assert memo.gets == gets + 4  # each a miss, computed again: never the answer remembered before the evaluation
    state = client.app.state
    for t, answer in after.items():  # byte for byte what the store path computes from the store itself
        assert answer.content == views._tenant_health_json(
            store,
            AnswerMemo(),
            t,
            marks,
            state.config,
            NOW,
            state.slo_board,
            state.share_board,
            state.streams_board,
        )
    acme, globex = after["acme"].json(), after["globex"].json()
    assert acme["status"] == "critical" and globex["status"] == "degraded"
    assert [r["alert"] for c in acme["components"] for r in c["reasons"]] == ["KafkaOfflinePartitions"]
    assert [r["alert"] for c in globex["components"] for r in c["reasons"]] == ["KafkaConsumerLag"]


def test_an_answer_never_goes_back_to_marks_older_than_the_store_it_was_read_from(served):
    """The CI failure of 244cfb9 (test_api_tenants' ok-then-critical, 'unknown' instead of 'critical'), pinned: a miss
    read the store in a thread after an evaluation the watch had not seen yet; the next request, a miss under the
    watch's older marks, was computed from those marks and answered the evaluation before (there, 'no evaluation
    yet'). Here the watch is held still, so the marks stay behind the store for as long as the test needs."""
    client, store, memo = served
    watch = client.app.state.store_watch
    watch.stop()  # no refresh but the test's own
    watch.max_age = 3600.0  # the held marks stay current however slow the machine
    acme = _auth(new_token(store, "acme"))
    with store.session() as s:  # an evaluation the marks do not know: acme's alert resolved
        for cluster in ("shared", "acme-only", "globex-only"):
            s.merge(beat(cluster, age_s=1))
        s.get(AlertInstance, "f1").state = "resolved"
    first = client.get(HEALTH.format("acme"), headers=acme)  # a miss: reads the store, so the new evaluation
    second = client.get(HEALTH.format("acme"), headers=acme)  # still the older marks: a miss again
    assert first.json()["status"] == "ok"
    assert second.content == first.content  # before the fix: 'degraded', f1 firing, as of the evaluation before
    with Statements(store, "alert_instances") as read:
        marks = watch.refresh()  # the watch catches up: answered from memory again, no query per request
        third = client.get(HEALTH.format("acme"), headers=acme)
    assert read.seen == 1 and marks is not None and marks.firing is not None
    assert third.content == first.content


def test_concurrent_misses_of_one_tenant_read_the_store_once(served, monkeypatch):
    client, store, memo = served
    state = client.app.state
    state.store_watch.firing_cap = 0  # no firing instances in memory: every miss reads the store in a thread
    acme = _auth(new_token(store, "acme"))
    assert client.get(HEALTH.format("acme"), headers=acme).status_code == 200
    _evaluate(store)
    state.store_watch.refresh()
    computed, gate = [], threading.Event()
    compute = views._tenant_health_json

    def held(*args):  # each hop waits until every request has reached the route
        computed.append(args[2])
        gate.wait(30)
        return compute(*args)

    monkeypatch.setattr(views, "_tenant_health_json", held)
    gets = memo.gets
    with ThreadPoolExecutor(5) as pool:
        answers = [pool.submit(client.get, HEALTH.format("acme"), headers=acme) for _ in range(5)]
        deadline = time.monotonic() + 30
        while memo.gets < gets + 10 and time.monotonic() < deadline:  # each request: before routing, in the route
            time.sleep(0.01)
        gate.set()
        bodies = {a.result().content for a in answers}
    assert memo.gets == gets + 10
    assert computed == ["acme"]  # before: one hop per request (5 here; 1,000 tenants after each evaluation)
    assert len(bodies) == 1


def _rules(rows) -> list[str]:
    return sorted(r.rule for r in rows)


def test_the_firing_index_gives_each_owner_exactly_its_own_query(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'kh.db'}")
    create_all(store)
    with store.session() as s:
        s.add_all(
            [
                alert("a1", rule="A-shared", tenant="acme"),
                alert("a2", rule="A-other-cluster", tenant="acme", cluster="globex-only"),
                alert("a3", rule="A-pending", tenant="acme", state="pending"),
                alert("g1", rule="G-shared", tenant="globex"),
                alert("u1", rule="U-acme-only", cluster="acme-only"),
                alert("u2", rule="U-globex-only", cluster="globex-only"),
                alert("u3", rule="U-shared", cluster="shared"),
                alert("u4", rule="U-acme-only-resolved", cluster="acme-only", state="resolved"),
            ]
        )
    owners = [
        Owner("acme", ("acme-only",)),
        Owner("globex", ("globex-only",)),
        Owner("nobody"),
        Owner("twice", ("shared", "shared")),
    ]
    with store.session() as s:
        index = read_firing(s, cap=100)
        assert index is not None
        for owner in owners:
            assert _rules(index.of(owner)) == _rules(firing_reasons(s, *tenant_alerts_filter(owner))), owner
        assert _rules(index.of(owners[0])) == ["A-other-cluster", "A-shared", "U-acme-only"]
        assert _rules(index.of(owners[1])) == ["G-shared", "U-globex-only"]
        assert index.of(owners[2]) == []
        assert read_firing(s, cap=5) is None  # six firing: past the cap, each owner reads its own
    store.dispose()


def test_one_miss_computes_once_per_key_and_shares_the_answer_or_the_error():
    async def scenario() -> None:
        misses, calls = OneMiss(), []
        release = asyncio.Event()

        async def compute(result: bytes | Exception) -> bytes:
            calls.append(result)
            await release.wait()
            if isinstance(result, Exception):
                raise result
            return result

        same = [asyncio.create_task(misses.run("k", lambda: compute(b"one"))) for _ in range(3)]
        other = asyncio.create_task(misses.run("j", lambda: compute(b"other")))
        unshared = [asyncio.create_task(misses.run(None, lambda: compute(b"none"))) for _ in range(2)]
        await asyncio.sleep(0)
        release.set()
        assert await asyncio.gather(*same) == [b"one"] * 3
        assert await other == b"other" and await asyncio.gather(*unshared) == [b"none"] * 2
        assert calls == [b"one", b"other", b"none", b"none"]

        calls.clear()
        release.clear()
        boom = LookupError("boom")
        failing = [asyncio.create_task(misses.run("k", lambda: compute(boom))) for _ in range(2)]
        await asyncio.sleep(0)
        release.set()
        results = await asyncio.gather(*failing, return_exceptions=True)
        assert results == [boom, boom] and calls == [boom]
        assert await misses.run("k", lambda: compute(b"again")) == b"again"  # an error is not remembered

        calls.clear()
        release.clear()
        first = asyncio.create_task(misses.run("k", lambda: compute(b"cancelled")))
        await asyncio.sleep(0)
        second = asyncio.create_task(misses.run("k", lambda: compute(b"second")))
        await asyncio.sleep(0)
        first.cancel()  # its client left: the one waiting computes it itself
        await asyncio.sleep(0)
        release.set()
        assert await second == b"second" and first.cancelled()
        assert calls == [b"cancelled", b"second"]

    asyncio.run(scenario())


def test_after_an_evaluation_an_unchanged_answer_is_restamped_and_a_changed_one_assessed_again(served, monkeypatch):
    client, store, memo = served
    tokens = {t: _auth(new_token(store, t)) for t in ("acme", "globex")}
    before = {t: client.get(HEALTH.format(t), headers=auth).json() for t, auth in tokens.items()}
    with store.session() as s:  # the next evaluation: new heartbeats; acme's alert measured again, globex unchanged
        for cluster in ("shared", "acme-only", "globex-only"):
            s.merge(beat(cluster, age_s=1))
        s.get(AlertInstance, "f1").evidence = {"value": 42.0}
    marks = client.app.state.store_watch.refresh()
    assessed, assess = [], views.assess
    monkeypatch.setattr(views, "assess", lambda **kw: assessed.append(kw["clusters"]) or assess(**kw))
    after = {t: client.get(HEALTH.format(t), headers=auth) for t, auth in tokens.items()}
    assert assessed == [{"shared", "acme-only"}]  # globex's answer re-stamped, not assessed again
    monkeypatch.setattr(views, "assess", assess)
    state = client.app.state
    for t, answer in after.items():  # byte for byte what a full computation from the store gives
        assert answer.content == views._tenant_health_json(
            store, AnswerMemo(), t, marks, state.config, NOW, state.slo_board, state.share_board, state.streams_board
        )
    globex = after["globex"].json()
    assert globex["as_of"] != before["globex"]["as_of"]
    assert {**globex, "as_of": None} == {**before["globex"], "as_of": None}
    assert after["acme"].json()["components"][0]["reasons"][0]["evidence"] == {"value": 42.0}
    with store.session() as s:  # and the next: the engine had no data for globex's own cluster
        for cluster in ("shared", "acme-only"):
            s.merge(beat(cluster, age_s=0.5))
        s.merge(beat("globex-only", age_s=0.5, data_ok=False, detail="no samples"))
    client.app.state.store_watch.refresh()
    third = client.get(HEALTH.format("globex"), headers=tokens["globex"]).json()
    assert "KafkaHealthNoData" in [r["alert"] for c in third["components"] for r in c["reasons"]]


def test_restamp_moves_only_the_top_level_as_of():
    old, new = NOW, NOW + timedelta(seconds=15)
    body = views.TenantHealth.model_validate(
        {
            "tenant": "acme",
            "status": "ok",
            "score": 100,
            "as_of": old,
            "components": [],
            "slo": {"objective": 0.999, "window": "28d", "availability": None, "error_budget_remaining": None},
        }
    )
    moved = views.restamp(body.model_dump_json().encode(), old, new)
    assert moved == body.model_copy(update={"as_of": new}).model_dump_json().encode()
    assert views.restamp(body.model_dump_json().encode(), new, old) is None  # not the as_of it says
