"""A lease in the store: which of several processes doing one job holds it; the others stand by. One row per
``name`` in ``engine_lease``: the alert engine's (``alerts``: which ``kafka-health serve --role alerts`` process
evaluates and notifies; docs/architecture.md says why not sharded) and each collector shard's
(``collector-shard-i-of-n``: which process of shard i collects and probes; ``collectors.component``, issue 31).

    decide(row, me, now, ttl)   pure: hold on (renew), take over (epoch + 1), or stand by
    Lease.acquire()             one short transaction on the lease row, on the DATABASE's clock (``now()``), locked
                                ``FOR UPDATE`` so two standbys never both take over
    Lease.fence(session)        the first statement of every transaction that writes alert state or outbox rows:
                                ``UPDATE engine_lease SET expires_at = now() + ttl WHERE ... epoch = :mine AND
                                expires_at > now()``; no row updated -> ``Deposed``, the transaction writes nothing.
                                The row lock it takes lasts to the commit: a takeover waits for that write to end.
    Lease.check(session)        the same test without renewing or locking (the outbox's, right before each send);
                                the claiming transaction ends by itself once idle ``hold_seconds`` (a frozen sender)
    Lease.release()             a clean stop gives the lease up: the standby takes over at its next look

The epoch is the fencing token: it increases at every takeover, so an engine frozen (SIGSTOP) past its lease and woken
(SIGCONT) finds another epoch and writes nothing. No clock of any engine host is read: every time is the database's.

Assumptions: the store is PostgreSQL reached directly or through PgBouncer in transaction mode. Nothing here needs
the session to outlive a transaction (no session advisory locks, no ``SET`` outside ``SET LOCAL``), so transaction
pooling is fine. SQLite (the single-node default) is single-writer and single-engine: the lease is held trivially
(epoch 0) and nothing is written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, text
from sqlalchemy.orm import Session

from monitor.core.claims import holder_id
from monitor.core.errors import KafkaHealthError
from monitor.core.store import Store

log = logging.getLogger(__name__)

ALERTS = "alerts"
TTL_INTERVALS = 1.5  # the lease outlives 1.5 evaluation intervals without a renewal
STANDBY_POLLS_PER_INTERVAL = 4  # a standby looks 4 times per interval: takeover <= 1.75 intervals after renewal


class Deposed(KafkaHealthError):
    """This holder's epoch is no longer the lease's (or its lease expired): it must not write or notify."""


@dataclass(frozen=True)
class LeaseRow:
    holder: str
    epoch: int
    expires_at: datetime


@dataclass(frozen=True)
class LeaseDecision:
    held: bool
    epoch: int  # the lease's epoch after the decision (mine if held)
    takeover: bool = False  # held from now on under a new epoch
    write: LeaseRow | None = None  # the row to store, if it changes


def decide(row: LeaseRow | None, me: str, now: datetime, ttl: timedelta) -> LeaseDecision:
    """What ``me`` does with the lease ``row`` at the database time ``now``. A holder whose lease expired takes it
    again under a new epoch: a gap in holding is a new term, and anything it began in the old one is fenced off."""
    if row is not None and row.expires_at > now:
        if row.holder == me:
            return LeaseDecision(True, row.epoch, write=LeaseRow(me, row.epoch, now + ttl))
        return LeaseDecision(False, row.epoch)
    epoch = (row.epoch if row is not None else 0) + 1
    return LeaseDecision(True, epoch, takeover=True, write=LeaseRow(me, epoch, now + ttl))


class Lease:
    def __init__(self, store: Store, *, interval_seconds: float, name: str = ALERTS, holder: str | None = None):
        self.store = store
        self.name = name
        self.holder = holder or holder_id()
        self.ttl = timedelta(seconds=TTL_INTERVALS * interval_seconds)
        # A frozen holder's open transaction must not keep the lease row locked for ever: the server ends it.
        self._idle_ms = max(1000, int(interval_seconds * 1000))
        self.shared = store.url.get_backend_name() == "postgresql"
        self.epoch: int | None = None if self.shared else 0

    @property
    def held(self) -> bool:
        return self.epoch is not None

    def acquire(self) -> LeaseDecision:
        """Renew, take over or stand by; one transaction. Raises StoreError when the database does not answer (the
        caller then holds nothing: ``epoch`` is cleared)."""
        if not self.shared:
            return LeaseDecision(True, 0)
        self.epoch = None
        with self.store.session() as s:
            s.execute(text(f"SET LOCAL lock_timeout = {self._idle_ms}"))
            s.execute(
                text(
                    "INSERT INTO engine_lease (name, holder, epoch, expires_at) "
                    "VALUES (:n, '', 0, 'epoch') ON CONFLICT (name) DO NOTHING"
                ),
                {"n": self.name},
            )
            got = s.execute(
                text("SELECT holder, epoch, expires_at, now() FROM engine_lease WHERE name = :n FOR UPDATE"),
                {"n": self.name},
            ).one()
            d = decide(LeaseRow(got[0], got[1], got[2]), self.holder, got[3], self.ttl)
            if d.write is not None:
                s.execute(
                    text("UPDATE engine_lease SET holder = :h, epoch = :e, expires_at = now() + :ttl WHERE name = :n"),
                    {"h": d.write.holder, "e": d.write.epoch, "ttl": self.ttl, "n": self.name},
                )
        if d.takeover:
            log.warning(
                "%s: %s took the lease over: epoch %d (was held by %s)",
                self.name,
                self.holder,
                d.epoch,
                got[0] or "nobody",
            )
        self.epoch = d.epoch if d.held else None
        return d

    def fence(self, session: Session) -> None:
        """First statement of a writing transaction: renew the lease if, and only if, it is still ours."""
        if not self.shared:
            return
        if self.epoch is None:
            raise Deposed(f"{self.name}: {self.holder} holds no lease")
        session.execute(text(f"SET LOCAL idle_in_transaction_session_timeout = {self._idle_ms}"))
        result = session.execute(
            text(
                "UPDATE engine_lease SET expires_at = now() + :ttl WHERE name = :n AND holder = :h "
                "AND epoch = :e AND expires_at > now()"
            ),
            {"ttl": self.ttl, "n": self.name, "h": self.holder, "e": self.epoch},
        )
        if cast(CursorResult[Any], result).rowcount != 1:  # a textual UPDATE gives a CursorResult
            self._deposed()

    def check(self, session: Session, *, hold_seconds: float | None = None) -> None:
        """The lease is still ours (no lock, no renewal): before each send of the outbox. With ``hold_seconds``, the
        server also ends this transaction once it has been idle that long: it holds claimed outbox rows across an HTTP
        send, and an engine frozen there (SIGSTOP, a paused VM) must not keep them locked from the engine that took
        over for as long as it stays frozen."""
        if not self.shared:
            return
        if self.epoch is None:
            raise Deposed(f"{self.name}: {self.holder} holds no lease")
        if hold_seconds is not None:
            session.execute(text(f"SET LOCAL idle_in_transaction_session_timeout = {max(1, int(hold_seconds * 1000))}"))
        ok = session.execute(
            text("SELECT 1 FROM engine_lease WHERE name = :n AND holder = :h AND epoch = :e AND expires_at > now()"),
            {"n": self.name, "h": self.holder, "e": self.epoch},
        ).first()
        if ok is None:
            self._deposed()

    def release(self) -> None:
        """Give the lease up at once (a clean stop): a standby takes over at its next look, under a new epoch."""
        if not self.shared or self.epoch is None:
            return
        with self.store.session() as s:
            s.execute(
                text("UPDATE engine_lease SET expires_at = 'epoch' WHERE name = :n AND holder = :h AND epoch = :e"),
                {"n": self.name, "h": self.holder, "e": self.epoch},
            )
        self.epoch = None

    def _deposed(self) -> None:
        epoch, self.epoch = self.epoch, None
        raise Deposed(f"{self.name}: {self.holder}'s epoch {epoch} is no longer the lease's")
