"""The end-to-end probe's pure decisions (collectors/probe_plan.py): placement and each record's result."""

from __future__ import annotations

import pytest

from collectors.probe import ProbeSeries
from collectors.probe_plan import (
    Ledger,
    PartitionView,
    ProbeMeasurement,
    ProbePlacement,
    Result,
    plan,
    replicas_led_by,
)

pytestmark = [pytest.mark.unit]

V = PartitionView


# --- placement: numbered cases (brokers in the metadata, the topic as it is -> the plan) -----------------------------
CASES = [
    # 1. no topic: one partition per broker, its first replica (preferred leader) that broker, RF 3
    ((1, 2, 3), None, ProbePlacement(create=((1, 2, 3), (2, 3, 1), (3, 1, 2)), owners={0: 1, 1: 2, 2: 3})),
    # 2. one broker: RF 1; two: RF 2
    ((5,), None, ProbePlacement(create=((5,),), owners={0: 5})),
    ((1, 2), None, ProbePlacement(create=((1, 2), (2, 1)), owners={0: 1, 1: 2})),
    # 3. in place: nothing to do
    (
        (1, 2, 3),
        {0: V((1, 2, 3), 1), 1: V((2, 3, 1), 2), 2: V((3, 1, 2), 3)},
        ProbePlacement(owners={0: 1, 1: 2, 2: 3}),
    ),
    # 4. broker 3 restarted: its partition led by 1 meanwhile, the series stay 3's; back in the metadata -> elect
    (
        (1, 2, 3),
        {0: V((1, 2, 3), 1), 1: V((2, 3, 1), 2), 2: V((3, 1, 2), 1)},
        ProbePlacement(elect=(2,), owners={0: 1, 1: 2, 2: 3}),
    ),
    # 5. broker 3 down: its partition led elsewhere, no election (it cannot lead), still its series
    ((1, 2), {0: V((1, 2, 3), 1), 1: V((2, 3, 1), 2), 2: V((3, 1, 2), 1)}, ProbePlacement(owners={0: 1, 1: 2, 2: 3})),
    # 6. broker 4 joins: a partition of its own, replicas in ring order
    (
        (1, 2, 3, 4),
        {0: V((1, 2, 3), 1), 1: V((2, 3, 1), 2), 2: V((3, 1, 2), 3)},
        ProbePlacement(add=((4, 1, 2),), owners={0: 1, 1: 2, 2: 3, 3: 4}),
    ),
    # 7. no partition has its leader (all down but one, the metadata still answers): nothing to elect for the dead
    ((2,), {0: V((1, 2, 3), -1), 1: V((2, 3, 1), 2), 2: V((3, 1, 2), -1)}, ProbePlacement(owners={0: 1, 1: 2, 2: 3})),
    # 8. no broker in the metadata: nothing to do, the owners the topic says
    ((), {0: V((1, 2, 3), -1)}, ProbePlacement(owners={0: 1})),
]


@pytest.mark.parametrize("n", range(len(CASES)), ids=lambda n: f"case{n + 1}")
def test_plan(n):
    brokers, topic, want = CASES[n]
    got = plan(brokers, topic)
    assert (got.create, got.add, got.elect, dict(got.owners)) == (want.create, want.add, want.elect, dict(want.owners))


def test_every_broker_leads_one_partition_and_each_is_replicated_on_distinct_brokers():
    brokers = [7, 3, 11, 5, 9]
    p = plan(brokers, None)
    assert sorted(r[0] for r in p.create) == sorted(brokers)
    assert all(len(set(r)) == 3 for r in p.create)
    with pytest.raises(ValueError):
        replicas_led_by(4, brokers)


# --- results with a fake clock ---------------------------------------------------------------------------------
def obs(broker, kind, x):
    return ProbeMeasurement(broker, kind, seconds=x) if kind != "result" else ProbeMeasurement(broker, kind, result=x)


def test_acked_then_consumed_is_ok_with_both_latencies():
    led = Ledger(deadline=20)
    led.sent(1, broker=2, now=100.0)
    assert led.delivered(1, 100.004) == [obs(2, "produce", pytest.approx(0.004))]
    assert led.consumed(1, 100.010) == [obs(2, "roundtrip", pytest.approx(0.010)), obs(2, "result", Result.OK)]
    assert len(led) == 0
    assert led.expire(200.0) == []


def test_consumed_before_its_delivery_report_is_ok_once():
    led = Ledger(deadline=20)
    led.sent(1, broker=1, now=0.0)
    assert [o.kind for o in led.consumed(1, 0.02)] == ["roundtrip", "result"]
    assert led.delivered(1, 0.03) == []  # decided: its produce latency is not guessed after the fact
    assert len(led) == 0 and led.expire(100.0) == []


def test_not_back_within_the_deadline_is_lost_once_and_late_news_is_ignored():
    led = Ledger(deadline=20)
    led.sent(1, broker=3, now=0.0)
    assert led.expire(19.9) == []
    assert led.expire(20.0) == [obs(3, "result", Result.LOST)]
    assert led.expire(25.0) == []
    assert led.delivered(1, 26.0, error="_MSG_TIMED_OUT") == []  # the late delivery error: not an "error" too
    assert led.consumed(1, 27.0) == []
    assert len(led) == 0


def test_acked_but_never_consumed_is_lost():
    led = Ledger(deadline=5)
    led.sent(1, broker=1, now=0.0)
    led.delivered(1, 0.1)
    assert led.expire(5.0) == [obs(1, "result", Result.LOST)]
    assert len(led) == 0


def test_a_failed_produce_is_an_error_not_also_lost():
    led = Ledger(deadline=5)
    led.sent(1, broker=2, now=0.0)
    assert led.delivered(1, 1.0, error="NOT_ENOUGH_REPLICAS") == [obs(2, "result", Result.ERROR)]
    assert led.expire(10.0) == [] and led.consumed(1, 11.0) == []


def test_a_record_whose_report_never_comes_is_forgotten_after_twice_the_deadline():
    led = Ledger(deadline=5)
    led.sent(1, broker=1, now=0.0)
    assert led.expire(5.0) == [obs(1, "result", Result.LOST)]
    assert len(led) == 1
    led.expire(10.0)
    assert len(led) == 0


def test_forgotten_records_count_nothing():
    led = Ledger(deadline=5)
    led.sent(1, broker=1, now=0.0)
    led.forget(1)
    assert led.expire(100.0) == [] and led.delivered(1, 1.0) == []


def test_series_exist_from_the_start_and_accumulate_per_broker():
    s = ProbeSeries("c1")
    s.ensure([1, 2])
    s.record([obs(1, "roundtrip", 0.007), obs(1, "result", Result.OK), obs(2, "result", Result.LOST)])
    s.set_up(True)
    fams = {f.name: f for f in s.families()}
    msgs = {
        (x.labels["broker"], x.labels["result"]): x.value
        for x in fams["kafka_probe_messages"].samples
        if x.name == "kafka_probe_messages_total"
    }
    assert msgs[("1", "ok")] == 1 and msgs[("2", "lost")] == 1 and msgs[("2", "ok")] == 0 and msgs[("1", "error")] == 0
    rt = {
        (x.labels["broker"], x.labels.get("le")): x.value
        for x in fams["kafka_probe_roundtrip_latency_seconds"].samples
        if x.name.endswith("_bucket")
    }
    assert rt[("1", "0.005")] == 0 and rt[("1", "0.01")] == 1 and rt[("1", "+Inf")] == 1 and rt[("2", "+Inf")] == 0
    up = [x.value for x in fams["kafka_health_probe_up"].samples]
    assert up == [1.0]
    assert [x.value for x in s.families(running=False)[-1].samples] == [0.0]


# --- the probe block of a cluster's config ---------------------------------------------------------------------
def test_probe_is_on_by_default_and_its_settings_are_bounded_with_their_location():
    from monitor.core.config import parse_config
    from monitor.core.errors import ConfigError

    base = "clusters:\n  - name: c1\n    bootstrap_servers: k1:9092\n"
    probe = parse_config(base).clusters[0].probe
    assert (probe.enabled, probe.messages_per_second, probe.deadline_seconds, probe.topic) == (
        True,
        1.0,
        20.0,
        "__kafka_health_probe",
    )
    assert parse_config(base + "    probe: {enabled: false}\n").clusters[0].probe.enabled is False
    bad = (
        base + "    probe:\n      messages_per_second: 0\n      deadline_seconds: 9999\n      topic: 'a b'\n"
        "      x: 1\n"
    )
    with pytest.raises(ConfigError) as err:
        parse_config(bad, "k.yaml")
    text = str(err.value)
    for where in ("k.yaml:5", "k.yaml:6", "k.yaml:7", "k.yaml:8"):
        assert where in text, text
    assert "unknown key" in text


# --- the probe's threads -----------------------------------------------------------------------------------------
def test_a_hanging_placement_holds_up_neither_the_sends_nor_the_deadline_that_counts_records_lost(monkeypatch):
    """The placement's Admin calls wait up to 10-15 s for a frozen broker. They once ran on the send loop, which then
    sent nothing and counted nothing lost while they waited (CI: a frozen broker's lost records 45 s late). Here the
    placement hangs for the whole test on an unreachable cluster: records are still sent and counted lost."""
    import threading
    import time

    from collectors.probe import Probe
    from monitor.core.config import ClusterConfig, ProbeSettings

    cluster = ClusterConfig(
        name="c1", bootstrap_servers="127.0.0.1:9", probe=ProbeSettings(deadline_seconds=1.0, messages_per_second=10)
    )
    probe = Probe(cluster)
    release = threading.Event()
    placements: list[float] = []

    def hanging_place(admin, now):
        placements.append(now)
        release.wait(30)
        return "failed"

    monkeypatch.setattr(probe, "_place", hanging_place)
    monkeypatch.setattr(probe, "_receive_loop", lambda: release.wait(30))  # nothing comes back from this cluster
    probe._owners, probe._assigned = {0: 1}, {0}  # what the last placement had found: partition 0 led by broker 1
    probe.start()

    def lost() -> float:
        return sum(
            x.value
            for f in probe.series.families()
            if f.name == "kafka_probe_messages"
            for x in f.samples
            if x.name == "kafka_probe_messages_total" and x.labels == {"cluster": "c1", "broker": "1", "result": "lost"}
        )

    try:
        deadline = time.monotonic() + 10
        while lost() == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert placements, "the placement was never asked"
        assert lost() > 0, "no record counted lost while the placement hung"
    finally:
        release.set()
        probe.stop()
