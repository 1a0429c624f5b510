"""Isolation matrix: for every API route the app serves, a tenant token aimed at another tenant's resources leaks
nothing. Data-driven over ``app.routes``, so routers mounted later (alerts, reports) are covered without edits.

Attacker: ``acme``. Victim: ``globex``, with firing alerts, a heartbeat and its own cluster ``globex-only``. Every
response to the attacker must either refuse (401/403/404/405/409/422) without naming the victim, or succeed
without a single victim marker in the body. A positive control proves the victim-targeted paths are real: the
victim's own token reads them successfully.
"""

from __future__ import annotations

import re

import pytest

from monitor.api.routes import api_routes
from tests.api_fixtures import *  # noqa: F401,F403
from tests.api_fixtures import add, alert, beat

pytestmark = pytest.mark.integration

VICTIM = "globex"
# Path parameter -> the victim's resource. Unknown parameters (ids of silences, reports...) get the victim's name,
# which is at worst a resource that does not exist: the attacker must still learn nothing.
VICTIM_PARAMS = {"tenant": VICTIM, "cluster": "globex-only", "week": "2026-W47"}
# Strings that only the victim's data contains.
MARKERS = (VICTIM, "gx-secret-evidence", "fp-globex")
# Bodies for writes, by path; the default aims at the victim.
BODIES = {
    "/api/v1/tenants": {"name": "intruder", "selectors": [{"cluster": "globex-only", "topic_prefixes": ["x"]}]},
}
DEFAULT_BODY = {"tenant": VICTIM, "matchers": [{"name": "tenant", "value": VICTIM}], "comment": "x",
                "whole_clusters": ["globex-only"]}
REFUSED = {401, 403, 404, 405, 409, 422}


def _api_routes(app):
    for method, path in api_routes(app):
        yield method, path, re.findall(r"\{(\w+)", path)


def _fill(path: str) -> str:
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: VICTIM_PARAMS.get(m.group(1), VICTIM), path)


@pytest.fixture
def victim_data(store, tok):
    add(store, beat("shared"), beat("globex-only"), beat("acme-only"),
        alert("fp-globex-1", tenant=VICTIM, labels={"topic": "globex.orders"}, evidence={"x": "gx-secret-evidence"}),
        alert("fp-globex-2", tenant=VICTIM, cluster="globex-only", severity="critical", broker="7",
              evidence={"x": "gx-secret-evidence"}),
        # Unlabelled, on the victim's whole cluster: the victim's too.
        alert("fp-globex-3", cluster="globex-only", broker="7", evidence={"x": "gx-secret-evidence"}))


def test_tenant_token_against_every_route_leaks_nothing(app, client, tok, victim_data):
    routes = list(_api_routes(app))
    assert len(routes) >= 10, routes  # the matrix covers at least this issue's own endpoints
    problems = []
    for method, path, params in routes:
        url = _fill(path)
        body = BODIES.get(path, DEFAULT_BODY) if method in ("POST", "PUT", "PATCH") else None
        r = client.request(method, url, headers=tok.h("acme"), json=body)
        leaked = [m for m in MARKERS if m in r.text]
        if r.status_code >= 500:
            problems.append(f"{method} {url}: {r.status_code}")
        elif params and any(p in VICTIM_PARAMS for p in params) and r.status_code not in REFUSED:
            problems.append(f"{method} {url}: {r.status_code}, expected a refusal")
        if leaked:
            problems.append(f"{method} {url}: {r.status_code} leaks {leaked}: {r.text[:200]}")
        if r.status_code == 404 and r.json().get("error", {}).get("code") != "not_found":
            problems.append(f"{method} {url}: 404 without the error body")
    assert not problems, "\n".join(problems)


def test_victim_paths_are_real_positive_control(app, client, tok, victim_data):
    checked = 0
    for method, path, params in _api_routes(app):
        if method != "GET" or not params or not set(params) <= {"tenant", "cluster"}:
            continue
        r = client.get(_fill(path), headers=tok.h("globex"))
        assert r.status_code == 200, (path, r.status_code, r.text[:200])
        checked += 1
    assert checked >= 5


def test_not_visible_and_not_existing_answer_identically(client, tok):
    for path in ("/api/v1/tenants/{}", "/api/v1/tenants/{}/health", "/api/v1/tenants/{}/alerts"):
        other = client.get(path.format(VICTIM), headers=tok.h("acme"))
        missing = client.get(path.format("no-such-tenant"), headers=tok.h("acme"))
        assert (other.status_code, other.json()) == (missing.status_code, missing.json()) == (
            404, {"error": {"code": "not_found", "message": "tenant not found"}})
    other = client.get("/api/v1/clusters/globex-only/health", headers=tok.h("acme"))
    missing = client.get("/api/v1/clusters/no-such-cluster/health", headers=tok.h("acme"))
    assert (other.status_code, other.json()) == (missing.status_code, missing.json())


def test_lists_show_a_tenant_only_its_own(client, tok, victim_data):
    for path in ("/api/v1/tenants", "/api/v1/clusters", "/api/v1/tenants/acme/alerts",
                 "/api/v1/clusters/shared/health", "/api/v1/clusters/shared/brokers"):
        r = client.get(path, headers=tok.h("acme"))
        assert r.status_code == 200 and not any(m in r.text for m in MARKERS), (path, r.text[:300])
    # The operator does see the victim: the markers are really there to be leaked.
    r = client.get("/api/v1/clusters/globex-only/health", headers=tok.h("operator"))
    assert "gx-secret-evidence" in r.text
