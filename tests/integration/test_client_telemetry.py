"""KIP-714 on the secured session stack: real confluent-kafka clients (librdkafka pushes its fixed metric set) of a
SCRAM principal push to the brokers, whose kafka-health plugin keeps each push as an MBean; the JMX collector
(Jolokia, as configured by the stack) exports them and the stack's Prometheus scrapes them under
``kafka_client_telemetry_*`` with the principal, client id, instance id and client software. Only metrics a client
pushed become series: the librdkafka producer pushes no batch size, the producer no poll idle ratio. A Java 3.9.1
producer (Apache Kafka's own client, which pushes by default) brings the Java-only batching signals. A push the
plugin cannot read, sent on the wire, is counted in its Failures and the broker answers it and goes on serving. Every
broker runs the plugin's class for its release's KIP-714 interface (``ClientTelemetryExporterProvider`` on 4.2+,
``ClientTelemetry`` before): run the module with KAFKA_HEALTH_TEST_KAFKA_VERSION=3.9 / 4.1 for the older ones."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone

import pytest
import yaml
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from prometheus_client import CollectorRegistry, start_http_server

from collectors.component import CollectionService
from collectors.transports.jolokia import JolokiaTransport
from collectors.types import Endpoint, MBeanQuery
from monitor.core.prom import PrometheusSource
from monitor.stack.security import StackSecurity
from tests.conftest import wait_until
from tests.harness.javaclients import JavaClient

# On 3.9 besides the default: 4.1 runs 3.9's plugin interface (``ClientTelemetry``, monitor/core/kafka_versions.py),
# and the plugin's JUnit tests run against each line's kafka-clients (test_telemetry_plugin_java.py).
pytestmark = [pytest.mark.integration, pytest.mark.kafka_versions(lines=("3.9",))]


def test_pushed_client_metrics_reach_prometheus_with_principal_and_client_id(stack, tmp_path):
    L = stack.layout
    tag = uuid.uuid4().hex[:8]
    user, topic, group = f"tele{tag}-app", f"tele{tag}.events", f"tele{tag}-readers"
    producer_id, consumer_id, java_id = f"tele{tag}-writer", f"tele{tag}-reader", f"tele{tag}-java"
    settings = stack.add_principal(user, topic_prefixes=(f"tele{tag}.",), group_prefixes=(f"tele{tag}-",))
    java_settings = dict(line.split("=", 1) for line in StackSecurity(L).java_properties(user).splitlines())
    java = JavaClient(
        version="3.9.1",
        mode="produce",
        topic=topic,
        rate=200,
        record_bytes=100,
        log=tmp_path / "j.log",
        properties={**java_settings, "client.id": java_id, "linger.ms": 50},
    )
    stop = threading.Event()

    def produce():
        p = Producer({**settings, "client.id": producer_id, "linger.ms": 20})
        while not stop.is_set():
            p.produce(topic, b"x" * 200)
            p.poll(0.05)
        p.flush(10)

    def consume():
        c = Consumer(
            {
                **settings,
                "client.id": consumer_id,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "auto.commit.interval.ms": 1000,
            }
        )
        c.subscribe([topic])
        while not stop.is_set():
            c.poll(0.5)
        c.close()

    registry = CollectorRegistry()
    collection = CollectionService(stack.config(), registry=registry)
    server, _ = start_http_server(L.service_port, addr="127.0.0.1", registry=registry)
    source = PrometheusSource(L.prometheus_url)
    threads = [threading.Thread(target=f, daemon=True) for f in (produce, consume)]
    java.start()
    for th in threads:
        th.start()

    def series(metric: str, client_id: str):
        return source.query(f'{metric}{{client_id="{client_id}"}}', datetime.now(timezone.utc))

    wanted = (
        ("kafka_client_telemetry_producer_record_queue_time_avg_seconds", producer_id),
        ("kafka_client_telemetry_consumer_poll_idle_ratio_avg", consumer_id),
        ("kafka_client_telemetry_producer_batch_size_avg_bytes", java_id),
    )

    seen: dict[str, bool] = {}

    def all_pushed():
        collection.collect_once()
        got = [series(metric, client_id) for metric, client_id in wanted]
        seen.update({f"{metric}{{client_id={client_id}}}": bool(g) for (metric, client_id), g in zip(wanted, got)})
        return got if all(got) else None

    try:
        # The clients push every 10 s (the stack's subscription); Prometheus scrapes the collector every 5 s.
        queue, idle, batch = wait_until(
            all_pushed,
            120,
            interval=L.scrape_interval_seconds,
            what=lambda: (
                f"each client's pushed metrics in Prometheus (seen: {seen}, "
                f"Java client: {java.counts()}, running {java.running()})"
            ),
        )
        for got, client_id in ((queue, producer_id), (idle, consumer_id)):
            labels = got[0].labels
            assert (labels["cluster"], labels["user"], labels["client_id"]) == ("local", user, client_id), labels
            assert labels["broker"] in {"1", "2", "3"}, labels
            assert labels["client_instance_id"] and labels["client_software_name"] == "confluent-kafka-python", labels
            assert labels["client_software_version"], labels
        assert 0 <= queue[0].value < 5 and 0 <= idle[0].value <= 1
        assert series("kafka_client_telemetry_request_latency_avg_seconds", producer_id)  # per node, averaged
        pushed_at = series("kafka_client_telemetry_last_push_timestamp_seconds", producer_id)
        assert abs(pushed_at[0].value - time.time()) < 60
        # What librdkafka does not push has no series: no batch size (Java-only), no poll ratio for a producer.
        assert series("kafka_client_telemetry_producer_batch_size_avg_bytes", producer_id) == []
        assert series("kafka_client_telemetry_consumer_poll_idle_ratio_avg", producer_id) == []
        # The Java producer's batching signals, which librdkafka does not push.
        assert batch[0].labels["user"] == user and batch[0].labels["client_software_name"] == "apache-kafka-java"
        assert batch[0].labels["client_software_version"] == "3.9.1" and batch[0].value > 0
        assert series("kafka_client_telemetry_producer_records_per_request_avg", java_id)
        assert series("kafka_client_telemetry_producer_request_rate", java_id)
        health = source.query(
            f'kafka_client_telemetry_plugin_failures_total{{broker="{labels["broker"]}"}}', datetime.now(timezone.utc)
        )
        assert health and health[0].value == 0
    finally:
        stop.set()
        java.stop()
        for th in threads:
            th.join(15)
        server.shutdown()
        server.server_close()
        collection.stop()
        source.close()


# --- a push the plugin cannot read, sent on the wire (no client library sends a broken one)


def _request(sock: socket.socket, api_key: int, correlation: int, body: bytes) -> bytes:
    """One flexible-version (v0 of these APIs) request, header v2, and its response body after header v1."""
    client_id = b"tele-wire"
    header = struct.pack(">hhih", api_key, 0, correlation, len(client_id)) + client_id + b"\x00"
    frame = header + body
    sock.sendall(struct.pack(">i", len(frame)) + frame)
    size = struct.unpack(">i", _read(sock, 4))[0]
    response = _read(sock, size)
    assert struct.unpack(">i", response[:4])[0] == correlation
    return response[5:]  # correlation id, empty tagged fields


def _read(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, "the broker closed the connection"
        out += chunk
    return out


def _get_subscription(sock: socket.socket, correlation: int) -> tuple[int, bytes, int]:
    """GetTelemetrySubscriptions v0 with a zero instance id: (error code, the instance id given, subscription id)."""
    body = _request(sock, 71, correlation, b"\x00" * 16 + b"\x00")
    _throttle, error = struct.unpack(">ih", body[:6])
    return error, body[6:22], struct.unpack(">i", body[22:26])[0]


def _plugin_endpoint(stack, broker_id: int) -> Endpoint:
    cluster = stack.config().clusters[0]
    broker = next(b for b in cluster.brokers if b.id == broker_id)
    return Endpoint(
        jolokia=broker.jolokia,
        username=cluster.jmx.username,
        password=cluster.jmx.password.resolve().get_secret_value(),
    )


def test_every_broker_runs_the_plugin_through_its_releases_interface(stack):
    """On 4.4 the provider class, which the broker asked for its exporter (it also implements the deprecated
    ClientTelemetry: the broker prefers the provider); on 3.9/4.1 the ClientTelemetry class, whose jar, built against
    4.4's kafka-clients, loads there."""
    L = stack.layout
    query = [MBeanQuery("kafka.health:type=ClientTelemetryExporter", ("Interface",))]
    for broker_id in L.broker_ids:
        props = (L.node_dir(broker_id) / "server.properties").read_text()
        assert (
            f"metric.reporters=org.apache.kafka.common.metrics.JmxReporter,{L.release.telemetry_plugin_class}\n"
        ) in props
        readings = JolokiaTransport().read(_plugin_endpoint(stack, broker_id), query, timeout=10)
        assert [r.value for r in readings] == [L.release.telemetry_interface], (broker_id, readings)


def test_a_push_the_plugin_cannot_read_is_counted_and_the_broker_keeps_serving(stack):
    L = stack.layout
    endpoint = _plugin_endpoint(stack, 1)
    query = [MBeanQuery("kafka.health:type=ClientTelemetryExporter", ("Failures", "Pushes"))]

    def plugin_counts() -> dict[str, float]:
        return {r.attribute: r.value for r in JolokiaTransport().read(endpoint, query, timeout=10)}

    before = plugin_counts()
    with socket.create_connection(("127.0.0.1", L.broker_port(1)), timeout=15) as sock:
        error, instance, subscription = _get_subscription(sock, 1)
        assert error == 0 and subscription != 0
        garbage = b"\xff" * 64  # a truncated varint: no OTLP
        # terminating: the broker accepts a client's last push at any time, not only after its push interval
        push = (
            instance
            + struct.pack(">i", subscription)
            + b"\x01"
            + b"\x00"
            + bytes([len(garbage) + 1])
            + garbage
            + b"\x00"
        )
        _throttle, error = struct.unpack(">ih", _request(sock, 72, 2, push)[:6])
        assert error == 0  # answered normally: the plugin's failure stayed inside it
        assert _get_subscription(sock, 3)[0] == 0  # the same connection is still served
    after = plugin_counts()
    assert after["Pushes"] == before["Pushes"] + 1 and after["Failures"] == before["Failures"] + 1
    md = AdminClient({"bootstrap.servers": L.bootstrap_servers}).list_topics(timeout=10)
    assert 1 in md.brokers


def test_telemetry_subscribe_applies_and_removes_a_subscription(stack, tmp_path):
    """``kafka-health telemetry subscribe`` as a user runs it, against the stack as a user's cluster: a subscription of
    its own (matching no client, so the other tests' clients are untouched) applied, then removed."""
    L = stack.layout
    cfg_file = tmp_path / "kafka-health.yaml"
    cfg_file.write_text(yaml.safe_dump(stack.config().model_dump(mode="json", exclude_defaults=True)))
    name = f"kh-test-{uuid.uuid4().hex[:8]}"
    base = [
        sys.executable,
        "-m",
        "monitor.cli",
        "telemetry",
        "subscribe",
        "--config",
        str(cfg_file),
        "--admin-config",
        str(L.clients_dir / "admin.java.properties"),
        "--dir",
        str(L.dir),
        "--port-base",
        str(L.port_base),
        "--name",
        name,
        "--match",
        f"client_id=nobody-{name}",
    ]
    applied = subprocess.run([*base, "--interval", "30s"], capture_output=True, text=True, timeout=180)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert f"local: client-metrics {name}: metrics=[org.apache.kafka.producer.batch.size.avg," in applied.stdout
    assert "interval.ms=30000" in applied.stdout and "applied the subscription on 1 cluster(s)" in applied.stdout
    removed = subprocess.run([*base, "--remove"], capture_output=True, text=True, timeout=180)
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert "removed the subscription on 1 cluster(s)" in removed.stdout
    log = (L.logs_dir / "telemetry-subscribe.log").read_text()
    assert log.count(f"Completed updating config for client-metric {name}") == 2, log[-2000:]  # Kafka's own word
