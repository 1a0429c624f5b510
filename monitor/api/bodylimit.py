"""Request bodies of at most ``max_bytes``, as an ASGI middleware in front of everything else.

Without it a 64 MiB silence was read into memory and parsed before its 422 (server memory 100 -> 298 MB). So:

- a ``Content-Length`` above the limit is answered 413 at once, before a byte of the body is read;
- a body without a length (chunked), or one that sends more than its ``Content-Length`` said, is counted as it
  arrives; the chunk that crosses the limit raises ``BodyTooLarge`` from ``receive``, so nothing past the limit is
  ever buffered. FastAPI re-raises an ``HTTPException`` met while reading a body, so the app's own error handler
  answers it (413, the API's error body); if it escapes the app instead, this middleware answers it, provided no
  response has started.

The largest body this API takes is a tenant definition or a silence: a few KiB. 64 KiB is plenty.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from monitor.api.errors import error_response

MAX_BODY_BYTES = 64 * 1024


class BodyTooLarge(HTTPException):
    def __init__(self, max_bytes: int):
        super().__init__(413, f"request body larger than {max_bytes} bytes")


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, *, max_bytes: int = MAX_BODY_BYTES):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if started:  # the app answered already and then read on: nothing more to say
                return
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Connection: close, so the server does not read the rest of the body to reuse the connection.
        response = error_response(413, str(BodyTooLarge(self.max_bytes).detail), headers={"Connection": "close"})
        await response(scope, receive, send)
