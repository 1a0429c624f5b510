"""Bearer-token authentication and the per-token rate limit, as one ASGI middleware over ``/api/``.

Once per request: read ``Authorization: Bearer <token>``, resolve it to a ``Principal`` (``monitor.api.tokens``),
charge the token's bucket, and set ``request.state.principal``. Routers never read tokens; they declare
``Depends(current_principal)``. Every authentication failure answers the same 401 (missing, malformed, unknown,
wrong secret, revoked), so a caller learns nothing from the difference. Paths outside ``/api/`` (``/healthz``,
``/readyz``, ``/metrics``, ``/openapi.json``) are public.

A valid token's principal is remembered (keyed by the token's SHA-256) while the store's registry version stands
still (``monitor.health.watch``), so a client polling health authenticates from memory instead of the database: under
load the thread-pool hop for the lookup cost more than the rest of the request. A revocation or a tenant deletion
bumps that version: through this server it counts from the next request; through the CLI or another server within
the watch's interval (0.25 s). Without fresh marks nothing is remembered. Failures are never remembered, so the
memory holds only real tokens. A store that cannot be read answers 503, as everywhere else.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from monitor.api import tokens
from monitor.api.errors import error_response, unavailable_response
from monitor.api.ratelimit import TokenBuckets
from monitor.core.api.principal import Principal
from monitor.core.errors import StoreError
from monitor.core.store import Store
from monitor.health.watch import StoreWatch

log = logging.getLogger(__name__)

UNAUTHORIZED = "missing or invalid bearer token"
MAX_REMEMBERED = 10_000


class AuthMiddleware:
    def __init__(self, app: ASGIApp, *, store: Store, limiter: TokenBuckets, watch: StoreWatch,
                 prefix: str = "/api/", clock: Callable[[], float] = time.monotonic):
        self.app, self.store, self.limiter, self.watch, self.prefix, self.clock = (
            app, store, limiter, watch, prefix, clock)
        self._cache: dict[str, tuple[Principal, int]] = {}  # sha256(token) -> (principal, registry version)

    def _remember(self, key: str, principal: Principal, version: int) -> None:
        if len(self._cache) >= MAX_REMEMBERED:  # bounded by live tokens anyway; drop what is out of date
            self._cache = {k: v for k, v in self._cache.items() if v[1] == version}
            if len(self._cache) >= MAX_REMEMBERED:
                self._cache.clear()
        self._cache[key] = (principal, version)

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
            # Marks taken before the store is read: a change committed after that read has a newer version.
            marks = self.watch.current()
            key = hashlib.sha256(presented.encode()).hexdigest()
            hit = self._cache.get(key) if marks is not None else None
            if hit is not None and hit[1] == marks.registry:
                principal = hit[0]
            else:
                try:
                    principal = await run_in_threadpool(self._authenticate, presented)
                except StoreError as exc:
                    log.error("store error while authenticating: %s", exc)
                    await unavailable_response()(scope, receive, send)
                    return
                if principal is not None and marks is not None:
                    self._remember(key, principal, marks.registry)
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
