"""What the API may remember, and until when: the store's change marks, re-read a few times a second.

A server remembers authenticated tokens (``monitor.api.auth``) and tenant health answers (``monitor.health.views``)
so that a client polling health costs no database work. Everything remembered is tagged with the ``Marks`` that
were current *before* it was read from the store, and is used only while the latest marks are the same:

- ``registry``: ``RegistryVersion``, bumped in the same transaction as every tenant change and token revocation,
  by any process (API, CLI, another server);
- ``heartbeats``: every ``EngineHeartbeat`` row. The alert engine writes its instances and the heartbeats of that
  evaluation in one transaction, so new heartbeats are the mark of new alert instances.

With the marks the watch keeps ``firing``: every firing instance (``alerts.repo.read_firing``), read in the same
session after the heartbeats whenever the marks moved, in one query, and published together with them. A health
answer after an evaluation is then computed from memory, tenant by tenant, instead of two queries and a thread hop
each: 1,000 polled tenants cost the store one query per evaluation, not 2,000 (``monitor.health.views``). Past
``firing_cap`` instances it is None and each answer reads its tenant's own.

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
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from alerts.models import EngineHeartbeat
from alerts.repo import FiringIndex, read_firing
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
    # every firing instance, read after these heartbeats (None: not read, or past the cap); not part of the marks
    firing: FiringIndex | None = field(default=None, compare=False)

    def beats(self) -> dict[str, Beat]:
        return {b.cluster: b for b in self.heartbeats}


FIRING_CAP = 20_000  # firing instances held in memory at most (about 1 KiB each); past it answers read their own

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
        self,
        store: Store,
        *,
        interval: float = 0.25,
        max_age: float = 2.0,
        firing_cap: int = FIRING_CAP,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.store, self.interval, self.max_age, self.clock = store, interval, max_age, clock
        self.firing_cap = firing_cap  # 0: firing instances are not read
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
                registry, heartbeats = tenant_service.version(db_session=s), read_heartbeats(s)
                firing = self._firing(s, registry, heartbeats)
                marks = Marks(registry=registry, heartbeats=heartbeats, read_at=started, firing=firing)
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

    def _firing(self, db_session: Session, registry: int, heartbeats: tuple[Beat, ...]) -> FiringIndex | None:
        """Read after the heartbeats, so at least as new as them; the last one again while the marks stand still."""
        last = self._marks
        if last is not None and last.registry == registry and last.heartbeats == heartbeats:
            return last.firing
        return read_firing(db_session, cap=self.firing_cap) if self.firing_cap > 0 else None

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
    basis: object = None  # what the caller computed it from (``last``), compared by the caller


@dataclass(frozen=True)
class Previous:
    """A key's last answer, whatever marks it was computed under: its basis and bytes (``AnswerMemo.last``)."""

    basis: object
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

    def known_input(self, key: str, marks: Marks | None) -> tuple[bool, object]:
        """(True, value) when ``input`` would answer ``value`` from memory under ``marks``; else (False, None)."""
        hit = self._inputs.get(key) if marks is not None else None
        if hit is None or marks is None or hit[0] != marks.registry:
            return False, None
        return True, hit[1]

    def get(self, key: str, marks: Marks | None, now: datetime) -> bytes | None:
        if marks is None:
            return None
        a = self._answers.get(key)
        if a is None or a.registry != marks.registry or now >= a.until or a.heartbeats != marks.heartbeats:
            return None
        return a.body

    def ahead_of(self, key: str, marks: Marks) -> bool:
        """True when ``key``'s last answer was computed from a heartbeat newer than ``marks`` hold for its cluster, or
        from one they do not hold: the store was read (a miss's hop) after these marks were, and the watch has not
        caught up yet (at most ``interval`` plus a read). An answer computed from ``marks`` alone would then go back
        in time for a client that already has the newer one: 'no evaluation yet' after 'ok', 'ok' after 'critical'.
        A heartbeat the marks hold and the answer does not counts as newer (a cluster's first evaluation)."""
        a = self._answers.get(key)
        if a is None or a.heartbeats == marks.heartbeats:
            return False
        have = marks.beats()
        return any((m := have.get(b.cluster)) is None or m.evaluated_at < b.evaluated_at for b in a.heartbeats)

    def last(self, key: str) -> Previous | None:
        """``key``'s last answer put, under any marks: never to be sent as it is (``get`` decides that); for a caller
        that can tell from its ``basis`` what of it still holds."""
        a = self._answers.get(key)
        return Previous(a.basis, a.body) if a is not None and a.basis is not None else None

    def put(
        self,
        key: str,
        *,
        registry: int,
        heartbeats: tuple[Beat, ...],
        until: datetime | None,
        body: bytes,
        basis: object = None,
    ) -> None:
        if until is None:
            return
        if len(self._answers) >= self.max_entries and key not in self._answers:
            self._answers = {k: a for k, a in self._answers.items() if a.registry == registry}
            if len(self._answers) >= self.max_entries:
                self._answers.clear()
        self._answers[key] = _Answer(registry, heartbeats, until, body, basis)
