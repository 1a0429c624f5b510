"""The weekly report on a schedule inside ``serve``: ``config.reports.schedule`` is a cron expression (UTC).

Pure parts decide: ``due_slot`` (is a scheduled time due, given the last one handled, now and when serve started)
and ``week_for_slot`` (which week a slot reports). ``ReportScheduler`` is the shell, a ``serve`` Component: a thread
that ticks, runs the report as a subprocess (``kafka-health report --week W ...``: a Spark crash or an out-of-memory
kill cannot take serve down), records the outcome in a small state file and in metrics, and never runs two at once
(one at a time per process, and an exclusive lock file in the lake across processes sharing it).

Catch-up: the state file remembers the last slot handled. After downtime the latest slot that passed is run once,
however many were missed (each report covers its own week, and the week before is re-readable by hand with
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

from monitor.core.times import utc_now
from monitor.reports.extract import week_name

log = logging.getLogger(__name__)
RUN_TIMEOUT_SECONDS = 6 * 3600  # a report that runs longer is stuck: killed and counted as failed
STATE_FILE = "reports/_schedule/state.json"
LOCK_FILE = "reports/_schedule/lock"
RUN_LOG = "reports/_schedule/last-run.log"


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
            "Scheduled weekly report runs by result (success, failure, skipped: another process held the lock)",
            ["result"],
            registry=registry,
        )


def _epoch(iso: str | None) -> float:
    return datetime.fromisoformat(iso).timestamp() if iso else 0.0


class ReportScheduler:
    """``serve`` Component running ``command + ["--week", W]`` at each slot of ``cron``.

    ``clock`` and ``popen`` are parameters (tests drive them); ``tick_seconds`` bounds how late a slot starts.
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
        tick_seconds: float = 15.0,
    ):
        self.cron = cron
        self.lake = Path(lake)
        self.command = list(command)
        self.metrics = ReportMetrics(registry)
        self._clock, self._popen, self._tick = clock, popen, tick_seconds
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen | None = None
        self._run: tuple[datetime, str, float, object] | None = None  # slot, week, started (monotonic), lock file
        self._started_at = clock()
        state = read_state(self.lake / STATE_FILE)
        self.metrics.last_success.set(_epoch(state.last_success))
        self.metrics.last_failure.set(_epoch(state.last_failure))

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
            self._stop.wait(self._tick)

    def tick(self) -> None:
        """One step: reap a finished run, or start a due one. Never two at once."""
        if self._proc is not None:
            rc = self._proc.poll()
            if rc is None and time.monotonic() - self._run[2] > RUN_TIMEOUT_SECONDS:
                log.error("weekly report %s ran over %ds: killed", self._run[1], RUN_TIMEOUT_SECONDS)
                self._proc.kill()
                rc = self._proc.wait()
            if rc is not None:
                self._finish(rc)
            return
        state_path = self.lake / STATE_FILE
        state = read_state(state_path)
        last = datetime.fromisoformat(state.last_slot) if state.last_slot else None
        slot = due_slot(self.cron, now=self._clock(), last_slot=last, started_at=self._started_at)
        if slot is None:
            return
        week = week_for_slot(slot)
        lock = self._lock()
        if lock is None:
            log.info("weekly report %s: another process holds %s, not run here", week, self.lake / LOCK_FILE)
            self.metrics.runs.labels("skipped").inc()
            write_state(state_path, ScheduleState(**{**asdict(state), "last_slot": slot.isoformat()}))
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

    def _finish(self, rc: int) -> None:
        slot, week, started, lock = self._run
        took = time.monotonic() - started
        now = self._clock().isoformat()
        state_path = self.lake / STATE_FILE
        prev = read_state(state_path)
        if rc == 0:
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
