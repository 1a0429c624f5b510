"""Host collector on the checked-in fake /proc; Admin API collector's pure parts (states, lag, lag seconds)."""

import os
from pathlib import Path

import pytest

from collectors.admin import AdminCollector
from collectors.admin_convert import (
    GroupOffsets,
    WatermarkHistory,
    cluster_samples,
    group_samples,
    lag_seconds,
)
from collectors.catalog import TenantLookup
from collectors.host import HostCollector, filesystem_samples, parse_tcp_backlogs
from collectors.types import ClusterState, GroupInfo, PartitionState, TargetStatus
from monitor.core.config import (
    BrokerTarget,
    ClusterConfig,
    TenantConfig,
    TenantSelector,
)
from monitor.core.errors import TargetForbidden, TargetTimeout, TargetUnreachable, TransportError
from monitor.core.tenancy import TenantIndex

pytestmark = pytest.mark.unit

PROC = Path(__file__).parent / "fixtures" / "collectors_proc"
CLUSTER = ClusterConfig(
    name="c1",
    bootstrap_servers="h:9092",
    brokers=(
        BrokerTarget(id=1, host="localhost", log_dirs=("/data/k1",)),
        BrokerTarget(id=2, host="localhost", log_dirs=("/data/k2", "/missing")),
        BrokerTarget(id=3, host="kafka3.example", log_dirs=("/data/k3",)),
    ),
)
TENANTS = TenantLookup(
    TenantIndex(
        [
            TenantConfig(
                name="alpha",
                selectors=(TenantSelector(cluster="c1", topic_prefixes=("alpha.",), group_prefixes=("alpha-",)),),
            )
        ]
    ),
    "c1",
)


def fake_statvfs(path):
    if path == "/missing":
        raise FileNotFoundError(path)
    # f_bsize, f_frsize, f_blocks, f_bfree, f_bavail, f_files, f_ffree, f_favail, f_flag, f_namemax
    return os.statvfs_result((4096, 4096, 1000, 400, 300, 0, 0, 0, 0, 255))


def fake_stat(path):
    # k1 and k2 on one filesystem (8:1), k3 on another (259:2); /gone lost between statvfs and stat
    if path == "/gone":
        raise FileNotFoundError(path)
    dev = os.makedev(259, 2) if path == "/data/k3" else os.makedev(8, 1)
    return os.stat_result((0o40755, 1, dev, 2, 0, 0, 4096, 0, 0, 0))


def values(samples):
    return {(s.name, s.labels): s.value for s in samples}


def test_host_collector_reads_fake_proc_and_log_dir_filesystems():
    hc = HostCollector(CLUSTER, proc_root=PROC, statvfs=fake_statvfs, stat=fake_stat, ticks_per_second=100)
    assert [t.name for t in hc.targets()] == ["host-localhost", "host-kafka3.example"]
    result = hc.collect_target(hc.targets()[0], now=1000.0)
    assert result.status is TargetStatus.OK
    v = values(result.samples)
    base = (("cluster", "c1"), ("host", "localhost"))
    k1 = base + (("broker", "1"), ("path", "/data/k1"), ("device", "8:1"))
    assert v[("kafka_host_filesystem_size_bytes", k1)] == 4096 * 1000
    k2 = base + (("broker", "2"), ("path", "/data/k2"), ("device", "8:1"))
    assert v[("kafka_host_filesystem_avail_bytes", k2)] == 4096 * 300
    assert not any(("path", "/missing") in k[1] for k in v)
    assert v[("kafka_host_cpu_seconds_total", base + (("mode", "user"),))] == 10.0
    assert v[("kafka_host_cpu_seconds_total", base + (("mode", "iowait"),))] == 0.5
    assert v[("kafka_host_memory_available_bytes", base)] == 1024000 * 1024
    assert v[("kafka_host_disk_read_bytes_total", base + (("device", "nvme0n1"),))] == 2000 * 512
    assert v[("kafka_host_disk_io_time_seconds_total", base + (("device", "nvme0n1"),))] == 1.5
    assert not any(("device", "loop0") in k[1] for k in v)
    assert v[("kafka_host_network_transmit_bytes_total", base + (("device", "eth0"),))] == 7777777


def test_each_log_dir_filesystem_is_labelled_with_its_device_major_minor():
    base = (("cluster", "c1"), ("host", "h"))
    samples = filesystem_samples(
        [("1", "/data/k1"), ("3", "/data/k3"), ("4", "/gone"), ("5", "/missing")], base, fake_statvfs, fake_stat
    )
    devices = {dict(s.labels)["broker"]: dict(s.labels).get("device") for s in samples}
    # /gone: statvfs answered, stat did not: the figures without a device (consumers fall back); /missing: skipped
    assert devices == {"1": "8:1", "3": "259:2", "4": None}
    assert len(samples) == 9


def test_remote_host_fails_clearly_instead_of_looking_empty():
    hc = HostCollector(CLUSTER, proc_root=PROC, statvfs=fake_statvfs)
    result = hc.collect_target(hc.targets()[1], now=1.0)
    assert result.status is TargetStatus.FAILED and str(result.reason) == "unreachable"
    assert "remote" in result.message


def test_offline_and_under_replicated_from_metadata_with_broker_up():
    state = ClusterState(
        brokers=(1, 2),
        controller_id=100,
        partitions=(
            PartitionState("alpha.t", 0, 1, (1, 2, 3), (1, 2)),
            PartitionState("alpha.t", 1, -1, (3,), ()),
            PartitionState("alpha.t", 2, 2, (1, 2), (1, 2)),
            PartitionState("b", 0, 1, (1,), (1,)),
        ),
    )
    v = values(cluster_samples(state, base=(("cluster", "c1"),), configured=[1, 2, 3], tenants=TENANTS))
    tl = (("cluster", "c1"), ("topic", "alpha.t"), ("tenant", "alpha"))
    assert v[("kafka_topic_offline_partitions", tl)] == 1
    assert v[("kafka_topic_under_replicated_partitions", tl)] == 1  # the offline one is not also counted as URP
    assert v[("kafka_topic_partitions", tl)] == 3
    assert v[("kafka_topic_replicas", tl)] == 3 + 1 + 2  # replication factor per partition, summed
    assert v[("kafka_cluster_broker_up", (("cluster", "c1"), ("broker", "3")))] == 0
    assert v[("kafka_cluster_controller_id", (("cluster", "c1"),))] == 100
    assert not any(name == "kafka_topic_under_min_isr_partitions" for name, _ in v)  # min ISR unknown: no series


def test_under_min_isr_per_topic_from_isr_sizes_and_the_topic_config():
    state = ClusterState(
        brokers=(1, 2, 3),
        controller_id=100,
        partitions=(
            PartitionState("alpha.t", 0, 1, (1, 2, 3), (1,)),  # ISR 1 < 2: acks=all producers fail
            PartitionState("alpha.t", 1, 2, (1, 2, 3), (2, 3)),  # at min ISR: fine
            PartitionState("alpha.t", 2, -1, (3,), ()),  # offline: counted as offline, not here
            PartitionState("b", 0, 1, (1, 2), (1,)),  # b's min ISR is 1
            PartitionState("c", 0, 1, (1, 2), (1,)),  # c's config unknown
        ),
        min_isr={"alpha.t": 2, "b": 1},
    )
    v = values(cluster_samples(state, base=(("cluster", "c1"),), configured=[1, 2, 3], tenants=TENANTS))
    umi = {labels[1][1]: x for (name, labels), x in v.items() if name == "kafka_topic_under_min_isr_partitions"}
    assert umi == {"alpha.t": 1, "b": 0}


def test_min_insync_replicas_is_read_for_new_topics_and_refreshed_not_every_round():
    admin = FakeAdmin()
    clock = [0.0]
    ac = AdminCollector(CLUSTER, tenants=TENANTS, admin_factory=lambda c: admin, clock=lambda: clock[0])
    for t in (0.0, 15.0, 30.0):
        clock[0] = t
        r = ac.collect_target(ac.targets()[0], now=t)
    assert admin.config_reads == [["alpha.t"]]  # once, not per round
    assert (
        values(r.samples)[
            ("kafka_topic_under_min_isr_partitions", (("cluster", "c1"), ("topic", "alpha.t"), ("tenant", "alpha")))
        ]
        == 1
    )
    clock[0] = 400.0
    ac.collect_target(ac.targets()[0], now=400.0)
    assert admin.config_reads == [["alpha.t"], ["alpha.t"]]  # refreshed after MIN_ISR_REFRESH_SECONDS


def _threads(r):
    return {
        dict(labels)["broker"]: x
        for (name, labels), x in values(r.samples).items()
        if name == "kafka_broker_request_handler_threads"
    }


def test_each_brokers_handler_threads_are_read_when_it_appears_refreshed_rarely_and_a_refusal_fails_nothing():
    """num.io.threads per broker (DescribeConfigs): broker 1 runs 16, broker 2 refuses (the principal lacks
    DescribeConfigs on the cluster). The round is good, broker 2 has no series (unknown, not Kafka's default 8) and
    every round's message says why; a broker that did not answer is asked again after a minute, one that did after
    five, a failed refresh keeps the value read, and a broker back in the metadata (restarted) is asked at once."""
    admin, clock = FakeAdmin(), [0.0]
    refused = TargetForbidden(
        "Admin API broker configs: not authorized (CLUSTER_AUTHORIZATION_FAILED): User:kafka-health needs an ACL "
        "allowing DescribeConfigs on the cluster"
    )
    admin.threads = {1: 16, 2: refused}
    ac = AdminCollector(CLUSTER, tenants=TENANTS, admin_factory=lambda c: admin, clock=lambda: clock[0])

    def round_at(t):
        clock[0] = t
        r = ac.collect_target(ac.targets()[0], now=t)
        assert r.status is TargetStatus.OK, r.message
        return r

    for t in (0.0, 15.0):
        r = round_at(t)
        assert _threads(r) == {"1": 16.0}
        assert "num.io.threads of broker 2 not read" in r.message and "DescribeConfigs on the cluster" in r.message
    assert admin.threads_asked == [[1, 2]]  # not every round
    admin.threads[2] = 8
    r = round_at(61.0)
    assert admin.threads_asked[-1] == [2] and _threads(r) == {"1": 16.0, "2": 8.0} and "num.io.threads" not in r.message
    admin.threads.pop(1)  # broker 1 does not answer its refresh: the value read stands
    r = round_at(301.0)
    assert admin.threads_asked[-1] == [1] and _threads(r) == {"1": 16.0, "2": 8.0}
    admin.brokers = (1,)  # broker 2 restarting: out of the metadata, no series; back: asked at once
    assert _threads(round_at(310.0)) == {"1": 16.0}
    admin.brokers, admin.threads[2] = (1, 2), 4
    assert _threads(round_at(325.0)) == {"1": 16.0, "2": 4.0} and admin.threads_asked[-1] == [2]
    admin.threads_fail = TargetUnreachable("Admin API broker configs: the Admin client process died")
    fresh = AdminCollector(CLUSTER, tenants=TENANTS, admin_factory=lambda c: admin, clock=lambda: clock[0])
    r = fresh.collect_target(fresh.targets()[0], now=330.0)
    assert r.status is TargetStatus.OK and _threads(r) == {}
    assert "num.io.threads of brokers 1, 2 not read" in r.message and "process died" in r.message


# (history [(t, hw)], committed, hw, now) -> expected lag seconds
LAG_CASES = [
    (1, [(0, 100), (10, 200)], 200, 200, 20, 0.0),  # caught up
    (2, [(0, 100), (10, 200)], 150, 200, 20, 14.9),  # message 150 arrived at ~t=5.1: interpolated
    (3, [(0, 100), (10, 200)], 50, 200, 20, 20.0),  # older than all history: lower bound = oldest sample age
    (4, [(0, 100), (10, 100), (20, 300)], 100, 300, 30, 19.95),  # plateau: arrived after t=10, not t=0
    (5, [], 5, 10, 20, 0.0),  # no history yet
    (6, [(0, 100)], 99, 100, 30, 30.0),  # single point
]


@pytest.mark.parametrize("case,history,committed,hw,now,expected", LAG_CASES, ids=[str(c[0]) for c in LAG_CASES])
def test_lag_seconds_table(case, history, committed, hw, now, expected):
    assert lag_seconds(history, committed, hw, now) == pytest.approx(expected, abs=0.01)


def test_watermark_history_keeps_plateau_ends_and_resets_on_recreation():
    h = WatermarkHistory(max_points=10)
    for t, hw in [(0, 5), (1, 5), (2, 5), (3, 5), (4, 9)]:
        h.add(("t", 0), t, hw)
    assert h.get(("t", 0)) == ((0, 5), (3, 5), (4, 9))
    h.add(("t", 0), 5, 2)  # went backwards: topic recreated
    assert h.get(("t", 0)) == ((5, 2),)


def test_group_lag_per_topic_includes_empty_groups_and_skips_uncommitted():
    h = WatermarkHistory()
    for p in (0, 1, 2):
        h.add(("alpha.t", p), 0.0, 10)
    groups = [
        GroupOffsets(GroupInfo("alpha-g", "empty", 0), {("alpha.t", 0): 4, ("alpha.t", 1): 10, ("alpha.t", 2): -1001}),
        GroupOffsets(GroupInfo("other", "stable", 2), {("alpha.t", 0): 12}),  # committed past hw: lag 0
    ]
    wm = {("alpha.t", 0): 10, ("alpha.t", 1): 10, ("alpha.t", 2): 10}
    v = values(group_samples(groups, wm, h, now=60.0, base=(("cluster", "c1"),), tenants=TENANTS))
    tl = (("cluster", "c1"), ("group", "alpha-g"), ("topic", "alpha.t"), ("tenant", "alpha"))
    assert v[("kafka_consumergroup_lag", tl)] == 6
    assert v[("kafka_consumergroup_partitions", tl)] == 2  # partition 2 never committed: unknown, not zero
    assert v[("kafka_consumergroup_committed_offset", tl)] == 14  # 4 + 10, the uncommitted partition left out
    assert v[("kafka_consumergroup_lag_seconds", tl)] == 60.0
    assert v[("kafka_consumergroup_members", (("cluster", "c1"), ("group", "alpha-g"), ("tenant", "alpha")))] == 0
    assert (
        v[
            (
                "kafka_consumergroup_state",
                (("cluster", "c1"), ("group", "alpha-g"), ("state", "empty"), ("tenant", "alpha")),
            )
        ]
        == 1
    )
    assert (
        v[("kafka_consumergroup_lag", (("cluster", "c1"), ("group", "other"), ("topic", "alpha.t"), ("tenant", "")))]
        == 0
    )


class FakeAdmin:
    """Records call order; the real KafkaAdmin runs in the integration tests."""

    def __init__(self, fail_metadata=False):
        self.calls, self.fail, self.fail_groups, self.config_reads = [], fail_metadata, False, []
        self.brokers = (1, 2)
        self.threads: dict = {1: 8, 2: 8}  # broker -> its num.io.threads, or the error its answer is; absent: no answer
        self.threads_fail: Exception | None = None  # raised by the whole call
        self.threads_asked: list[list[int]] = []

    def cluster(self, *, timeout):
        if self.fail:
            raise TargetUnreachable("Admin API metadata: all brokers are down")
        return ClusterState(self.brokers, 100, (PartitionState("alpha.t", 0, 1, (1, 2), (1,)),))

    def handler_threads(self, brokers, *, timeout):
        self.threads_asked.append(list(brokers))
        if self.threads_fail is not None:
            raise self.threads_fail
        return {b: self.threads[b] for b in brokers if b in self.threads}

    def min_insync_replicas(self, topics, *, timeout):
        self.config_reads.append(list(topics))
        return {t: 2 for t in topics}

    def groups(self, *, timeout):
        if self.fail_groups:
            raise TargetTimeout("Admin API list groups: no answer within 10s")
        return [GroupInfo("alpha-g", "stable", 1)]

    def committed(self, groups, *, timeout, group_timeout):
        self.calls.append("committed")
        return {g: {("alpha.t", 0): 3} for g in groups}

    def high_watermarks(self, tps, *, timeout):
        self.calls.append("watermarks")
        return {tp: 8 for tp in tps}


def test_admin_collector_reads_offsets_before_watermarks_and_contains_failures():
    admin = FakeAdmin()
    ac = AdminCollector(CLUSTER, tenants=TENANTS, admin_factory=lambda c: admin)
    r = ac.collect_target(ac.targets()[0], now=10.0)
    assert r.status is TargetStatus.OK and admin.calls == ["committed", "watermarks"]
    assert (
        values(r.samples)[
            (
                "kafka_consumergroup_lag",
                (("cluster", "c1"), ("group", "alpha-g"), ("topic", "alpha.t"), ("tenant", "alpha")),
            )
        ]
        == 5
    )
    down = AdminCollector(CLUSTER, tenants=TENANTS, admin_factory=lambda c: FakeAdmin(fail_metadata=True))
    r = down.collect_target(down.targets()[0], now=10.0)
    assert r.status is TargetStatus.FAILED and str(r.reason) == "unreachable" and r.samples == ()


def test_admin_collector_keeps_the_cluster_state_when_listing_groups_fails():
    # ListGroups goes to every broker: right after one dies it times out. The broker-down and offline-partition
    # series read before it must still be exported (they are what the alerts need then); only lag is missing.
    admin = FakeAdmin()
    ac = AdminCollector(CLUSTER, tenants=TENANTS, admin_factory=lambda c: admin)
    ac.collect_target(ac.targets()[0], now=10.0)
    admin.fail_groups = True
    r = ac.collect_target(ac.targets()[0], now=20.0)
    got = values(r.samples)
    assert r.status is TargetStatus.OK
    assert any(name == "kafka_cluster_broker_up" for name, _ in got)
    assert any(name == "kafka_topic_offline_partitions" for name, _ in got)
    assert not any(name == "kafka_consumergroup_lag" for name, _ in got)
    assert got[("kafka_health_admin_skipped_groups", (("cluster", "c1"),))] == 1  # the one group listed before
    assert r.message.startswith(
        "consumer groups not listed: Admin API list groups: no answer within 10s: the 1 "
        "groups of the last listing skipped"
    ), r.message  # said, not only logged


TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:4E21 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:4E21 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 0 10 -1
   2: 01DCDC0A:4E85 02DCDC0A:A0B2 01 0001F768:00000000 01:00000014 00000000     0        0 3 1 0000000000000000 20 4 0 10 -1
   3: 01DCDC0A:4E85 02DCDC0A:A0B4 01 00000100:00000000 01:00000014 00000000     0        0 4 1 0000000000000000 20 4 0 10 -1
   4: 0100007F:D431 0100007F:4E21 01 00009000:00000000 00:00000000 00000000     0        0 5 1 0000000000000000 20 4 0 10 -1
"""
TCP6 = """  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0000000000000000FFFF00000100007F:4E22 0000000000000000FFFF00000500007F:9C40 01 00000800:00000000 00:00000000 00000000     0        0 6 1 0000000000000000 20 4 0 10 -1
"""


def test_tcp_backlogs_sum_unacknowledged_bytes_per_broker_and_peer():
    ports = {20001: "1", 20002: "2", 20101: "1"}
    v = values(parse_tcp_backlogs([TCP, TCP6], (("cluster", "c1"),), ports))
    m = "kafka_host_tcp_send_queue_bytes"
    # two connections of one peer to broker 1's second listener, summed; the listening socket, an empty queue
    # and the client side of a loopback connection (local port not a listener) are not counted.
    assert v == {
        (m, (("cluster", "c1"), ("broker", "1"), ("peer", "10.220.220.2"))): 0x1F768 + 0x100,
        (m, (("cluster", "c1"), ("broker", "2"), ("peer", "127.0.0.5"))): 0x800,
    }


def _Fut(value=None, exc=None, *, pending=False):
    """A finished concurrent.futures.Future (what confluent-kafka's admin calls return), or one never answered."""
    import concurrent.futures

    f = concurrent.futures.Future()
    if pending:
        return f
    if exc is not None:
        f.set_exception(exc)
    else:
        f.set_result(value)
    return f


def test_groups_retries_a_failed_description_and_keeps_a_group_it_still_cannot_describe():
    """A group whose description fails is asked again alone; one that still fails keeps its listing state and
    unknown members (exported without kafka_consumergroup_members), so its lag is still read."""
    from types import SimpleNamespace

    from confluent_kafka import ConsumerGroupState, KafkaError, KafkaException

    from collectors.admin_client import KafkaAdmin

    def failure():
        return KafkaException(KafkaError(KafkaError.NOT_COORDINATOR, "ConsumerGroupDescribe: "))

    listing = [
        SimpleNamespace(group_id=g, state=s, is_simple_consumer_group=False)
        for g, s in (
            ("a", ConsumerGroupState.STABLE),
            ("flaky", ConsumerGroupState.STABLE),
            ("stuck", ConsumerGroupState.STABLE),
            ("stuck-empty", ConsumerGroupState.EMPTY),
        )
    ]
    member = SimpleNamespace(client_id="c", host="/10.0.0.1")
    desc = SimpleNamespace(state=ConsumerGroupState.STABLE, members=[member], is_simple_consumer_group=False)
    requests = []

    class FakeClient:
        def list_consumer_groups(self, request_timeout):
            return _Fut(SimpleNamespace(valid=listing))

        def describe_consumer_groups(self, ids, request_timeout):
            requests.append(list(ids))
            first = len(requests) == 1
            return {
                g: _Fut(exc=failure()) if g.startswith("stuck") or (g == "flaky" and first) else _Fut(desc) for g in ids
            }

    admin = KafkaAdmin.__new__(KafkaAdmin)
    admin._admin, admin._timeout = FakeClient(), 10.0
    admin.stale_coordinator = admin.replace_client = False
    groups = {g.group: g for g in admin._librdkafka_groups(timeout=10.0)}  # the fallback path
    assert admin.stale_coordinator and admin.replace_client  # NOT_COORDINATOR: replaced after this round
    # and asks it no offsets through librdkafka, whose OffsetFetch on NOT_COORDINATOR segfaults the process
    # (librdkafka#5040); kafka-python, which reads them where it can, looks the coordinators up afresh every call
    with pytest.raises(TransportError, match="stale"):
        admin._librdkafka_committed(["a"], timeout=5.0, group_timeout=2.5)
    # an empty group is not described: the listing says it has no members
    assert requests == [["a", "flaky", "stuck"], ["flaky", "stuck"]]
    assert groups["a"].members == 1 and groups["flaky"].members == 1
    assert groups["flaky"].member_clients == (("c", "/10.0.0.1"),)
    assert (groups["stuck"].state, groups["stuck"].members) == ("stable", None)
    assert (groups["stuck-empty"].state, groups["stuck-empty"].members) == ("empty", 0)

    h = WatermarkHistory()
    samples = values(
        group_samples(
            [GroupOffsets(groups["stuck"], {("alpha.t", 0): 4})],
            {("alpha.t", 0): 10},
            h,
            now=1.0,
            base=(("cluster", "c1"),),
            tenants=TENANTS,
        )
    )
    assert [k for k in samples if k[0] == "kafka_consumergroup_members"] == []
    assert (
        samples[
            ("kafka_consumergroup_lag", (("cluster", "c1"), ("group", "stuck"), ("topic", "alpha.t"), ("tenant", "")))
        ]
        == 6
    )


def test_a_group_whose_coordinator_never_answers_costs_its_own_description_only():
    """The description of a group whose coordinator is dead never comes back: the others are still described (the
    futures are waited for together), the group is kept from the listing, and the client is to be replaced."""
    import time
    from types import SimpleNamespace

    from confluent_kafka import ConsumerGroupState

    from collectors.admin_client import KafkaAdmin

    listing = [
        SimpleNamespace(group_id=g, state=ConsumerGroupState.STABLE, is_simple_consumer_group=False)
        for g in ("dead-coordinator", "b", "c")
    ]
    desc = SimpleNamespace(state=ConsumerGroupState.STABLE, members=[], is_simple_consumer_group=False)

    class FakeClient:
        def list_consumer_groups(self, request_timeout):
            return _Fut(SimpleNamespace(valid=listing))

        def describe_consumer_groups(self, ids, request_timeout):
            return {g: _Fut(pending=True) if g == "dead-coordinator" else _Fut(desc) for g in ids}

    admin = KafkaAdmin.__new__(KafkaAdmin)
    admin._admin, admin._timeout = FakeClient(), 10.0
    admin.stale_coordinator = admin.replace_client = False
    started = time.monotonic()
    groups = {g.group: g for g in admin._librdkafka_groups(timeout=0.3)}  # the fallback path
    assert time.monotonic() - started < 1.0
    assert groups["b"].members == 0 and groups["c"].members == 0  # described
    assert groups["dead-coordinator"].members is None  # from the listing
    assert admin.replace_client and not admin.stale_coordinator  # fresh client next round; offsets still asked


def test_admin_collector_replaces_a_client_whose_group_coordinator_is_stale():
    made = []

    def factory(cluster):
        made.append(FakeAdmin())
        return made[-1]

    ac = AdminCollector(CLUSTER, tenants=TENANTS, admin_factory=factory)
    target = ac.targets()[0]
    assert ac.collect_target(target, now=10.0).status is TargetStatus.OK
    ac.collect_target(target, now=20.0)
    assert len(made) == 1  # kept while healthy
    made[0].replace_client = True
    ac.collect_target(target, now=30.0)
    assert ac.collect_target(target, now=40.0).status is TargetStatus.OK
    assert len(made) == 2


def test_the_admin_seam_and_its_child_process_wrapper_do_not_import_each_other():
    # Both implement collectors.types.AdminApi; the collector hands IsolatedAdmin the KafkaAdmin class to run.
    import ast

    import collectors.admin_client as admin_client
    import collectors.admin_process as admin_process

    def imported(module) -> set[str]:
        tree = ast.parse(Path(module.__file__).read_text())
        return {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names} | {
            n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
        }

    assert "collectors.admin_process" not in imported(admin_client)
    assert not {"collectors.admin_client", "collectors.admin"} & imported(admin_process)


def test_metadata_lost_with_its_brokers_connection_is_asked_once_more():
    """A metadata request that went to a broker as it stopped (``Local: Broker transport failure``) is asked again
    within the same timeout: the round that must report the dying broker does not fail whole (CI, a fourth broker
    stopped and unregistered, then a one-round check saw no brokers). Twice lost, the round is unreachable."""
    from types import SimpleNamespace

    import pytest
    from confluent_kafka import KafkaError, KafkaException

    from collectors.admin_client import KafkaAdmin
    from monitor.core.errors import TargetUnreachable

    part = SimpleNamespace(id=0, leader=1, replicas=[1, 2], isrs=[1, 2])
    md = SimpleNamespace(
        brokers={1: None, 2: None},
        controller_id=1,
        topics={"t": SimpleNamespace(topic="t", error=None, partitions={0: part})},
    )

    class LosingFirst:
        def __init__(self, losses):
            self.losses, self.calls = losses, 0

        def list_topics(self, timeout):
            self.calls += 1
            if self.calls <= self.losses:
                raise KafkaException(KafkaError(KafkaError._TRANSPORT))
            return md

        def poll(self, timeout):
            return 0

    def admin_over(client):
        admin = KafkaAdmin.__new__(KafkaAdmin)
        admin._admin, admin._timeout = client, 10.0
        admin.stale_coordinator = admin.replace_client = False
        return admin

    once = LosingFirst(1)
    state = admin_over(once).cluster(timeout=5.0)
    assert state.brokers == (1, 2) and once.calls == 2
    twice = LosingFirst(2)
    with pytest.raises(TargetUnreachable):
        admin_over(twice).cluster(timeout=5.0)
    assert twice.calls == 2
