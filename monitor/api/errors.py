"""Every API error is JSON ``{"error": {"code", "message"}}`` (plus ``fields`` for validation errors).

The handlers translate at the boundary: ``NotFound`` -> 404, ``Conflict`` -> 409, ``Invalid`` and request
validation -> 422 naming each field and why, ``StoreError`` -> 503, anything else -> 500 with a fixed message.
Refusals decided outside the routers (401 and 429 in ``monitor.api.auth``, 413 in ``monitor.api.bodylimit``, 429 /
503 / 504 of costly requests in ``monitor.core.api.deps``) use ``error_response`` or ``HTTPException``, so they
have the same body. No
handler ever puts a stack trace, a SQL statement or a database URL into a response; the server log has the detail.
"""

from __future__ import annotations

import logging
from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from monitor.core.errors import (
    Conflict,
    Invalid,
    KafkaHealthError,
    NotFound,
    StoreError,
)

log = logging.getLogger(__name__)

CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid",
    429: "rate_limited",
    500: "internal",
    503: "unavailable",
    504: "timeout",
}


class FieldProblem(BaseModel):
    field: str
    message: str


class ErrorDetail(BaseModel):
    code: str
    message: str
    fields: list[FieldProblem] | None = None


class ErrorBody(BaseModel):
    """The body of every error response."""

    error: ErrorDetail


def error_response(
    status: int, message: str, *, fields: list[FieldProblem] | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    detail = ErrorDetail(
        code=CODES.get(status, HTTPStatus(status).phrase.lower().replace(" ", "_")), message=message, fields=fields
    )
    return JSONResponse(ErrorBody(error=detail).model_dump(exclude_none=True), status_code=status, headers=headers)


def _field(loc: tuple) -> str:
    """('body', 'selectors', 0, 'cluster') -> 'selectors[0].cluster'; ('query', 'limit') -> 'limit'."""
    parts = list(loc[1:]) if loc and loc[0] in ("body", "query", "path", "header", "cookie") else list(loc)
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or (str(loc[0]) if loc else "request")


async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
    fields = [
        FieldProblem(
            field=_field(tuple(e.get("loc", ()))), message=str(e.get("msg", "invalid")).removeprefix("Value error, ")
        )
        for e in exc.errors()
    ]
    message = "; ".join(f"{f.field}: {f.message}" for f in fields) or "invalid request"
    return error_response(422, message, fields=fields)


async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    message = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
    headers = dict(getattr(exc, "headers", None) or {})
    if exc.status_code == 405:
        # One route per method: the router's Allow names only the first route that matched the path.
        from monitor.api.routes import allowed_methods

        methods = allowed_methods(request.app, request.url.path)
        if methods:
            headers["Allow"] = ", ".join(methods)
    return error_response(exc.status_code, message, headers=headers or None)


async def _not_found(_request: Request, exc: NotFound) -> JSONResponse:
    return error_response(404, str(exc) or "not found")


async def _conflict(_request: Request, exc: Conflict) -> JSONResponse:
    return error_response(409, str(exc))


async def _invalid(_request: Request, exc: Invalid) -> JSONResponse:
    fields = [FieldProblem(field=exc.field, message=str(exc).removeprefix(f"{exc.field}: "))] if exc.field else None
    return error_response(422, str(exc), fields=fields)


def unavailable_response() -> JSONResponse:
    """The answer when the store cannot be read or written (also sent by the auth middleware)."""
    return error_response(503, "the database is unavailable; try again shortly", headers={"Retry-After": "5"})


async def _store(_request: Request, exc: StoreError) -> JSONResponse:
    log.error("store error: %s", exc)
    return unavailable_response()


async def _ours(_request: Request, exc: KafkaHealthError) -> JSONResponse:
    log.error("unhandled %s: %s", type(exc).__name__, exc)
    return error_response(500, "internal error; the server log has the details")


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, "internal error; the server log has the details")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(NotFound, _not_found)
    app.add_exception_handler(Conflict, _conflict)
    app.add_exception_handler(Invalid, _invalid)
    app.add_exception_handler(StoreError, _store)
    app.add_exception_handler(KafkaHealthError, _ours)
    app.add_exception_handler(Exception, _unexpected)
