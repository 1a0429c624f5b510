"""FastAPI dependencies every router shares: the unit of work, the config, the clock, operator-only guard.

``DbSession`` commits when the endpoint function returns and *before* the response is sent
(``scope="function"``), so a client never sees success for a write that then failed to commit.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from sqlalchemy.orm import Session

from monitor.api.principal import Principal, current_principal
from monitor.config import Config


def _db(request: Request) -> Iterator[Session]:
    with request.app.state.store.session() as session:
        yield session


def _config(request: Request) -> Config:
    return request.app.state.config


def _now(request: Request) -> datetime:
    """Read once per request and passed down; tests replace ``app.state.clock``."""
    clock = getattr(request.app.state, "clock", None)
    return clock() if clock else datetime.now(timezone.utc)


def _operator(principal: Annotated[Principal, Depends(current_principal)]) -> Principal:
    if not principal.is_operator:
        raise HTTPException(status_code=403, detail="this needs an operator token")
    return principal


DbSession = Annotated[Session, Depends(_db, scope="function")]
AppConfig = Annotated[Config, Depends(_config)]
Now = Annotated[datetime, Depends(_now)]
CurrentPrincipal = Annotated[Principal, Depends(current_principal)]
OperatorPrincipal = Annotated[Principal, Depends(_operator)]
