"""Bearer-token authentication and the per-token rate limit, as one ASGI middleware over ``/api/``.

Once per request: read ``Authorization: Bearer <token>``, resolve it to a ``Principal`` (``monitor.api.tokens``),
charge the token's bucket, and set ``request.state.principal``. Routers never read tokens; they declare
``Depends(current_principal)``. Every authentication failure answers the same 401 (missing, malformed, unknown,
wrong secret, revoked), so a caller learns nothing from the difference. Paths outside ``/api/`` (``/healthz``,
``/readyz``, ``/metrics``, ``/openapi.json``) are public.

A valid token's principal is remembered for ``cache_seconds`` (default 1 s), keyed by the token's SHA-256, so a
client polling health authenticates from memory instead of the database: under load the thread-pool hop for the
lookup cost more than the rest of the request. The price, documented in docs/api.md: a revoked token (or one of a
deleted tenant) keeps working for at most that long. Failures are never cached, so the cache holds only real tokens.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from monitor.api import tokens
from monitor.api.errors import error_response
from monitor.api.principal import Principal
from monitor.api.ratelimit import TokenBuckets
from monitor.store.base import Store

UNAUTHORIZED = "missing or invalid bearer token"


class AuthMiddleware:
    def __init__(self, app: ASGIApp, *, store: Store, limiter: TokenBuckets, prefix: str = "/api/",
                 cache_seconds: float = 1.0, clock: Callable[[], float] = time.monotonic):
        self.app, self.store, self.limiter, self.prefix, self.clock = app, store, limiter, prefix, clock
        self.cache_seconds = cache_seconds
        self._cache: dict[str, tuple[Principal, float]] = {}  # sha256(token) -> (principal, valid until)

    def _cached(self, key: str, now: float) -> Principal | None:
        hit = self._cache.get(key)
        if hit is None:
            return None
        if hit[1] <= now:
            del self._cache[key]
            return None
        return hit[0]

    def _remember(self, key: str, principal: Principal, now: float) -> None:
        if self.cache_seconds <= 0:
            return
        if len(self._cache) > 10_000:  # bounded by live tokens anyway; drop what expired
            self._cache = {k: v for k, v in self._cache.items() if v[1] > now}
        self._cache[key] = (principal, now + self.cache_seconds)

    def _authenticate(self, presented: str) -> Principal | None:
        with self.store.session() as s:
            return tokens.authenticate(db_session=s, presented=presented)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization", "")
        scheme, _, presented = header.partition(" ")
        principal = None
        presented = presented.strip()
        if scheme.lower() == "bearer" and presented:
            now = self.clock()
            key = hashlib.sha256(presented.encode()).hexdigest()
            principal = self._cached(key, now)
            if principal is None:
                principal = await run_in_threadpool(self._authenticate, presented)
                if principal is not None:
                    self._remember(key, principal, now)
        if principal is None:
            response = error_response(401, UNAUTHORIZED, headers={"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        wait = self.limiter.take(principal.token_id, now=self.clock())
        if wait > 0:
            response = error_response(429, "rate limit for this token exceeded; retry later",
                                      headers={"Retry-After": str(max(1, math.ceil(wait)))})
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)
