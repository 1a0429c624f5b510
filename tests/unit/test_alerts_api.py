"""The alerts router on a tiny FastAPI app (SQLite store, a test middleware setting the principal)."""

from datetime import datetime, timedelta, timezone

import pytest
from fastapi import FastAPI, HTTPException
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient

from alerts import repo
from alerts.models import AlertState, Severity
from alerts.types import Instance
from alerts.views import router
from monitor.api.principal import Principal, PrincipalKind
from monitor.errors import NotFound
from monitor.store import Store

pytestmark = pytest.mark.unit
NOW = datetime(2026, 11, 22, 1, 0, tzinfo=timezone.utc)


@pytest.fixture
def client(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'api.db'}")
    store.create_all()
    app = FastAPI()
    app.state.store = store
    app.state.clock = lambda: NOW
    app.include_router(router)

    @app.middleware("http")
    async def principal(request, call_next):
        who = request.headers.get("x-test-principal")
        if who == "operator":
            request.state.principal = Principal(PrincipalKind.OPERATOR, "op-token")
        elif who:
            request.state.principal = Principal(PrincipalKind.TENANT, f"{who}-token", tenant=who)
        return await call_next(request)

    @app.exception_handler(NotFound)
    async def not_found(_req, exc):
        return JSONResponse({"error": {"code": "not_found", "message": str(exc)}}, status_code=404)

    @app.exception_handler(HTTPException)
    async def http_error(_req, exc):
        return JSONResponse({"error": {"code": "bad_request", "message": exc.detail}}, status_code=exc.status_code)

    insts = {}
    for tenant, state, broker in (("shop", AlertState.FIRING, "1"), ("ads", AlertState.FIRING, "1"),
                                  ("shop", AlertState.RESOLVED, "2"), (None, AlertState.FIRING, None)):
        labels = {k: v for k, v in {"alertname": "KafkaBrokerUnreachable", "cluster": "c1", "broker": broker,
                                    "tenant": tenant}.items() if v}
        i = Instance(rule="KafkaBrokerUnreachable", labels=labels, state=state, severity=Severity.CRITICAL,
                     active_at=NOW, fired_at=NOW, evidence={"value": 0})
        insts[i.fingerprint] = i
    with store.session() as s:
        repo.save_instances(insts, [], session=s)
    with TestClient(app) as c:
        yield c
    store.dispose()


def get(client, who, path, **params):
    return client.get(path, headers={"x-test-principal": who}, params=params)


def test_operator_sees_all_and_tenant_only_its_own(client):
    assert len(get(client, "operator", "/api/v1/alerts").json()["items"]) == 4
    items = get(client, "shop", "/api/v1/alerts").json()["items"]
    assert {i["tenant"] for i in items} == {"shop"} and len(items) == 2


def test_alerts_by_state_and_missing_principal(client):
    r = get(client, "shop", "/api/v1/alerts", state="firing").json()
    assert [(i["tenant"], i["state"], i["broker"]) for i in r["items"]] == [("shop", "firing", "1")]
    assert get(client, "shop", "/api/v1/alerts", state="bogus").status_code == 422
    assert client.get("/api/v1/alerts").status_code == 401  # no principal


def test_pagination(client):
    p1 = get(client, "operator", "/api/v1/alerts", limit=3).json()
    assert len(p1["items"]) == 3 and p1["next_cursor"]
    p2 = get(client, "operator", "/api/v1/alerts", limit=3, cursor=p1["next_cursor"]).json()
    assert len(p2["items"]) == 1 and p2["next_cursor"] is None
    assert {i["fingerprint"] for i in p1["items"]}.isdisjoint({i["fingerprint"] for i in p2["items"]})


def test_tenant_silence_is_confined_to_its_tenant(client):
    body = {"matchers": [{"name": "alertname", "value": "KafkaBrokerUnreachable"}], "duration_seconds": 3600,
            "comment": "maintenance"}
    r = client.post("/api/v1/silences", json=body, headers={"x-test-principal": "shop"})
    assert r.status_code == 201
    sil = r.json()
    assert {"name": "tenant", "value": "shop", "is_regex": False, "is_equal": True} in sil["matchers"]
    assert sil["state"] == "active" and sil["ends_at"] == (NOW + timedelta(hours=1)).isoformat()
    # another tenant neither sees nor expires it
    assert get(client, "ads", "/api/v1/silences").json()["items"] == []
    assert client.delete(f"/api/v1/silences/{sil['id']}", headers={"x-test-principal": "ads"}).status_code == 404
    # a tenant cannot silence another tenant's alerts
    evil = {**body, "matchers": [{"name": "tenant", "value": "ads"}]}
    assert client.post("/api/v1/silences", json=evil, headers={"x-test-principal": "shop"}).status_code == 404
    assert [s["id"] for s in get(client, "operator", "/api/v1/silences").json()["items"]] == [sil["id"]]
    r = client.delete(f"/api/v1/silences/{sil['id']}", headers={"x-test-principal": "shop"})
    assert r.status_code == 200 and r.json()["state"] == "expired"


def test_silence_validation(client):
    h = {"x-test-principal": "operator"}
    assert client.post("/api/v1/silences", json={"matchers": [{"name": "a", "value": "b"}]}, headers=h).status_code == 400
    bad_re = {"matchers": [{"name": "a", "value": "(", "is_regex": True}], "duration_seconds": 60}
    assert "invalid regex" in client.post("/api/v1/silences", json=bad_re, headers=h).json()["error"]["message"]
    match_all = {"matchers": [{"name": "alertname", "value": ".*", "is_regex": True}], "duration_seconds": 60}
    assert client.post("/api/v1/silences", json=match_all, headers=h).status_code == 400
    assert client.delete("/api/v1/silences/nope", headers=h).status_code == 404
