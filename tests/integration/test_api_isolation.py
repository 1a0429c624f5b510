"""Isolation matrix: for every API route the app serves, a tenant token aimed at another tenant's resources leaks
nothing. Data-driven over ``app.routes``, so routers mounted later (alerts, reports) are covered without edits.

Attacker: ``acme``. Victim: ``globex``, with firing alerts, a heartbeat, its own cluster ``globex-only``, an active
silence and a weekly report (index row and files in the lake). Every response to the attacker must either refuse
(401/403/404/405/409/422) without naming the victim, or succeed without a single victim marker in the body; GET
routes are also asked for HTML. Positive controls prove the victim-targeted paths and the seeded data are real: the
victim's own token reads the paths, and the operator's answers do carry the markers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from monitor.api.routes import api_routes
from tests.api_fixtures import *  # noqa: F403 - the shared API fixtures, used by name
from tests.api_fixtures import add, alert, beat, make_config, report, silence

pytestmark = pytest.mark.integration

VICTIM = "globex"
# Path parameter -> the victim's resource (seeded by victim_data). Parameters not listed get the victim's name, which
# is at worst a resource that does not exist: the attacker must still learn nothing.
VICTIM_PARAMS = {"tenant": VICTIM, "cluster": "globex-only", "week": "2026-W47", "silence_id": "gx-silence-1"}
# Strings that only the victim's data contains.
MARKERS = (VICTIM, "gx-secret-evidence", "fp-globex")
# Bodies for writes, by path; the default aims at the victim.
BODIES = {
    "/api/v1/tenants": {"name": "intruder", "selectors": [{"cluster": "globex-only", "topic_prefixes": ["x"]}]},
    # A silence of the victim's alerts: must be refused (404), never created.
    "/api/v1/silences": {"matchers": [{"name": "tenant", "value": VICTIM}], "duration_seconds": 3600, "comment": "x"},
}
DEFAULT_BODY = {
    "tenant": VICTIM,
    "matchers": [{"name": "tenant", "value": VICTIM}],
    "comment": "x",
    "whole_clusters": ["globex-only"],
}
REFUSED = {401, 403, 404, 405, 409, 422}


def _api_routes(app):
    for method, path in api_routes(app):
        yield method, path, re.findall(r"\{(\w+)", path)


def _fill(path: str) -> str:
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: VICTIM_PARAMS.get(m.group(1), VICTIM), path)


@pytest.fixture
def config(tmp_path):
    """The shared test config, with a lake of this test's own (the victim's report files go there)."""
    c = make_config()
    return c.model_copy(update={"lake": c.lake.model_copy(update={"path": str(tmp_path / "lake")})})


@pytest.fixture
def victim_data(store, tok, config):
    lake = Path(config.lake.path)
    add(
        store,
        silence("gx-silence-1", tenant=VICTIM, comment="gx-secret-evidence"),
        report(
            lake,
            VICTIM,
            "2026-W47",
            doc={"kind": "kafka-health/tenant-report", "tenant": VICTIM, "problems": ["gx-secret-evidence"]},
            html="<h1>globex</h1><p>gx-secret-evidence</p>",
        ),
    )
    add(
        store,
        beat("shared"),
        beat("globex-only"),
        beat("acme-only"),
        alert("fp-globex-1", tenant=VICTIM, labels={"topic": "globex.orders"}, evidence={"x": "gx-secret-evidence"}),
        alert(
            "fp-globex-2",
            tenant=VICTIM,
            cluster="globex-only",
            severity="critical",
            broker="7",
            evidence={"x": "gx-secret-evidence"},
        ),
        # Unlabelled, on the victim's whole cluster: the victim's too.
        alert("fp-globex-3", cluster="globex-only", broker="7", evidence={"x": "gx-secret-evidence"}),
    )


def test_tenant_token_against_every_route_leaks_nothing(app, client, tok, victim_data):
    routes = list(_api_routes(app))
    assert len(routes) >= 10, routes  # the matrix covers at least this issue's own endpoints
    problems = []
    for method, path, params in routes:
        url = _fill(path)
        body = BODIES.get(path, DEFAULT_BODY) if method in ("POST", "PUT", "PATCH") else None
        for accept in ("application/json", "text/html") if method == "GET" else ("application/json",):
            r = client.request(method, url, headers={**tok.h("acme"), "Accept": accept}, json=body)
            what = f"{method} {url} ({accept})"
            leaked = [m for m in MARKERS if m in r.text]
            if r.status_code >= 500:
                problems.append(f"{what}: {r.status_code}")
            elif params and any(p in VICTIM_PARAMS for p in params) and r.status_code not in REFUSED:
                problems.append(f"{what}: {r.status_code}, expected a refusal")
            if leaked:
                problems.append(f"{what}: {r.status_code} leaks {leaked}: {r.text[:200]}")
            if r.status_code == 404 and r.json().get("error", {}).get("code") != "not_found":
                problems.append(f"{what}: 404 without the error body")
    assert not problems, "\n".join(problems)
    # Nothing of the victim's was changed on the way: its silence is still active.
    r = client.get("/api/v1/silences", headers=tok.h("globex"))
    assert [(s["id"], s["state"]) for s in r.json()["items"]] == [("gx-silence-1", "active")]


def test_victim_paths_are_real_positive_control(app, client, tok, victim_data):
    checked = 0
    for method, path, params in _api_routes(app):
        if method != "GET" or not params or not set(params) <= {"tenant", "cluster", "week"}:
            continue
        r = client.get(_fill(path), headers=tok.h("globex"))
        assert r.status_code == 200, (path, r.status_code, r.text[:200])
        checked += 1
    assert checked >= 6
    # The seeded victim data is there to be leaked: its owner's and the operator's answers carry the markers.
    for who in ("globex", "operator"):
        for path, accept in (
            ("/api/v1/silences", "application/json"),
            ("/api/v1/alerts", "application/json"),
            ("/api/v1/tenants/globex/reports", "application/json"),
            ("/api/v1/tenants/globex/reports/2026-W47", "application/json"),
            ("/api/v1/tenants/globex/reports/2026-W47", "text/html"),
        ):
            r = client.get(path, headers={**tok.h(who), "Accept": accept})
            assert r.status_code == 200 and any(m in r.text for m in MARKERS), (who, path, accept, r.text[:200])


def test_not_visible_and_not_existing_answer_identically(client, tok):
    for path in ("/api/v1/tenants/{}", "/api/v1/tenants/{}/health", "/api/v1/tenants/{}/alerts"):
        other = client.get(path.format(VICTIM), headers=tok.h("acme"))
        missing = client.get(path.format("no-such-tenant"), headers=tok.h("acme"))
        assert (
            (other.status_code, other.json())
            == (missing.status_code, missing.json())
            == (404, {"error": {"code": "not_found", "message": "tenant not found"}})
        )
    other = client.get("/api/v1/clusters/globex-only/health", headers=tok.h("acme"))
    missing = client.get("/api/v1/clusters/no-such-cluster/health", headers=tok.h("acme"))
    assert (other.status_code, other.json()) == (missing.status_code, missing.json())


def test_lists_show_a_tenant_only_its_own(client, tok, victim_data):
    for path in (
        "/api/v1/tenants",
        "/api/v1/clusters",
        "/api/v1/tenants/acme/alerts",
        "/api/v1/clusters/shared/health",
        "/api/v1/clusters/shared/brokers",
    ):
        r = client.get(path, headers=tok.h("acme"))
        assert r.status_code == 200 and not any(m in r.text for m in MARKERS), (path, r.text[:300])
    # The operator does see the victim: the markers are really there to be leaked.
    r = client.get("/api/v1/clusters/globex-only/health", headers=tok.h("operator"))
    assert "gx-secret-evidence" in r.text
