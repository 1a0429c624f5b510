"""The broker-down decision (alerts/detectors/brokers.py): a crash or hang pages at once, a controlled restart pages
nothing, and what the controller cannot tell falls back to the plain rule. Each case is a broker's history as the
controller's gauges show it every 5 s (registration state, heartbeat age) with the Admin API's ``broker_up``, shaped on
what a Kafka 4.1.1 KRaft stack showed for SIGKILL, SIGSTOP and SIGTERM (see docs/alerts.md)."""

from __future__ import annotations

import pytest

from alerts.detectors.brokers import (
    ACTIVE,
    CONTROLLED_SHUTDOWN,
    FENCED,
    BrokerSample,
    Cause,
    Thresholds,
    decide_down,
    episodes,
    restarting,
)

T = Thresholds()  # lost_after 5 s, session timeout 9 s, restart grace 5 min, settle 3 min
HEALTHY = (ACTIVE, 1.2, 1)


def history(*rows, start: float = 0.0, every: float = 5.0) -> list[BrokerSample]:
    """One row per sample, ``every`` seconds apart: (state, heartbeat age, broker_up); None where unknown."""
    return [BrokerSample(start + i * every, *row) for i, row in enumerate(rows)]


def healthy(n: int) -> list[tuple]:
    return [HEALTHY] * n


# A crash at t=50: ACTIVE while the age grows, fenced at the 9 s cap, out of the metadata a collection later.
CRASH = history(*healthy(10), (ACTIVE, 6.1, 1), (FENCED, 9.0, 0), (FENCED, 9.0, 0))
# SIGSTOP looks the same to the controller; the hung JVM's ports still accept connections, so only heartbeats tell.
HANG = history(*healthy(10), (ACTIVE, 4.0, 1), (ACTIVE, 8.9, 1))
# SIGTERM at t=50: fenced while heartbeating (age 0.3 s), the age grows after the process exits.
CONTROLLED = history(*healthy(10), (FENCED, 0.3, 1), (FENCED, 5.3, 0), (FENCED, 9.0, 0))
# ... and back: re-registered fenced with fresh heartbeats, then active.
RESTARTED = CONTROLLED + history((FENCED, 0.4, 0), (ACTIVE, 0.5, 1), *healthy(4), start=65)


@pytest.mark.parametrize(
    "n, samples, now, down_now, want_fire, want_rule, want_for",
    [
        # 1 healthy all along
        (1, history(*healthy(12)), 60, False, False, "A", None),
        # 2 crash: heartbeats stop while ACTIVE -> fire at once, before the controller even fences it
        (2, CRASH[:11], 55, False, True, "B", 0.0),
        # 3 the same crash after fencing (not in the metadata any more): still the crash, still at once
        (3, CRASH, 65, True, True, "B", 0.0),
        # 4 hang (SIGSTOP): registered active, silent -> at once
        (4, HANG, 55, False, True, "B", 0.0),
        # 5 controlled shutdown in progress: nothing, though the plain condition holds
        (5, CONTROLLED, 65, True, False, "C", None),
        # 6 controlled shutdown seen as CONTROLLED_SHUTDOWN first (many partitions to move): a restart too
        (6, history(*healthy(10), (CONTROLLED_SHUTDOWN, 1.0, 1), (FENCED, 4.0, 0)), 55, True, False, "C", None),
        # 7 back after the restart: healthy, nothing
        (7, RESTARTED, 95, False, False, "A", None),
        # 8 shut down and not back within restart_grace (5 min): fire at once
        (8, CONTROLLED + history(*[(FENCED, 9.0, 0)] * 60, start=65), 365, True, True, "D", 0.0),
        # 9 crash, restarted, still catching up (fenced, fresh heartbeats): the crash goes on until it is active
        (9, CRASH + history((FENCED, 0.4, 0), start=65), 65, True, True, "B", 0.0),
        # 10 no controller series (Kafka 3.9, controller not collected): the plain rule and its `for`
        (10, history(*[(None, None, 1)] * 10, (None, None, 0)), 50, True, True, "E", None),
        # 11 samples sparser than the session timeout (15 s): the transition fell between two; plain rule
        (11, history(*healthy(4), (FENCED, 9.0, 0), (FENCED, 9.0, 0), every=15), 75, True, True, "E", None),
        # 12 the episode began before the looked-back range: cause unknown, plain rule (a firing incident goes on)
        (12, history(*[(FENCED, 9.0, 0)] * 20), 95, True, True, "E", None),
        # 13 the controller says active and fresh, the Admin API lags a collection behind: nothing
        (13, history(*healthy(10)), 45, True, False, "A", None),
        # 14 one late heartbeat (4.9 s, under lost_after) then fresh again: nothing
        (14, history(*healthy(5), (ACTIVE, 4.9, 1), *healthy(3)), 40, False, False, "A", None),
        # 15 a hiccup over lost_after that is over by now: nothing (the episode ended)
        (15, history(*healthy(5), (ACTIVE, 6.0, 1), *healthy(3)), 40, False, False, "A", None),
    ],
)
def test_decide_down(n, samples, now, down_now, want_fire, want_rule, want_for):
    v = decide_down(samples, now, T, down_now=down_now)
    assert (v.fire, v.rule, v.for_seconds) == (want_fire, want_rule, want_for), n


def test_episode_causes_and_times():
    [ep] = episodes(CRASH, T)
    assert (ep.start, ep.end, ep.cause, ep.seen_leaving) == (50, None, Cause.HEARTBEATS_LOST, True)
    [ep] = episodes(RESTARTED, T)
    assert (ep.start, ep.end, ep.cause) == (50, 70, Cause.CONTROLLED)


def test_samples_that_say_nothing_are_skipped():
    s = history(*healthy(3), (None, None, None), (ACTIVE, 7.0, 1))
    [ep] = episodes(s, T)
    assert ep.cause is Cause.HEARTBEATS_LOST and ep.start == 20


@pytest.mark.parametrize(
    "n, samples, now, want",
    [
        # 1 a controlled restart in progress holds under-replication back
        (1, CONTROLLED, 65, True),
        # 2 back for 25 s: its followers still catch up (restart_settle 3 min)
        (2, RESTARTED, 95, True),
        # 3 back for longer than restart_settle: judged again
        (3, RESTARTED, 70 + 181, False),
        # 4 a crash is no restart: the broker-down alert fires and inhibits under-replication instead
        (4, CRASH, 65, False),
        # 5 shut down and not back within restart_grace: judged again (and the broker pages, case D)
        (5, CONTROLLED + history(*[(FENCED, 9.0, 0)] * 60, start=65), 365, False),
        # 6 never left
        (6, history(*healthy(12)), 60, False),
    ],
)
def test_restarting_holds_back_under_replication(n, samples, now, want):
    assert (restarting(samples, now, T) is not None) is want, n


def test_rolling_restart_of_three_brokers_pages_nothing():
    """Each broker shut down in turn, the next once the previous is back: at no evaluation does any fire."""

    def broker(k: int) -> list[BrokerSample]:
        before = healthy(10 + 6 * k)
        after = healthy(40 - 6 * k)
        return history(
            *before, (FENCED, 0.3, 1), (FENCED, 5.3, 0), (FENCED, 9.0, 0), (FENCED, 0.4, 0), (ACTIVE, 0.5, 1), *after
        )

    brokers = [broker(k) for k in range(3)]
    for now in range(0, 270, 15):
        for b in brokers:
            seen = [s for s in b if s.time <= now]
            down = bool(seen) and seen[-1].up == 0
            assert not decide_down(seen, now, T, down_now=down).fire, now


# ------------------------------------------------------------------------------------------- the shells


class _Source:
    """Prometheus stand-in: the plain condition (instant) and the three histories (range), by metric name."""

    def __init__(self, samples: dict[str, list[BrokerSample]], down: set[str] = frozenset()):
        self.samples, self.down = samples, down

    def query(self, expr, at):
        from monitor.core.prom import InstantSample

        if "broker_up" in expr:
            return [InstantSample({"cluster": "c1", "broker": b}, 0.0) for b in sorted(self.down)]
        if "under_replicated" in expr:
            return [InstantSample({"cluster": "c1", "broker": "1"}, 4.0)]
        return []

    def query_range(self, expr, start, end, step):
        from monitor.core.metric_names import M
        from monitor.core.prom import Series

        field = (
            "state" if M["broker_registration_state"] in expr else "age" if M["broker_heartbeat_age"] in expr else "up"
        )
        t0 = start.timestamp()
        return [
            Series({"cluster": "c1", "broker": b}, tuple(t0 + s.time for s in ss), tuple(getattr(s, field) for s in ss))
            for b, ss in self.samples.items()
        ]


def _ctx(source, now_offset: float):
    from datetime import datetime, timedelta, timezone

    from alerts.detectors import DetectorContext
    from monitor.core.config import parse_config
    from monitor.core.tenancy import TenantIndex

    config = parse_config("clusters:\n  - name: c1\n    bootstrap_servers: localhost:9092\n")
    start = datetime(2026, 11, 24, tzinfo=timezone.utc)
    return DetectorContext(
        source=source, now=start + timedelta(seconds=600 + now_offset), config=config, tenants=TenantIndex(())
    )


def _rules():
    from alerts.rules import load_rules

    return {r.name: r for r in load_rules()}


def test_detector_fires_a_crash_at_once_and_holds_a_restart_back():
    from alerts.detectors.brokers import detect_broker_down
    from alerts.state import advance

    rule = _rules()["KafkaBrokerUnreachable"]
    # The range starts 600 s before now: shift the histories so that their last sample is now.
    crash = [BrokerSample(s.time + 600 - 65, s.state, s.age, s.up) for s in CRASH]
    restart = [BrokerSample(s.time + 600 - 65, s.state, s.age, s.up) for s in CONTROLLED]
    obs = detect_broker_down(rule, _ctx(_Source({"2": crash, "3": restart}, down={"2", "3"}), 0))
    assert [(o.labels["broker"], o.for_seconds, o.evidence["cause"]) for o in obs] == [("2", 0.0, "heartbeats_lost")]
    # for 0 on the observation beats the rule's 30 s: firing on the first evaluation
    inst = advance(None, obs[0], _ctx(None, 0).now, rule, {"alertname": rule.name, **obs[0].labels})
    assert inst.state.value == "firing"


def test_under_replication_waits_while_a_broker_restarts_in_a_controlled_way():
    from alerts.detectors.brokers import detect_under_replicated

    rule = _rules()["KafkaUnderReplicatedPartitions"]
    restart = [BrokerSample(s.time + 600 - 65, s.state, s.age, s.up) for s in CONTROLLED]
    crash = [BrokerSample(s.time + 600 - 65, s.state, s.age, s.up) for s in CRASH]
    assert detect_under_replicated(rule, _ctx(_Source({"3": restart}), 0)) == []
    [o] = detect_under_replicated(rule, _ctx(_Source({"3": crash}), 0))
    assert o.labels == {"cluster": "c1", "broker": "1"} and o.value == 4.0


# Samples every 15 s (a production collection and scrape interval): the transition fell between two (case 11), so
# the Prometheus history alone says UNKNOWN. The collector's controller watch, reading every 2 s, saw how it left.
SPARSE = history(*healthy(4), (FENCED, 9.0, 0), (FENCED, 9.0, 0), every=15)  # unhealthy from t=60


@pytest.mark.parametrize(
    "n, departure, want_fire, want_rule, want_for",
    [
        # 1 the watch saw heartbeats stop at t=52: a crash, paged at once instead of after the plain rule's `for`
        (1, (Cause.HEARTBEATS_LOST, 52.0), True, "B", 0.0),
        # 2 the watch saw a controlled shutdown begin at t=48: a restart, nothing
        (2, (Cause.CONTROLLED, 48.0), False, "C", None),
        # 3 the watch's latest departure is an old one (a restart 10 minutes before): it says nothing of this one
        (3, (Cause.CONTROLLED, 60.0 - 600), True, "E", None),
        # 4 no watch (jmxquery controllers, Kafka 3.9): the plain rule as before
        (4, None, True, "E", None),
    ],
)
def test_the_controller_watch_tells_what_sparse_samples_missed(n, departure, want_fire, want_rule, want_for):
    v = decide_down(SPARSE, 75, T, down_now=True, departure=departure)
    assert (v.fire, v.rule, v.for_seconds) == (want_fire, want_rule, want_for), n
    # a cause the samples did tell is not overridden
    assert decide_down(CRASH, 65, T, down_now=True, departure=(Cause.CONTROLLED, 50.0)).rule == "B"


def test_a_restart_the_watch_saw_holds_back_under_replication_with_sparse_samples():
    assert restarting(SPARSE, 75, T) is None
    assert restarting(SPARSE, 75, T, departure=(Cause.CONTROLLED, 48.0)) is not None
    assert restarting(SPARSE, 75, T, departure=(Cause.HEARTBEATS_LOST, 48.0)) is None
