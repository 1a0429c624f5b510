"""The report scheduler's decisions (pure) and its shell driven by an injected clock and a scripted process."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import select

from monitor.core import claims
from monitor.core.config import ReportSettings
from monitor.core.store import Store
from monitor.reports.schedule import (
    CLAIM_TICKS,
    JOB,
    STATE_FILE,
    ReportScheduler,
    due_slot,
    latest_slot,
    read_state,
    week_for_slot,
)
from monitor.schema import create_all
from tests.conftest import wait_until

pytestmark = pytest.mark.unit
UTC = timezone.utc
CRON = "0 2 * * 1"  # Mondays 02:00 UTC
MON = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)  # a slot
STARTED = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def t(days: float = 0, minutes: float = 0) -> datetime:
    return MON + timedelta(days=days, minutes=minutes)


# (case, now, last slot handled, expected slot to run)
CASES = [
    (1, t(minutes=-1), None, None),  # first start, slot not reached yet
    (2, t(), None, MON),  # the slot itself is due
    (3, t(minutes=5), None, MON),  # a tick late: still due
    (4, t(minutes=5), MON, None),  # already handled
    (5, t(days=7, minutes=1), MON, MON + timedelta(days=7)),  # next week's slot
    (6, t(days=21, minutes=30), MON, MON + timedelta(days=21)),  # down for three slots: only the latest, once
    (7, t(days=21, minutes=31), MON + timedelta(days=21), None),  # ... and not again
    (8, t(days=-3), None, None),  # first start after the previous slot: nothing is fired at start
]


@pytest.mark.parametrize("case, now, last, expected", CASES)
def test_due_slot(case, now, last, expected):
    assert due_slot(CRON, now=now, last_slot=last, started_at=STARTED) == expected, case


def test_latest_slot_on_and_between_slots_and_the_week_a_slot_reports():
    assert latest_slot(CRON, MON) == MON
    assert latest_slot(CRON, MON - timedelta(seconds=1)) == MON - timedelta(days=7)
    assert week_for_slot(MON) == "2026-W47"  # the week that ended the day before
    assert week_for_slot(datetime(2026, 11, 25, 9, tzinfo=UTC)) == "2026-W47"  # a Wednesday slot: last full week


def test_config_rejects_a_bad_cron_expression():
    assert ReportSettings(schedule="0 2 * * 1").schedule == "0 2 * * 1"
    with pytest.raises(ValueError, match="not a cron expression"):
        ReportSettings(schedule="every monday")


class Proc:
    """A scripted child process: finishes with ``rc`` once ``finish()`` is called."""

    def __init__(self, argv, rc):
        self.argv, self.rc, self.done, self.pid = argv, rc, False, 4242

    def poll(self):
        return self.rc if self.done else None

    def wait(self, timeout=None):
        return self.rc

    def terminate(self):
        self.done = True

    kill = terminate


class Launcher:
    def __init__(self, results):
        self.results, self.procs = list(results), []

    def __call__(self, argv, **kwargs):
        assert kwargs["stdin"] is subprocess.DEVNULL
        kwargs["stdout"].write(b"[1/5] extract\nboom: spark died\n")
        p = Proc(argv, self.results.pop(0))
        self.procs.append(p)
        return p


def metric(registry, name, labels=None):
    return registry.get_sample_value(name, labels or {})


def test_the_running_scheduler_records_a_finished_run_before_its_next_tick(tmp_path):
    """Its thread reaps the run when the process ends, not at the next tick (an hour away here): the state file and
    /metrics say "success" as soon as it is known."""
    registry = CollectorRegistry()
    launch = Launcher([0])
    s = ReportScheduler(
        CRON,
        lake=tmp_path,
        command=["kh"],
        registry=registry,
        clock=lambda: t(minutes=1),
        popen=launch,
        tick_seconds=3600,
    )
    state = tmp_path / STATE_FILE  # serve was down over the slot: it runs at the first tick
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"last_slot": (MON - timedelta(days=7)).isoformat()}))
    s.start()
    try:
        wait_until(lambda: launch.procs, timeout=30, interval=0.05, what="the due run to start")
        launch.procs[0].done = True
        wait_until(lambda: read_state(state).last_result, timeout=30, interval=0.05, what="the run reaped")
        assert metric(registry, "kafka_health_report_runs_total", {"result": "success"}) == 1
    finally:
        s.stop()


def test_scheduler_runs_once_per_slot_never_twice_at_once_and_records_outcomes(tmp_path):
    now = [STARTED]
    registry = CollectorRegistry()
    launch = Launcher([1, 0])
    s = ReportScheduler(
        CRON,
        lake=tmp_path,
        command=["kh", "report", "--config", "c.yaml"],
        registry=registry,
        clock=lambda: now[0],
        popen=launch,
    )
    s._started_at = STARTED
    s.tick()
    assert launch.procs == []  # not due
    now[0] = t(minutes=1)
    s.tick()
    assert launch.procs[0].argv == ["kh", "report", "--config", "c.yaml", "--week", "2026-W47"]
    assert metric(registry, "kafka_health_report_running") == 1
    now[0] = t(days=7, minutes=1)  # the next slot comes while the first run still runs: no second run
    s.tick()
    assert len(launch.procs) == 1
    launch.procs[0].done = True
    s.tick()  # reaps the failed run
    state = read_state(tmp_path / STATE_FILE)
    assert state.last_result == "failure" and state.last_week == "2026-W47" and "spark died" in state.last_message
    assert metric(registry, "kafka_health_report_runs_total", {"result": "failure"}) == 1
    assert metric(registry, "kafka_health_report_running") == 0
    s.tick()  # the slot that passed meanwhile runs now
    assert launch.procs[1].argv[-1] == "2026-W48"
    launch.procs[1].done = True
    s.tick()
    state = read_state(tmp_path / STATE_FILE)
    assert state.last_result == "success" and state.last_slot == (MON + timedelta(days=7)).isoformat()
    assert metric(registry, "kafka_health_report_last_success_timestamp_seconds") == now[0].timestamp()
    s.tick()
    assert len(launch.procs) == 2


def test_after_downtime_a_new_process_catches_up_once_and_a_held_lock_skips(tmp_path):
    now = [t(minutes=1)]
    first = Launcher([0])
    s = ReportScheduler(
        CRON, lake=tmp_path, command=["kh"], registry=CollectorRegistry(), clock=lambda: now[0], popen=first
    )
    s._started_at = STARTED
    s.tick()
    first.procs[0].done = True
    s.tick()
    # serve is down for three weeks; a new process with the same lake catches up the latest slot, once
    now[0] = t(days=21, minutes=40)
    again = Launcher([0])
    registry = CollectorRegistry()
    s2 = ReportScheduler(CRON, lake=tmp_path, command=["kh"], registry=registry, clock=lambda: now[0], popen=again)
    assert metric(registry, "kafka_health_report_last_success_timestamp_seconds") == t(minutes=1).timestamp()
    s2.tick()
    s2.tick()
    assert [p.argv[-1] for p in again.procs] == ["2026-W50"]
    s2.stop()  # stopping serve terminates the running report and records it
    assert read_state(tmp_path / STATE_FILE).last_week == "2026-W50"
    assert metric(registry, "kafka_health_report_running") == 0
    # another process holding the lake's lock: this one skips the slot instead of running it twice
    now[0] = t(days=28, minutes=1)
    other = ReportScheduler(
        CRON, lake=tmp_path, command=["kh"], registry=CollectorRegistry(), clock=lambda: now[0], popen=Launcher([0])
    )
    holder = other._lock()
    third = Launcher([0])
    registry3 = CollectorRegistry()
    s3 = ReportScheduler(CRON, lake=tmp_path, command=["kh"], registry=registry3, clock=lambda: now[0], popen=third)
    s3.tick()
    assert third.procs == [] and metric(registry3, "kafka_health_report_runs_total", {"result": "skipped"}) == 1
    holder.close()


def test_two_replicas_on_one_store_run_a_slot_once_and_a_dead_runners_slot_is_taken_over(tmp_path):
    """Issue 31: two schedulers (two serve replicas, each its own lake) on one store. The store's claim decides who
    runs a slot; the one that did not run it skips it; a runner that stops renewing (died, froze) loses the slot
    after CLAIM_TICKS ticks to the other, and once awake stops its report instead of finishing it a second time."""
    store = Store(f"sqlite:///{tmp_path / 'kh.db'}")
    create_all(store)
    now = [STARTED]
    launches = {name: Launcher([0, 0]) for name in ("a", "b")}
    registries = {name: CollectorRegistry() for name in ("a", "b")}
    a, b = (
        ReportScheduler(
            CRON,
            lake=tmp_path / name,
            command=["kh"],
            registry=registries[name],
            clock=lambda: now[0],
            popen=launches[name],
            store=store,
        )
        for name in ("a", "b")
    )
    assert a._tick == 15.0  # weekly: the longest tick
    for s in (a, b):
        s._started_at = STARTED
    now[0] = t(minutes=1)
    a.tick()
    b.tick()
    # b read a's claim as the last slot handled; a replica that computed the slot before a's claim is refused it
    assert [p.argv[-1] for p in launches["a"].procs] == ["2026-W47"] and launches["b"].procs == []
    with store.session() as s:
        mine = dict(job=JOB, slot=MON.isoformat(), ttl=timedelta(minutes=1), now=now[0])
        assert claims.claim(db_session=s, holder=b.holder, **mine) is None
    now[0] = t(minutes=2)
    b.tick()
    assert launches["b"].procs == []
    launches["a"].procs[0].done = True
    a.tick()
    with store.session() as s:
        row = claims.latest(db_session=s, job=JOB)
        assert (row.slot, row.state, row.attempt) == (MON.isoformat(), "success", 1)
    b.tick()
    assert launches["b"].procs == []
    registry_c = CollectorRegistry()  # a replica started later says when the last report (a's) succeeded
    ReportScheduler(CRON, lake=tmp_path / "c", command=["kh"], registry=registry_c, clock=lambda: now[0], store=store)
    assert metric(registry_c, "kafka_health_report_last_success_timestamp_seconds") == t(minutes=2).timestamp()

    # next week a claims the slot and then freezes (or dies) without renewing; b takes it over once the claim expires
    now[0] = t(days=7, minutes=1)
    a.tick()
    assert launches["a"].procs[1].argv[-1] == "2026-W48"
    now[0] += timedelta(seconds=CLAIM_TICKS * 15 - 1)
    b.tick()
    assert launches["b"].procs == []  # not expired yet: a may be alive
    now[0] += timedelta(seconds=2)
    b.tick()
    assert [p.argv[-1] for p in launches["b"].procs] == ["2026-W48"]
    a.tick()  # a wakes: its renewal is refused, it stops its report
    assert (
        launches["a"].procs[1].done
        and metric(registries["a"], "kafka_health_report_runs_total", {"result": "deposed"}) == 1
    )
    launches["b"].procs[0].done = True
    b.tick()
    with store.session() as s:
        row = claims.latest(db_session=s, job=JOB)
        assert (row.slot, row.state, row.attempt) == ((MON + timedelta(days=7)).isoformat(), "success", 2)
    a.tick()
    b.tick()
    assert len(launches["a"].procs) == 2 and len(launches["b"].procs) == 1


def test_a_slot_due_while_the_store_is_down_runs_once_it_is_back(tmp_path):
    good = Store(f"sqlite:///{tmp_path / 'kh.db'}")
    create_all(good)
    now = [t(minutes=1)]
    launch = Launcher([0])
    s = ReportScheduler(
        CRON,
        lake=tmp_path / "lake",
        command=["kh"],
        registry=CollectorRegistry(),
        clock=lambda: now[0],
        popen=launch,
        store=Store(f"sqlite:///{tmp_path / 'missing' / 'kh.db'}"),  # cannot be opened: every session fails
    )
    s._started_at = STARTED
    s.tick()
    assert launch.procs == [] and read_state(tmp_path / "lake" / STATE_FILE).last_slot is None  # not "handled"
    s.store = good
    now[0] = t(minutes=2)
    s.tick()
    assert [p.argv[-1] for p in launch.procs] == ["2026-W47"]


def test_a_dead_runners_older_slot_is_marked_abandoned_once_a_newer_slot_is_claimed(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'kh.db'}")
    create_all(store)
    ttl = timedelta(minutes=1)
    with store.session() as s:
        assert claims.claim(db_session=s, job=JOB, slot="2026-11-23T02:00:00+00:00", holder="a", ttl=ttl, now=MON)
        assert claims.claim(db_session=s, job=JOB, slot="2026-11-30T02:00:00+00:00", holder="b", ttl=ttl, now=t(days=7))
    with store.session() as s:
        rows = {r.slot[:10]: r.state for r in s.scalars(select(claims.JobRun))}
    assert rows == {"2026-11-23": "abandoned", "2026-11-30": "running"}  # a never renewed: superseded, said so
    with store.session() as s:  # b still renews: a newer slot does not abandon a live run
        later = t(days=7, minutes=0.5)
        assert claims.claim(db_session=s, job=JOB, slot="2026-12-07T02:00:00+00:00", holder="a", ttl=ttl, now=later)
        assert s.get(claims.JobRun, (JOB, "2026-11-30T02:00:00+00:00")).state == "running"
