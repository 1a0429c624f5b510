"""``mount_api``: everything of the REST API onto the app ``monitor.serve`` builds.

Wiring only, in this order: sync the config file's tenants into the store, error handlers, the auth + rate-limit
middleware, the routers of every domain (``alerts.views``, ``monitor.reports.views``, ``monitor.advisor.views``,
``monitor.tenants.views``, ``monitor.health.views``), and an OpenAPI document that declares the bearer scheme and the
error body on every operation.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi

import alerts.views
import monitor.advisor.views
import monitor.reports.views
from monitor.api.auth import FAILURES_PER_ADDRESS, FAILURES_PER_TOKEN_ID, AuthMiddleware
from monitor.api.bodylimit import MAX_BODY_BYTES, BodyLimitMiddleware
from monitor.api.errors import ErrorBody, install_error_handlers
from monitor.api.ratelimit import FailureLimit, TokenBuckets
from monitor.core.config import Config
from monitor.core.lifecycle import Component
from monitor.core.store import Store
from monitor.core.times import utc_now
from monitor.health.hits import RememberedHealth
from monitor.health.views import routers as health_routers
from monitor.health.watch import AnswerMemo, StoreWatch
from monitor.tenants import service as tenant_service
from monitor.tenants.views import routers as tenant_routers

log = logging.getLogger(__name__)

# Routers of the other domains, mounted before the tenants' own (see ``mount_api``).
DOMAIN_ROUTERS = (alerts.views.router, monitor.reports.views.router, monitor.advisor.views.router)

ERROR_STATUSES = {
    "400": "Request body could not be parsed (not JSON, bad encoding)",
    "401": "Missing, malformed, unknown or revoked bearer token",
    "403": "Operator token required",
    "404": "Not found, or not visible to this token (the two are indistinguishable)",
    "409": "Conflicts with existing state (duplicate, overlapping selectors, config-file tenant)",
    "413": "Request body larger than 64 KiB",
    "422": "Invalid request: `error.fields` names each field and why",
    "429": "Too many requests, costly requests in flight or failed authentications; see Retry-After",
    "500": "Internal error (details only in the server log)",
    "503": "Database unavailable, or the server is busy with costly requests; see Retry-After",
    "504": "A costly request (advice, capacity) did not finish within its deadline",
}


def _openapi(app: FastAPI):
    def build() -> dict:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title,
            version=app.version,
            routes=app.routes,
            description="kafka-health REST API. See docs/api.md.",
        )
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})["bearer"] = {"type": "http", "scheme": "bearer"}
        schemas = components.setdefault("schemas", {})
        for model in ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")["$defs"].items():
            schemas.setdefault(*model)
        schemas["ErrorBody"] = {
            k: v
            for k, v in ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}").items()
            if k != "$defs"
        }
        error_ref = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
        for path, ops in schema.get("paths", {}).items():
            if not path.startswith("/api/"):
                continue
            for op in ops.values():
                op["security"] = [{"bearer": []}]
                responses = op.setdefault("responses", {})
                for status, description in ERROR_STATUSES.items():
                    # Replace FastAPI's default 422 body (HTTPValidationError): ours is ErrorBody.
                    responses[status] = {"description": description, "content": error_ref}
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)
        app.openapi_schema = schema
        return schema

    return build


def _running(component: Component):
    """A lifespan that runs ``component`` while the app does. On a router, FastAPI runs it inside the app's own
    lifespan (``monitor.serve``'s, or the default one of a bare app in tests); startup/shutdown event handlers would
    not run at all beside an app's ``lifespan``."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        component.start()
        try:
            yield
        finally:
            component.stop()

    return lifespan


def mount_api(app: FastAPI, *, config: Config, store: Store, origin: tenant_service.ConfigOrigin | None = None) -> None:
    """Mount the REST API on ``app`` (see the module docstring). ``upgrade(store)`` must have run. ``origin``: the
    configuration's file, recorded with the sync so ``kafka-health tenants sync`` can tell it from another."""
    app.state.config = config
    app.state.store = store
    with store.session() as s:
        result = tenant_service.sync_config(db_session=s, config=config, now=utc_now(), origin=origin, by="serve")
    if result.added or result.updated or result.removed:
        log.info(
            "config tenants synced: added %s, updated %s, removed %s",
            list(result.added),
            list(result.updated),
            list(result.removed),
        )
    install_error_handlers(app)
    # What this server may remember of tokens and answers, and until when (see monitor.health.watch). The watch runs
    # while the app does; without it nothing is remembered and every request reads the store.
    watch = StoreWatch(store)
    app.state.store_watch = watch
    app.state.health_memo = AnswerMemo()
    app.include_router(APIRouter(lifespan=_running(watch)))  # merged into the app's lifespan, whatever it is
    limiter = TokenBuckets(rate=config.service.api_rate_limit_per_second, burst=config.service.api_rate_limit_burst)
    failures = (
        FailureLimit(rate=FAILURES_PER_ADDRESS["rate"], burst=config.service.auth_failure_burst_per_address),
        FailureLimit(**FAILURES_PER_TOKEN_ID),
    )
    # Added before the auth middleware, so it runs after it: a remembered health answer is sent only to a token that
    # authenticated, within its rate limit, and may see that tenant (monitor.health.hits).
    app.add_middleware(RememberedHealth)
    app.add_middleware(AuthMiddleware, store=store, limiter=limiter, watch=watch, failures=failures)
    app.add_middleware(BodyLimitMiddleware, max_bytes=MAX_BODY_BYTES)  # added last: runs first, before auth
    for router in [*DOMAIN_ROUTERS, *tenant_routers(), *health_routers()]:
        app.include_router(router)
    app.openapi = _openapi(app)
