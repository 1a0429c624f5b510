"""Run a scheduled job once across processes: one claim row per (job, slot) in the store (issue 31, item 3).

Several ``kafka-health serve`` replicas on one store each compute the same due slot of a job (a cron time, a day);
the one whose ``claim`` inserts the row runs it, the others skip it. The runner renews the claim while it runs; a
runner that dies (kill -9, node lost) stops renewing, its claim expires on the DATABASE's clock, and the next process
to look takes the slot over under a new ``attempt`` (the fencing token: a runner woken from a freeze finds another
attempt in the row, its ``renew`` and ``finish`` change nothing, and it stops its run).

    claim(job, slot)    INSERT ... ON CONFLICT DO NOTHING (and older expired claims become ``abandoned``); else take
                        over a running claim that expired. None: not mine
    renew(claim)        while running; False -> the claim is no longer mine (expired and taken over)
    finish(claim, ...)  success | failure, with a message; False -> no longer mine (nothing is written)
    latest(job)         the newest slot claimed by anyone: the schedule's "last slot handled", shared by every replica
    orphan(job)         the newest slot whose runner stopped renewing: to be run again

Why rows and not locks: a report runs for minutes to hours. A transaction-scoped advisory lock would keep one
transaction (and, behind PgBouncer in transaction mode, one server connection) open for the whole run, and be ended
by ``idle_in_transaction_session_timeout``; a session advisory lock is lost or leaked behind PgBouncer in transaction
mode. Every statement here is its own short transaction and no session state is kept, so transaction pooling works.
The row also records what a replica that was down needs: which slot ran, when, with what result.

Times: PostgreSQL's ``now()`` (one clock for every replica); SQLite (one machine) the caller's clock. The slot is a
name (the cron time in ISO form, a date), computed by each replica from its own clock: a skewed clock shifts when a
replica looks, not which slot it runs.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Integer, String, func, literal_column, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Mapped, Session, mapped_column
from sqlalchemy.sql.dml import UpdateBase

from monitor.core.store import Base, UtcDateTime
from monitor.core.times import utc_now

RUNNING, SUCCESS, FAILURE, ABANDONED = "running", "success", "failure", "abandoned"


class JobRun(Base):
    """One slot of a scheduled job, claimed by one process (``holder``) under ``attempt`` (1, then +1 at each
    takeover of an expired claim)."""

    __tablename__ = "job_runs"

    job: Mapped[str] = mapped_column(String(64), primary_key=True)
    slot: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(200))
    attempt: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))
    claimed_at: Mapped[datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    message: Mapped[str | None] = mapped_column(String(2000), nullable=True)


@dataclass(frozen=True)
class Claim:
    job: str
    slot: str
    holder: str
    attempt: int


def holder_id() -> str:
    """Unique per process start: two processes on one host (or a restart with the same pid) never share it."""
    return f"{socket.gethostname()[:100]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _changed(db_session: Session, statement: UpdateBase) -> bool:
    """Whether an INSERT or UPDATE changed a row: by RETURNING, as psycopg gives no rowcount for an ORM statement."""
    return db_session.execute(statement.returning(literal_column("1"))).first() is not None


def db_now(db_session: Session, clock: Callable[[], datetime] = utc_now) -> datetime:
    """The time every replica agrees on: PostgreSQL's (its transaction's start); on SQLite, ``clock``."""
    if db_session.get_bind().dialect.name == "postgresql":
        return db_session.execute(select(func.now())).scalar_one()
    return clock()


def claim(
    *, db_session: Session, job: str, slot: str, holder: str, ttl: timedelta, now: datetime | None = None
) -> Claim | None:
    """The slot for ``holder`` if nobody claimed it, or if its runner stopped renewing; else None."""
    now = now or db_now(db_session)
    dialect = db_session.get_bind().dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    values = dict(job=job, slot=slot, holder=holder, attempt=1, state=RUNNING, claimed_at=now, expires_at=now + ttl)
    # A concurrent INSERT of the same key waits for the first one's commit, then inserts nothing.
    if _changed(db_session, insert(JobRun).values(**values).on_conflict_do_nothing()):
        # An older slot whose runner died is superseded by this one (only the latest slot is run): say so, rather
        # than leave it "running" for ever.
        db_session.execute(
            update(JobRun)
            .where(JobRun.job == job, JobRun.slot < slot, JobRun.state == RUNNING, JobRun.expires_at < now)
            .values(state=ABANDONED, finished_at=now, message=f"its runner stopped renewing; slot {slot} ran instead")
        )
        return Claim(job, slot, holder, 1)
    # Two processes taking over at once: the second waits for the first's row lock, re-reads the row (now renewed,
    # not expired) and updates nothing.
    took = db_session.execute(
        update(JobRun)
        .where(JobRun.job == job, JobRun.slot == slot, JobRun.state == RUNNING, JobRun.expires_at < now)
        .values(holder=holder, attempt=JobRun.attempt + 1, claimed_at=now, expires_at=now + ttl)
        .returning(JobRun.attempt)
    ).first()
    return Claim(job, slot, holder, took[0]) if took is not None else None


def _mine(c: Claim) -> tuple[ColumnElement[bool], ...]:
    return (
        JobRun.job == c.job,
        JobRun.slot == c.slot,
        JobRun.holder == c.holder,
        JobRun.attempt == c.attempt,
        JobRun.state == RUNNING,
    )


def renew(*, db_session: Session, claim: Claim, ttl: timedelta, now: datetime | None = None) -> bool:
    now = now or db_now(db_session)
    return _changed(db_session, update(JobRun).where(*_mine(claim)).values(expires_at=now + ttl))


def finish(*, db_session: Session, claim: Claim, result: str, message: str = "", now: datetime | None = None) -> bool:
    now = now or db_now(db_session)
    done = update(JobRun).where(*_mine(claim)).values(state=result, finished_at=now, message=message[:2000])
    return _changed(db_session, done)


def latest(*, db_session: Session, job: str) -> JobRun | None:
    """The newest slot claimed (slots of one job must sort as their times do: ISO strings)."""
    return db_session.scalars(select(JobRun).where(JobRun.job == job).order_by(JobRun.slot.desc()).limit(1)).first()


def orphan(*, db_session: Session, job: str, now: datetime | None = None) -> str | None:
    """The newest slot still marked running whose claim expired: its runner died or froze."""
    now = now or db_now(db_session)
    return db_session.scalars(
        select(JobRun.slot)
        .where(JobRun.job == job, JobRun.state == RUNNING, JobRun.expires_at < now)
        .order_by(JobRun.slot.desc())
        .limit(1)
    ).first()


def last_finished(*, db_session: Session, job: str, result: str) -> JobRun | None:
    return db_session.scalars(
        select(JobRun).where(JobRun.job == job, JobRun.state == result).order_by(JobRun.finished_at.desc()).limit(1)
    ).first()
