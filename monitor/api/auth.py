"""Bearer-token authentication and the per-token rate limit, as one ASGI middleware over ``/api/``.

Once per request: read ``Authorization: Bearer <token>``, resolve it to a ``Principal`` (``monitor.api.tokens``),
charge the token's bucket, and set ``request.state.principal``. Routers never read tokens; they declare
``Depends(current_principal)``. Every authentication failure answers the same 401 (missing, malformed, unknown,
wrong secret, revoked, expired), so a caller learns nothing from the difference. It covers ``/api/`` and
``/metrics`` (``PROTECTED``: the exposition names every tenant; ``monitor.serve`` lets operators only read it); the
rest (``/healthz``, ``/readyz``, ``/openapi.json``) is public.

For a tenant token the same lookup reads the clusters its tenant is on and sets ``request.state.visible_clusters``
(a frozenset; absent for operators, who see every cluster). So "a cluster this tenant is not on" is decided from
memory, like "a cluster that does not exist", and the two 404s cost the same (``monitor.tenants.scope``).

A valid token's principal is remembered (keyed by the token's SHA-256) while the store's registry version stands
still (``monitor.health.watch``) and until the token's ``expires_at``, so a client polling health authenticates
from memory instead of the database: under load the thread-pool hop for the lookup cost more than the rest of the
request. A revocation or a tenant change bumps that version: through this server it counts from the next request;
through the CLI or another server within the watch's interval (0.25 s). Without fresh marks nothing is remembered.
A store that cannot be read answers 503, as everywhere else.

Failures are never remembered, but they are counted (``FailureLimit``): per client address and per presented token
id (``kh_<id>_...``). Past the limit the caller gets 429 with ``Retry-After`` *before* any store lookup. A request
whose token this server remembers as valid is never held back by it; a valid token not yet remembered, presented
from an address (or with an id) that is over its limit, waits like the failures do: that is the price of not
looking it up.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from monitor.api import tokens
from monitor.api.errors import error_response, unavailable_response
from monitor.api.ratelimit import FailureLimit, TokenBuckets
from monitor.core.errors import StoreError
from monitor.core.store import Store
from monitor.core.times import utc_now
from monitor.health.watch import StoreWatch
from monitor.tenants import service as tenant_service

log = logging.getLogger(__name__)

UNAUTHORIZED = "missing or invalid bearer token"
TOO_MANY_FAILURES = "too many failed authentications from this client or for this token; retry later"
MAX_REMEMBERED = 10_000

# Failed authentications: per client address, enough for a person fixing a typo or a deploy rolling a secret; per
# token id, fewer (one id is one token: a real holder never needs many tries). Sustained: one every 2 s / 10 s.
# Everything under /api/, and the service's own /metrics (it names every tenant: operators only, see monitor.serve).
PROTECTED = ("/api/", "/metrics")
FAILURES_PER_ADDRESS = {"rate": 0.5, "burst": 20}
FAILURES_PER_TOKEN_ID = {"rate": 0.1, "burst": 5}


@dataclass(frozen=True)
class Known:
    """What a lookup established about a token: who it speaks for, until when, and (tenant tokens) which clusters
    its tenant is on."""

    verified: tokens.Verified
    clusters: frozenset[str] | None  # None: an operator, every cluster


class AuthMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        store: Store,
        limiter: TokenBuckets,
        watch: StoreWatch,
        prefix: tuple[str, ...] = PROTECTED,
        clock: Callable[[], float] = time.monotonic,
        failures: tuple[FailureLimit, FailureLimit] | None = None,
    ):
        self.app, self.store, self.limiter, self.watch, self.prefix, self.clock = (
            app,
            store,
            limiter,
            watch,
            prefix,
            clock,
        )
        # A fresh pair per middleware (each app, each test) unless given.
        self.per_address, self.per_token_id = failures or (
            FailureLimit(**FAILURES_PER_ADDRESS),
            FailureLimit(**FAILURES_PER_TOKEN_ID),
        )
        self._cache: dict[str, tuple[Known, int]] = {}  # sha256(token) -> (what the store said, registry version)

    def _remember(self, key: str, known: Known, version: int) -> None:
        if len(self._cache) >= MAX_REMEMBERED:  # bounded by live tokens anyway; drop what is out of date
            self._cache = {k: v for k, v in self._cache.items() if v[1] == version}
            if len(self._cache) >= MAX_REMEMBERED:
                self._cache.clear()
        self._cache[key] = (known, version)

    def _authenticate(self, presented: str, now: datetime) -> Known | None:
        """The store's answer for ``presented`` at ``now`` (one session: the token, then its tenant's clusters)."""
        with self.store.session() as s:
            verified = tokens.verify(db_session=s, presented=presented, now=now)
            if verified is None:
                return None
            tenant = verified.principal.tenant
            if verified.principal.is_operator:
                return Known(verified, None)
            cfg = tenant_service.get_config(db_session=s, name=tenant or "")
            # The tenant deleted under the token: it sees no cluster (its tokens go with it anyway).
            return Known(verified, frozenset(tenant_service.clusters_of(cfg)) if cfg is not None else frozenset())

    @staticmethod
    def _wall_now(scope: Scope) -> datetime:
        # The request's clock, as the routers read it (``monitor.core.api.deps``): tests pin ``app.state.clock``.
        app = scope.get("app")
        clock = getattr(getattr(app, "state", None), "clock", None)
        return clock() if clock else utc_now()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix):  # a str or a tuple of prefixes
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization", "")
        scheme, _, presented = header.partition(" ")
        known = None
        presented = presented.strip()
        if scheme.lower() == "bearer" and presented:
            now = self._wall_now(scope)
            # Marks taken before the store is read: a change committed after that read has a newer version.
            marks = self.watch.current()
            key = hashlib.sha256(presented.encode()).hexdigest()
            hit = self._cache.get(key) if marks is not None else None
            if hit is not None and hit[1] == marks.registry and hit[0].verified.valid_at(now):
                known = hit[0]
            else:
                failure_keys = self._failure_keys(scope, presented)
                wait = max(
                    self.per_address.wait(failure_keys[:1], now=self.clock()),
                    self.per_token_id.wait(failure_keys[1:], now=self.clock()),
                )
                if wait > 0:
                    await _too_many(TOO_MANY_FAILURES, wait)(scope, receive, send)
                    return
                try:
                    known = await run_in_threadpool(self._authenticate, presented, now)
                except StoreError as exc:
                    log.error("store error while authenticating: %s", exc)
                    await unavailable_response()(scope, receive, send)
                    return
                if known is None:
                    self.per_address.fail(failure_keys[:1], now=self.clock())
                    self.per_token_id.fail(failure_keys[1:], now=self.clock())
                elif marks is not None:
                    self._remember(key, known, marks.registry)
        if known is None:
            response = error_response(401, UNAUTHORIZED, headers={"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        principal = known.verified.principal
        wait = self.limiter.take(principal.token_id, now=self.clock())
        if wait > 0:
            await _too_many("rate limit for this token exceeded; retry later", wait)(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state["principal"] = principal
        if known.clusters is not None:
            state["visible_clusters"] = known.clusters
        await self.app(scope, receive, send)

    @staticmethod
    def _failure_keys(scope: Scope, presented: str) -> list[str]:
        """[client address] + [token id, if the token is well formed]: what a failure is charged to."""
        client = scope.get("client")
        keys = [client[0] if client else "-"]
        token_id = tokens.token_id_of(presented)
        if token_id is not None:
            keys.append(token_id)
        return keys


def _too_many(message: str, wait: float):
    return error_response(429, message, headers={"Retry-After": str(max(1, math.ceil(wait)))})
