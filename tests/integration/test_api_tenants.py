"""The REST API through HTTP (TestClient) on a migrated store, SQLite and real PostgreSQL.

Tenants (config + API), tokens and auth, errors, pagination, tenant and cluster health from stored alert instances
and engine heartbeats.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from monitor.api import tokens
from monitor.core.errors import Conflict
from monitor.tenants import service
from tests.api_fixtures import *  # noqa: F403 - the shared API fixtures, used by name
from tests.api_fixtures import (
    NOW,
    add,
    alert,
    beat,
    build_api,
    make_config,
    new_token,
    report,
)
from tests.conftest import wait_until

pytestmark = pytest.mark.integration

INITECH = {
    "name": "initech",
    "selectors": [{"cluster": "shared", "topic_prefixes": ["initech."]}],
    "contract": {"storage_budget_bytes": 10_000_000_000, "retention_hours": 72},
}


# --- auth --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header", [None, "Bearer", "Bearer nope", "Basic dXNlcjpwYXNz", "Bearer kh_000000000000_" + "A" * 43]
)
def test_missing_or_bad_token_is_401_json(client, tok, header):
    r = client.get("/api/v1/tenants", headers={"Authorization": header} if header else {})
    assert r.status_code == 401
    assert r.json() == {"error": {"code": "unauthorized", "message": "missing or invalid bearer token"}}
    assert r.headers["www-authenticate"] == "Bearer"


def test_wrong_secret_of_a_real_token_id_is_401(client, tok):
    forged = tok.acme[:-4] + ("AAAA" if not tok.acme.endswith("AAAA") else "BBBB")
    assert client.get("/api/v1/tenants", headers={"Authorization": f"Bearer {forged}"}).status_code == 401


def test_token_revoked_elsewhere_stops_working_within_the_watch_interval(client, store, tok):
    assert client.get("/api/v1/tenants/acme", headers=tok.h("acme")).status_code == 200
    token_id = tok.acme.split("_")[1]
    with store.session() as s:  # as the CLI or another server would: not through this app
        tokens.revoke(db_session=s, token=tokens.get(db_session=s, token_id=token_id), now=NOW)
    wait_until(
        lambda: client.get("/api/v1/tenants/acme", headers=tok.h("acme")).status_code == 401,
        timeout=5,
        interval=0.05,
        what="revoked token refused (store watch: every 0.25 s)",
    )
    assert client.get("/api/v1/tenants/acme", headers=tok.h("globex")).status_code == 404  # others unaffected


def test_tokens_are_stored_hashed(store, tok):
    with store.session() as s:
        rows = tokens.get_all(db_session=s)
        stored = " ".join(f"{r.id} {r.name} {r.secret_sha256}" for r in rows)
    assert len(rows) == 3
    for t in (tok.operator, tok.acme, tok.globex):
        assert t not in stored and t.split("_", 2)[2] not in stored


def test_public_endpoints_need_no_token(client):
    assert client.get("/openapi.json").status_code == 200


def test_rate_limit_answers_429_per_token(config, store):
    from fastapi.testclient import TestClient

    limited = config.model_copy(
        update={
            "service": config.service.model_copy(update={"api_rate_limit_per_second": 0.01, "api_rate_limit_burst": 3})
        }
    )
    app = build_api(limited, store)
    a, b = new_token(store, "acme"), new_token(store, "globex")
    with TestClient(app, raise_server_exceptions=False) as c:
        codes = [c.get("/api/v1/tenants", headers={"Authorization": f"Bearer {a}"}).status_code for _ in range(5)]
        assert codes == [200, 200, 200, 429, 429]
        r = c.get("/api/v1/tenants", headers={"Authorization": f"Bearer {a}"})
        assert r.json()["error"]["code"] == "rate_limited" and int(r.headers["retry-after"]) >= 1
        # Another token has its own bucket.
        assert c.get("/api/v1/tenants", headers={"Authorization": f"Bearer {b}"}).status_code == 200


# --- tenants -----------------------------------------------------------------------------------------------------


def test_config_tenants_are_synced_and_read_only(client, tok):
    r = client.get("/api/v1/tenants", headers=tok.h("operator"))
    assert r.status_code == 200
    assert [(t["name"], t["source"]) for t in r.json()["items"]] == [("acme", "config"), ("globex", "config")]
    assert client.delete("/api/v1/tenants/acme", headers=tok.h("operator")).status_code == 409
    r = client.put("/api/v1/tenants/acme", headers=tok.h("operator"), json={"whole_clusters": ["acme-only"]})
    assert r.status_code == 409 and "config file" in r.json()["error"]["message"]


def test_create_read_update_delete_api_tenant(client, store, tok):
    r = client.post("/api/v1/tenants", headers=tok.h("operator"), json=INITECH)
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["source"] == "api" and body["contract"]["retention_hours"] == 72
    assert client.get("/api/v1/tenants/initech", headers=tok.h("operator")).json()["selectors"] == body["selectors"]

    update = {"selectors": [{"cluster": "shared", "topic_prefixes": ["initech.", "tps."]}]}
    r = client.put("/api/v1/tenants/initech", headers=tok.h("operator"), json=update)
    assert r.status_code == 200 and r.json()["selectors"][0]["topic_prefixes"] == ["initech.", "tps."]
    assert r.json()["contract"]["retention_hours"] is None  # PUT replaces

    # The registry the collectors and engine use sees it.
    with store.session() as s:
        assert service.build_index(db_session=s).for_topic("shared", "tps.reports") == "initech"

    t = new_token(store, "initech")
    initech = {"Authorization": f"Bearer {t}"}
    add(store, beat("shared"))
    wait_until(lambda: app_marks_have_beats(client), timeout=5, interval=0.05, what="the server saw the heartbeat")
    for _ in range(2):  # remembered: the token, and the health answer
        assert client.get("/api/v1/tenants/initech/health", headers=initech).status_code == 200
    assert client.delete("/api/v1/tenants/initech", headers=tok.h("operator")).status_code == 204
    # Through this server, the deletion counts from the very next request: its tokens went with it, and nothing
    # remembered about it is answered any more.
    assert client.get("/api/v1/tenants", headers=initech).status_code == 401
    assert client.get("/api/v1/tenants/initech/health", headers=tok.h("operator")).status_code == 404
    assert client.get("/api/v1/tenants/initech", headers=tok.h("operator")).status_code == 404


def app_marks_have_beats(client) -> bool:
    marks = client.app.state.store_watch.current()
    return marks is not None and bool(marks.heartbeats)


@pytest.mark.parametrize(
    "body,status,field,fragment",
    [
        (
            {**INITECH, "selectors": [{"cluster": "shared", "topic_prefixes": ["acme.eu."]}]},
            409,
            None,
            "topic prefix 'acme.' of 'acme' and 'acme.eu.' of 'initech'",
        ),
        ({**INITECH, "selectors": [{"cluster": "shared", "principals": ["acme"]}]}, 409, None, "principal"),
        ({**INITECH, "whole_clusters": ["shared"], "selectors": []}, 409, None, "owns the whole cluster"),
        ({**INITECH, "name": "acme"}, 409, None, "already exists"),
        (
            {**INITECH, "selectors": [{"cluster": "nowhere", "topic_prefixes": ["x"]}]},
            422,
            "selectors[0].cluster",
            "unknown cluster 'nowhere'",
        ),
        ({**INITECH, "name": "Bad Name"}, 422, "name", "should match pattern"),
        (
            {**INITECH, "selectors": [{"cluster": "shared", "topic_prefix": ["x"]}]},
            422,
            "selectors[0].topic_prefix",
            "Extra inputs are not permitted",
        ),
        ({"name": "empty"}, 422, "body", "needs whole_clusters or at least one selector"),
        ({**INITECH, "contract": {"storage_budget_bytes": -1}}, 422, "contract.storage_budget_bytes", "greater than 0"),
        ({**INITECH, "receivers": {"webhooks": ["ftp://x"]}}, 422, "receivers.webhooks", "http(s) URL"),
    ],
)
def test_create_refusals_say_what_and_why(client, tok, body, status, field, fragment):
    r = client.post("/api/v1/tenants", headers=tok.h("operator"), json=body)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert fragment in err["message"]
    if field:
        assert field in [f["field"] for f in err["fields"]]
    assert "Traceback" not in r.text


def test_malformed_json_is_422_not_500(client, tok):
    r = client.post(
        "/api/v1/tenants", headers={**tok.h("operator"), "content-type": "application/json"}, content=b"{not json"
    )
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid"


def test_tenant_tokens_cannot_manage_tenants(client, tok):
    assert client.post("/api/v1/tenants", headers=tok.h("acme"), json=INITECH).status_code == 403
    r = client.put("/api/v1/tenants/acme", headers=tok.h("acme"), json={"whole_clusters": ["acme-only"]})
    assert r.status_code == 403
    assert client.delete("/api/v1/tenants/acme", headers=tok.h("acme")).status_code == 403


def test_pagination_walks_every_tenant_once(client, store, tok):
    with store.session() as s:
        for i in range(23):
            cfg = (
                make_config()
                .tenants[0]
                .model_copy(
                    update={
                        "name": f"t{i:02d}",
                        "whole_clusters": (),
                        "selectors": (
                            make_config()
                            .tenants[0]
                            .selectors[0]
                            .model_copy(
                                update={"topic_prefixes": (f"t{i:02d}.",), "principals": (), "group_prefixes": ()}
                            ),
                        ),
                    }
                )
            )
            service.create(db_session=s, tenant_in=cfg, clusters=["shared"], now=NOW)
    names, cursor = [], None
    while True:
        params = {"limit": 10, **({"cursor": cursor} if cursor else {})}
        page = client.get("/api/v1/tenants", headers=tok.h("operator"), params=params).json()
        assert len(page["items"]) <= 10
        names += [t["name"] for t in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert names == sorted(["acme", "globex", *(f"t{i:02d}" for i in range(23))])
    r = client.get("/api/v1/tenants", headers=tok.h("operator"), params={"cursor": "***"})
    assert r.status_code == 422 and r.json()["error"]["fields"][0]["field"] == "cursor"


def test_config_sync_refuses_overlap_with_api_tenant_and_takes_over_same_name(store, tok):
    with store.session() as s:
        cfg = (
            make_config()
            .tenants[1]
            .model_copy(
                update={
                    "name": "initech",
                    "whole_clusters": (),
                    "selectors": (
                        make_config()
                        .tenants[1]
                        .selectors[0]
                        .model_copy(update={"topic_prefixes": ("initech.",), "client_id_prefixes": ()}),
                    ),
                }
            )
        )
        service.create(db_session=s, tenant_in=cfg, clusters=["shared"], now=NOW)
    clash = make_config("""
  - name: newcomer
    selectors: [{cluster: shared, topic_prefixes: [initech.eu.]}]
""")
    with pytest.raises(Conflict, match="'newcomer' and 'initech' overlap|'initech' and 'newcomer' overlap"):
        build_api(clash, store)
    same = make_config("""
  - name: initech
    selectors: [{cluster: shared, topic_prefixes: [initech.]}]
""")
    build_api(same, store)
    with store.session() as s:
        assert service.get(db_session=s, name="initech").source == "config"
    # A tenant dropped from the file is dropped from the store.
    build_api(make_config(), store)
    with store.session() as s:
        assert service.get(db_session=s, name="initech") is None


# --- health ------------------------------------------------------------------------------------------------------


def test_tenant_health_unknown_without_heartbeat_never_ok(client, tok):
    r = client.get("/api/v1/tenants/acme/health", headers=tok.h("acme"))
    assert r.status_code == 200
    body = r.json()
    assert body["tenant"] == "acme" and body["status"] == "unknown"
    assert {c["id"] for c in body["components"]} == {"shared", "acme-only"}


def test_tenant_health_ok_then_critical_with_evidence(client, store, tok):
    add(store, beat("shared"), beat("acme-only"), beat("globex-only"))
    body = client.get("/api/v1/tenants/acme/health", headers=tok.h("acme")).json()
    assert (body["status"], body["score"], body["components"]) == ("ok", 100, [])
    assert body["as_of"].startswith("2026-11-20T11:59:55")
    # The next evaluation, as the alert engine writes it: instances and heartbeats in one transaction.
    with store.session() as s:
        for c in ("shared", "acme-only", "globex-only"):
            s.merge(beat(c, age_s=1))
        s.add_all(
            [
                alert(
                    "a1",
                    rule="KafkaConsumerLag",
                    tenant="acme",
                    labels={"group": "acme-billing", "topic": "acme.x"},
                    summary="group acme-billing lags 300s",
                    evidence={"lag_seconds": 300},
                ),
                alert(
                    "a2", rule="KafkaOfflinePartitions", severity="critical", tenant="acme", labels={"topic": "acme.x"}
                ),
                alert(
                    "a3",
                    rule="KafkaOfflinePartitions",
                    severity="critical",
                    tenant="globex",
                    labels={"topic": "globex.y"},
                ),
                alert("a4", rule="KafkaBrokerDown", severity="critical", state="pending", tenant="acme", broker="1"),
                # Unlabelled instance on a cluster acme owns whole: it is acme's.
                alert("a5", rule="KafkaGcPressure", cluster="acme-only", broker="1"),
                # Unlabelled instance on the shared cluster: not attributed to any tenant.
                alert("a6", rule="KafkaDiskFullRisk", severity="critical", broker="2"),
            ]
        )

    def answered_the_new_evaluation():
        body = client.get("/api/v1/tenants/acme/health", headers=tok.h("acme")).json()
        return body if body["status"] != "ok" else None

    body = wait_until(answered_the_new_evaluation, timeout=5, interval=0.05, what="the new evaluation answered")
    assert body["status"] == "critical" and body["score"] == 40 and body["as_of"].startswith("2026-11-20T11:59:59")
    comps = {(c["kind"], c["cluster"], c["id"]): c for c in body["components"]}
    assert set(comps) == {
        ("topic", "shared", "acme.x"),
        ("consumergroup", "shared", "acme-billing"),
        ("broker", "acme-only", "1"),
    }
    lag = comps[("consumergroup", "shared", "acme-billing")]["reasons"][0]
    assert lag == {
        "alert": "KafkaConsumerLag",
        "severity": "warning",
        "summary": "group acme-billing lags 300s",
        "evidence": {"lag_seconds": 300},
    }
    assert "globex" not in str(body)


def test_remembered_health_still_turns_unknown_when_a_heartbeat_goes_stale(config, store, tok):
    from fastapi.testclient import TestClient

    add(store, beat("shared", age_s=5), beat("acme-only", age_s=5))
    now = [NOW]
    app = build_api(config, store)
    app.state.clock = lambda: now[0]
    with TestClient(app) as c:
        wait_until(lambda: app_marks_have_beats(c), timeout=5, interval=0.05, what="the server saw the heartbeats")
        for _ in range(2):
            assert c.get("/api/v1/tenants/acme/health", headers=tok.h("acme")).json()["status"] == "ok"
        now[0] = NOW + timedelta(seconds=3 * 15 - 5 + 1)  # no new evaluation; both heartbeats now too old
        body = c.get("/api/v1/tenants/acme/health", headers=tok.h("acme")).json()
    assert body["status"] == "unknown"
    assert {r["alert"] for comp in body["components"] for r in comp["reasons"]} == {"KafkaHealthEvaluationStale"}


def test_stale_heartbeat_makes_health_unknown(client, store, tok):
    add(store, beat("shared", age_s=3 * 15 + 1), beat("acme-only"))
    body = client.get("/api/v1/tenants/acme/health", headers=tok.h("acme")).json()
    assert body["status"] == "unknown"
    (comp,) = body["components"]
    assert comp["id"] == "shared" and comp["reasons"][0]["alert"] == "KafkaHealthEvaluationStale"


def test_tenant_alerts_filtered_by_state_and_paginated(client, store, tok):
    add(
        store,
        *[alert(f"f{i}", tenant="acme") for i in range(5)],
        alert("p1", tenant="acme", state="pending"),
        alert("r1", tenant="acme", state="resolved"),
        alert("g1", tenant="globex"),
    )
    r = client.get("/api/v1/tenants/acme/alerts", headers=tok.h("acme"), params={"state": "firing", "limit": 3})
    page = r.json()
    assert [a["fingerprint"] for a in page["items"]] == ["f0", "f1", "f2"] and page["next_cursor"]
    page2 = client.get(
        "/api/v1/tenants/acme/alerts",
        headers=tok.h("acme"),
        params={"state": "firing", "limit": 3, "cursor": page["next_cursor"]},
    ).json()
    assert [a["fingerprint"] for a in page2["items"]] == ["f3", "f4"] and page2["next_cursor"] is None
    every = client.get("/api/v1/tenants/acme/alerts", headers=tok.h("acme")).json()["items"]
    assert sorted(a["fingerprint"] for a in every) == ["f0", "f1", "f2", "f3", "f4", "p1", "r1"]
    r = client.get("/api/v1/tenants/acme/alerts", headers=tok.h("acme"), params={"state": "bogus"})
    assert r.status_code == 422 and r.json()["error"]["fields"][0]["field"] == "state"


# --- silences and reports (routers of other packages, through the whole app) ------------------------------------


def test_silence_refusals_are_422_naming_the_field(client, tok):
    r = client.post("/api/v1/silences", headers=tok.h("operator"), json={"matchers": [{"name": "a", "value": "b"}]})
    assert r.status_code == 422
    assert r.json()["error"]["fields"] == [{"field": "ends_at", "message": "give ends_at or duration_seconds"}]
    r = client.post(
        "/api/v1/silences",
        headers=tok.h("acme"),
        json={"matchers": [{"name": "a", "value": "("}], "duration_seconds": 60, "comment": "x" * 1001},
    )
    assert r.status_code == 422 and [f["field"] for f in r.json()["error"]["fields"]] == ["comment"]


def test_reports_through_the_api_carry_utc_offsets_and_serve_html(config, store, tok, tmp_path):
    from fastapi.testclient import TestClient

    cfg = config.model_copy(update={"lake": config.lake.model_copy(update={"path": str(tmp_path)})})
    add(
        store,
        report(
            tmp_path,
            "acme",
            "2026-W47",
            doc={"kind": "kafka-health/tenant-report", "tenant": "acme"},
            html="<h1>acme, week 47</h1>",
        ),
    )
    with TestClient(build_api(cfg, store)) as c:
        (item,) = c.get("/api/v1/tenants/acme/reports", headers=tok.h("acme")).json()["items"]
        assert item["generated_at"] == NOW.isoformat()  # SQLite hands it back naive: the API adds the offset
        assert c.get(item["url"], headers=tok.h("acme")).json()["tenant"] == "acme"
        html = c.get(item["url"], headers={**tok.h("acme"), "Accept": "text/html"})
        assert html.headers["content-type"].startswith("text/html") and html.text == "<h1>acme, week 47</h1>"


# --- clusters ----------------------------------------------------------------------------------------------------


def test_clusters_list_operator_sees_all_tenant_sees_its_own(client, tok):
    op = client.get("/api/v1/clusters", headers=tok.h("operator")).json()["items"]
    assert [c["name"] for c in op] == ["acme-only", "globex-only", "shared"]
    mine = client.get("/api/v1/clusters", headers=tok.h("acme")).json()["items"]
    assert [(c["name"], c["whole"]) for c in mine] == [("acme-only", True), ("shared", False)]


def test_cluster_health_operator_all_tenant_its_slice(client, store, tok):
    add(
        store,
        beat("shared"),
        alert("a1", tenant="acme", labels={"topic": "acme.x"}),
        alert("g1", tenant="globex", severity="critical", labels={"topic": "globex.y"}),
        alert("n1", broker="2", rule="KafkaRequestHandlerSaturation"),
    )
    op = client.get("/api/v1/clusters/shared/health", headers=tok.h("operator")).json()
    assert op["status"] == "critical" and {c["id"] for c in op["components"]} == {"acme.x", "globex.y", "2"}
    # brokers listed without JMX or log dirs: what this health cannot see is said (collectors.capabilities)
    assert op["sources"] == ["admin", "probe", "protocol_disk"]
    blind = {g["enable"]: g["signals"] for g in op["not_observable"]}
    assert any(
        "kafka_broker_request_handler_idle_ratio" in s and e.startswith("enable discovery.jolokia")
        for e, s in blind.items()
    )
    mine = client.get("/api/v1/clusters/shared/health", headers=tok.h("acme")).json()
    assert mine["cluster"] == "shared" and mine["status"] == "degraded"
    assert [c["id"] for c in mine["components"]] == ["acme.x"]
    assert client.get("/api/v1/clusters/globex-only/health", headers=tok.h("acme")).status_code == 404
    assert client.get("/api/v1/clusters/nowhere/health", headers=tok.h("operator")).status_code == 404


def test_cluster_brokers_from_config_with_status(client, store, tok):
    add(
        store,
        beat("shared"),
        alert("b1", rule="KafkaBrokerDown", severity="critical", broker="2"),
        alert("b2", rule="KafkaGcPressure", broker="3", tenant="acme"),
    )
    items = client.get("/api/v1/clusters/shared/brokers", headers=tok.h("operator")).json()["items"]
    assert [(b["id"], b["status"], b["alerts"]) for b in items] == [
        (1, "ok", []),
        (2, "critical", ["KafkaBrokerDown"]),
        (3, "degraded", ["KafkaGcPressure"]),
    ]
    # A tenant sees the brokers, but only the alerts attributed to it.
    items = client.get("/api/v1/clusters/shared/brokers", headers=tok.h("globex")).json()["items"]
    assert [(b["id"], b["status"]) for b in items] == [(1, "ok"), (2, "ok"), (3, "ok")]
    add(store, beat("acme-only", age_s=3600))
    items = client.get("/api/v1/clusters/acme-only/brokers", headers=tok.h("acme")).json()["items"]
    assert [(b["id"], b["status"]) for b in items] == [(1, "unknown")]


def test_clock_is_per_request(config, store, tok):
    from fastapi.testclient import TestClient

    add(store, beat("shared"), beat("acme-only"))
    later = build_api(config, store, now=NOW + timedelta(hours=1))
    with TestClient(later) as c:
        assert c.get("/api/v1/tenants/acme/health", headers=tok.h("acme")).json()["status"] == "unknown"


def test_concurrent_overlapping_creates_admit_exactly_one(store, app):
    """The overlap check and the insert are one atomic step: racing creates cannot both pass the check."""
    import threading

    from monitor.core.config import TenantConfig

    barrier = threading.Barrier(6)
    outcomes: list[str] = []

    def create(i: int) -> None:
        cfg = TenantConfig(name=f"racer{i}", selectors=[{"cluster": "shared", "topic_prefixes": ["race." + "x" * i]}])
        barrier.wait()
        try:
            with store.session() as s:
                service.create(db_session=s, tenant_in=cfg, clusters=["shared"], now=NOW)
            outcomes.append("created")
        except Conflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=create, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(outcomes) == ["conflict"] * 5 + ["created"]
