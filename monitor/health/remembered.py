"""``Remembered``: one answer asked of Prometheus at most once per ``ttl``, for the parts of the health answers read
from Prometheus (``monitor.health.slo``, ``monitor.health.share_groups``, ``monitor.health.streams_groups``). A
failure (the asker returns None) is remembered as long as an answer would be, so a dead Prometheus is asked once per
``ttl``, not once per request. ``Board`` is their common start (where to ask, how long to remember) and
``tenant_rows`` the one tenant filter of the group lists."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from datetime import datetime
from typing import Generic, Protocol, TypeVar

from monitor.core.config import Config
from monitor.core.errors import KafkaHealthError
from monitor.core.prom import InstantSample, PrometheusSource, prometheus_source

log = logging.getLogger(__name__)

T = TypeVar("T")


class Remembered(Generic[T]):
    """Thread-safe: health misses run on worker threads; one asks, the others wait for its answer. A new ``key``
    (a setting the answer depends on) asks again at once."""

    def __init__(self, *, ttl: float, clock: Callable[[], float]):
        self._ttl, self._clock = ttl, clock
        self._lock = threading.Lock()
        self._at: float | None = None
        self._key: Hashable = None
        self._value: T | None = None

    def get(self, key: Hashable, ask: Callable[[], T | None]) -> T | None:
        with self._lock:
            if self._at is None or self._clock() - self._at >= self._ttl or key != self._key:
                self._value, self._at, self._key = ask(), self._clock(), key
            return self._value

    def peek(self, key: Hashable) -> tuple[bool, T | None]:
        """Never waits, never asks: (True, the answer) while one for ``key`` is remembered and no one is asking;
        else (False, None). For the event loop, which must not wait for Prometheus."""
        if not self._lock.acquire(blocking=False):
            return False, None
        try:
            if self._at is None or self._clock() - self._at >= self._ttl or key != self._key:
                return False, None
            return True, self._value
        finally:
            self._lock.release()


class Board(Generic[T]):
    """A part of the health answers asked of Prometheus (``source``, the configured one by default) at most once per
    ``ttl`` seconds (the subclass's ``TTL_SECONDS`` by default)."""

    TTL_SECONDS = 60.0

    def __init__(
        self,
        source: Callable[[Config], PrometheusSource] | None = None,
        *,
        ttl: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._source = source or (lambda config: prometheus_source(config.prometheus))
        self._memo: Remembered[T] = Remembered(ttl=self.TTL_SECONDS if ttl is None else ttl, clock=clock)

    def _ask_all(self, config: Config, now: datetime, what: str, *exprs: str) -> list[list[InstantSample]] | None:
        """Instant queries' answers, in order; None (said in the log) when Prometheus cannot answer one."""
        source = self._source(config)
        try:
            return [source.query(e, now) for e in exprs]
        except KafkaHealthError as exc:
            log.warning("%s of the tenant health answers unavailable: %s", what, exc)
            return None
        finally:
            source.close()


class OnCluster(Protocol):
    @property
    def cluster(self) -> str: ...


G = TypeVar("G", bound=OnCluster)
GroupKey = tuple[str, str]  # (cluster, group)


def group_key(labels: dict[str, str]) -> GroupKey:
    return labels.get("cluster", ""), labels.get("group", "")


def by_group(samples: Iterable[InstantSample]) -> dict[GroupKey, int]:
    return {group_key(s.labels): int(s.value) for s in samples}


def group_rows(samples: Iterable[InstantSample], make: Callable[[dict[str, str], GroupKey], G]) -> list[tuple[str, G]]:
    """One (tenant label, group) row per (cluster, group) of ``samples``, sorted; ``make`` builds the group."""
    seen = {group_key(s.labels): s.labels for s in samples}
    return [(seen[k].get("tenant", ""), make(seen[k], k)) for k in sorted(seen)]


def tenant_rows(tenant: str, clusters: Iterable[str], rows: list[tuple[str, G]] | None) -> list[G] | None:
    """Pure: ``tenant``'s groups from a board's (tenant label, group) rows, on its own clusters only; None when
    unknown. A group with another tenant's label, or the tenant's label on a cluster it is not on, is never its."""
    if rows is None:
        return None
    own = set(clusters)
    return [g for name, g in rows if name == tenant and g.cluster in own]


class GroupBoard(Board[list[tuple[str, G]]]):
    """A board of one kind of group: ``queries`` gives the listing (one sample per group, with its tenant label), the
    lag and the members, by (cluster, group); ``make`` builds a group from its listing's labels, lag and members
    (None where that query has no sample). ``rows``: every tenant's groups of every cluster, sorted."""

    WHAT = "groups"

    def queries(self) -> tuple[str, str, str]:
        raise NotImplementedError

    def make(self, labels: dict[str, str], key: GroupKey, lag: int | None, members: int | None) -> G:
        raise NotImplementedError

    def rows(self, config: Config, now: datetime) -> list[tuple[str, G]] | None:
        return self._memo.get(None, lambda: self._ask(config, now))

    def remembered(self) -> tuple[bool, list[tuple[str, G]] | None]:
        """``rows`` if remembered, without asking (``Remembered.peek``)."""
        return self._memo.peek(None)

    def _ask(self, config: Config, now: datetime) -> list[tuple[str, G]] | None:
        answers = self._ask_all(config, now, self.WHAT, *self.queries())
        if answers is None:
            return None
        listed, lag, members = answers
        lag_of, members_of = by_group(lag), by_group(members)
        return group_rows(listed, lambda labels, k: self.make(labels, k, lag_of.get(k), members_of.get(k)))
