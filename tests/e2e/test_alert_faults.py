"""Real faults on the real stack, watched by the real collectors through the real Prometheus, delivered to the real
Alertmanager:

- a broker killed: KafkaBrokerUnreachable, KafkaOfflinePartitions (a replication-factor-1 topic on it) and under
  min-ISR, with the tenants whose partitions the broker held; all resolve after the broker is restarted;
- a consumer group that stops committing while producers go on: KafkaConsumerGroupLag STOP for its tenant, with
  lag in messages and seconds; it resolves once the group catches up.

The collectors are run as in `kafka-health serve --role collector` (their exporter on the stack's service port, which
the stack's Prometheus scrapes) from this repository, or from $KAFKA_HEALTH_COLLECTORS_DIR while the collectors
branch is not merged yet.
"""

from __future__ import annotations

import signal
import time

import pytest

from alerts.types import AlertState
from monitor.core.config import (
    RulesSettings,
    TenantConfig,
    TenantSelector,
)
from tests.conftest import wait_until
from tests.harness.engine import create_topics, prom_query, watched_config, watching
from tests.harness.faults import delete_group, group_coordinated_by
from tests.harness.producer import SteadyProducer
from tests.integration.alerts_helpers import am_alerts

pytestmark = [pytest.mark.e2e, pytest.mark.own_stack]


def _topics(stack):
    from confluent_kafka.admin import NewTopic

    ids = stack.layout.broker_ids
    create_topics(
        stack,
        [
            NewTopic("orders.rf1", num_partitions=1, replica_assignment=[[ids[-1]]]),  # only on the broker we kill
            NewTopic("orders.rf3", num_partitions=3, replication_factor=3, config={"min.insync.replicas": "3"}),
            NewTopic("clicks.rf3", num_partitions=3, replication_factor=3),
        ],
    )


# The lag rule with a 1-minute window (replacing the built-in one through rules.files), so the test waits for
# one window, not ten minutes.
FAST_LAG_RULE = """
rules:
  - name: KafkaConsumerGroupLag
    kind: detector
    detector: consumer_lag
    severity: warning
    scope: group
    params: {window: 1m, lag_seconds_warning: 600}
    annotations: {summary: "group {{ $labels.group }} is {{ $labels.status }}"}
"""


WATCH: dict = {}  # the collector process of this module, and its log


@pytest.fixture(scope="module")
def watched(stack, tmp_path_factory):
    """The collectors running against the stack (the stack's Prometheus scrapes them) and the engine's config."""
    tmp = tmp_path_factory.mktemp("alert-faults")
    (tmp / "lag-rule.yaml").write_text(FAST_LAG_RULE)
    tenants = (
        TenantConfig(
            name="shop",
            selectors=(TenantSelector(cluster="local", topic_prefixes=("orders.",), group_prefixes=("shop.",)),),
        ),
        TenantConfig(name="ads", selectors=(TenantSelector(cluster="local", topic_prefixes=("clicks.",)),)),
    )
    config = watched_config(stack, tmp, tenants, rules=RulesSettings(files=(str(tmp / "lag-rule.yaml"),)))
    _topics(stack)
    with watching(
        stack,
        config,
        tmp,
        lambda: (
            len(prom_query(stack, "kafka_cluster_broker_up == 1")) == 3
            and prom_query(stack, 'kafka_topic_log_size_bytes{topic="orders.rf1"}')
            and prom_query(stack, "kafka_broker_under_replicated_partitions")
        ),
    ) as proc:
        WATCH["collector"], WATCH["log"] = proc, tmp / "collector.log"
        yield config


# The broker-kill e2e of the version matrix, on 3.9 only: 3.9's controller gives no per-broker view, so liveness falls
# back to the plain broker-down timing (docs/alerts.md); 4.1 tells a crash as 4.4 does, which the default run proves.
@pytest.mark.kafka_versions(lines=("3.9",))
def test_killed_broker_fires_with_tenants_reaches_alertmanager_and_resolves(stack, engine):
    """The victim also coordinates a consumer group: describing that group while its coordinator is dead once made
    librdkafka abort the collector process (librdkafka#4605), and the broker-down alerts lost their data. The Admin
    client now runs in a process of its own: the collector lives on, and the group's offsets come back."""
    victim = str(stack.layout.broker_ids[-1])
    group = group_coordinated_by(
        stack.layout.bootstrap_servers, int(victim), prefix="shop.coordinated-", topic="orders.rf3"
    )
    committed = f'kafka_consumergroup_committed_offset{{group="{group}"}}'
    wait_until(lambda: prom_query(stack, committed), 60, interval=2, what=f"{group}'s offsets exported")
    svc = engine
    killed = False
    try:
        result = svc.run_once()
        assert not [i for i in result.instances.values() if i.rule == "KafkaBrokerUnreachable"]

        stack.procs.signal(f"broker-{victim}", signal.SIGKILL)
        killed = True

        seen: dict = {}

        def fired():
            r = svc.run_once()
            firing = {
                (i.rule, i.labels.get("tenant"), i.labels.get("broker") or i.labels.get("topic"))
                for i in r.instances.values()
                if i.state is AlertState.FIRING
            }
            seen["firing"], seen["errors"] = firing, {n: st.error for n, st in r.rules.items() if st.error}
            want = {
                ("KafkaBrokerUnreachable", "shop", victim),
                ("KafkaBrokerUnreachable", "ads", victim),
                ("KafkaOfflinePartitions", "shop", "orders.rf1"),
            }
            return want <= firing and any(f[0] == "KafkaUnderMinIsrPartitions" for f in firing) and r

        try:
            r = wait_until(fired, 150, interval=3, what="broker-down alerts firing")
        except pytest.fail.Exception as exc:  # say what did fire, so a failure in CI can be diagnosed
            raise AssertionError(
                f"{exc}; firing: {sorted(seen.get('firing', ()))}; rule errors: {seen.get('errors')}"
            ) from None
        # Every rule's and detector's PromQL ran against the real Prometheus fed by the real collectors.
        broken = {n: st.error for n, st in r.rules.items() if st.health.value == "err"}
        assert not broken, broken
        offline = next(i for i in r.instances.values() if i.rule == "KafkaOfflinePartitions")
        assert offline.evidence["value"] >= 1 and offline.labels["cluster"] == "local"
        urp_tenants = {
            i.labels.get("tenant")
            for i in r.instances.values()
            if i.rule == "KafkaUnderMinIsrPartitions" and i.state is AlertState.FIRING
        }
        assert urp_tenants <= {"shop", "ads"} and "shop" in urp_tenants  # orders.rf3 has min.insync.replicas=3
        # The victim exports nothing: under-replication is counted by the surviving leaders, and the firing
        # broker-down alert inhibits it there (equal: cluster); under-min-ISR (acks=all writes fail) still pages.
        live = [i for i in r.instances.values() if i.state is not AlertState.RESOLVED]
        urp = [i for i in live if i.rule == "KafkaUnderReplicatedPartitions"]
        assert all(i.muted_by == "inhibited:KafkaBrokerUnreachable" for i in urp), [(i.labels, i.muted_by) for i in urp]
        assert not [i for i in live if i.rule == "KafkaUnderMinIsrPartitions" and i.muted_by]

        wait_until(
            lambda: {a["labels"].get("tenant") for a in am_alerts(stack, "KafkaBrokerUnreachable")} >= {"shop", "ads"},
            30,
            what="KafkaBrokerUnreachable in Alertmanager for both tenants",
        )
        am = am_alerts(stack, "KafkaBrokerUnreachable")[0]
        assert am["labels"]["broker"] == victim and am["labels"]["severity"] == "critical"
        assert [a for a in am_alerts(stack, "KafkaOfflinePartitions") if a["labels"].get("topic") == "orders.rf1"]

        stack.up(timeout=180)  # starts only what is missing: the victim
        killed = False

        def resolved():
            r = svc.run_once()
            states = {
                i.state for i in r.instances.values() if i.rule in ("KafkaBrokerUnreachable", "KafkaOfflinePartitions")
            }
            return states == {AlertState.RESOLVED} and r

        wait_until(resolved, 180, interval=3, what="broker-down alerts resolved after restart")
        wait_until(
            lambda: not am_alerts(stack, "KafkaBrokerUnreachable") and not am_alerts(stack, "KafkaOfflinePartitions"),
            60,
            interval=2,
            what="resolves reaching Alertmanager",
        )
        # The collector process lived through it, and the group its victim coordinated is read again.
        assert WATCH["collector"].poll() is None, WATCH["log"].read_text()[-3000:]
        wait_until(
            lambda: prom_query(stack, f"{committed} and timestamp({committed}) > time() - 30"),
            90,
            interval=3,
            what=f"{group}'s offsets exported again",
        )
    finally:
        if killed:
            stack.up(timeout=180)
        delete_group(stack.layout.bootstrap_servers, group)  # best effort: a leftover group is harmless now


def test_consumer_group_that_stops_committing_is_stop_for_its_tenant_and_recovers(stack, engine):
    from confluent_kafka import Consumer

    svc = engine
    servers = stack.layout.bootstrap_servers
    feed = SteadyProducer(servers, "orders.rf3")  # ~40 records/s

    def consume_all(timeout: float) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": servers,
                "group.id": "shop.billing",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        consumer.subscribe(["orders.rf3"])
        deadline = time.monotonic() + timeout
        got = 0
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got += 1
            elif got and msg is None:
                break  # caught up
        consumer.commit(asynchronous=False)
        consumer.close()

    feed.start()
    try:
        consume_all(60)  # the group commits, then leaves: no members while production goes on

        def stopped():
            r = svc.run_once()
            # While the member was still there with its offset frozen the group is STALL; once the window holds
            # only the member-less past, STOP.
            lag = [
                i
                for i in r.instances.values()
                if i.rule == "KafkaConsumerGroupLag"
                and i.labels.get("group") == "shop.billing"
                and i.labels.get("status") == "STOP"
                and i.state is AlertState.FIRING
            ]
            return lag and lag[0]

        inst = wait_until(stopped, 180, interval=5, what="KafkaConsumerGroupLag STOP for shop.billing")
        assert inst.labels["tenant"] == "shop", inst
        assert inst.labels["topic"] == "orders.rf3" and inst.severity.value == "critical"
        assert inst.evidence["lag_messages"] > 0 and inst.evidence["active_members"] == 0
        # the age of the oldest unconsumed message, from the watermarks' history: production went on all along
        assert inst.evidence["lag_seconds"] > 0, inst.evidence
        wait_until(
            lambda: [a for a in am_alerts(stack, "KafkaConsumerGroupLag") if a["labels"].get("tenant") == "shop"],
            30,
            what="the lag alert in Alertmanager",
        )

        feed.stop()
        consume_all(60)  # catches up: lag 0

        def recovered():
            r = svc.run_once()
            return not [
                i
                for i in r.instances.values()
                if i.rule == "KafkaConsumerGroupLag"
                and i.labels.get("group") == "shop.billing"
                and i.state is AlertState.FIRING
            ]

        wait_until(recovered, 120, interval=5, what="the lag alert resolved after the group caught up")
        wait_until(
            lambda: (
                not [a for a in am_alerts(stack, "KafkaConsumerGroupLag") if a["labels"].get("group") == "shop.billing"]
            ),
            60,
            interval=2,
            what="the lag alert's resolve to reach Alertmanager",
        )
    finally:
        feed.stop()
