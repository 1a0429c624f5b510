"""A share group (KIP-932) of a real share consumer on the session stack (issue 29, item 4 and done-means).

Kafka's own share consumer (``ConsoleShareConsumer`` of the stack's kafka-tools jars: ``KafkaShareConsumer`` of
kafka-clients, in a JVM of its own, 64 MB heap) reads a topic of tenant ``share29``. ``collectors.group_kinds`` must
list the group as a ``share`` group, describe its member and per-partition start offset and lag, attribute it to the
tenant by its group prefix, read it ``idle`` once it has consumed what was written, and ``stalled`` when the
consumer is frozen (SIGSTOP: still a member, acquiring nothing) while records wait. Skipped on releases without
share groups (3.9, 4.1).
"""

from __future__ import annotations

import signal
import subprocess
import time
import uuid

import pytest

from collectors.catalog import TenantLookup
from collectors.group_kinds import GroupKinds, ShareGroup, share_status, share_tenant
from monitor.core.config import TenantConfig, TenantSelector
from monitor.core.kafka_versions import release
from monitor.core.tenancy import TenantIndex
from monitor.stack.kafka import require_java
from tests.conftest import wait_until
from tests.harness.engine import create_topics

pytestmark = [pytest.mark.e2e]


def _produce(bootstrap: str, topic: str, n: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, value=b"x" * 50, key=str(i).encode())
    assert p.flush(30) == 0


def test_share_group_listed_with_lag_tenant_and_stall(stack, tmp_path) -> None:
    from confluent_kafka.admin import NewTopic

    L = stack.layout
    if not release(L.kafka_version).has("share_groups"):
        pytest.skip(f"Kafka {L.kafka_version} has no share groups")
    run = uuid.uuid4().hex[:6]
    topic, group = f"share29-orders-{run}", f"share29-workers-{run}"
    create_topics(stack, [NewTopic(topic, num_partitions=2, replication_factor=3)])
    log = (tmp_path / "share-consumer.log").open("wb")
    consumer = subprocess.Popen(
        [
            require_java(),
            "-Xmx64m",
            "-cp",
            f"{L.jars_dir}/*",
            "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
            "--bootstrap-server",
            L.bootstrap_servers,
            "--topic",
            topic,
            "--group",
            group,
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    kinds = GroupKinds({"bootstrap.servers": L.bootstrap_servers}, timeout=10)
    index = TenantIndex(
        [TenantConfig(name="share29", selectors=(TenantSelector(cluster="local", group_prefixes=("share29-",)),))]
    )

    def described() -> ShareGroup:
        (g,) = kinds.describe_share_groups([group])
        return g

    try:
        assert kinds.share_supported
        wait_until(
            lambda: any(g.id == group and g.type == "share" for g in kinds.list_groups()),
            60,
            what="the share group listed as type share",
        )
        wait_until(lambda: len(described().members) == 1, 60, what="the share consumer a member")

        # A share group starts at the latest offset when its share-partitions are initialised, which on a fresh
        # stack waits for the share coordinator (__share_group_state): write until both partitions have a start
        # offset, then until everything written is acknowledged.
        def initialised() -> bool:
            _produce(L.bootstrap_servers, topic, 10)
            parts = described().partitions
            return len(parts) == 2 and all(p.start_offset >= 0 for p in parts)

        wait_until(initialised, 120, interval=2, what=lambda: f"share-partitions initialised (last {described()})")
        wait_until(lambda: described().lag == 0, 60, what=lambda: f"everything acknowledged (last {described()})")
        # the member's assignment follows its heartbeats: both partitions within seconds of joining
        wait_until(
            lambda: [{p for _, p in m.partitions} for m in described().members] == [{0, 1}],
            30,
            what="the member assigned both partitions",
        )
        g = described()
        assert g.members[0].client_id == "console-share-consumer"
        assert {(p.topic, p.partition) for p in g.partitions} == {(topic, 0), (topic, 1)}
        assert share_status(g, None) == "idle"
        assert share_tenant(TenantLookup(index, "local"), g) == "share29"

        consumer.send_signal(signal.SIGSTOP)  # still a member until its session times out (45 s), takes nothing
        _produce(L.bootstrap_servers, topic, 60)
        # records a fetch pending at the SIGSTOP acquired for the frozen member still count: lag 1..60
        wait_until(lambda: described().lag > 0, 30, what=lambda: f"share lag (last {described()})")
        before = described()
        time.sleep(2)
        now = described()
        assert len(now.members) == 1 and 0 < now.lag <= 60, now
        assert share_status(now, before) == "stalled"
    finally:
        consumer.send_signal(signal.SIGCONT)
        consumer.kill()
        consumer.wait(10)
        kinds.close()
        log.close()
