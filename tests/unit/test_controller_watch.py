"""The controller watch's classification of departures, on readings shaped like the controller's (Kafka 4.1: a
broker heartbeats every 2 s, the session timeout is 9 s, the age is capped there)."""

import pytest

from collectors.controller_watch import DEPARTURES, LAST_DEPARTURE, UNSTATED, DepartureLog
from monitor.core.liveness import ACTIVE, CONTROLLED_SHUTDOWN, FENCED

pytestmark = pytest.mark.unit


def feed(log, readings, step=2.0, t0=1000.0):
    """``readings``: per step, broker -> (state, age). Returns every departure found, with the time it was found."""
    found = []
    for i, brokers in enumerate(readings):
        found += [(t0 + i * step, *d) for d in log.observe(t0 + i * step, brokers)]
    return found


def test_a_crash_is_counted_once_as_heartbeats_lost_as_soon_as_the_age_climbs():
    log = DepartureLog()
    healthy = [{"1": (ACTIVE, 0.5), "2": (ACTIVE, 1.0)}] * 3
    # broker 2 killed: registered active while its heartbeat age climbs, fenced at 9 s, then it stays fenced
    crash = [{"1": (ACTIVE, 0.5), "2": (ACTIVE, a)} for a in (2.5, 4.5, 6.5, 8.5)]
    fenced = [{"1": (ACTIVE, 0.5), "2": (FENCED, 9.0)}] * 5
    found = feed(log, healthy + crash + fenced)
    # ages 2.5 and 4.5 s are a heartbeat or two late, not yet silence; 6.5 s at t=1010 is (lost_after: 5 s), and the
    # departure is known at that very reading, before the controller fences it
    assert [(found_at, b, c.value, start) for found_at, b, c, start in found] == [
        (1010.0, "2", "heartbeats_lost", 1010.0)
    ]
    assert log.counts == {("2", "heartbeats_lost"): 1}


def test_a_controlled_shutdown_and_its_restart_count_as_controlled_and_a_later_crash_counts_apart():
    log = DepartureLog()
    readings = (
        [{"3": (ACTIVE, 0.4)}] * 2
        + [{"3": (CONTROLLED_SHUTDOWN, 0.5)}, {"3": (FENCED, 1.5)}, {"3": (FENCED, 9.0)}]  # SIGTERM, exits
        + [{"3": (FENCED, 0.3)}, {"3": (ACTIVE, 0.2)}, {"3": (ACTIVE, 0.6)}]  # started again, caught up
        + [{"3": (ACTIVE, 5.5)}, {"3": (FENCED, 9.0)}]
    )  # then killed
    found = feed(log, readings)
    assert [(b, c.value) for _, b, c, _ in found] == [("3", "controlled_shutdown"), ("3", "heartbeats_lost")]
    assert log.counts == {("3", "controlled_shutdown"): 1, ("3", "heartbeats_lost"): 1}
    assert log.last[("3", "heartbeats_lost")] > log.last[("3", "controlled_shutdown")]


def test_what_cannot_be_told_is_not_counted():
    # first seen already fenced with a capped age (the watch started after it left), and a broker seen only
    # fenced since it was registered: neither says how it left
    log = DepartureLog()
    assert feed(log, [{"1": (FENCED, 9.0)}, {"1": (FENCED, 9.0)}, {"2": (ACTIVE, 0.5)}]) == []
    # a broker that was healthy, then its reading jumped to fenced with a capped age (a gap in the watch's readings
    # longer than the session): unknown, not counted
    log = DepartureLog()
    assert feed(log, [{"1": (ACTIVE, 0.5)}, {"1": (FENCED, 9.0)}]) == []


def test_samples_are_about_the_broker_and_carry_the_controller():
    log = DepartureLog()
    feed(log, [{"2": (ACTIVE, 0.5)}, {"2": (ACTIVE, 6.0)}])
    samples = log.samples((("cluster", "local"), ("broker", "100")))
    assert {(s.name, s.kind) for s in samples} == {(DEPARTURES, "counter"), (LAST_DEPARTURE, "gauge")}
    assert all(
        dict(s.labels) == {"cluster": "local", "broker": "2", "controller": "100", "cause": "heartbeats_lost"}
        for s in samples
    )
    assert next(s.value for s in samples if s.name == LAST_DEPARTURE) == 1002.0


def test_old_samples_are_forgotten():
    log = DepartureLog(keep_seconds=10.0)
    feed(log, [{"1": (ACTIVE, 0.5)}] * 100)
    assert len(log._samples["1"]) == 6  # 10 s of 2 s readings, both ends in


def test_a_broker_with_an_age_and_no_state_is_listed_as_unstated_and_never_judged():
    """KAFKA-20370: the controller exports broker 2's heartbeat age without its state. The age climbs to the session
    timeout (a crash or a restart: the age alone cannot say), so no departure is counted; broker 2 is listed as
    unstated while it lasts and exported as such; once its state is exported again it is judged as any other."""
    log = DepartureLog()
    blind = [{"1": (ACTIVE, 0.5), "2": (None, a)} for a in (0.5, 2.5, 4.5, 6.5, 8.5, 9.0, 9.0)]
    assert feed(log, blind) == []
    assert log.unstated == ("2",) and not log.counts
    exported = [(s.name, dict(s.labels)) for s in log.samples((("cluster", "c"), ("broker", "100")))]
    assert exported == [(UNSTATED, {"cluster": "c", "broker": "2", "controller": "100"})]
    back = [{"1": (ACTIVE, 0.5), "2": (ACTIVE, 0.4)}] * 2 + [{"1": (ACTIVE, 0.5), "2": (ACTIVE, a)} for a in (6.5, 8.5)]
    found = feed(log, back, t0=2000.0)
    assert log.unstated == () and [(b, c.value) for _, b, c, _ in found] == [("2", "heartbeats_lost")]
    assert not [s for s in log.samples((("cluster", "c"), ("broker", "100"))) if s.name == UNSTATED]
