"""The alerts router on a tiny FastAPI app (SQLite store, a test middleware setting the principal)."""

from datetime import datetime, timedelta, timezone

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from alerts import repo
from alerts.types import AlertState, Instance, Severity
from alerts.views import router
from monitor.api.errors import install_error_handlers
from monitor.core.api.principal import Principal, PrincipalKind
from monitor.core.store import Store
from monitor.schema import create_all

pytestmark = pytest.mark.unit
NOW = datetime(2026, 11, 22, 1, 0, tzinfo=timezone.utc)


@pytest.fixture
def client(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'api.db'}")
    create_all(store)
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

    install_error_handlers(app)  # the API's own: 404, 422 with fields, ...

    insts = {}
    for tenant, state, broker in (
        ("shop", AlertState.FIRING, "1"),
        ("ads", AlertState.FIRING, "1"),
        ("shop", AlertState.RESOLVED, "2"),
        (None, AlertState.FIRING, None),
    ):
        labels = {
            k: v
            for k, v in {
                "alertname": "KafkaBrokerUnreachable",
                "cluster": "c1",
                "broker": broker,
                "tenant": tenant,
            }.items()
            if v
        }
        i = Instance(
            rule="KafkaBrokerUnreachable",
            labels=labels,
            state=state,
            severity=Severity.CRITICAL,
            active_at=NOW,
            fired_at=NOW,
            evidence={"value": 0},
        )
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
    body = {
        "matchers": [{"name": "alertname", "value": "KafkaBrokerUnreachable"}],
        "duration_seconds": 3600,
        "comment": "maintenance",
    }
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


@pytest.mark.parametrize(
    "body,field,fragment",
    [
        ({"matchers": [{"name": "a", "value": "b"}]}, "ends_at", "give ends_at or duration_seconds"),
        (
            {
                "matchers": [{"name": "a", "value": "b"}],
                "starts_at": "2026-11-21T00:00:00Z",
                "ends_at": "2026-11-22T00:00:00Z",
            },
            "ends_at",
            "in the future",
        ),
        (
            {
                "matchers": [{"name": "a", "value": "b"}],
                "starts_at": "2026-11-23T00:00:00Z",
                "ends_at": "2026-11-22T12:00:00Z",
            },
            "ends_at",
            "after it starts",
        ),
        (
            {"matchers": [{"name": "a", "value": "b"}], "starts_at": "2026-11-20T00:00:00Z", "duration_seconds": 60},
            "duration_seconds",
            "in the future",
        ),
        (
            {"matchers": [{"name": "a", "value": "b"}], "starts_at": "9999-12-31T00:00:00Z", "duration_seconds": 86400},
            "duration_seconds",
            "year 9999",
        ),
        (
            {
                "matchers": [{"name": "a", "value": "b"}, {"name": "a", "value": "(", "is_regex": True}],
                "duration_seconds": 60,
            },
            "matchers[1].value",
            "invalid regex",
        ),
        (
            {"matchers": [{"name": "alertname", "value": ".*", "is_regex": True}], "duration_seconds": 60},
            "matchers",
            "must match something specific",
        ),
        ({"matchers": [], "duration_seconds": 60}, "matchers", "at least 1 item"),
    ],
)
def test_silence_validation_is_422_naming_the_field(client, body, field, fragment):
    r = client.post("/api/v1/silences", json=body, headers={"x-test-principal": "operator"})
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["code"] == "invalid" and fragment in err["message"]
    assert [f["field"] for f in err["fields"]] == [field]


def test_silence_times_are_kept_in_utc_whatever_the_offset_given(client):
    body = {
        "matchers": [{"name": "a", "value": "b"}],
        "starts_at": "2026-11-22T03:00:00+02:00",
        "ends_at": "2026-11-22T05:00:00+02:00",
    }
    r = client.post("/api/v1/silences", json=body, headers={"x-test-principal": "operator"})
    assert r.status_code == 201, r.text
    (stored,) = get(client, "operator", "/api/v1/silences").json()["items"]  # read back from the store
    assert (stored["starts_at"], stored["ends_at"]) == ("2026-11-22T01:00:00+00:00", "2026-11-22T03:00:00+00:00")
    assert stored["state"] == "active"


def test_expiring_an_unknown_silence_is_404(client):
    assert client.delete("/api/v1/silences/nope", headers={"x-test-principal": "operator"}).status_code == 404
