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

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import yaml

from alerts.models import AlertState
from monitor.config import CollectionSettings, RulesSettings, TenantConfig, TenantSelector
from tests.conftest import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.own_stack]
REPO = Path(__file__).resolve().parents[2]


def _collectors_dir() -> Path | None:
    for cand in (os.environ.get("KAFKA_HEALTH_COLLECTORS_DIR"), str(REPO)):
        if cand and (Path(cand) / "collectors" / "service.py").exists():
            return Path(cand)
    return None


def _topics(stack):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": stack.layout.bootstrap_servers})
    ids = stack.layout.broker_ids
    topics = [
        NewTopic("orders.rf1", num_partitions=1, replica_assignment=[[ids[-1]]]),  # only on the broker we kill
        NewTopic("orders.rf3", num_partitions=3, replication_factor=3, config={"min.insync.replicas": "3"}),
        NewTopic("clicks.rf3", num_partitions=3, replication_factor=3),
    ]
    for topic in topics:  # one per request: librdkafka refuses explicit assignments mixed with partition counts
        for f in admin.create_topics([topic], operation_timeout=30).values():
            try:
                f.result(60)
            except Exception as exc:  # noqa: BLE001 - already there from an earlier run of the session
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise


def _am(stack, alertname):
    return [a for a in httpx.get(f"{stack.layout.alertmanager_url}/api/v2/alerts", timeout=5).json()
            if a["labels"]["alertname"] == alertname]


def _prom_has(stack, expr):
    r = httpx.get(f"{stack.layout.prometheus_url}/api/v1/query", params={"query": expr}, timeout=5).json()
    return r["data"]["result"]


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


@pytest.fixture(scope="module")
def watched(stack, tmp_path_factory):
    """The collectors running against the stack (the stack's Prometheus scrapes them) and the engine's config."""
    if _collectors_dir() is None:
        pytest.skip("collectors not on this branch; set KAFKA_HEALTH_COLLECTORS_DIR")
    tmp = tmp_path_factory.mktemp("alert-faults")
    (tmp / "lag-rule.yaml").write_text(FAST_LAG_RULE)
    tenants = (TenantConfig(name="shop", selectors=(TenantSelector(
                   cluster="local", topic_prefixes=("orders.",), group_prefixes=("shop.",)),)),
               TenantConfig(name="ads", selectors=(TenantSelector(cluster="local", topic_prefixes=("clicks.",)),)))
    config = stack.config(tenants=tenants, store_url=f"sqlite:///{tmp / 'alerts.db'}")
    config = config.model_copy(update={"collection": CollectionSettings(interval_seconds=5),
                                       "rules": RulesSettings(files=(str(tmp / "lag-rule.yaml"),))})
    _topics(stack)
    with run_collectors(config, tmp):
        wait_until(lambda: len(_prom_has(stack, 'kafka_cluster_broker_up == 1')) == 3
                   and _prom_has(stack, 'kafka_topic_log_size_bytes{topic="orders.rf1"}')
                   and _prom_has(stack, 'kafka_broker_under_replicated_partitions'), 120,
                   interval=2, what="collectors' series in Prometheus")
        yield config


@contextlib.contextmanager
def run_collectors(config, tmp: Path):
    """The collectors as ``kafka-health serve --role collector`` in a process of their own (their exporter on the
    config's service port, which the stack's Prometheus scrapes), stopped on exit; their log in ``tmp``."""
    cdir = _collectors_dir()
    cfg_file = tmp / "kafka-health.yaml"
    cfg_file.write_text(yaml.safe_dump(config.model_dump(mode="json", exclude_none=True)))
    # `serve --role collector` without the CLI's module discovery (which could pick other packages' commands up
    # from an editable install of another checkout).
    run = ("import sys; from monitor.config import load_config; from monitor.serve import run; "
           "c = load_config(sys.argv[1]); run(c, ('collector',), c.service.host, c.service.port)")
    collector = subprocess.Popen(
        [sys.executable, "-c", run, str(cfg_file)],
        cwd=cdir, env={**os.environ, "PYTHONPATH": str(cdir)}, stdout=subprocess.DEVNULL,
        stderr=open(tmp / "collector.log", "wb"), start_new_session=True)
    try:
        yield collector
    finally:
        os.killpg(collector.pid, signal.SIGTERM)
        try:
            collector.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(collector.pid, signal.SIGKILL)


def test_killed_broker_fires_with_tenants_reaches_alertmanager_and_resolves(stack, engine):
    victim = str(stack.layout.broker_ids[-1])
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
            firing = {(i.rule, i.labels.get("tenant"), i.labels.get("broker") or i.labels.get("topic"))
                      for i in r.instances.values() if i.state is AlertState.FIRING}
            seen["firing"], seen["errors"] = firing, {n: st.error for n, st in r.rules.items() if st.error}
            want = {("KafkaBrokerUnreachable", "shop", victim), ("KafkaBrokerUnreachable", "ads", victim),
                    ("KafkaOfflinePartitions", "shop", "orders.rf1")}
            return want <= firing and any(f[0] == "KafkaUnderMinIsrPartitions" for f in firing) and r

        try:
            r = wait_until(fired, 150, interval=3, what="broker-down alerts firing")
        except pytest.fail.Exception as exc:  # say what did fire, so a failure in CI can be diagnosed
            raise AssertionError(f"{exc}; firing: {sorted(seen.get('firing', ()))}; "
                                 f"rule errors: {seen.get('errors')}") from None
        # Every rule's and detector's PromQL ran against the real Prometheus fed by the real collectors.
        broken = {n: st.error for n, st in r.rules.items() if st.health.value == "err"}
        assert not broken, broken
        offline = next(i for i in r.instances.values() if i.rule == "KafkaOfflinePartitions")
        assert offline.evidence["value"] >= 1 and offline.labels["cluster"] == "local"
        urp_tenants = {i.labels.get("tenant") for i in r.instances.values()
                       if i.rule == "KafkaUnderMinIsrPartitions" and i.state is AlertState.FIRING}
        assert urp_tenants <= {"shop", "ads"} and "shop" in urp_tenants  # orders.rf3 has min.insync.replicas=3

        wait_until(lambda: {a["labels"].get("tenant") for a in _am(stack, "KafkaBrokerUnreachable")} >= {"shop", "ads"},
                   30, what="KafkaBrokerUnreachable in Alertmanager for both tenants")
        am = _am(stack, "KafkaBrokerUnreachable")[0]
        assert am["labels"]["broker"] == victim and am["labels"]["severity"] == "critical"
        assert [a for a in _am(stack, "KafkaOfflinePartitions") if a["labels"].get("topic") == "orders.rf1"]

        stack.up(timeout=180)  # starts only what is missing: the victim
        killed = False

        def resolved():
            r = svc.run_once()
            states = {i.state for i in r.instances.values()
                      if i.rule in ("KafkaBrokerUnreachable", "KafkaOfflinePartitions")}
            return states == {AlertState.RESOLVED} and r

        wait_until(resolved, 180, interval=3, what="broker-down alerts resolved after restart")
        wait_until(lambda: not _am(stack, "KafkaBrokerUnreachable") and not _am(stack, "KafkaOfflinePartitions"),
                   60, interval=2, what="resolves reaching Alertmanager")
    finally:
        if killed:
            stack.up(timeout=180)


def test_consumer_group_that_stops_committing_is_stop_for_its_tenant_and_recovers(stack, engine):
    from confluent_kafka import Consumer, Producer

    svc = engine
    servers = stack.layout.bootstrap_servers
    producer = Producer({"bootstrap.servers": servers, "linger.ms": 5})
    stop = threading.Event()

    def produce():
        while not stop.is_set():
            for _ in range(20):
                producer.produce("orders.rf3", b"x" * 100)
            producer.poll(0)
            stop.wait(0.5)
        producer.flush(10)

    def consume_all(timeout: float) -> None:
        consumer = Consumer({"bootstrap.servers": servers, "group.id": "shop.billing",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
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

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        consume_all(60)  # the group commits, then leaves: no members while production goes on

        def stopped():
            r = svc.run_once()
            # While the member was still there with its offset frozen the group is STALL; once the window holds
            # only the member-less past, STOP.
            lag = [i for i in r.instances.values() if i.rule == "KafkaConsumerGroupLag"
                   and i.labels.get("group") == "shop.billing" and i.labels.get("status") == "STOP"
                   and i.state is AlertState.FIRING]
            return lag and lag[0]

        inst = wait_until(stopped, 180, interval=5, what="KafkaConsumerGroupLag STOP for shop.billing")
        assert inst.labels["tenant"] == "shop", inst
        assert inst.labels["topic"] == "orders.rf3" and inst.severity.value == "critical"
        assert inst.evidence["lag_messages"] > 0 and inst.evidence["active_members"] == 0
        wait_until(lambda: [a for a in _am(stack, "KafkaConsumerGroupLag") if a["labels"].get("tenant") == "shop"],
                   30, what="the lag alert in Alertmanager")

        stop.set()
        thread.join(20)
        consume_all(60)  # catches up: lag 0

        def recovered():
            r = svc.run_once()
            return not [i for i in r.instances.values() if i.rule == "KafkaConsumerGroupLag"
                        and i.labels.get("group") == "shop.billing" and i.state is AlertState.FIRING]

        wait_until(recovered, 120, interval=5, what="the lag alert resolved after the group caught up")
    finally:
        stop.set()
        thread.join(20)
