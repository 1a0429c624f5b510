"""Users run old brokers: the 3.9 variant of the local stack must come up as a real cluster too, and (on the same
stack, no second start) its KIP-896 deprecated-request meter reaches the catalog through both JMX transports."""

import logging
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from jmxquery import JMXConnection, JMXQuery

from collectors import catalog
from collectors.jmx import JmxCollector
from collectors.transports.jmxquery import JmxQueryTransport
from collectors.transports.jolokia import JolokiaTransport
from monitor.loadgen import ensure_topics
from monitor.stack import Stack, StackLayout

pytestmark = pytest.mark.integration
QUIET = logging.getLogger("kafka39-test-librdkafka")


def test_kafka_39_cluster_comes_up_and_answers_jmx(tmp_path):
    stack = Stack(StackLayout(dir=tmp_path / "s39", port_base=19860, kafka_version="3.9.1"), log=lambda *_: None)
    try:
        stack.up(timeout=240)
        md = AdminClient({"bootstrap.servers": stack.layout.bootstrap_servers}).list_topics(timeout=10)
        assert sorted(md.brokers) == [1, 2, 3]
        conn = JMXConnection(f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{stack.layout.broker_jmx_port(1)}/jmxrmi")
        (m,) = conn.query([JMXQuery("kafka.server:type=app-info", attribute="version")], timeout=60)
        assert m.value == "3.9.1"
        _deprecated_requests_are_collected(stack)
        _jmxquery_and_jolokia_give_the_same_series(stack)
    finally:
        stopped = stack.down()
    assert len(stopped) == 6


def _deprecated_requests_are_collected(stack: Stack) -> None:
    """A client on the old protocol: librdkafka without ApiVersions, as for a 0.9 broker, sends Produce v1, which 3.9
    deprecates (KIP-896) and 4.0 removed. Kafka counts it under client software unknown/unknown (no ApiVersions, no
    KIP-511 name)."""
    # Created on the current protocol first: the old client's Metadata v0 cannot ask for auto-creation.
    ensure_topics(stack.layout.bootstrap_servers, ["legacy.topic"], partitions=1)
    p = Producer(
        {
            "bootstrap.servers": stack.layout.bootstrap_servers,
            "client.id": "legacy-proto",
            "api.version.request": False,
            "broker.version.fallback": "0.9.0",
            "logger": QUIET,
        }
    )
    delivered = []
    for _ in range(5):
        p.produce("legacy.topic", b"x", on_delivery=lambda err, _m: delivered.append(err))
    assert p.flush(60) == 0 and delivered == [None] * 5, delivered
    (cluster,) = stack.config().clusters
    for transport in (JmxQueryTransport(), JolokiaTransport()):
        jc = JmxCollector(
            cluster,
            transport=transport,
            controller_transport=transport,
            tenants=catalog.TenantLookup(None, cluster.name),
            max_series=20000,
        )
        found = {}
        for target in jc.targets():
            if target.collector == "jmx":
                for s in jc.collect_target(target, now=time.time()).samples:
                    if s.name == "kafka_broker_deprecated_requests_total":
                        labels = dict(s.labels)
                        key = (labels["request"], labels["api_version"], labels["client_software_name"])
                        found[key] = found.get(key, 0.0) + s.value
        assert found.get(("Produce", "1", "unknown"), 0) >= 1, (transport.name, found)


def _jmxquery_and_jolokia_give_the_same_series(stack: Stack) -> None:
    """Both JMX transports read the same series from one broker (the leader of the topic the old client wrote:
    per-topic meters and the producer's quota sensors). Here, on the plaintext stack: the session stack is secured,
    and jmxquery cannot give a JMX password without putting it in argv."""
    (cluster,) = stack.config().clusters
    cluster = cluster.model_copy(update={"jmx": cluster.jmx.model_copy(update={"timeout_seconds": 60})})
    admin = AdminClient({"bootstrap.servers": stack.layout.bootstrap_servers, "logger": QUIET})
    leader = admin.list_topics("legacy.topic", timeout=10).topics["legacy.topic"].partitions[0].leader
    series = {}
    for _attempt in range(3):  # a client connecting between the two reads may add a quota sensor: retry
        for transport in (JmxQueryTransport(), JolokiaTransport()):
            jc = JmxCollector(
                cluster,
                transport=transport,
                controller_transport=transport,
                tenants=catalog.TenantLookup(None, cluster.name),
                max_series=100000,
            )
            target = next(t for t in jc.targets() if t.name == f"broker-{leader}")
            result = jc.collect_target(target, now=time.time())
            assert result.status.value == "ok", result.message
            series[transport.name] = {(s.name, s.labels) for s in result.samples}
        if series["jmxquery"] == series["jolokia"]:
            break
    assert series["jmxquery"] == series["jolokia"], (
        sorted(series["jmxquery"] - series["jolokia"])[:5],
        sorted(series["jolokia"] - series["jmxquery"])[:5],
    )
    names = {n for n, _ in series["jolokia"]}
    assert {
        "kafka_topic_bytes_in_total",
        "kafka_broker_request_latency_seconds",
        "kafka_jvm_gc_collections_total",
        "kafka_client_produce_bytes_per_second",
    } <= names
