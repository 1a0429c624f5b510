"""FastAPI dependencies every router shares: the unit of work, the config, the clock, the principal, operator guard,
and the admission of costly requests (``CostlyWork``).

Dependencies that do no I/O are ``async def`` on purpose: FastAPI runs every plain ``def`` dependency in the
thread pool, and a hop per dependency was most of a request's latency under load (see bench/api.py). Database work
belongs in the endpoint itself (one hop), never in the event loop: a loop blocked on a pooled connection can wait
for a request that needs the loop to give it back.

``DbSession`` commits when the endpoint function returns and *before* the response is sent
(``scope="function"``), so a client never sees success for a write that then failed to commit. After a write commits,
the server re-reads the store's change marks (``monitor.health.watch``) in the same hop, so what it remembered of
tenants and tokens is forgotten before the client hears of the change: a deleted tenant's token is refused from the
very next request.

Costly requests (advice, capacity: each is some twenty Prometheus queries) go through ``CostlyWork``, so that one
tenant cannot starve the others (45 concurrent advice calls once made another tenant's ``GET /tenants/x`` wait 58 s
for a thread):

- at most ``per_token`` in flight per token: the next is answered 429 at once, with ``Retry-After``;
- at most ``shared`` running on the server, all tokens together, on threads of their own limiter (never the default
  pool every other endpoint waits on); a request waits ``queue_seconds`` for one, then 503 with ``Retry-After``;
- a deadline ``deadline_seconds`` after arrival: the gate answers 504 then, whatever the work is doing. A thread
  cannot be cancelled, so the work must stop on its own (``Costly.deadline``: the advisor queries Prometheus no more
  past it), and its shared slot stays taken until it has: a deadline the work ignored would hide the load, not
  shed it.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, TypeVar

import anyio
import anyio.to_thread
from fastapi import Depends, HTTPException, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from monitor.core.api.principal import Principal, current_principal
from monitor.core.config import Config
from monitor.core.times import utc_now


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


def _commit(cm: Any, watch: Any) -> None:
    cm.__exit__(None, None, None)
    if watch is not None:
        watch.refresh()


async def _config(request: Request) -> Config:
    config: Config = request.app.state.config
    return config


def request_now(request: Request) -> datetime:
    """The time of a request: the app's clock (``app.state.clock``, which tests replace), else ``utc_now``. Read once
    per request and passed down."""
    clock = getattr(request.app.state, "clock", None)
    now: datetime = clock() if clock else utc_now()
    return now


async def _now(request: Request) -> datetime:
    return request_now(request)


async def _principal(request: Request) -> Principal:
    return current_principal(request)  # the shared dependency, awaited inline (it only reads request.state)


async def _operator(principal: Annotated[Principal, Depends(_principal)]) -> Principal:
    if not principal.is_operator:
        raise HTTPException(status_code=403, detail="this needs an operator token")
    return principal


T = TypeVar("T")
DEADLINE_PASSED = (
    "the answer was not ready within the request's deadline ({:g} s); retry later, or with a shorter window"
)


@dataclass(frozen=True)
class CostlyLimits:
    per_token: int = 2  # in flight per token
    shared: int = 4  # running on this server: two cores, and each request mostly waits for Prometheus
    queue_seconds: float = 2.0  # wait for a shared slot at most this long
    deadline_seconds: float = 20.0  # from arrival to answer


class _Ticket:
    """One piece of work's place in the gate: queued -> running -> done, or queued -> dropped (never ran)."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = "queued"


class CostlyGate:
    """Admission of costly requests (see the module docstring). One per app (``app.state.costly_gate``).

    Per-token counts are touched only from the event loop. Shared slots are counted under a lock, because the work
    frees its slot from its thread when it really ends: an answer given at the deadline (504) leaves its thread to
    finish its current query, and until then the slot stays taken. ``clock`` (monotonic seconds) is the deadline's.
    """

    POLL_SECONDS = 0.05  # while queued for a shared slot

    def __init__(self, limits: CostlyLimits = CostlyLimits(), *, clock: Callable[[], float] = time.monotonic):
        self.limits, self.clock = limits, clock
        self._in_flight: dict[str, int] = {}  # token id -> its costly requests being answered; absent: none
        self._running = 0  # work holding a shared slot, answered or not
        self._lock = threading.Lock()
        self._threads: anyio.CapacityLimiter | None = None  # made on first use, inside the event loop

    def enter(self, token_id: str) -> bool:
        n = self._in_flight.get(token_id, 0)
        if n >= self.limits.per_token:
            return False
        self._in_flight[token_id] = n + 1
        return True

    def leave(self, token_id: str) -> None:
        n = self._in_flight.pop(token_id, 0) - 1
        if n > 0:
            self._in_flight[token_id] = n

    def in_flight(self, token_id: str) -> int:
        return self._in_flight.get(token_id, 0)

    @property
    def running(self) -> int:
        return self._running

    def _take_slot(self) -> bool:
        with self._lock:
            if self._running >= self.limits.shared:
                return False
            self._running += 1
            return True

    def _free_slot(self) -> None:
        with self._lock:
            self._running -= 1

    async def run(self, fn: Callable[..., T], *args: Any, deadline: float) -> T:
        """``fn(*args)`` on a thread once a shared slot is free (503 if none frees within ``queue_seconds``);
        504 at ``deadline`` if it has not answered by then (``fn`` should stop on its own by then too)."""
        give_up = min(self.clock() + self.limits.queue_seconds, deadline)
        while not self._take_slot():
            if self.clock() >= give_up:
                raise HTTPException(
                    status_code=503,
                    detail="the server is busy with costly requests; retry shortly",
                    headers={"Retry-After": str(max(1, math.ceil(self.limits.queue_seconds)))},
                )
            await anyio.sleep(self.POLL_SECONDS)
        ticket = _Ticket()

        def work() -> T:
            with self._lock:
                if ticket.state == "dropped":  # answered (504) before a thread picked it up
                    return None  # type: ignore[return-value]  # nobody reads a dropped answer
                ticket.state = "running"
            try:
                return fn(*args)
            finally:
                ticket.state = "done"
                self._free_slot()

        if self._threads is None:  # its own threads: the default pool stays free for every other endpoint
            self._threads = anyio.CapacityLimiter(4 * self.limits.shared)
        try:
            with anyio.move_on_after(max(0.0, deadline - self.clock())):
                return await anyio.to_thread.run_sync(work, abandon_on_cancel=True, limiter=self._threads)
        finally:
            with self._lock:
                never_ran = ticket.state == "queued"
                if never_ran:
                    ticket.state = "dropped"
            if never_ran:
                self._free_slot()
        raise HTTPException(status_code=504, detail=DEADLINE_PASSED.format(self.limits.deadline_seconds))


@dataclass(frozen=True)
class Costly:
    """This request's admission: its deadline (``clock`` seconds) and the way to run its work."""

    gate: CostlyGate
    deadline: float

    @property
    def clock(self) -> Callable[[], float]:
        return self.gate.clock

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await self.gate.run(fn, *args, deadline=self.deadline)

    def deadline_passed(self) -> HTTPException:
        """The 504 for work that stopped itself at the deadline (the same answer as the gate's own)."""
        return HTTPException(status_code=504, detail=DEADLINE_PASSED.format(self.gate.limits.deadline_seconds))


def costly_gate(state: Any) -> CostlyGate:
    gate = getattr(state, "costly_gate", None)
    if gate is None:
        gate = state.costly_gate = CostlyGate()
    return gate


async def _costly(request: Request, principal: Annotated[Principal, Depends(_principal)]) -> AsyncIterator[Costly]:
    gate = costly_gate(request.app.state)
    if not gate.enter(principal.token_id):
        raise HTTPException(
            status_code=429,
            headers={"Retry-After": "1"},
            detail=(
                f"this token already has {gate.limits.per_token} costly requests (advice, capacity) in flight; "
                "retry when one has answered"
            ),
        )
    try:
        yield Costly(gate, deadline=gate.clock() + gate.limits.deadline_seconds)
    finally:
        gate.leave(principal.token_id)


DbSession = Annotated[Session, Depends(_db, scope="function")]
AppConfig = Annotated[Config, Depends(_config)]
Now = Annotated[datetime, Depends(_now)]
CurrentPrincipal = Annotated[Principal, Depends(_principal)]
OperatorPrincipal = Annotated[Principal, Depends(_operator)]
CostlyWork = Annotated[Costly, Depends(_costly, scope="function")]
