"""The local stack is a real cluster: three registered brokers, replicated produce/consume, JMX on every node,
Prometheus and Alertmanager answering, idempotent ``up`` and a ``down`` that leaves nothing behind."""

import os
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from jmxquery import JMXConnection, JMXQuery

from monitor.loadgen import ensure_topics
from monitor.stack.security import JMX_USER, StackSecurity
from tests.conftest import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.kafka_versions]


def test_three_brokers_registered_and_a_dedicated_controller(stack):
    admin = AdminClient({"bootstrap.servers": stack.layout.bootstrap_servers})
    md = admin.list_topics(timeout=10)
    assert sorted(md.brokers) == [1, 2, 3]
    # The controller is not a broker: it must not be in the broker list (separate roles, not combined mode).
    assert 100 not in md.brokers


def test_replicated_topic_roundtrip(stack):
    topic = f"it-roundtrip-{uuid.uuid4().hex[:6]}"
    bootstrap = stack.layout.bootstrap_servers
    ensure_topics(bootstrap, [topic], partitions=3, replication=3)
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic]
    assert all(sorted(p.replicas) == [1, 2, 3] for p in md.partitions.values())

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    sent = {f"k{i}": f"v{i}" for i in range(100)}
    for k, v in sent.items():
        producer.produce(topic, v.encode(), key=k.encode())
    assert producer.flush(30) == 0

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = {}
    try:
        for _ in range(120):
            msg = consumer.poll(1.0)
            if msg is not None and not msg.error():
                got[msg.key().decode()] = msg.value().decode()
            if len(got) == len(sent):
                break
    finally:
        consumer.close()
    assert got == sent


def test_every_node_answers_jmx_with_credentials_only(stack):
    """The session stack is secured: remote JMX and the Jolokia agents answer the monitoring user's password, and
    refuse a reader without it."""
    L = stack.layout
    sec = StackSecurity(L)
    auth = (JMX_USER, sec.password("jmx-monitor"))

    def read(port: int, mbean: str, **kw) -> httpx.Response:
        return httpx.post(
            f"http://127.0.0.1:{port}/jolokia/",
            json={"type": "read", "mbean": mbean, "attribute": "Value"},
            timeout=30,
            **kw,
        )

    for broker in L.broker_ids:
        r = read(L.broker_jolokia_port(broker), "kafka.server:type=KafkaServer,name=BrokerState", auth=auth)
        assert r.json()["value"] == 3, f"broker {broker} not RUNNING (3) over JMX: {r.text}"
        assert read(L.broker_jolokia_port(broker), "java.lang:type=Memory").status_code == 401
    r = read(L.controller_jolokia_port, "kafka.controller:type=KafkaController,name=ActiveControllerCount", auth=auth)
    assert r.json()["value"] == 1
    assert read(L.controller_jolokia_port, "java.lang:type=Memory", auth=(JMX_USER, "wrong")).status_code == 401
    conn = JMXConnection(f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{L.broker_jmx_port(1)}/jmxrmi")
    with pytest.raises(subprocess.CalledProcessError):  # remote JMX without credentials: "Credentials required"
        conn.query([JMXQuery("kafka.server:type=KafkaServer,name=BrokerState", attribute="Value")], timeout=60)


def test_prometheus_and_alertmanager_answer(stack):
    L = stack.layout
    targets = httpx.get(f"{L.prometheus_url}/api/v1/targets", timeout=10).json()["data"]["activeTargets"]
    scraped = {t["scrapeUrl"] for t in targets}
    assert f"http://127.0.0.1:{L.service_port}/metrics" in scraped
    # the pair gossips: each Alertmanager sees both members (issue 31); the engine's config lists both
    gossip = {f"127.0.0.1:{L.alertmanager_cluster_port(i)}" for i in range(2)}

    def peers(url: str) -> set[str]:
        return {p["address"] for p in httpx.get(f"{url}/api/v2/status", timeout=10).json()["cluster"]["peers"]}

    assert wait_until(lambda: all(peers(url) == gossip for url in L.alertmanager_urls), timeout=60)
    assert (
        stack.config().alertmanager.endpoints() == L.alertmanager_urls == (L.alertmanager_url, L.alertmanager_urls[1])
    )


def test_up_twice_starts_nothing_twice(stack):
    before = {s.name: s.pid for s in stack.status()}
    stack.up(timeout=60)
    after = {s.name: s.pid for s in stack.status()}
    assert before == after
    assert all(after.values())


def test_status_shows_every_component_healthy(stack):
    rows = {s.name: s for s in stack.status()}
    assert set(rows) == {
        "controller",
        "broker-1",
        "broker-2",
        "broker-3",
        "prometheus",
        "alertmanager",
        "alertmanager-2",
    }
    assert all(r.healthy for r in rows.values()), rows
    assert {stack.layout.broker_port(1), stack.layout.broker_jmx_port(1)} <= set(rows["broker-1"].ports)


def _processes_mentioning(path: Path) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(path) in cmd and int(entry.name) != os.getpid():
                out.append(int(entry.name))
    return out


@pytest.mark.last
def test_down_stops_exactly_what_it_started(stack):
    pids = [s.pid for s in stack.status() if s.pid]
    assert len(pids) == 7
    stopped = stack.down()
    every = ["controller", "broker-1", "broker-2", "broker-3", "prometheus", "alertmanager", "alertmanager-2"]
    assert sorted(stopped) == sorted(every)
    assert _processes_mentioning(stack.layout.dir.resolve()) == []
    assert all(s.pid is None for s in stack.status())
    assert stack.down() == []  # a second down finds nothing to stop
