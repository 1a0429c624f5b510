"""Per-token rate limit: a token bucket per key, pure apart from the lock. Time is a parameter."""

from __future__ import annotations

import threading


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
