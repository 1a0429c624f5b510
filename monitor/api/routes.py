"""The API's routes as (method, path) pairs, and which methods a concrete path allows."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import compile_path


def api_routes(app: FastAPI) -> list[tuple[str, str]]:
    """Sorted (method, path) of every ``/api/`` route, flattened across included routers.

    Newer FastAPI includes routers lazily (``app.routes`` then holds one entry per included router), so this walks
    the effective routes when the version offers it.
    """
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # FastAPI that flattens on include
        found = [(r.path, r.methods, r) for r in app.routes]
    else:
        found = [(rc.path, rc.methods, rc.original_route) for rc in iter_route_contexts(app.routes)]
    return sorted({
        (m, path) for path, methods, route in found
        if isinstance(route, APIRoute) and path and path.startswith("/api/")
        for m in (methods or ()) if m not in ("HEAD", "OPTIONS")
    })


def allowed_methods(app: FastAPI, path: str) -> list[str]:
    """Every method some API route serves on this concrete path (for the ``Allow`` header of a 405)."""
    return sorted({m for m, pattern in api_routes(app) if compile_path(pattern)[0].match(path)})
