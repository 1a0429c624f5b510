"""The service's own HTTP metrics: every request counted and timed by method, route template and status.

    kafka_health_http_request_duration_seconds{method, route, status}   histogram (its _count counts requests)

Label values are bounded whatever clients send: ``route`` is the template of the route that serves the path
(``/api/v1/tenants/{tenant}``), never the path itself (a tenant's name, a token id or a probe's junk would each be
a new series), and ``unmatched`` where no route does; ``method`` is one of the methods HTTP defines, else ``other``;
``status`` is the code sent, ``500`` when the application raised before answering. No tenant is named: a route
template is the same for every tenant.

The middleware is the outermost one, so what the body limit, authentication and the rate limit refuse (413, 401,
429) is counted too. Those answer before routing has run, so the template is always found by matching the app's
routes as the router would (one table, read at the first request).
"""

from __future__ import annotations

import re
import time

from prometheus_client import CollectorRegistry, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from monitor.api.routes import route_templates

UNMATCHED = "unmatched"
MAX_PATHS_SEEN, MAX_PATH_SEEN = 10_000, 200
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"})
# Answers range from a memo hit (under a millisecond) to a costly advice call near its deadline (seconds).
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def route_template(routes: list[tuple[re.Pattern[str], str, frozenset[str]]], method: str, path: str) -> str:
    """The template of the route serving ``method`` on ``path`` (``monitor.api.routes.route_templates``): the first
    that matches path and method, else the first that matches the path (a 405), else ``unmatched``."""
    by_path = None
    for pattern, template, methods in routes:
        if pattern.match(path):
            if method in methods:
                return template
            by_path = by_path or template
    return by_path or UNMATCHED


def request_duration(registry: CollectorRegistry) -> Histogram:
    """The histogram, registered once per registry (Starlette may build its middleware stack more than once)."""
    return Histogram(
        "kafka_health_http_request_duration_seconds",
        "HTTP requests served by the service, by method, route template and status (_count counts them)",
        ["method", "route", "status"],
        buckets=_BUCKETS,
        registry=registry,
    )


class RequestMetricsMiddleware:
    """Pure ASGI (no response buffering, streaming bodies pass through). Mount it last, so it runs first."""

    def __init__(self, app: ASGIApp, *, duration: Histogram) -> None:
        self.app = app
        self.duration = duration
        self._routes: list | None = None  # read on the first request, when every router is mounted
        self._seen: dict[tuple[str, str], str] = {}  # (method, path) -> its template

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500  # unless an answer starts

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            method = scope["method"] if scope["method"] in _METHODS else "other"
            self.duration.labels(method, self._template(scope), str(status)).observe(time.perf_counter() - start)

    def _template(self, scope: Scope) -> str:
        # Matching every route's pattern cost as much as the rest of a remembered health answer; a path polled again
        # is looked up instead. Bounded: at most MAX_PATHS_SEEN paths of at most MAX_PATH_SEEN characters (under 3 MiB);
        # a client sending junk paths only empties the table now and then.
        key = (scope["method"], scope["path"])
        template = self._seen.get(key)
        if template is None:
            if self._routes is None:
                self._routes = route_templates(scope["app"])
            template = route_template(self._routes, scope["method"], scope["path"])
            if len(key[1]) <= MAX_PATH_SEEN:
                if len(self._seen) >= MAX_PATHS_SEEN:
                    self._seen.clear()
                self._seen[key] = template
        return template
