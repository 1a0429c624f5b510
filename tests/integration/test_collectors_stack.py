"""Collectors against the real stack: real values, tenant labels, both transports equal, scraped by real Prometheus."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client import CollectorRegistry, start_http_server

from collectors.component import CollectionService
from collectors.types import TargetStatus
from monitor.core.config import CollectionSettings, TenantConfig, TenantSelector
from monitor.schema import create_all
from tests.conftest import wait_until

pytestmark = pytest.mark.integration

ALPHA = TenantConfig(
    name="alpha",
    selectors=(
        TenantSelector(
            cluster="local", topic_prefixes=("alpha.",), client_id_prefixes=("alpha-",), group_prefixes=("alpha-",)
        ),
    ),
)


def values(registry, name, **labels):
    out = []
    for fam in registry.collect():
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                out.append((s.labels, s.value))
    return out


@pytest.fixture(scope="module")
def traffic(stack):
    """50 messages of 1 kB to a fresh one-partition alpha topic; 20 consumed and committed by a group that leaves."""
    run = uuid.uuid4().hex[:8]
    topic, client, group = f"alpha.orders-{run}", f"alpha-app-{run}", f"alpha-g-{run}"
    servers = stack.layout.bootstrap_servers
    # One partition, so "20 consumed and committed" means lag 30 exactly (RF 3: every broker holds a replica).
    admin = AdminClient({"bootstrap.servers": servers})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3)])[topic].result(30)
    p = Producer({"bootstrap.servers": servers, "client.id": client, "linger.ms": 5})
    for i in range(50):
        p.produce(topic, b"x" * 1000, key=str(i % 3).encode())
    assert p.flush(30) == 0
    c = Consumer(
        {
            "bootstrap.servers": servers,
            "group.id": group,
            "client.id": f"alpha-cons-{run}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    got, deadline = 0, time.monotonic() + 30
    while got < 20 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got += 1
            if got == 20:
                c.commit(message=m, asynchronous=False)
    c.close()  # the group is now Empty: no active members, lag still reported
    leader = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    # Kafka accepts min.insync.replicas above the replication factor: two partitions that are under min ISR for good
    strict = f"alpha.strict-{run}"
    admin.create_topics(
        [NewTopic(strict, num_partitions=2, replication_factor=1, config={"min.insync.replicas": "2"})]
    )[strict].result(30)
    return {"topic": topic, "client": client, "group": group, "consumed_until": got, "leader": leader, "strict": strict}


def generous(cfg):
    """The stack's config (Jolokia with the stack's JMX credentials) with a JMX timeout a loaded CI machine meets,
    and the shipped collection interval (15 s) in place of the stack's 5 s: the Admin round's deadline is a share of
    the interval (4 s at 5 s), and a first round's three TLS connections at load 14 missed it (CI: no lag read)."""
    cluster = cfg.clusters[0]
    cluster = cluster.model_copy(update={"jmx": cluster.jmx.model_copy(update={"timeout_seconds": 30})})
    collection = cfg.collection.model_copy(update={"interval_seconds": CollectionSettings().interval_seconds})
    return cfg.model_copy(update={"clusters": (cluster,), "collection": collection})


def test_real_values_with_tenant_labels_served_and_scraped_by_prometheus(stack, traffic):
    cfg = generous(stack.config(tenants=(ALPHA,)))
    registry = CollectorRegistry()
    svc = CollectionService(cfg, registry=registry)
    try:
        results = svc.collect_once()
        by_target = {r.target.name: r for r in results}
        assert {r.status for r in results} == {TargetStatus.OK}, {
            k: (r.status, r.message) for k, r in by_target.items()
        }
        controller = f"controller-127.0.0.1:{stack.layout.controller_jolokia_port}"  # secured: JMX wants a password
        assert set(by_target) == {"broker-1", "broker-2", "broker-3", controller, "host-localhost", "admin"}

        topic = traffic["topic"]
        bytes_in = values(registry, "kafka_topic_bytes_in_total", topic=topic)
        assert bytes_in and all(lbl["tenant"] == "alpha" for lbl, _ in bytes_in)
        # leaders' BytesInPerSec counts each produced byte once (followers' replication is counted apart)
        assert sum(v for _, v in bytes_in) >= 50 * 1000
        sizes = values(registry, "kafka_topic_log_size_bytes", topic=topic, tenant="alpha")
        assert len(sizes) == 3 and all(v >= 50 * 1000 for _, v in sizes)  # RF 3: every broker has the replica
        # quota sensors exist thanks to the stack's default client quota, and are attributed by client-id prefix
        assert values(registry, "kafka_client_produce_bytes_per_second", client_id=traffic["client"], tenant="alpha")
        assert values(registry, "kafka_broker_requests_total", request="Produce")
        assert values(registry, "kafka_cluster_active_controllers", broker="100") == [
            ({"cluster": "local", "broker": "100"}, 1.0)
        ]
        assert values(registry, "kafka_cluster_raft_state", broker="100", state="leader")
        assert len(values(registry, "kafka_jvm_heap_used_bytes")) == 4
        # Admin API: the group has no active members and still shows its lag, computed offsets-before-watermarks
        lag = values(registry, "kafka_consumergroup_lag", group=traffic["group"], topic=topic)
        assert lag == [
            (
                {"cluster": "local", "group": traffic["group"], "topic": topic, "tenant": "alpha"},
                float(50 - traffic["consumed_until"]),
            )
        ]
        assert values(registry, "kafka_consumergroup_members", group=traffic["group"])[0][1] == 0.0
        assert values(registry, "kafka_topic_offline_partitions", topic=topic)[0][1] == 0.0
        assert values(registry, "kafka_topic_under_min_isr_partitions", topic=topic, tenant="alpha")[0][1] == 0.0
        assert values(registry, "kafka_topic_under_min_isr_partitions", topic=traffic["strict"])[0][1] == 2.0
        fs = values(registry, "kafka_host_filesystem_size_bytes")
        assert {lbl["broker"] for lbl, v in fs if v > 0} == {"1", "2", "3"}

        # the idle ratio needs two collections (rate of the meter's Count)
        svc.collect_once()
        ratios = values(registry, "kafka_broker_request_handler_idle_ratio")
        assert len(ratios) == 3 and all(0.0 <= v <= 1.0 for _, v in ratios)

        # the stack's real Prometheus scrapes this registry on the service port
        server, thread = start_http_server(stack.layout.service_port, addr="127.0.0.1", registry=registry)
        try:

            def scraped():
                q = urllib.parse.urlencode({"query": f'kafka_topic_bytes_in_total{{topic="{topic}"}}'})
                with urllib.request.urlopen(f"{stack.layout.prometheus_url}/api/v1/query?{q}", timeout=5) as r:
                    res = json.load(r)["data"]["result"]
                return res if res and all(x["metric"].get("tenant") == "alpha" for x in res) else None

            res = wait_until(scraped, timeout=30, what="Prometheus to scrape the collector's series")
            assert {x["metric"]["broker"] for x in res} <= {"1", "2", "3"}
        finally:
            server.shutdown()
            server.server_close()
    finally:
        svc.stop()


def test_a_broker_left_out_of_the_targets_is_reported_by_the_no_data_alert(stack, tmp_path):
    """Broker 3 is in the cluster but missing from the config's broker targets (no JMX, no host collection): the
    engine, reading the real Prometheus, raises KafkaHealthRuleNoData for broker 3's inputs (its disk and request
    handlers are watched by nothing) and for no other broker."""
    from alerts.component import AlertService
    from alerts.engine import NO_DATA
    from monitor.core.store import Store

    cfg = stack.config(store_url=f"sqlite:///{tmp_path / 'a.db'}")
    cluster = cfg.clusters[0]
    cfg = cfg.model_copy(
        update={"clusters": (cluster.model_copy(update={"brokers": tuple(b for b in cluster.brokers if b.id != 3)}),)}
    )
    registry = CollectorRegistry()
    svc = CollectionService(cfg, registry=registry)
    server = None
    try:
        svc.collect_once()
        svc.collect_once()  # the idle ratio needs two
        server, _ = start_http_server(stack.layout.service_port, addr="127.0.0.1", registry=registry)

        def brokers(expr: str) -> set[str]:
            q = urllib.parse.urlencode({"query": f"count by (broker) ({expr})"})
            with urllib.request.urlopen(f"{stack.layout.prometheus_url}/api/v1/query?{q}", timeout=5) as r:
                return {x["metric"].get("broker") for x in json.load(r)["data"]["result"]}

        def scraped():  # this registry's series, not those of an earlier collector on the same port
            return brokers("kafka_broker_request_handler_idle_ratio") == {"1", "2"} and brokers(
                "kafka_cluster_broker_up == 1"
            ) == {"1", "2", "3"}

        wait_until(scraped, timeout=30, what="Prometheus to scrape the partial collector")
        store = Store(cfg.store.url)
        create_all(store)
        try:
            result = AlertService(cfg, store=store, registry=CollectorRegistry()).run_once()
        finally:
            store.dispose()
        no_data = [i.labels for i in result.instances.values() if i.rule == NO_DATA]
        per_broker = {(lbl["broker"], lbl["metric"]) for lbl in no_data if "broker" in lbl}
        assert {b for b, _ in per_broker} == {"3"}, per_broker
        assert {m for _, m in per_broker} >= {
            "kafka_broker_request_handler_idle_ratio",
            "kafka_host_filesystem_avail_bytes",
            "kafka_jvm_heap_max_bytes",
        }
        assert result.rules["KafkaDiskFullRisk"].health.value == "nodata"
        assert "broker 3" in result.rules["KafkaDiskFullRisk"].error
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
        svc.stop()
