"""A share group (KIP-932) of a real share consumer on the session stack (issue 29, item 4 and done-means).

Kafka's own share consumer (``ConsoleShareConsumer`` of the stack's kafka-tools jars: ``KafkaShareConsumer`` of
kafka-clients, in a JVM of its own, 64 MB heap) reads a topic of tenant ``share29``. ``collectors.group_kinds`` must
list the group as a ``share`` group, describe its member and per-partition start offset and lag, attribute it to the
tenant by its group prefix, read it ``idle`` once it has consumed what was written, and ``stalled`` when the
consumer is frozen (SIGSTOP: still a member, acquiring nothing) while records wait. Skipped on releases without
share groups (3.9, 4.1; tests/integration/test_kafka_versions.py checks there that a round exports no share series
and logs no error).

Through the product too: the real collectors (``serve --role collector``, every 5 s, started with the test so they
come up while the consumer joins) export the frozen group's status, lag and client to the stack's Prometheus, and the
real alert engine on that Prometheus raises ``KafkaShareGroupLag`` for tenant ``share29`` naming the consumer's client
id: pending at once, firing ``FOR_SECONDS`` later. The shipped rule with its ``for`` shortened (rules.overrides) from
2 minutes to 5 s, so as not to spend two minutes of CI time: the shipped ``for`` is proven through the engine, minute
by minute, in tests/unit/test_alerts_share_groups.py. While the group is there, the tenant dashboard's share-group
panels (``Needs.SHARE_GROUPS``) are run against the live Prometheus and must have data.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
import uuid

import pytest
from prometheus_client import CollectorRegistry

from alerts.component import AlertService
from alerts.types import AlertState
from collectors.catalog import TenantLookup
from collectors.group_kinds import GroupKinds, ShareGroup, share_status, share_tenant
from dashboards.boards.tenant import BOARD as tenant_board
from dashboards.model import Needs
from dashboards.promql import substitute
from monitor.core.config import RuleOverride, RulesSettings, TenantConfig, TenantSelector
from monitor.core.kafka_versions import release
from monitor.core.store import Store
from monitor.core.tenancy import TenantIndex
from monitor.schema import create_all
from monitor.stack.kafka import require_java
from tests.conftest import wait_until
from tests.harness.engine import create_topics, prom_query, running_collectors, watched_config

RULE = "KafkaShareGroupLag"
FOR_SECONDS = 5.0
TENANT = TenantConfig(name="share29", selectors=(TenantSelector(cluster="local", group_prefixes=("share29-",)),))

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
    index = TenantIndex([TENANT])
    # the real collectors every 5 s; the shipped rules, KafkaShareGroupLag's `for` shortened
    config = watched_config(
        stack, tmp_path, [TENANT], rules=RulesSettings(overrides={RULE: RuleOverride(for_seconds=FOR_SECONDS)})
    )
    collectors = contextlib.ExitStack()  # started now, so they come up while the consumer joins
    collectors.enter_context(running_collectors(config, tmp_path))

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

        # the real round: in Prometheus as a share group of tenant share29, stalled (or, once its session expired,
        # without members) with records waiting, its client named
        sel = f'group="{group}",tenant="share29"'
        status_of = f'kafka_sharegroup_status{{group="{group}"}}'
        wait_until(
            lambda: (
                prom_query(stack, f'kafka_sharegroup_status{{{sel},status=~"stalled|no_members"}}')
                and prom_query(stack, f"kafka_sharegroup_lag{{{sel}}} > 0")
            ),
            60,
            interval=2,
            what=lambda: f"the stalled share group in Prometheus (status {prom_query(stack, status_of)})",
        )
        assert [r["metric"]["type"] for r in prom_query(stack, f'kafka_group_info{{group="{group}"}}')] == ["share"]
        # shown as what it is, never also as a consumer group without members (kafka_exporter #533, KMinion #294)
        as_consumer = prom_query(stack, f'{{__name__=~"kafka_consumergroup_.+",group="{group}"}}')
        assert not as_consumer, [r["metric"]["__name__"] for r in as_consumer]
        clients = prom_query(stack, f"kafka_sharegroup_member_partitions{{{sel}}}")
        assert [r["metric"]["client_id"] for r in clients] == ["console-share-consumer"], clients

        # the tenant dashboard's share-group panels on the live Prometheus
        variables = {"cluster": "local", "tenant": "share29"}
        panels = [(p.title, q.expr) for p in tenant_board.panels() if p.needs is Needs.SHARE_GROUPS for q in p.queries]
        assert len(panels) == 2
        for title, expr in panels:
            assert prom_query(stack, substitute(expr, variables)), title

        # the real engine on that Prometheus
        store = Store(config.store.url)
        create_all(store)
        engine = AlertService(config, store=store, registry=CollectorRegistry())
        try:

            def instances(result):
                return [i for i in result.instances.values() if i.rule == RULE and i.labels.get("group") == group]

            [pending] = instances(engine.run_once())
            assert pending.state is AlertState.PENDING, pending
            time.sleep(FOR_SECONDS + 1)
            [fired] = instances(engine.run_once())
        finally:
            store.dispose()
        assert fired.state is AlertState.FIRING, fired
        assert fired.labels["tenant"] == "share29" and fired.labels["client_id"] == "console-share-consumer"
        assert fired.evidence["status"] in ("stalled", "no_members") and fired.evidence["lag_messages"] > 0
        assert fired.evidence["members"][0]["client_id"] == "console-share-consumer"
    finally:
        collectors.close()
        consumer.send_signal(signal.SIGCONT)
        consumer.kill()
        consumer.wait(10)
        kinds.close()
        log.close()
