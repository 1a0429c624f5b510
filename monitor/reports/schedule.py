"""The weekly report on a schedule inside ``serve``: ``config.reports.schedule`` is a cron expression (UTC).

Pure parts decide: ``due_slot`` (is a scheduled time due, given the last one handled, now and when serve started)
and ``week_for_slot`` (which week a slot reports). ``ReportScheduler`` is the shell, a ``serve`` Component: a thread
that ticks, runs the report as a subprocess (``kafka-health report --week W ...``: a Spark crash or an out-of-memory
kill cannot take serve down), records the outcome in a small state file and in metrics, and never runs two at once
(one at a time per process, and an exclusive lock file in the lake across processes sharing it).

Once across replicas (issue 31): given the store, each slot is claimed there (``monitor.core.claims``, job
``report``) before it runs, so two or more ``serve`` processes on one store run it once, whoever looks first; the
runner renews its claim every tick, and if it dies its claim expires (``CLAIM_TICKS`` ticks, on the database's
clock) and another replica runs the slot again. A runner whose claim was taken over (it froze, or lost the store for
that long) stops its report. The store's newest claimed slot is the last slot handled for every replica; the state
file stays the local record of outcomes.

Catch-up: the state file (and the store) remember the last slot handled. After downtime the latest slot that passed
is run once, however many were missed (each report covers its own week, and the week before is re-readable by hand with
``kafka-health report --week``). On a first start (no state) nothing runs until the first slot after the start.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from croniter import croniter
from prometheus_client import CollectorRegistry, Counter, Gauge

from monitor.core import claims
from monitor.core.errors import StoreError
from monitor.core.store import Store
from monitor.core.times import utc_now
from monitor.reports.extract import week_name

log = logging.getLogger(__name__)
RUN_TIMEOUT_SECONDS = 6 * 3600  # a report that runs longer is stuck: killed and counted as failed
STATE_FILE = "reports/_schedule/state.json"
LOCK_FILE = "reports/_schedule/lock"
RUN_LOG = "reports/_schedule/last-run.log"
JOB = "report"  # its claims in the store (monitor.core.claims)
CLAIM_TICKS = 4  # a claim not renewed for 4 ticks is a dead runner's: another replica takes the slot over
MAX_TICK_SECONDS = 15.0
REAP_POLL_SECONDS = 0.5  # how often a running report is looked at between ticks (a poll(): no cost)


# ---------------------------------------------------------------------------------------------------------------
# Pure decisions


def latest_slot(cron: str, now: datetime) -> datetime:
    """The latest scheduled time at or before ``now`` (UTC)."""
    t = now.astimezone(timezone.utc)
    nxt = croniter(cron, t - timedelta(seconds=1)).get_next(datetime)
    return nxt if nxt <= t else croniter(cron, t).get_prev(datetime)


def due_slot(cron: str, *, now: datetime, last_slot: datetime | None, started_at: datetime) -> datetime | None:
    """The slot to run now, or None. One run per slot; after downtime only the latest missed slot runs (once).

    Without a previous slot (first start) only slots from ``started_at`` on count, so starting serve does not
    fire at once a report that cron would have run hours ago.
    """
    slot = latest_slot(cron, now)
    floor = last_slot if last_slot is not None else started_at - timedelta(microseconds=1)
    return slot if slot > floor else None


def tick_seconds_for(cron: str, now: datetime) -> float:
    """How often the scheduler looks: every 15 s, or four times between two slots of a denser schedule."""
    it = croniter(cron, now)
    first, second = it.get_next(datetime), it.get_next(datetime)
    return max(0.25, min(MAX_TICK_SECONDS, (second - first).total_seconds() / 4))


def week_for_slot(slot: datetime) -> str:
    """The last complete ISO week before the slot (a Monday 02:00 run reports the week that just ended)."""
    d: date = slot.astimezone(timezone.utc).date()
    return week_name(d - timedelta(days=d.weekday() + 7))


@dataclass(frozen=True)
class ScheduleState:
    """What the state file holds. Times are ISO strings (UTC)."""

    last_slot: str | None = None  # the slot last handled (run, whatever the outcome)
    last_week: str | None = None
    last_result: str | None = None  # success | failure
    last_success: str | None = None
    last_failure: str | None = None
    last_message: str | None = None


def read_state(path: Path) -> ScheduleState:
    try:
        return ScheduleState(**json.loads(path.read_text()))
    except FileNotFoundError:
        return ScheduleState()
    except (ValueError, TypeError) as exc:
        log.warning("report schedule state %s unreadable (%s): starting afresh", path, exc)
        return ScheduleState()


def write_state(path: Path, state: ScheduleState) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=1))
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------------------------
# The shell


class ReportMetrics:
    def __init__(self, registry: CollectorRegistry):
        self.last_success = Gauge(
            "kafka_health_report_last_success_timestamp_seconds",
            "When the last scheduled weekly report succeeded (Unix time; 0 = never)",
            registry=registry,
        )
        self.last_failure = Gauge(
            "kafka_health_report_last_failure_timestamp_seconds",
            "When the last scheduled weekly report failed (Unix time; 0 = never)",
            registry=registry,
        )
        self.duration = Gauge(
            "kafka_health_report_last_duration_seconds",
            "Wall time of the last scheduled weekly report run",
            registry=registry,
        )
        self.running = Gauge("kafka_health_report_running", "1 while a scheduled weekly report runs", registry=registry)
        self.runs = Counter(
            "kafka_health_report_runs",
            "Scheduled weekly report runs by result (success, failure; skipped: another process runs or ran the "
            "slot; deposed: stopped here because another process took the slot over)",
            ["result"],
            registry=registry,
        )


def _epoch(iso: str | None) -> float:
    return datetime.fromisoformat(iso).timestamp() if iso else 0.0


class ReportScheduler:
    """``serve`` Component running ``command + ["--week", W]`` at each slot of ``cron``.

    ``clock`` and ``popen`` are parameters (tests drive them); ``tick_seconds`` bounds how late a slot starts
    (default ``tick_seconds_for(cron)``). With ``store``, slots are claimed there (once across replicas).
    """

    name = "report-scheduler"

    def __init__(
        self,
        cron: str,
        *,
        lake: Path,
        command: Sequence[str],
        registry: CollectorRegistry,
        clock: Callable[[], datetime] = utc_now,
        popen: Callable[..., subprocess.Popen] = subprocess.Popen,
        tick_seconds: float | None = None,
        store: Store | None = None,
        holder: str | None = None,
    ):
        self.cron = cron
        self.lake = Path(lake)
        self.command = list(command)
        self.metrics = ReportMetrics(registry)
        self._clock, self._popen = clock, popen
        self._tick = tick_seconds if tick_seconds is not None else tick_seconds_for(cron, clock())
        self.store, self.holder = store, holder or claims.holder_id()
        self._claim_ttl = timedelta(seconds=CLAIM_TICKS * self._tick)
        self._claim: claims.Claim | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen | None = None
        self._run: tuple[datetime, str, float, object] | None = None  # slot, week, started (monotonic), lock file
        self._started_at = clock()
        state = read_state(self.lake / STATE_FILE)
        stored = self._stored_outcomes()  # what any replica ran
        self.metrics.last_success.set(max(_epoch(state.last_success), stored.get(claims.SUCCESS, 0.0)))
        self.metrics.last_failure.set(max(_epoch(state.last_failure), stored.get(claims.FAILURE, 0.0)))

    def _stored_outcomes(self) -> dict[str, float]:
        """When the last run of any replica succeeded and failed (Unix time), from the store's claims."""
        if self.store is None:
            return {}
        out = {}
        try:
            with self.store.session() as s:
                for result in (claims.SUCCESS, claims.FAILURE):
                    row = claims.last_finished(db_session=s, job=JOB, result=result)
                    if row is not None and row.finished_at is not None:
                        out[result] = row.finished_at.timestamp()
        except StoreError as exc:
            log.warning("report schedule: the store's record of runs is unreadable for now: %s", exc)
        return out

    # Component
    def start(self) -> None:
        self._started_at = self._clock()
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()
        log.info("weekly report scheduled at %r (UTC)", self.cron)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._proc is not None and self._proc.poll() is None:
            log.warning("stopping: the running weekly report (pid %d) is terminated", self._proc.pid)
            self._proc.terminate()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
            self._finish(self._proc.wait())

    def ready(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception:  # the scheduler must outlive any one bad tick; the next tick retries
                log.exception("report scheduler tick failed")
            self._pause()

    def _pause(self) -> None:
        """Until the next tick, or until the running report ends: its result is in the state file and /metrics as
        soon as it is known, not up to a tick (15 s) later."""
        deadline = time.monotonic() + self._tick
        while not self._stop.wait(min(REAP_POLL_SECONDS, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline or (self._proc is not None and self._proc.poll() is not None):
                return

    def tick(self) -> None:
        """One step: reap a finished run, or start a due one. Never two at once."""
        if self._proc is not None:
            rc = self._proc.poll()
            if rc is None and time.monotonic() - self._run[2] > RUN_TIMEOUT_SECONDS:
                log.error("weekly report %s ran over %ds: killed", self._run[1], RUN_TIMEOUT_SECONDS)
                self._proc.kill()
                rc = self._proc.wait()
            if rc is None and not self._renew():
                log.error(
                    "weekly report %s: another process took its slot over (this one froze or lost the store for "
                    "%ds): stopped here",
                    self._run[1],
                    self._claim_ttl.total_seconds(),
                )
                self._proc.kill()
                self._finish(self._proc.wait(), deposed=True)
                return
            if rc is not None:
                self._finish(rc)
            return
        state_path = self.lake / STATE_FILE
        state = read_state(state_path)
        last = datetime.fromisoformat(state.last_slot) if state.last_slot else None
        taken = self._stored_slot()
        if taken is not None and (last is None or taken[0] > last):
            last = taken[0]
        slot = due_slot(self.cron, now=self._clock(), last_slot=last, started_at=self._started_at)
        orphaned = slot is None and taken is not None and taken[1]
        if orphaned and taken is not None:
            slot = taken[0]  # another process's run: run it again if its claim has expired (it stopped renewing)
        if slot is None:
            return
        week = week_for_slot(slot)
        if self.store is not None:
            try:
                self._claim = self._claim_slot(slot)
            except StoreError as exc:  # not claimed, not run, not recorded as handled: the next tick tries again
                log.warning("weekly report %s: cannot claim slot %s in the store: %s", week, slot.isoformat(), exc)
                return
            if self._claim is None:
                if not orphaned:
                    log.info("weekly report %s: another process runs or ran slot %s", week, slot.isoformat())
                    self.metrics.runs.labels("skipped").inc()
                    write_state(state_path, ScheduleState(**{**asdict(state), "last_slot": slot.isoformat()}))
                return
            if self._claim.attempt > 1:
                log.warning(
                    "weekly report %s: the process that claimed slot %s stopped renewing its claim; run again here "
                    "(attempt %d)",
                    week,
                    slot.isoformat(),
                    self._claim.attempt,
                )
        lock = self._lock()
        if lock is None:
            log.info("weekly report %s: another process holds %s, not run here", week, self.lake / LOCK_FILE)
            self.metrics.runs.labels("skipped").inc()
            write_state(state_path, ScheduleState(**{**asdict(state), "last_slot": slot.isoformat()}))
            self._end_claim(claims.FAILURE, f"another process held {LOCK_FILE}")
            return
        log_path = self.lake / RUN_LOG
        log_path.parent.mkdir(parents=True, exist_ok=True)
        argv = [*self.command, "--week", week]
        log.info("weekly report %s (slot %s) starting: %s", week, slot.isoformat(), " ".join(argv))
        with open(log_path, "wb") as out:
            self._proc = self._popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=_child_env()
            )
        self._run = (slot, week, time.monotonic(), lock)
        self.metrics.running.set(1)

    def _stored_slot(self) -> tuple[datetime, bool] | None:
        """The newest slot any replica claimed, and whether it is still marked running by another process (maybe
        dead). None without a store, or when it cannot be read (then the state file alone decides, and the claim
        refuses a slot that ran)."""
        if self.store is None:
            return None
        try:
            with self.store.session() as s:
                row = claims.latest(db_session=s, job=JOB)
        except StoreError as exc:
            log.warning("report schedule: cannot read the store's claims: %s", exc)
            return None
        if row is None:
            return None
        return datetime.fromisoformat(row.slot), row.state == claims.RUNNING and row.holder != self.holder

    def _claim_slot(self, slot: datetime) -> claims.Claim | None:
        """Mine, or None (another process has it). Raises StoreError when the store does not answer."""
        assert self.store is not None
        with self.store.session() as s:
            return claims.claim(
                db_session=s,
                job=JOB,
                slot=slot.isoformat(),
                holder=self.holder,
                ttl=self._claim_ttl,
                now=claims.db_now(s, self._clock),
            )

    def _renew(self) -> bool:
        """False only when the store says the claim is no longer ours; a store error keeps the run going (if the
        outage outlasts the claim, the renewal after it says so)."""
        if self.store is None or self._claim is None:
            return True
        try:
            with self.store.session() as s:
                return claims.renew(
                    db_session=s, claim=self._claim, ttl=self._claim_ttl, now=claims.db_now(s, self._clock)
                )
        except StoreError as exc:
            log.warning("weekly report: cannot renew its claim: %s", exc)
            return True

    def _end_claim(self, result: str, message: str) -> None:
        c, self._claim = self._claim, None
        if self.store is None or c is None:
            return
        try:
            with self.store.session() as s:
                mine = claims.finish(
                    db_session=s, claim=c, result=result, message=message, now=claims.db_now(s, self._clock)
                )
        except StoreError as exc:  # the claim expires; another replica runs the slot again
            log.warning("weekly report: cannot record its end in the store: %s", exc)
            return
        if not mine:
            log.warning("weekly report slot %s: another process took it over before this run ended", c.slot)

    def _lock(self):
        path = self.lake / LOCK_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path, "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            return None
        return f

    def _finish(self, rc: int, *, deposed: bool = False) -> None:
        slot, week, started, lock = self._run
        took = time.monotonic() - started
        now = self._clock().isoformat()
        state_path = self.lake / STATE_FILE
        prev = read_state(state_path)
        if deposed:
            msg = f"weekly report {week} stopped after {took:.0f}s: another process took slot {slot.isoformat()} over"
            new = ScheduleState(slot.isoformat(), week, "failure", prev.last_success, now, msg)
            self.metrics.runs.labels("deposed").inc()
            self._claim = None
        elif rc == 0:
            msg = f"weekly report {week} done in {took:.0f}s"
            log.info(msg)
            new = ScheduleState(slot.isoformat(), week, "success", now, prev.last_failure, msg)
            self.metrics.last_success.set(_epoch(now))
            self.metrics.runs.labels("success").inc()
        else:
            tail = _tail(self.lake / RUN_LOG)
            msg = f"weekly report {week} failed (exit {rc}) after {took:.0f}s; log {self.lake / RUN_LOG}: {tail}"
            log.error(msg)
            new = ScheduleState(slot.isoformat(), week, "failure", prev.last_success, now, msg)
            self.metrics.last_failure.set(_epoch(now))
            self.metrics.runs.labels("failure").inc()
        if not deposed:
            self._end_claim(claims.SUCCESS if rc == 0 else claims.FAILURE, msg)
        write_state(state_path, new)
        self.metrics.duration.set(took)
        self.metrics.running.set(0)
        lock.close()  # releases the flock
        self._proc, self._run = None, None


def _tail(path: Path, lines: int = 3) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def report_command(config_args: Sequence[str]) -> list[str]:
    """The report command serve runs: this interpreter and (``_child_env``) this code, so serve and its reports
    match."""
    return [sys.executable, "-m", "monitor.cli", "report", *config_args]


def _child_env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}
