"""Two processes of one collector shard do not double-count (issue 31, item 4): with ``collection.shard_lease`` the
process holding the shard's lease collects and probes, a standby collects nothing, runs no probe and exports only
that it stands by; a store that does not answer does not stop collection (fail open, said once).

``shard_turn`` (pure) by a table; the service's own schedule (``CollectionService.start``) with a scripted lease in
place of ``monitor.core.lease.Lease`` (the real one on PostgreSQL: tests/integration/test_collectors_shard_lease.py).
"""

from __future__ import annotations

import logging
import threading

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from collectors.component import CollectionService, ShardRole, shard_lease_name, shard_turn
from collectors.probe import ProbeSeries
from monitor.core.config import CollectionSettings, Config, parse_config
from monitor.core.errors import ConfigError, StoreError
from monitor.core.lease import LeaseDecision
from tests.conftest import wait_until
from tests.unit.test_collectors_service import FakeCollector

pytestmark = pytest.mark.unit

A, S, U = ShardRole.ACTIVE, ShardRole.STANDBY, ShardRole.UNREACHABLE


@pytest.mark.parametrize(
    "n, previous, held, role, collect, forget, said",
    [
        (1, None, True, A, True, False, True),  # the first process of a shard takes the lease: says so
        (2, A, True, A, True, False, False),  # renewed: nothing to say
        (3, None, False, S, False, False, True),  # a second process of the shard stands by from the start
        (4, S, False, S, False, False, False),  # still standing by: said once, not every look
        (5, S, True, A, True, False, True),  # takeover: collects from this round on
        (6, A, False, S, False, True, True),  # deposed (it froze past its lease): its series and probes go at once
        (7, A, None, U, True, False, True),  # store down: collects anyway (a duplicate rather than a blind spot)
        (8, S, None, U, True, False, True),  # store down while standing by: collects too (the holder may be dead)
        (9, U, None, U, True, False, False),  # said once
        (10, U, False, S, False, True, True),  # store back, another holds it: stop at once
        (11, U, True, A, True, False, True),
    ],
)
def test_shard_turn(n, previous, held, role, collect, forget, said):
    turn = shard_turn(previous, held)
    assert (turn.role, turn.collect, turn.forget, turn.say is not None) == (role, collect, forget, said), n


def test_each_shard_of_each_count_has_its_own_lease():
    assert shard_lease_name("1/3") == "collector-shard-1-of-3"
    assert len({shard_lease_name(f"{i}/{n}") for n in (1, 2, 3) for i in range(n)}) == 6


def test_the_lease_needs_postgresql_and_is_off_by_default():
    assert parse_config("{}").collection.shard_lease is False
    with pytest.raises(ConfigError, match="shard_lease needs a PostgreSQL store"):
        parse_config("collection: {shard_lease: true}\n")
    on = parse_config("collection: {shard_lease: true}\nstore: {url: 'postgresql+psycopg://kh@db/kh'}\n")
    assert on.collection.shard_lease


class ScriptedLease:
    """Answers ``acquire`` from ``script`` (True held, False another holds it, None the store does not answer), the
    last answer repeated; counts the looks."""

    def __init__(self, *script: bool | None):
        self.script = list(script)
        self.looks = 0
        self.released = 0
        self.looked = threading.Condition()

    def acquire(self) -> LeaseDecision:
        with self.looked:
            answer = self.script[min(self.looks, len(self.script) - 1)]
            self.looks += 1
            self.looked.notify_all()
        if answer is None:
            raise StoreError("database error: OperationalError: connection refused")
        return LeaseDecision(answer, 7)

    def release(self) -> None:
        self.released += 1


class FakeProbe:
    """A probe that sends nothing: its series (the real ``ProbeSeries``) say only whether it runs."""

    def __init__(self):
        self.series = ProbeSeries("c1")
        self.starts = 0
        self.stops = 0

    @property
    def running(self) -> bool:
        return self.starts > self.stops

    def start(self) -> None:
        self.starts += 1

    def stop(self, timeout: float = 5.0) -> None:
        self.stops += 1


class CountingCollector(FakeCollector):
    def __init__(self, behaviour: str = "ok"):
        super().__init__({f"b{i}": behaviour for i in range(8)})  # some of them in shard 1/2
        self.calls: list[str] = []

    def collect_target(self, target, *, now):
        self.calls.append(target.key)
        return super().collect_target(target, now=now)


def _service(lease: ScriptedLease | None, probe: FakeProbe | None = None, fake: CountingCollector | None = None):
    fake = fake or CountingCollector()
    registry = CollectorRegistry()
    config = Config(collection=CollectionSettings(interval_seconds=0.05, shard="1/2"))
    svc = CollectionService(config, registry=registry, collectors=[fake], probes=[probe or FakeProbe()], lease=lease)
    assert svc.work, "shard 1/2 has targets"
    return svc, registry, fake.calls


def _looks(svc: CollectionService, lease: ScriptedLease, n: int) -> None:
    svc.start()
    wait_until(lambda: lease.looks >= n, timeout=10, interval=0.01, what=f"{n} looks at the lease")


def _exposition(registry: CollectorRegistry) -> str:
    return generate_latest(registry).decode()


def test_a_standby_collects_nothing_runs_no_probe_and_says_only_that_it_stands_by():
    lease, probe = ScriptedLease(False), FakeProbe()
    svc, registry, calls = _service(lease, probe)
    try:
        _looks(svc, lease, 5)
        assert svc.ready() and svc.role is ShardRole.STANDBY  # ready: it takes over by itself
    finally:
        svc.stop()
    assert calls == [] and probe.starts == 0 and lease.released == 0
    text = _exposition(registry)
    assert 'kafka_health_collector_shard_standby{shard="1",shards="2"} 1.0' in text
    assert 'kafka_health_collector_shard_lease_unreachable{shard="1",shards="2"} 0.0' in text
    # Not the shard (KafkaHealthCollectorShardMissing reads shard_up's presence), and no measurement, no capability.
    assert "kafka_health_collector_shard_up{" not in text
    assert "kafka_health_scrape_" not in text and "kafka_topic_" not in text and "probe" not in text
    assert "kafka_health_signal_observable" not in text
    assert 'kafka_health_collector_shard_expected{shard="1"} 1.0' in text


def test_the_holder_collects_and_probes_and_hands_over_on_a_clean_stop():
    lease, probe = ScriptedLease(True), FakeProbe()
    svc, registry, calls = _service(lease, probe)
    try:
        _looks(svc, lease, 3)
        wait_until(lambda: len(calls) > 0, timeout=10, interval=0.01, what="a round")
    finally:
        svc.stop()
    assert probe.starts == 1 and lease.released == 1
    text = _exposition(registry)
    assert 'kafka_health_collector_shard_up{shard="1",shards="2"} 1.0' in text
    assert 'kafka_health_collector_shard_standby{shard="1",shards="2"} 0.0' in text
    assert "kafka_health_scrape_success{" in text and 'kafka_health_probe_up{cluster="c1"}' in text
    assert "kafka_health_signal_observable" in text


def test_the_lease_is_renewed_while_a_long_first_round_runs():
    # Targets timing out can make the first round outlast the lease (1.5 intervals): renewed while it is waited for,
    # the standby stays out (before, the first round was waited for without a look, and the lease lapsed).
    lease, fake = ScriptedLease(True), CountingCollector("slow")
    svc, _, _ = _service(lease, fake=fake)
    try:
        _looks(svc, lease, 3)
        assert not svc.ready(), "three looks before the first round ended"
        fake.release.set()
        wait_until(svc.ready, timeout=10, interval=0.01, what="the first round")
    finally:
        fake.release.set()
        svc.stop()


def test_a_store_that_does_not_answer_does_not_stop_collection_and_is_said_once(caplog):
    lease, probe = ScriptedLease(None), FakeProbe()
    svc, registry, calls = _service(lease, probe)
    with caplog.at_level(logging.WARNING, logger="collectors.component"):
        try:
            _looks(svc, lease, 4)
            wait_until(lambda: len(calls) > 0, timeout=10, interval=0.01, what="a round")
        finally:
            svc.stop()
    assert probe.starts == 1
    assert [r.getMessage() for r in caplog.records if "store does not answer" in r.getMessage()] == [
        "collector shard 1/2: the store does not answer: collecting without the lease (a second process of this "
        "shard may be collecting too) (database error: OperationalError: connection refused)"
    ]
    text = _exposition(registry)
    assert 'kafka_health_collector_shard_lease_unreachable{shard="1",shards="2"} 1.0' in text
    assert 'kafka_health_collector_shard_up{shard="1",shards="2"} 1.0' in text


def test_a_deposed_holder_drops_its_series_and_probes_at_once_and_a_standby_takes_over():
    lease, probe = ScriptedLease(True, True, False), FakeProbe()
    svc, registry, calls = _service(lease, probe)
    try:
        _looks(svc, lease, 5)
        assert svc.role is ShardRole.STANDBY
        text = _exposition(registry)
        assert "kafka_health_scrape_success{" not in text and "kafka_health_collector_shard_up{" not in text
        assert probe.stops == 1
        rounds = len(calls)
        lease.script = [True]  # the other process died: this one takes over at its next look
        wait_until(lambda: len(calls) > rounds, timeout=10, interval=0.01, what="a round after the takeover")
    finally:
        svc.stop()
    assert probe.starts == 2  # given probes are reused; a config's are built anew (a ledger per run)
    assert 'kafka_health_collector_shard_up{shard="1",shards="2"} 1.0' in _exposition(registry)


def test_without_the_lease_every_round_collects_and_nothing_is_said_of_a_lease():
    probe = FakeProbe()
    svc, registry, calls = _service(None, probe)
    try:
        svc.start()
        wait_until(lambda: len(calls) > 0, timeout=10, interval=0.01, what="a round")
    finally:
        svc.stop()
    assert probe.starts == 1 and svc.role is None  # /readyz shows no role
    text = _exposition(registry)
    assert "kafka_health_collector_shard_standby" not in text and "lease_unreachable" not in text
    assert 'kafka_health_collector_shard_up{shard="1",shards="2"} 1.0' in text
