"""Rate limits as token buckets, pure apart from the lock; time is a parameter.

- ``TokenBuckets``: requests per authenticated token (``monitor.api.auth``). Keys are token ids that passed
  authentication, so the table is bounded by the live tokens.
- ``FailureLimit``: failed authentications per client address and per presented token id. Only failures are charged,
  so a client whose token works never meets it. Its keys come from unauthenticated callers (any address, any made-up
  id), so its table is bounded: full buckets carry no information and are dropped first.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable


class TokenBuckets:
    """``rate`` requests per second sustained, ``burst`` at once. ``take`` answers 0.0 (allowed) or seconds to wait.

    Memory is one small entry per key; keys are authenticated token ids only, so an attacker cannot grow it.
    """

    def __init__(self, *, rate: float, burst: int):
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")
        self.rate, self.burst = rate, float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, key: str, *, now: float) -> float:
        with self._lock:
            tokens, at = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + max(0.0, now - at) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate


class FailureLimit:
    """At most ``burst`` failures at once per key, refilled at ``rate`` per second.

    ``wait(keys, now)`` is asked before the store is: seconds until every key may fail again (0.0: go ahead), without
    charging anything. ``fail(keys, now)`` charges one failure to each key. A blocked caller is answered without a
    store lookup, so a flood of wrong tokens costs the store at most ``burst`` lookups per key and ``rate`` per
    second after that.

    At most ``max_keys`` keys are kept: past that, buckets that have refilled are forgotten (they hold no debt), then
    the least recently charged ones. Forgetting can only ever let a caller try again early, never block one.
    """

    def __init__(self, *, rate: float, burst: int, max_keys: int = 20_000):
        if rate <= 0 or burst < 1 or max_keys < 1:
            raise ValueError("rate must be > 0, burst >= 1 and max_keys >= 1")
        self.rate, self.burst, self.max_keys = rate, float(burst), max_keys
        self._debt: dict[str, tuple[float, float]] = {}  # key -> (failures not yet refilled, at); oldest first
        self._lock = threading.Lock()

    def _owed(self, key: str, now: float) -> float:
        debt, at = self._debt.get(key, (0.0, now))
        return max(0.0, debt - max(0.0, now - at) * self.rate)

    def wait(self, keys: Iterable[str], *, now: float) -> float:
        with self._lock:
            # Blocked while one more failure would exceed the burst: wait until a whole failure has refilled.
            owed = max((self._owed(k, now) for k in keys), default=0.0)
            return max(0.0, (owed + 1.0 - self.burst) / self.rate)

    def fail(self, keys: Iterable[str], *, now: float) -> None:
        with self._lock:
            for k in keys:
                owed = self._owed(k, now)
                self._debt.pop(k, None)  # re-inserted last: the dict stays in order of the latest failure
                self._debt[k] = (min(owed + 1.0, self.burst + 1.0), now)
            if len(self._debt) > self.max_keys:
                self._prune(now)

    def _prune(self, now: float) -> None:
        self._debt = {k: v for k, v in self._debt.items() if self._owed(k, now) > 0}
        excess = len(self._debt) - self.max_keys
        for k in list(self._debt)[: max(0, excess)]:
            del self._debt[k]

    def __len__(self) -> int:
        return len(self._debt)
