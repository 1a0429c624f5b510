"""Exporter and service: last result served, stale dropped, failed vs no data, series cap, sharding, containment."""

import gc
import threading
import time

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from collectors.component import GC_YOUNG_THRESHOLD, CollectionService, in_shard, parse_shard
from collectors.exporter import KafkaHealthExporter, SnapshotStore
from collectors.outcome import failed, succeeded
from collectors.types import Sample, Target, TargetStatus
from monitor.core.config import CollectionSettings, Config
from monitor.core.errors import TargetTimeout

pytestmark = pytest.mark.unit

T1 = Target("c1", "jmx", "broker-1", broker="1")
T2 = Target("c1", "jmx", "broker-2", broker="2")


def sample(v=1.0, topic="t"):
    return Sample("kafka_topic_bytes_in_total", "counter", "bytes", (("cluster", "c1"), ("topic", topic)), v)


def scrape(registry) -> str:
    return generate_latest(registry).decode()


def test_failed_no_data_and_stale_are_distinct():
    now = [1000.0]
    store = SnapshotStore()
    reg = CollectorRegistry()
    reg.register(KafkaHealthExporter(store, interval_seconds=10, clock=lambda: now[0]))
    store.put(succeeded(T1, [sample(5.0)], started_at=999.0, duration=0.5, max_series=100))
    store.put(succeeded(T2, [], started_at=999.0, duration=0.5, max_series=100))
    text = scrape(reg)
    assert 'kafka_topic_bytes_in_total{cluster="c1",topic="t"} 5.0' in text
    assert 'kafka_health_scrape_status{cluster="c1",collector="jmx",status="no_data",target="broker-2"} 1.0' in text
    assert 'kafka_health_scrape_success{cluster="c1",collector="jmx",target="broker-2"} 1.0' in text
    store.put(failed(T2, TargetTimeout("JMX h:1 did not answer within 3s"), started_at=1000.0, duration=3.0))
    now[0] = 1003.0
    text = scrape(reg)
    assert 'kafka_health_scrape_success{cluster="c1",collector="jmx",target="broker-2"} 0.0' in text
    assert (
        'kafka_health_scrape_failures_total{cluster="c1",collector="jmx",reason="timeout",target="broker-2"} 1.0'
        in text
    )
    assert (
        'kafka_health_scrape_last_success_timestamp_seconds{cluster="c1",collector="jmx",target="broker-2"} 999.5'
        in text
    )
    # more than two intervals after broker-1's last result: its series are dropped, not served stale
    now[0] = 1021.0
    text = scrape(reg)
    assert "kafka_topic_bytes_in_total{" not in text
    assert 'kafka_health_scrape_status{cluster="c1",collector="jmx",status="stale",target="broker-1"} 1.0' in text


def test_series_cap_cuts_and_warns():
    store = SnapshotStore()
    reg = CollectorRegistry()
    reg.register(KafkaHealthExporter(store, interval_seconds=10, clock=lambda: 1000.0))
    store.put(succeeded(T1, [sample(1.0, f"t{i}") for i in range(5)], started_at=1000.0, duration=0.1, max_series=3))
    text = scrape(reg)
    assert text.count("kafka_topic_bytes_in_total{") == 3
    assert 'kafka_health_scrape_series_capped{cluster="c1",collector="jmx",target="broker-1"} 1.0' in text
    assert 'kafka_health_scrape_series_dropped{cluster="c1",collector="jmx",target="broker-1"} 2.0' in text


def test_shards_partition_targets_disjointly_and_completely():
    targets = [Target("c1", "jmx", f"broker-{i}") for i in range(50)]
    shards = [[t for t in targets if in_shard(t, f"{i}/3")] for i in range(3)]
    assert sorted(t.name for s in shards for t in s) == sorted(t.name for t in targets)
    assert all(s for s in shards)
    with pytest.raises(ValueError):
        parse_shard("3/3")


class FakeCollector:
    """Targets with scripted behaviour: 'ok', 'slow' (blocks until released), 'boom' (a bug)."""

    def __init__(self, behaviours):
        self.behaviours = behaviours
        self.release = threading.Event()
        self._targets = [Target("c1", "jmx", name) for name in behaviours]

    def targets(self):
        return self._targets

    def collect_target(self, target, *, now):
        b = self.behaviours[target.name]
        if b == "boom":
            raise RuntimeError("bug")
        if b == "slow":
            self.release.wait(5)
        return succeeded(target, [sample(1.0, target.name)], started_at=now, duration=0.0, max_series=100)


def test_slow_target_does_not_block_scrape_or_others_and_bugs_are_contained():
    fake = FakeCollector({"a": "ok", "slow": "slow", "bug": "boom"})
    cfg = Config(collection=CollectionSettings(interval_seconds=10, max_workers=4))
    reg = CollectorRegistry()
    svc = CollectionService(cfg, registry=reg, collectors=[fake])
    futures = svc.submit_round()
    futures[0].result(2)
    futures[2].result(2)
    start = time.monotonic()
    text = scrape(reg)
    assert time.monotonic() - start < 1.0
    assert 'topic="a"' in text and 'topic="slow"' not in text
    assert 'kafka_health_scrape_failures_total{cluster="c1",collector="jmx",reason="error",target="bug"} 1.0' in text
    # the slow target is not submitted twice while still running
    again = svc.submit_round()
    assert len(again) == 2
    fake.release.set()
    futures[1].result(2)
    assert 'topic="slow"' in scrape(reg)
    svc.stop()


def test_shard_option_limits_the_service_to_its_targets():
    fake = FakeCollector({f"b{i}": "ok" for i in range(20)})
    both = []
    for i in range(2):
        cfg = Config(collection=CollectionSettings(shard=f"{i}/2"))
        svc = CollectionService(cfg, registry=CollectorRegistry(), collectors=[fake])
        both.append({t.name for _, t in svc.work})
        svc.stop()
    assert both[0].isdisjoint(both[1]) and len(both[0] | both[1]) == 20


def test_several_clusters_in_one_config_get_their_own_targets_and_transports():
    from collectors.component import build_collectors
    from monitor.core.config import BrokerTarget, ClusterConfig

    clusters = (
        ClusterConfig(
            name="east",
            bootstrap_servers="e:9092",
            controller_jmx=("e:9999",),
            brokers=(BrokerTarget(id=1, jmx="e1:9999", log_dirs=("/d",)),),
        ),
        ClusterConfig(
            name="west",
            bootstrap_servers="w:9092",
            jmx={"transport": "jolokia"},
            brokers=(
                BrokerTarget(id=1, jmx="w1:9999", jolokia="http://w1:8778/jolokia"),
                BrokerTarget(id=2, jmx="w2:9999"),
            ),
        ),  # no jolokia URL: a target that fails clearly
    )
    collectors = build_collectors(Config(clusters=clusters))
    keys = sorted(t.key for c in collectors for t in c.targets())
    assert keys == [
        "east/admin/admin",
        "east/controller/controller-e:9999",
        "east/host/host-localhost",
        "east/jmx/broker-1",
        "west/admin/admin",
        "west/jmx/broker-1",
        "west/jmx/broker-2",
        "west/protocol/protocol",
    ]  # west's disk: no log_dirs nor listener ports to tell its host by, so DescribeLogDirs and no /proc read
    west_jmx = next(c for c in collectors if any(t.key == "west/jmx/broker-1" for t in c.targets()))
    assert west_jmx.targets()[0].address == "http://w1:8778/jolokia"
    failed = west_jmx.collect_target(west_jmx.targets()[1], now=0.0)
    assert failed.status is TargetStatus.FAILED and "no Jolokia URL" in failed.message


def test_started_service_collects_on_its_own_schedule_and_stops():
    from tests.conftest import wait_until

    fake = FakeCollector({"a": "ok"})
    cfg = Config(collection=CollectionSettings(interval_seconds=0.05))
    reg = CollectorRegistry()
    svc = CollectionService(cfg, registry=reg, collectors=[fake])
    assert not svc.ready()
    svc.start()
    try:
        wait_until(svc.ready, timeout=5, interval=0.01, what="first round")
        first = svc.store.snapshot()[0]["c1/jmx/a"].started_at
        wait_until(
            lambda: svc.store.snapshot()[0]["c1/jmx/a"].started_at > first,
            timeout=5,
            interval=0.01,
            what="a second scheduled round",
        )
    finally:
        svc.stop()
    assert not svc._thread.is_alive()


@pytest.mark.parametrize(("before", "after"), [(700, GC_YOUNG_THRESHOLD), (50_000, 50_000), (0, 0)])
def test_a_collecting_process_gets_a_young_generation_that_fits_a_read(before, after):
    # CPython's 700 ran the garbage collector 29 times a read of a 10,000-partition broker (bench/collector_fleet.py);
    # a larger setting of the embedding process is kept, and so is 0 (collection disabled)
    saved = gc.get_threshold()
    gc.set_threshold(before, saved[1], saved[2])
    try:
        CollectionService(Config(), registry=CollectorRegistry(), collectors=[]).stop()
        assert gc.get_threshold() == (after, saved[1], saved[2])
    finally:
        gc.set_threshold(*saved)
