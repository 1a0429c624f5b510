"""What the API may remember, and until when: the store's change marks, re-read a few times a second.

A server remembers authenticated tokens (``monitor.api.auth``) and tenant health answers (``monitor.health.views``)
so that a client polling health costs no database work. Everything remembered is tagged with the ``Marks`` that
were current *before* it was read from the store, and is used only while the latest marks are the same:

- ``registry``: ``RegistryVersion``, bumped in the same transaction as every tenant change and token revocation,
  by any process (API, CLI, another server);
- ``heartbeats``: every ``EngineHeartbeat`` row. The alert engine writes its instances and the heartbeats of that
  evaluation in one transaction, so new heartbeats are the mark of new alert instances.

``StoreWatch`` re-reads the marks every ``interval`` seconds in its own thread, and at once after this server's own
writes (``refresh``). So a change made through this server counts from the next request, and a change made by
another process within ``interval`` (plus one read). If the marks cannot be read for ``max_age`` seconds,
``current`` answers None and callers must go to the store for everything (which then answers, or fails as 503):
what cannot be checked is not trusted.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from alerts.models import EngineHeartbeat
from monitor.core.errors import StoreError
from monitor.core.store import Store
from monitor.tenants import service as tenant_service

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Beat:
    """One engine heartbeat as read (fits ``monitor.tenants.health.HeartbeatLike``)."""

    cluster: str
    evaluated_at: datetime
    data_ok: bool
    detail: str


@dataclass(frozen=True)
class Marks:
    registry: int
    heartbeats: tuple[Beat, ...]  # every cluster's, sorted by cluster: compared whole
    read_at: float  # monotonic seconds

    def beats(self) -> dict[str, Beat]:
        return {b.cluster: b for b in self.heartbeats}


_HEARTBEATS = select(
    EngineHeartbeat.cluster, EngineHeartbeat.evaluated_at, EngineHeartbeat.data_ok, EngineHeartbeat.detail
).order_by(EngineHeartbeat.cluster)


def read_heartbeats(db_session: Session) -> tuple[Beat, ...]:
    return tuple(Beat(*r) for r in db_session.connection().execute(_HEARTBEATS))


class StoreWatch:
    """Keeps the latest ``Marks``. A ``serve`` component (start/stop/ready); ``refresh`` may be called from any
    thread, never from the event loop (it reads the store)."""

    name = "api-store-watch"

    def __init__(
        self, store: Store, *, interval: float = 0.25, max_age: float = 2.0, clock: Callable[[], float] = time.monotonic
    ):
        self.store, self.interval, self.max_age, self.clock = store, interval, max_age, clock
        self._marks: Marks | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False
        self._lock = threading.Lock()

    def refresh(self) -> Marks | None:
        """Read the marks now. On a store error forget the old ones (callers then read the store) and return None."""
        started = self.clock()
        try:
            with self.store.session() as s:
                marks = Marks(
                    registry=tenant_service.version(db_session=s), heartbeats=read_heartbeats(s), read_at=started
                )
        except StoreError as exc:
            self._marks = None
            if not self._failing:
                log.warning("cannot read the store's change marks; answering from the store only: %s", exc)
            self._failing = True
            return None
        if self._failing:
            log.info("store change marks readable again")
        self._failing = False
        with self._lock:  # two refreshes may race (the thread, a request's write): keep the one that started last
            if self._marks is None or self._marks.read_at <= started:
                self._marks = marks
        return marks

    def current(self) -> Marks | None:
        """The latest marks if read within ``max_age`` seconds, else None."""
        marks = self._marks
        if marks is None or self.clock() - marks.read_at > self.max_age:
            return None
        return marks

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self.refresh()
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.refresh()
            except Exception:  # a bug here must not end the loop; current() then expires
                log.exception("store watch failed")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def ready(self) -> bool:
        return self.current() is not None


@dataclass(frozen=True)
class _Answer:
    registry: int
    heartbeats: tuple[Beat, ...]
    until: datetime
    body: bytes


class AnswerMemo:
    """Serialized answers remembered per key (a tenant), each tagged with the marks it was computed under.

    ``get`` returns an answer only while the current marks are the ones it was computed under and ``now`` is before
    its ``until`` (the moment time alone would change it, e.g. a heartbeat turning stale). ``put`` must be given the
    registry version read *before* the data, and the heartbeats read *before* the alert instances, so an answer is
    never tagged newer than what it was computed from.
    """

    def __init__(self, *, max_entries: int = 10_000):
        self.max_entries = max_entries
        self._answers: dict[str, _Answer] = {}
        self._inputs: dict[str, tuple[int, object]] = {}  # key -> (registry version, value)

    def input(self, key: str, marks: Marks | None, load: Callable[[], object]) -> object:
        """An input of answers that changes only with the registry version (a tenant's definition): remembered
        under ``marks.registry`` (read before ``load`` runs), loaded again once that moves."""
        hit = self._inputs.get(key) if marks is not None else None
        if hit is not None and hit[0] == marks.registry:
            return hit[1]
        value = load()
        if marks is not None:
            if len(self._inputs) >= self.max_entries:
                self._inputs.clear()
            self._inputs[key] = (marks.registry, value)
        return value

    def get(self, key: str, marks: Marks | None, now: datetime) -> bytes | None:
        if marks is None:
            return None
        a = self._answers.get(key)
        if a is None or a.registry != marks.registry or now >= a.until or a.heartbeats != marks.heartbeats:
            return None
        return a.body

    def put(
        self, key: str, *, registry: int, heartbeats: tuple[Beat, ...], until: datetime | None, body: bytes
    ) -> None:
        if until is None:
            return
        if len(self._answers) >= self.max_entries and key not in self._answers:
            self._answers = {k: a for k, a in self._answers.items() if a.registry == registry}
            if len(self._answers) >= self.max_entries:
                self._answers.clear()
        self._answers[key] = _Answer(registry, heartbeats, until, body)
