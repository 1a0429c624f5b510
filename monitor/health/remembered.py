"""``Remembered``: one answer asked of Prometheus at most once per ``ttl``, for the parts of the health answers read
from Prometheus (``monitor.health.slo``, ``monitor.health.share_groups``). A failure (the asker returns None) is
remembered as long as an answer would be, so a dead Prometheus is asked once per ``ttl``, not once per request."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

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
