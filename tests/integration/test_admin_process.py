"""The Admin API client in its own process (collectors.admin_process) against the real stack: it answers as the
in-process client does; when its process dies (the way librdkafka#5040 and #4605 kill it: SIGSEGV, SIGABRT) or hangs
(SIGSTOP), the call says so within its timeout, the round fails as a failed Admin target, and the next round works
with a fresh process. The signals are real; only their cause (a librdkafka fault) is stood in for."""

from __future__ import annotations

import os
import signal
import time

import pytest

from collectors.admin import AdminCollector
from collectors.admin_client import KafkaAdmin
from collectors.admin_process import GRACE_SECONDS, IsolatedAdmin
from collectors.catalog import TenantLookup
from collectors.types import TargetStatus
from monitor.core.errors import TargetTimeout, TransportError
from monitor.core.metric_names import M
from monitor.core.tenancy import TenantIndex
from monitor.stack.kafka import NUM_IO_THREADS

pytestmark = pytest.mark.integration
HANDLER_THREADS = M["request_handler_threads"]


@pytest.fixture
def cluster(stack):
    return stack.config().clusters[0]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child not yet reaped is a zombie: dead for this purpose.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def test_isolated_client_answers_like_the_in_process_one(cluster):
    settings = cluster.client_settings()
    local = KafkaAdmin(settings, timeout=10)
    isolated = IsolatedAdmin(settings, timeout=10, client=KafkaAdmin)
    try:
        a, b = local.cluster(timeout=10), isolated.cluster(timeout=10)
        assert a.brokers == b.brokers and len(a.brokers) == 3
        assert {(p.topic, p.partition, p.replicas) for p in a.partitions} == {
            (p.topic, p.partition, p.replicas) for p in b.partitions
        }
        topics = sorted({p.topic for p in a.partitions})[:5]
        assert isolated.min_insync_replicas(topics, timeout=10) == local.min_insync_replicas(topics, timeout=10)
        # each broker's num.io.threads, as server.properties sets it, asked as the monitoring principal (SASL_SSL;
        # its ACL: DescribeConfigs on the cluster)
        threads = {b: NUM_IO_THREADS for b in a.brokers}
        assert (
            isolated.handler_threads(a.brokers, timeout=10) == threads == local.handler_threads(a.brokers, timeout=10)
        )
        assert {g.group for g in isolated.groups(timeout=10)} == {g.group for g in local.groups(timeout=10)}
        assert isolated.pid != os.getpid() and _alive(isolated.pid)
    finally:
        isolated.close()
    assert not _alive(isolated.pid)


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGABRT])
def test_a_crashed_client_process_fails_one_round_and_the_next_round_recovers(cluster, sig):
    collector = AdminCollector(cluster, tenants=TenantLookup(TenantIndex(()), cluster.name))
    target = collector.targets()[0]
    try:
        first = collector.collect_target(target, now=time.time())
        assert first.status is TargetStatus.OK, first.message
        # the advisor's request-handler capacity: each broker's num.io.threads, read in the client's first round
        threads = {dict(x.labels)["broker"]: x.value for x in first.samples if x.name == HANDLER_THREADS}
        assert threads == {"1": NUM_IO_THREADS, "2": NUM_IO_THREADS, "3": NUM_IO_THREADS}, first.message
        pid = collector._admin.pid
        os.kill(pid, sig)
        time.sleep(0.5)
        crashed = collector.collect_target(target, now=time.time())
        assert crashed.status is not TargetStatus.OK
        assert sig.name in crashed.message and "librdkafka" in crashed.message, crashed.message
        assert collector._admin is None and not _alive(pid)
        again = collector.collect_target(target, now=time.time())
        assert again.status is TargetStatus.OK, again.message
        assert collector._admin.pid != pid
        assert {s.name for s in again.samples} >= {"kafka_cluster_broker_up", "kafka_health_admin_skipped_groups"}
    finally:
        collector.close()


def test_a_hung_client_process_times_out_is_killed_and_replaced(cluster):
    admin = IsolatedAdmin(cluster.client_settings(), timeout=2, client=KafkaAdmin)
    pid = admin.pid
    os.kill(pid, signal.SIGSTOP)
    started = time.monotonic()
    try:
        with pytest.raises(TargetTimeout, match="did not answer within"):
            admin.cluster(timeout=2)
        took = time.monotonic() - started
        assert 2 <= took < 2 + GRACE_SECONDS + 3, took
        assert admin.broken and not _alive(pid)
        with pytest.raises(TransportError, match="fresh one starts next round"):
            admin.cluster(timeout=2)
    finally:
        admin.close()


def test_bad_client_settings_fail_at_start_with_a_clear_error_and_no_secret(cluster):
    settings = {
        **cluster.client_settings(),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "NOPE",
        "sasl.username": "u",
        "sasl.password": "s3cr3t-do-not-show",
    }
    with pytest.raises(TransportError) as info:
        IsolatedAdmin(settings, timeout=5, client=KafkaAdmin)
    assert "Admin client not created" in str(info.value) and "s3cr3t" not in str(info.value)


def test_live_groups_are_described_through_kafka_python_as_librdkafka_describes_them(stack, cluster):
    """Issue 33: the Admin client lists and describes the groups through kafka-python (DescribeGroups for a classic
    group, ConsumerGroupDescribe, API 69, for a KIP-848 one: schema shipped in collectors/kafka_messages), and gives
    for each live group what librdkafka's path (the fallback) gives: state, members, client ids and hosts, and each
    member's partitions."""
    import uuid

    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, NewTopic

    from tests.conftest import wait_until

    run = uuid.uuid4().hex[:8]
    topic = f"describe33.{run}"
    servers = stack.layout.bootstrap_servers
    raw = AdminClient({"bootstrap.servers": servers})
    raw.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])[topic].result(60)
    kinds = {f"describe33-classic-{run}": "classic", f"describe33-kip848-{run}": "consumer"}
    consumers = [
        Consumer(
            {
                "bootstrap.servers": servers,
                "group.id": group,
                "group.protocol": protocol,
                "client.id": f"{protocol}-{run}",
                "enable.auto.commit": False,
            }
        )
        for group, protocol in kinds.items()
    ]
    admin = KafkaAdmin(cluster.client_settings(), timeout=10)
    try:
        for c in consumers:
            c.subscribe([topic])
        admin._offsets_pending.result(60)  # the kafka-python client, connected in the background

        seen: dict[str, object] = {}

        def same() -> object:
            for c in consumers:
                c.poll(0.2)  # the members take their assignments from poll
            mine = {g.group: g for g in admin.groups(timeout=10) if g.group in kinds}
            theirs = {g.group: g for g in admin._librdkafka_groups(timeout=10) if g.group in kinds}
            seen.update(kafka_python=mine, librdkafka=theirs)
            done = all(
                g.state == "stable" and sum(len(tps) for _, _, tps in g.member_assignments) == 4 for g in mine.values()
            )
            return done and len(mine) == 2 and mine == theirs and mine

        described = wait_until(
            same, 90, what=lambda: f"both groups stable, assigned and described alike by both paths: {seen}"
        )
        assert admin._groups is not None  # the kafka-python path answered
        for group, protocol in kinds.items():
            g = described[group]
            assert (g.members, g.simple) == (1, False)
            assert [c for c, _ in g.member_clients] == [f"{protocol}-{run}"]
            assert g.member_assignments[0][2] == tuple((topic, p) for p in range(4))
    finally:
        for c in consumers:
            c.close()
        if admin._offsets is not None:
            admin._offsets.close()
        for f in raw.delete_topics([topic], operation_timeout=60).values():
            f.result(90)
