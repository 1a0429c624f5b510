"""FastAPI dependencies every router shares: the unit of work, the config, the clock, the principal, operator guard.

Dependencies that do no I/O are ``async def`` on purpose: FastAPI runs every plain ``def`` dependency in the
thread pool, and a hop per dependency was most of a request's latency under load (see bench/api.py). Database work
belongs in the endpoint itself (one hop), never in the event loop: a loop blocked on a pooled connection can wait
for a request that needs the loop to give it back.

``DbSession`` commits when the endpoint function returns and *before* the response is sent
(``scope="function"``), so a client never sees success for a write that then failed to commit. After a write commits,
the server re-reads the store's change marks (``monitor.health.watch``) in the same hop, so what it remembered of
tenants and tokens is forgotten before the client hears of the change: a deleted tenant's token is refused from the
very next request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timezone
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from monitor.core.api.principal import Principal, current_principal
from monitor.core.config import Config


async def _db(request: Request) -> AsyncIterator[Session]:
    # Opening a session does no I/O (the connection is taken at the first query). Ending a write commits, which
    # does I/O, so that runs in the thread pool; a read-only request just hands its connection back.
    cm = request.app.state.store.session()
    session = cm.__enter__()
    read_only = request.method in ("GET", "HEAD")
    try:
        yield session
    except BaseException as exc:
        await run_in_threadpool(cm.__exit__, type(exc), exc, exc.__traceback__)
        raise
    else:
        if read_only:
            session.close()
        else:
            await run_in_threadpool(_commit, cm, getattr(request.app.state, "store_watch", None))


def _commit(cm, watch) -> None:
    cm.__exit__(None, None, None)
    if watch is not None:
        watch.refresh()


async def _config(request: Request) -> Config:
    return request.app.state.config


async def _now(request: Request) -> datetime:
    """Read once per request and passed down; tests replace ``app.state.clock``."""
    clock = getattr(request.app.state, "clock", None)
    return clock() if clock else datetime.now(timezone.utc)


async def _principal(request: Request) -> Principal:
    return current_principal(request)  # the shared dependency, awaited inline (it only reads request.state)


async def _operator(principal: Annotated[Principal, Depends(_principal)]) -> Principal:
    if not principal.is_operator:
        raise HTTPException(status_code=403, detail="this needs an operator token")
    return principal


DbSession = Annotated[Session, Depends(_db, scope="function")]
AppConfig = Annotated[Config, Depends(_config)]
Now = Annotated[datetime, Depends(_now)]
CurrentPrincipal = Annotated[Principal, Depends(_principal)]
OperatorPrincipal = Annotated[Principal, Depends(_operator)]
