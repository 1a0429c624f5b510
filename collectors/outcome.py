"""Turning one collection attempt into a ``TargetResult``: the per-target cap, and failures classified by reason.

Partial-failure policy (every collector): an error of the target itself (timeout, refused, malformed answer, a
library error) becomes ``TargetStatus.FAILED`` with a reason and a message, logged once at WARNING without
secrets; the other targets are unaffected. Only programming errors propagate, and the service still contains them
per target (logged with a traceback, reported as reason ``error``).
"""

from __future__ import annotations

from collections.abc import Sequence

from collectors.types import FailureReason, Sample, Target, TargetResult, TargetStatus
from monitor.core.errors import (
    TargetAuthFailed,
    TargetForbidden,
    TargetTimeout,
    TargetUnreachable,
    TransportError,
)


def succeeded(target: Target, samples: Sequence[Sample], *, started_at: float, duration: float,
              max_series: int) -> TargetResult:
    """OK, or NO_DATA when the target answered with nothing; samples beyond ``max_series`` are dropped (counted)."""
    kept = tuple(samples[:max_series])
    return TargetResult(
        target, TargetStatus.OK if kept else TargetStatus.NO_DATA, kept, started_at, duration,
        series_dropped=max(0, len(samples) - max_series),
    )


def reason_of(exc: BaseException) -> FailureReason:
    if isinstance(exc, TargetAuthFailed):
        return FailureReason.AUTHENTICATION
    if isinstance(exc, TargetForbidden):
        return FailureReason.AUTHORIZATION
    if isinstance(exc, TargetTimeout):
        return FailureReason.TIMEOUT
    if isinstance(exc, TargetUnreachable):
        return FailureReason.UNREACHABLE
    if isinstance(exc, TransportError):
        return FailureReason.MALFORMED
    return FailureReason.ERROR


def failed(target: Target, exc: BaseException, *, started_at: float, duration: float) -> TargetResult:
    return TargetResult(target, TargetStatus.FAILED, (), started_at, duration, reason_of(exc), str(exc)[:300])
