"""Detector shells on an in-memory source shaped like Prometheus' answers: labels, severity and evidence."""

from datetime import datetime, timezone

import pytest

from alerts.detectors import DetectorContext, clients, disk, lag, latency, storage
from alerts.rules import load_rules
from alerts.types import Severity
from monitor.core.config import parse_config
from monitor.core.metric_names import M
from monitor.core.prom import InstantSample, Series
from monitor.core.tenancy import TenantIndex
from tests.harness.fake_source import FakeSource

pytestmark = pytest.mark.unit
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
GiB = 1024**3
CONFIG = parse_config("""
clusters: [{name: c1, bootstrap_servers: "localhost:9092"}]
tenants:
  - name: shop
    selectors: [{cluster: c1, topic_prefixes: [orders.], client_id_prefixes: [shop-], group_prefixes: [shop.]}]
    contract: {storage_budget_bytes: 1000}
""")
RULES = {r.name: r for r in load_rules(CONFIG.rules)}


def ctx(src):
    return DetectorContext(source=src, now=NOW, config=CONFIG, tenants=TenantIndex(CONFIG.tenants))


def times(n, step):
    t0 = NOW.timestamp() - (n - 1) * step
    return tuple(t0 + i * step for i in range(n))


def test_disk_shell_reports_eta_per_log_dir():
    ts = times(60, 300)
    labels = {"cluster": "c1", "broker": "2", "path": "/data/kafka"}
    used = tuple(80 * GiB + 2 * GiB * (t - ts[0]) / 3600 for t in ts)  # +2 GiB/h
    src = FakeSource(
        instant={M["fs_size"]: [InstantSample(labels, 100 * GiB)]}, ranges={M["fs_avail"]: [Series(labels, ts, used)]}
    )
    [obs] = disk.detect(RULES["KafkaDiskFullRisk"], ctx(src))
    assert obs.labels == labels and obs.severity is Severity.CRITICAL
    assert obs.evidence["method"] == "linear" and 0 < obs.evidence["eta_hours"] < 6
    assert obs.value == obs.evidence["eta_seconds"]


def test_disk_shell_judges_a_moved_log_dir_on_its_new_filesystem_only():
    # the log dir sat on a big disk (180 GiB used), then moved to a 1 GiB mount that grows 1 MiB/s: against the
    # whole window usage fell (no alarm); on the new filesystem alone it is full in minutes
    ts = times(40, 15)
    labels = {"cluster": "c1", "broker": "3", "path": "/data/kafka"}
    used = tuple(180 * GiB if i < 20 else 100 * 2**20 + (t - ts[20]) * 2**20 for i, t in enumerate(ts))
    sizes = tuple(250 * GiB if i < 20 else GiB for i in range(40))
    src = FakeSource(
        instant={M["fs_size"]: [InstantSample(labels, GiB)]},
        ranges={M["fs_avail"]: [Series(labels, ts, used)], f"({M['fs_size']})": [Series(labels, ts, sizes)]},
    )
    [obs] = disk.detect(RULES["KafkaDiskFullRisk"], ctx(src))
    assert obs.evidence["method"] == "linear" and obs.severity is Severity.CRITICAL
    assert obs.evidence["growth_bytes_per_second"] == pytest.approx(2**20, rel=0.01)
    assert obs.evidence["eta_seconds"] == pytest.approx((GiB - used[-1]) / 2**20, rel=0.01)


def _two_log_dirs(device1, device2, free_gap):
    """Brokers 1 and 2 of one host, 100 GiB filesystems growing 2 GiB/h, broker 2's free space ``free_gap`` lower
    (scraped while something wrote)."""
    ts = times(60, 300)
    rows = []
    for broker, device, extra in (("1", device1, 0), ("2", device2, free_gap)):
        labels = {"cluster": "c1", "host": "h", "broker": broker, "path": "/data/kafka"}
        used = tuple(80 * GiB + extra + 2 * GiB * (t - ts[0]) / 3600 for t in ts)
        rows.append((labels, device, used))
    src = FakeSource(
        instant={M["fs_size"]: [InstantSample({**labels, "device": device}, 100 * GiB) for labels, device, _ in rows]},
        ranges={M["fs_avail"]: [Series(labels, ts, used) for labels, _, used in rows]},
    )
    return disk.detect(RULES["KafkaDiskFullRisk"], ctx(src))


def test_disk_shell_counts_one_device_once_even_with_free_space_apart():
    # one device: one filesystem, one alert naming both log dirs, though 10 MiB apart (the size heuristic splits)
    [obs] = _two_log_dirs("8:1", "8:1", 10 * 2**20)
    assert obs.evidence["log_dirs"] == ["1:/data/kafka", "2:/data/kafka"]


def test_disk_shell_keeps_two_devices_apart_even_with_equal_figures():
    # two disks of one model, equally full: two filesystems, one alert each (the size heuristic merges them)
    obs = _two_log_dirs("8:1", "8:17", 0)
    assert sorted(o.evidence["log_dirs"] for o in obs) == [["1:/data/kafka"], ["2:/data/kafka"]]


def test_disk_shell_without_device_labels_falls_back_to_the_figures():
    [obs] = _two_log_dirs("", "", 0)
    assert obs.evidence["log_dirs"] == ["1:/data/kafka", "2:/data/kafka"]


def test_storage_shell_sums_a_tenants_topics():
    src = FakeSource(
        instant={
            M["topic_size"]: [
                InstantSample({"cluster": "c1", "topic": "orders.a"}, 900),
                InstantSample({"cluster": "c1", "topic": "other"}, 5000),
            ]
        }
    )
    [obs] = storage.detect(RULES["KafkaTenantStorageBudget"], ctx(src))
    assert obs.labels == {"tenant": "shop"} and obs.value == 0.9 and obs.severity is Severity.WARNING


def test_consumer_lag_shell_stopped_group_without_committed_offsets():
    ts = times(11, 60)
    key = {"cluster": "c1", "group": "shop.billing", "topic": "orders.a"}
    src = FakeSource(
        instant={M["group_lag_seconds"]: [InstantSample(key, 700.0)]},
        ranges={
            M["group_lag"]: [Series(key, ts, tuple(100.0 + 50 * i for i in range(11)))],
            M["topic_messages_in"]: [Series({"cluster": "c1", "topic": "orders.a"}, ts, (50.0,) * 11)],
            M["group_members"]: [Series({"cluster": "c1", "group": "shop.billing"}, ts, (0.0,) * 11)],
        },
    )
    [obs] = lag.detect(RULES["KafkaConsumerGroupLag"], ctx(src))
    assert obs.labels == {**key, "status": "STOP"} and obs.severity is Severity.CRITICAL
    assert obs.evidence["offsets_from"] == "produced_minus_lag" and obs.evidence["lag_seconds"] == 700.0
    assert obs.evidence["active_members"] == 0  # a group with no members is still evaluated


def test_consumer_lag_shell_reads_committed_offsets_so_sampling_jitter_is_no_rewind():
    """A stopped group under steady production: the produced-minus-lag estimate jitters (increase() over a short
    step extrapolates) and once called it REWIND on the latency bench; the exported committed offsets are frozen:
    STOP. A committed offset that really falls is REWIND."""
    ts = times(11, 60)
    key = {"cluster": "c1", "group": "shop.billing", "topic": "orders.a"}
    jittery = tuple(50.0 + (30.0 if i % 2 else -30.0) for i in range(11))  # what increase() reports: 20, 80, 20...

    def src(committed):
        return FakeSource(
            instant={M["group_lag_seconds"]: [InstantSample(key, 30.0)]},
            ranges={
                M["group_lag"]: [Series(key, ts, tuple(100.0 + 50 * i for i in range(11)))],
                M["group_committed_offset"]: [Series(key, ts, committed)],
                M["topic_messages_in"]: [Series({"cluster": "c1", "topic": "orders.a"}, ts, jittery)],
                M["group_members"]: [Series({"cluster": "c1", "group": "shop.billing"}, ts, (0.0,) * 11)],
            },
        )

    [obs] = lag.detect(RULES["KafkaConsumerGroupLag"], ctx(src((900.0,) * 11)))
    assert obs.labels["status"] == "STOP" and obs.evidence["offsets_from"] == "committed_offset"
    # the same series without committed offsets: the derived ones jitter up and down and miss the stop (REWIND
    # while a rewind counted however it ended; WARN since a rewind that came back is OK, as in Burrow)
    no_commits = src((900.0,) * 11)
    del no_commits.ranges[M["group_committed_offset"]]
    [derived] = lag.detect(RULES["KafkaConsumerGroupLag"], ctx(no_commits))
    assert derived.evidence["offsets_from"] == "produced_minus_lag" and derived.labels["status"] == "WARN"
    [obs] = lag.detect(RULES["KafkaConsumerGroupLag"], ctx(src((900.0,) * 5 + (400.0,) * 6)))
    assert obs.labels["status"] == "REWIND"


def test_consumer_lag_shell_does_not_judge_a_group_seen_for_less_than_half_the_window():
    # a healthy group that just started: one or two samples with lag (auto-commit trails the producers) made it
    # STOP or STALL on the false-alarm bench; Burrow calls such a window incomplete
    key = {"cluster": "c1", "group": "shop.new", "topic": "orders.a"}
    for n in (1, 2, 5):
        ts = times(n, 60)
        src = FakeSource(
            instant={M["group_lag_seconds"]: [InstantSample(key, 2.0)]},
            ranges={
                M["group_lag"]: [Series(key, ts, (30.0,) * n)],
                M["topic_messages_in"]: [Series({"cluster": "c1", "topic": "orders.a"}, ts, (50.0,) * n)],
                M["group_members"]: [Series({"cluster": "c1", "group": "shop.new"}, ts, (1.0,) * n)],
            },
        )
        assert lag.detect(RULES["KafkaConsumerGroupLag"], ctx(src)) == [], n
    ts = times(6, 60)  # five minutes of a frozen offset with members: half the 10 min window, judged: STALL
    src = FakeSource(
        instant={M["group_lag_seconds"]: [InstantSample(key, 2.0)]},
        ranges={
            M["group_lag"]: [Series(key, ts, (30.0,) * 6)],
            M["topic_messages_in"]: [Series({"cluster": "c1", "topic": "orders.a"}, ts, (0.0,) * 6)],
            M["group_members"]: [Series({"cluster": "c1", "group": "shop.new"}, ts, (1.0,) * 6)],
        },
    )
    [obs] = lag.detect(RULES["KafkaConsumerGroupLag"], ctx(src))
    assert obs.labels["status"] == "STALL"


def test_slow_clients_shell_names_the_client_and_its_tenant():
    ts = times(30, 30)
    bk = {"cluster": "c1", "broker": "1"}
    src = FakeSource(
        instant={
            M["client_request_time"]: [
                InstantSample({"user": "", "client_id": "shop-reader"}, 0.4),
                InstantSample({"user": "", "client_id": "bulk"}, 0.3),
            ],
            M["client_fetch_rate"]: [
                InstantSample({"user": "", "client_id": "shop-reader"}, 1000.0),
                InstantSample({"user": "", "client_id": "bulk"}, 5e7),
            ],
        },
        ranges={
            M["response_queue_size"]: [Series(bk, ts, (120.0,) * 30)],
            M["network_processor_idle"]: [Series(bk, ts, (0.9,) * 15 + (0.4,) * 15)],
        },
    )
    [obs] = clients.detect_slow_clients(RULES["KafkaResponseQueueBacklog"], ctx(src))
    assert obs.labels == bk and obs.evidence["slow_client"] == "shop-reader"
    assert obs.evidence["clients"][0]["tenant"] == "shop"
    assert any('broker="1"' in q for q in src.seen)  # client detail is read for that broker only


def test_slow_clients_shell_names_one_slow_reader_among_fast_consumers_from_its_socket_backlog():
    # Five fast consumers keep the broker's p99 response send time at 2 ms and the queue empty: the p99 trigger sees
    # nothing. The slow reader's socket send queue on broker 2 stayed full in 23 of the host collector's 24 samples.
    ts = times(30, 30)
    bk = {"cluster": "c1", "broker": "2"}
    peer = {**bk, "peer": "10.0.0.7"}
    src = FakeSource(
        instant={
            "sum_over_time(kafka_host_tcp": [
                InstantSample(peer, 23 * 150_000.0),
                InstantSample({**bk, "peer": "127.0.0.1"}, 2 * 9_000.0),
            ],
            "count_over_time(kafka_host_tcp": [
                InstantSample(peer, 23.0),
                InstantSample({**bk, "peer": "127.0.0.1"}, 2.0),
            ],
            "count_over_time(kafka_host_filesystem_avail": [InstantSample(bk, 24.0)],
            M["group_member_info"]: [
                InstantSample(
                    {
                        "client_host": "10.0.0.7",
                        "client_id": "shop-slow-reader",
                        "group": "shop.slow",
                        "tenant": "shop",
                    },
                    1.0,
                )
            ],
        },
        ranges={
            M["response_queue_size"]: [Series(bk, ts, (0.0,) * 30)],
            M["network_processor_idle"]: [Series(bk, ts, (0.95,) * 30)],
            M["request_latency"]: [Series(bk, ts, (0.002,) * 30)],
        },
    )
    [obs] = clients.detect_slow_clients(RULES["KafkaResponseQueueBacklog"], ctx(src))
    ev = obs.evidence
    assert obs.labels == bk and ev["cause"] == "slow_readers" and ev["trigger"] == "socket_backlog"
    assert ev["peer"] == "10.0.0.7" and ev["backed_up_share"] == 0.958 and ev["send_queue_bytes"] == 150_000.0
    assert ev["slow_client"] == "shop-slow-reader" and ev["slow_client_detail"]["tenant"] == "shop"
    # the same broker with the reader's queue drained now and then (in 12 of 24 samples): nothing
    src.instant["count_over_time(kafka_host_tcp"] = [InstantSample(peer, 12.0)]
    assert clients.detect_slow_clients(RULES["KafkaResponseQueueBacklog"], ctx(src)) == []


def test_latency_shell_compares_history_and_peers():
    ts = times(288, 300)
    split = NOW.timestamp() - 600

    def series(broker, slow):
        return Series(
            {"cluster": "c1", "broker": broker, "request": "Produce"},
            ts,
            tuple(0.5 if (slow and t > split) else 0.1 for t in ts),
        )

    src = FakeSource(ranges={'request="Produce"': [series("1", True), series("2", False), series("3", False)]})
    obs = latency.detect(RULES["KafkaLatencyRegression"], ctx(src))
    assert [(o.labels["broker"], o.labels["request"]) for o in obs] == [("1", "Produce")]
    assert obs[0].evidence["baseline_seconds"] == 0.1 and obs[0].evidence["peer_median_seconds"] == 0.1
    assert any('phase="total"' in q for q in src.seen)


def test_outdated_clients_alerts_on_old_software_never_on_a_missing_name():
    """A connection without a KIP-511 software name ("unknown") is no evidence of age: kafkajs 2.2.4, current, sends
    none, like a pre-2.4 Java client (issue 28). Only a name and version below the minimum raise the alert; the
    advisor lists nameless connections as unknown software, with the possibilities."""
    rows = [
        InstantSample({"cluster": "c1", "broker": "2", "client_software_name": n, "client_software_version": v}, 3.0)
        for n, v in (("unknown", "unknown"), ("apache-kafka-java", "2.3.1"), ("apache-kafka-java", "3.9.1"))
    ]
    # the nameless connections held all window too (what the alert asked for before): 3 beyond the replica fetchers
    src = FakeSource(
        instant={
            'client_software_name="unknown"': [InstantSample({"cluster": "c1", "broker": "2"}, 3.0)],
            "client_software_version": rows,
        }
    )
    obs = clients.detect_outdated_clients(RULES["KafkaOutdatedClient"], ctx(src))
    assert [(o.labels["client_software_name"], o.labels["client_software_version"]) for o in obs] == [
        ("apache-kafka-java", "2.3.1")
    ]
    assert obs[0].evidence["minimum_version"] == "2.8.0"


def test_replica_fetch_connections_in_a_cluster():
    from monitor.core.clients import replica_fetch_connections_in_cluster

    assert replica_fetch_connections_in_cluster(3) == 6  # each of 3 brokers holds one from each of the other 2
    assert replica_fetch_connections_in_cluster(3, fetchers=2) == 12
    assert replica_fetch_connections_in_cluster(1) == 0 and replica_fetch_connections_in_cluster(0) == 0
