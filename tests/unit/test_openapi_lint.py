"""The OpenAPI document passes a real validator (openapi-spec-validator, the OpenAPI 3.1 schema) and the lint
client generators need: every operation has an explicit operationId (unique, camelCase: generated clients name
their methods after it, so FastAPI's path-derived defaults such as ``list_alerts_api_v1_alerts_get`` are no
contract), a summary and a description."""

from __future__ import annotations

import re

import pytest
from fastapi.routing import APIRoute

from monitor.api.routes import _effective_routes
from monitor.core.store import Store
from monitor.schema import create_all
from tests.api_fixtures import build_api, make_config, openapi_document

pytestmark = pytest.mark.unit
OPERATION_ID = re.compile(r"^[a-z][a-zA-Z0-9]+$")
METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


@pytest.fixture(scope="module")
def openapi() -> dict:
    return openapi_document()


def _operations(openapi: dict) -> list[tuple[str, str, dict]]:
    return [
        (method.upper(), path, op)
        for path, ops in openapi["paths"].items()
        for method, op in ops.items()
        if method in METHODS
    ]


def test_the_document_is_valid_openapi(openapi):
    validator = pytest.importorskip("openapi_spec_validator")
    validator.validate(openapi)  # raises naming the first violation
    assert openapi["openapi"].startswith("3.1")


def test_every_operation_has_an_explicit_unique_id_a_summary_and_a_description(openapi):
    ops = _operations(openapi)
    assert len(ops) >= 18
    problems = []
    for method, path, op in ops:
        where = f"{method} {path}"
        if not OPERATION_ID.match(op.get("operationId", "")):
            problems.append(f"{where}: operationId {op.get('operationId')!r} is not an explicit camelCase id")
        if not op.get("summary"):
            problems.append(f"{where}: no summary")
        description = (op.get("description") or "").strip()
        if len(description) < 40 or description == op.get("summary"):
            problems.append(f"{where}: no description beyond the summary")
    ids = [op.get("operationId") for _, _, op in ops]
    problems += [f"operationId {i!r} used twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    assert not problems, "\n".join(problems)


def test_no_two_routes_serve_one_method_and_path():
    """Every domain's router is mounted as it is, so a second route for a (method, path) would be dead: it must not
    exist (a clash was once resolved by dropping the later route; none is left)."""
    store = Store("sqlite://")
    create_all(store)
    try:
        app = build_api(make_config(), store)
    finally:
        store.dispose()
    served = [
        (m, path)
        for path, methods, route in _effective_routes(app)
        if isinstance(route, APIRoute) and path
        for m in (methods or ())
    ]
    assert len(served) >= 18 and ("GET", "/api/v1/tenants/{tenant}/health") in served
    assert sorted({s for s in served if served.count(s) > 1}) == []
