"""The alert engine's lease (name ``alerts``). The lease itself is generic and lives in ``monitor.core.lease``, below
``collectors``, whose shards hold one of their own (issue 31, item 4)."""

from monitor.core.lease import (
    ALERTS,
    STANDBY_POLLS_PER_INTERVAL,
    TTL_INTERVALS,
    Deposed,
    Lease,
    LeaseDecision,
    LeaseRow,
    decide,
)

__all__ = [
    "ALERTS",
    "STANDBY_POLLS_PER_INTERVAL",
    "TTL_INTERVALS",
    "Deposed",
    "Lease",
    "LeaseDecision",
    "LeaseRow",
    "decide",
]
