"""The app's routes, flattened: the API's (method, path) pairs, every route's template (for request metrics), and which
methods a concrete path allows."""

from __future__ import annotations

import re

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import compile_path


def _effective_routes(app: FastAPI) -> list[tuple[str | None, set[str] | None, object]]:
    """(path, methods, route) of every route in routing order, flattened across included routers.

    Newer FastAPI includes routers lazily (``app.routes`` then holds one entry per included router), so this walks
    the effective routes when the version offers it.
    """
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # FastAPI that flattens on include
        return [(getattr(r, "path", None), getattr(r, "methods", None), r) for r in app.routes]
    return [(rc.path, rc.methods, rc.original_route) for rc in iter_route_contexts(app.routes)]


def api_routes(app: FastAPI) -> list[tuple[str, str]]:
    """Sorted (method, path) of every ``/api/`` route, flattened across included routers."""
    return sorted(
        {
            (m, path)
            for path, methods, route in _effective_routes(app)
            if isinstance(route, APIRoute) and path and path.startswith("/api/")
            for m in (methods or ())
            if m not in ("HEAD", "OPTIONS")
        }
    )


def route_templates(app: FastAPI) -> list[tuple[re.Pattern[str], str, frozenset[str]]]:
    """(compiled path, path template, methods) of every route of the app, API or not, in routing order."""
    return [
        (compile_path(path)[0], path, frozenset(methods or ())) for path, methods, _ in _effective_routes(app) if path
    ]


def allowed_methods(app: FastAPI, path: str) -> list[str]:
    """Every method some API route serves on this concrete path (for the ``Allow`` header of a 405)."""
    return sorted({m for m, pattern in api_routes(app) if compile_path(pattern)[0].match(path)})
