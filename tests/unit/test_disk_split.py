"""Whose data fills a disk (issue 20): the split of a filesystem's growth into tenants' Kafka data, Kafka data of no
tenant and the rest, the routing that follows, humanized figures, and a filesystem shared by several brokers
counted once (by the disk detector and by capacity planning)."""

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from alerts.detectors import DetectorContext, disk
from alerts.detectors.disk import (
    Attribution,
    Cause,
    attribute,
    observations,
    split_growth,
)
from alerts.rules import load_rules
from alerts.types import Severity
from monitor.advisor.capacity import (
    BrokerUsage,
    ClusterUsage,
    LogDirDisk,
    disk_totals,
    plan,
    same_filesystems,
)
from monitor.advisor.source import read_usage
from monitor.core.config import parse_config
from monitor.core.humanize import (
    humanize_bytes,
    humanize_rate,
    humanize_seconds,
    humanize_share,
)
from monitor.core.metric_names import M
from monitor.core.prom import InstantSample, Series
from monitor.core.tenancy import TenantIndex
from tests.harness.fake_source import FakeSource

pytestmark = pytest.mark.unit
MiB = 2**20
GiB = 2**30
GB = 10**9

# ------------------------------------------------------------------------------------------------ the split
#
# One filesystem of 100,000 MiB, sampled every 60 s for 9 minutes (10 points), its free space falling 1 MiB/s to
# 36,000 MiB: whoever fills it, the ETA is 36,000 MiB / 1 MiB/s = 36,000 s = 10 h. The Kafka series grow linearly at
# the rates given (MiB/s); "rest" is what is not Kafka data: 1 MiB/s less Kafka's. Shares are of the parts that grew.

SIZE = 100_000 * MiB
TIMES = [i * 60.0 for i in range(10)]
FREE = [36_000 * MiB + (540 - t) * MiB for t in TIMES]


def _kafka(rates: dict) -> dict:
    """{owner: [rate, ...]} -> {owner: [(times, values), ...]}: one linear series per rate (a topic on a broker)."""
    return {owner: [(TIMES, [5_000 * MiB + r * MiB * t for t in TIMES]) for r in rs] for owner, rs in rates.items()}


# (no, Kafka series' rates per owner in MiB/s, kafka log sizes known, expected tenants' rates, untenanted, kafka,
#  rest, cause, drivers with their share)
SPLIT_CASES = [
    # 1: nothing of Kafka grows: all of the growth is not Kafka data; operators only
    (1, {}, True, (), 0.0, 0.0, 1.0, Cause.NOT_KAFKA, ()),
    # 2: tenant a writes 0.9 of the 1 MiB/s: a drives the ETA (90 %)
    (2, {"a": [0.9]}, True, (("a", 0.9),), 0.0, 0.9, 0.1, Cause.TENANTS, (("a", 0.9),)),
    # 3: a 0.3, b 0.2, rest 0.5: Kafka's half is enough to be Kafka's; only a reaches 25 % (b is 20 %)
    (3, {"a": [0.3], "b": [0.2]}, True, (("a", 0.3), ("b", 0.2)), 0.0, 0.5, 0.5, Cause.TENANTS, (("a", 0.3),)),
    # 4: a 0.2, b 0.2, rest 0.6: Kafka 40 % < 50 %: not Kafka data, and neither tenant is told
    (4, {"a": [0.2], "b": [0.2]}, True, (("a", 0.2), ("b", 0.2)), 0.0, 0.4, 0.6, Cause.NOT_KAFKA, ()),
    # 5: internal topics 0.8, a 0.1, rest 0.1: Kafka data, but no tenant's (a 10 %)
    (5, {None: [0.8], "a": [0.1]}, True, (("a", 0.1),), 0.8, 0.9, 0.1, Cause.KAFKA, ()),
    # 6: a writes 1.5 while other files shrink 0.5: net 1 MiB/s; a is all of what grew (1.5 / 1.5 = 100 %)
    (6, {"a": [1.5]}, True, (("a", 1.5),), 0.0, 1.5, -0.5, Cause.TENANTS, (("a", 1.0),)),
    # 7: four tenants at 0.25 each: each drives 25 %; the top 3 are named (ties by name)
    (
        7,
        {"d": [0.25], "c": [0.25], "b": [0.25], "a": [0.25]},
        True,
        (("a", 0.25), ("b", 0.25), ("c", 0.25), ("d", 0.25)),
        0.0,
        1.0,
        0.0,
        Cause.TENANTS,
        (("a", 0.25), ("b", 0.25), ("c", 0.25)),
    ),
    # 8: a tenant's growth on two brokers sharing the filesystem (0.4 + 0.4) is summed: 80 %
    (8, {"a": [0.4, 0.4]}, True, (("a", 0.8),), 0.0, 0.8, 0.2, Cause.TENANTS, (("a", 0.8),)),
    # 9: Kafka's log sizes unknown (no series on the cluster): not attributed at all
    (9, {}, False, (), 0.0, 0.0, 1.0, Cause.UNKNOWN, ()),
]


@pytest.mark.parametrize(
    "no, rates, known, tenants, untenanted, kafka, rest, cause, drivers",
    SPLIT_CASES,
    ids=[f"case{c[0]}" for c in SPLIT_CASES],
)
def test_split_and_attribution(no, rates, known, tenants, untenanted, kafka, rest, cause, drivers):
    split = split_growth(TIMES, FREE, SIZE, _kafka(rates))
    assert split.eta_seconds == pytest.approx(36_000)
    assert split.total_bytes_per_second == pytest.approx(MiB)
    assert split.free_bytes == 36_000 * MiB
    assert [t for t, _ in split.tenants] == [t for t, _ in tenants]
    assert [r / MiB for _, r in split.tenants] == pytest.approx([r for _, r in tenants])
    assert split.untenanted_bytes_per_second / MiB == pytest.approx(untenanted)
    assert split.kafka_bytes_per_second / MiB == pytest.approx(kafka)
    assert split.rest_bytes_per_second / MiB == pytest.approx(rest, abs=1e-9)
    verdict = attribute(split, kafka_known=known)
    assert verdict.cause is cause
    assert [t for t, _ in verdict.tenants] == [t for t, _ in drivers]
    assert [s for _, s in verdict.tenants] == pytest.approx([s for _, s in drivers])


def test_a_filesystem_that_does_not_grow_has_no_split():
    assert split_growth(TIMES, [36_000 * MiB] * 10, SIZE, _kafka({"a": [0.5]})) is None
    assert split_growth(TIMES[:3], FREE[:3], SIZE, {}) is None  # too few points


def test_kafka_points_outside_the_filesystem_window_are_not_counted():
    # the tenant's series goes back before the filesystem's window (the log dir moved): only its points inside count
    early = [-600.0, -300.0]
    series = {"a": [(early + TIMES, [0.0, 10_000 * MiB] + [10_000 * MiB + 0.5 * MiB * t for t in TIMES])]}
    split = split_growth(TIMES, FREE, SIZE, series)
    assert dict(split.tenants)["a"] == pytest.approx(0.5 * MiB)


def test_a_tenant_bounded_by_retention_grows_at_zero():
    # a's log: one retention cycle seen (a drop of 500 MiB, more than the filesystem's 0.2 % drop floor) and below
    # its peak since: bounded, so it grows at 0 and the growth is not Kafka's
    values = [5_000 * MiB + 100 * MiB * i for i in range(5)] + [4_900 * MiB + 10 * MiB * i for i in range(5)]
    split = split_growth(TIMES, FREE, SIZE, {"a": [(TIMES, values)]})
    assert dict(split.tenants)["a"] == 0.0
    assert attribute(split, kafka_known=True).cause is Cause.NOT_KAFKA


# ------------------------------------------------------------------------------------------------ what is said

PLACE = {"cluster": "c1", "broker": "1", "path": "/data/kafka"}
SHARED = (
    LogDirDisk("1", "/data/kafka", "h", SIZE, 36_000 * MiB),
    LogDirDisk("2", "/data/kafka2", "h", SIZE, 36_000 * MiB),
)


def test_not_kafka_data_is_one_operator_alert_with_the_whole_split():
    split = split_growth(TIMES, FREE, SIZE, _kafka({"a": [0.2], "b": [0.1]}))
    [(labels, ev)] = observations(PLACE, split, Attribution(Cause.NOT_KAFKA), SHARED, window=540)
    assert labels == {**PLACE, "filled_by": "not Kafka data"}  # no tenant: operators only
    assert ev["summary"] == (
        "Log dir /data/kafka of broker 1 (c1) predicted full in 10 h (35.2 GiB free, growing "
        "1 MiB/s): not Kafka data, 70 % of the growth; Kafka 30 % (tenant a 20 %, tenant b 10 %)"
    )
    assert ev["eta"] == "10 h" and ev["free"] == "35.2 GiB free" and ev["cause"] == "not_kafka"
    assert ev["not_kafka_share"] == 0.7 and ev["kafka_share"] == 0.3
    assert ev["not_kafka_bytes_per_second"] == pytest.approx(0.7 * MiB, rel=1e-3)
    assert [t["tenant"] for t in ev["tenants"]] == ["a", "b"] and ev["log_dirs"] == ["1:/data/kafka", "2:/data/kafka2"]


def test_each_driving_tenant_gets_its_own_alert_naming_no_other_tenant():
    split = split_growth(TIMES, FREE, SIZE, _kafka({"alpha": [0.6], "beta": [0.3]}))
    verdict = attribute(split, kafka_known=True)
    out = observations(PLACE, split, verdict, SHARED[:1], window=540)
    assert [labels for labels, _ in out] == [
        {**PLACE, "tenant": "alpha", "filled_by": "tenant alpha"},
        {**PLACE, "tenant": "beta", "filled_by": "tenant beta"},
    ]
    alpha, beta = out[0][1], out[1][1]
    assert alpha["summary"].endswith(
        "predicted full in 10 h (35.2 GiB free, growing 1 MiB/s): tenant alpha's data, 60 % of the growth"
    )
    assert alpha["tenant_share"] == 0.6 and alpha["other_kafka_bytes_per_second"] == pytest.approx(0.3 * MiB, rel=1e-3)
    assert "beta" not in str(alpha) and "alpha" not in str(beta)  # another tenant's figures only as a sum


# ------------------------------------------------------------------------------------------------ humanized

HUMANIZE_CASES = [
    (1, humanize_seconds(63_360), "17.6 h"),
    (2, humanize_seconds(36_000), "10 h"),
    (3, humanize_seconds(36 * 3600), "36 h"),  # days only from 2 d: an ETA reads in hours
    (4, humanize_seconds(3 * 86400), "3 d"),
    (5, humanize_seconds(90), "1.5 min"),
    (6, humanize_seconds(0), "0 s"),
    (7, humanize_seconds(float("inf")), "never"),
    (8, humanize_bytes(73 * GiB), "73 GiB"),
    (9, humanize_bytes(1536), "1.5 KiB"),
    (10, humanize_bytes(0), "0 B"),
    (11, humanize_bytes(2.5 * 2**40), "2.5 TiB"),
    (12, humanize_rate(1.2 * MiB), "1.2 MiB/s"),
    (13, humanize_share(0.724), "72 %"),
    (14, humanize_share(0.001), "<1 %"),
]


@pytest.mark.parametrize("no, got, expected", HUMANIZE_CASES, ids=[f"case{c[0]}" for c in HUMANIZE_CASES])
def test_humanized(no, got, expected):
    assert got == expected


# ------------------------------------------------------------------------------------------------ shared disks


def _d(broker, host, size, avail, path="/data", device=""):
    return LogDirDisk(broker, path, host, size, avail, device)


def test_log_dirs_on_one_filesystem_are_grouped():
    dirs = [
        _d("3", "h1", 1000 * GB, 400 * GB + 4096),
        _d("1", "h1", 1000 * GB, 400 * GB),
        _d("2", "h1", 1000 * GB, 400 * GB),
        _d("4", "h2", 1000 * GB, 400 * GB),  # another host: another filesystem, whatever its figures
        _d("10", "h1", 1000 * GB, 300 * GB),  # same size, other free space: another disk
        _d("5", "h1", 500 * GB, 400 * GB),
    ]  # other size
    groups = same_filesystems(dirs)
    assert [[d.broker for d in g] for g in groups] == [["1", "2", "3"], ["4"], ["5"], ["10"]]


def test_a_device_label_decides_over_the_figures():
    dirs = [
        _d("1", "h", 1000 * GB, 400 * GB, device="sdb"),
        _d("2", "h", 1000 * GB, 400 * GB, device="sdc"),
        _d("3", "h", 1000 * GB, 100 * GB, device="sdb"),
    ]
    assert [[d.broker for d in g] for g in same_filesystems(dirs)] == [["1", "3"], ["2"]]


def test_one_device_is_one_filesystem_even_with_free_space_10_mib_apart():
    # brokers 1 and 2 on one host's 8:1, scraped while something wrote 10 MiB: the heuristic alone splits them
    dirs = [_d("1", "h", 1000 * GB, 400 * GB, device="8:1"), _d("2", "h", 1000 * GB, 400 * GB - 10 * MiB, device="8:1")]
    assert [[d.broker for d in g] for g in same_filesystems(dirs)] == [["1", "2"]]
    unlabelled = [replace(d, device="") for d in dirs]
    assert [[d.broker for d in g] for g in same_filesystems(unlabelled)] == [["1"], ["2"]]


def test_two_devices_of_equal_figures_are_two_filesystems():
    # two disks of one model, equally full: the heuristic alone merges them
    dirs = [_d("1", "h", 1000 * GB, 400 * GB, device="8:1"), _d("2", "h", 1000 * GB, 400 * GB, device="8:17")]
    assert [[d.broker for d in g] for g in same_filesystems(dirs)] == [["1"], ["2"]]
    unlabelled = [replace(d, device="") for d in dirs]
    assert [[d.broker for d in g] for g in same_filesystems(unlabelled)] == [["1", "2"]]


def test_one_device_number_on_two_hosts_is_two_filesystems():
    dirs = [_d("1", "h1", 1000 * GB, 400 * GB, device="8:1"), _d("2", "h2", 1000 * GB, 400 * GB, device="8:1")]
    assert [[d.broker for d in g] for g in same_filesystems(dirs)] == [["1"], ["2"]]


def _broker(b, disks=()):
    size = disks[0].size_bytes if disks else 1000 * GB
    avail = disks[0].avail_bytes if disks else 400 * GB
    return BrokerUsage(
        broker=b,
        disk_size_bytes=size,
        disk_avail_bytes=avail,
        partitions=10,
        leaders=5,
        handler_idle_at_peak=0.9,
        network_idle_at_peak=0.9,
        disks=tuple(disks),
    )


def test_capacity_counts_a_shared_filesystem_once():
    # three brokers on one machine, one 1000 GB filesystem with 400 GB available: 1000 GB of disk, 600 GB used
    shared = [_broker(b, [_d(b, "localhost", 1000 * GB, 400 * GB, path=f"/data/{b}")]) for b in ("1", "2", "3")]
    assert disk_totals(shared) == (1000 * GB, 600 * GB)
    p = plan(ClusterUsage(cluster="c", brokers=tuple(shared), tenants=(), replication_factor=1.0))
    assert p.disk_total_bytes == 1000 * GB and p.disk_used_bytes == 600 * GB  # was 3000 GB and 1800 GB
    # brokers on their own hosts keep counting one disk each; a broker without log-dir detail counts its own
    apart = [_broker(b, [_d(b, f"h{b}", 1000 * GB, 400 * GB)]) for b in ("1", "2")] + [_broker("3")]
    assert disk_totals(apart) == (3000 * GB, 1800 * GB)


def _prom(used, sizes, logs) -> FakeSource:
    """Answers by metric, what the disk detector asks: used range, size now, log sizes range."""
    return FakeSource({M["fs_size"]: sizes}, {M["fs_avail"]: used, M["topic_size"]: logs})


CONFIG = parse_config("""
clusters: [{name: local, bootstrap_servers: "localhost:9092"}]
tenants:
  - name: shop
    selectors: [{cluster: local, topic_prefixes: [orders.]}]
""")
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def _detect(logs):
    t0 = NOW.timestamp() - 540
    ts = tuple(t0 + t for t in TIMES)
    used = tuple(SIZE - f for f in FREE)
    dirs = [{"cluster": "local", "host": "localhost", "broker": b, "path": f"/stack/data/broker-{b}"} for b in "123"]
    src = _prom(
        used=[Series(d, ts, used) for d in dirs],
        sizes=[InstantSample(d, SIZE) for d in dirs],
        logs=[Series(labels, ts, tuple(5 * GiB + r * MiB * t for t in TIMES)) for labels, r in logs],
    )
    ctx = DetectorContext(source=src, now=NOW, config=CONFIG, tenants=TenantIndex(CONFIG.tenants))
    return disk.detect({r.name: r for r in load_rules(CONFIG.rules)}["KafkaDiskFullRisk"], ctx)


def test_detector_one_alert_per_shared_filesystem_not_kafka_data():
    # the local stack: three brokers' log dirs on the machine's disk, filled by something else; Kafka's logs flat
    [obs] = _detect([({"cluster": "local", "broker": b, "topic": "orders.a"}, 0.0) for b in "123"])
    assert obs.labels == {
        "cluster": "local",
        "broker": "1",
        "path": "/stack/data/broker-1",
        "filled_by": "not Kafka data",
    }
    assert obs.severity is Severity.WARNING and obs.value == 36_000
    assert obs.evidence["log_dirs"] == [f"{b}:/stack/data/broker-{b}" for b in "123"]
    assert "not Kafka data, 100 % of the growth" in obs.evidence["summary"]


def test_detector_sums_the_tenants_data_of_every_broker_on_the_filesystem():
    # 0.3 MiB/s of shop's topic on each of the three brokers: 0.9 of the 1 MiB/s is shop's
    logs = [({"cluster": "local", "broker": b, "topic": "orders.a"}, 0.3) for b in "123"]
    logs.append(({"cluster": "local", "broker": "1", "topic": "__consumer_offsets"}, 0.0))
    [obs] = _detect(logs)
    assert obs.labels["tenant"] == "shop" and obs.labels["filled_by"] == "tenant shop"
    assert obs.evidence["tenant_share"] == 0.9
    assert obs.evidence["summary"].endswith("tenant shop's data, 90 % of the growth")


def test_capacity_source_reads_each_log_dirs_filesystem_and_the_plan_counts_a_shared_one_once():
    dirs = [{"cluster": "local", "host": "localhost", "broker": b, "path": f"/stack/broker-{b}"} for b in "123"]

    prom = FakeSource(
        {
            M["fs_size"]: [InstantSample(d, 1000 * GB) for d in dirs],
            # one scrape, the same filesystem: 4 KiB apart at most
            M["fs_avail"]: [InstantSample(d, 400 * GB + 4096 * i) for i, d in enumerate(dirs)],
        }
    )
    usage = read_usage(prom, cluster="local", tenants=(), now=NOW)
    assert [b.disk_size_bytes for b in usage.brokers] == [1000 * GB] * 3  # each broker sees its filesystem
    assert [[d.path for d in b.disks] for b in usage.brokers] == [[f"/stack/broker-{b}"] for b in "123"]
    p = plan(usage)
    assert p.disk_total_bytes == 1000 * GB and p.disk_used_bytes == 600 * GB  # not 3000 GB and 1800 GB


def _capacity_plan_of(devices, avails):
    dirs = [
        {"cluster": "local", "host": "localhost", "broker": b, "path": f"/stack/broker-{b}", "device": dev}
        for b, dev in zip("12", devices)
    ]

    prom = FakeSource(
        {
            M["fs_size"]: [InstantSample(d, 1000 * GB) for d in dirs],
            M["fs_avail"]: [InstantSample(d, a) for d, a in zip(dirs, avails)],
        }
    )
    return plan(read_usage(prom, cluster="local", tenants=(), now=NOW))


def test_capacity_source_counts_by_the_device_label():
    one = _capacity_plan_of(("8:1", "8:1"), (400 * GB, 400 * GB - 10 * MiB))  # one disk, 10 MiB apart
    assert one.disk_total_bytes == 1000 * GB
    two = _capacity_plan_of(("8:1", "8:17"), (400 * GB, 400 * GB))  # two disks, equal figures
    assert two.disk_total_bytes == 2000 * GB and two.disk_used_bytes == 1200 * GB


def test_the_disk_summary_reads_its_eta_in_words():
    from alerts.rules import load_rules, render_annotations

    (rule,) = [r for r in load_rules() if r.name == "KafkaDiskFullRisk"]
    out = render_annotations(
        rule.annotations, {"path": "/data", "broker": "3", "cluster": "local", "filled_by": "not Kafka data"}, 63360.0
    )
    assert "predicted full in 17.6 h; filled by not Kafka data" in out["summary"]
    assert rule.params.get("every_broker") is True  # a broker the host collector misses is reported (no data)
