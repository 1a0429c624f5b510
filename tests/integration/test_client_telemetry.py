"""KIP-714 on the secured session stack: real confluent-kafka clients (librdkafka pushes its fixed metric set) of a
SCRAM principal push to the brokers, whose kafka-health plugin keeps each push as an MBean; the JMX collector
(Jolokia, as configured by the stack) exports them and the stack's Prometheus scrapes them under
``kafka_client_telemetry_*`` with the principal, client id, instance id and client software. Only metrics a client
pushed become series: the librdkafka producer pushes no batch size, the producer no poll idle ratio. A Java 3.9.1
producer (Apache Kafka's own client, which pushes by default) brings the Java-only batching signals."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import datetime, timezone

import pytest
from confluent_kafka import Consumer, Producer
from prometheus_client import CollectorRegistry, start_http_server

from collectors.component import CollectionService
from monitor.core.prom import PrometheusSource
from monitor.stack.javaclients import JavaClient
from monitor.stack.security import StackSecurity
from tests.conftest import wait_until

pytestmark = pytest.mark.integration


def test_pushed_client_metrics_reach_prometheus_with_principal_and_client_id(stack, tmp_path):
    L = stack.layout
    tag = uuid.uuid4().hex[:8]
    user, topic, group = f"tele{tag}-app", f"tele{tag}.events", f"tele{tag}-readers"
    producer_id, consumer_id, java_id = f"tele{tag}-writer", f"tele{tag}-reader", f"tele{tag}-java"
    settings = stack.add_principal(user, topic_prefixes=(f"tele{tag}.",), group_prefixes=(f"tele{tag}-",))
    java_settings = dict(line.split("=", 1) for line in StackSecurity(L).java_properties(user).splitlines())
    java = JavaClient(version="3.9.1", mode="produce", topic=topic, rate=200, record_bytes=100, log=tmp_path / "j.log",
                      properties={**java_settings, "client.id": java_id, "linger.ms": 50})
    stop = threading.Event()

    def produce():
        p = Producer({**settings, "client.id": producer_id, "linger.ms": 20})
        while not stop.is_set():
            p.produce(topic, b"x" * 200)
            p.poll(0.05)
        p.flush(10)

    def consume():
        c = Consumer({**settings, "client.id": consumer_id, "group.id": group, "auto.offset.reset": "earliest",
                      "auto.commit.interval.ms": 1000})
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

    wanted = (("kafka_client_telemetry_producer_record_queue_time_avg_seconds", producer_id),
              ("kafka_client_telemetry_consumer_poll_idle_ratio_avg", consumer_id),
              ("kafka_client_telemetry_producer_batch_size_avg_bytes", java_id))

    def all_pushed():
        collection.collect_once()
        got = [series(metric, client_id) for metric, client_id in wanted]
        return got if all(got) else None

    try:
        # The clients push every 10 s (the stack's subscription); Prometheus scrapes the collector every 5 s.
        queue, idle, batch = wait_until(all_pushed, 75, interval=L.scrape_interval_seconds,
                                        what="each client's pushed metrics in Prometheus")
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
        health = source.query(f'kafka_client_telemetry_plugin_failures_total{{broker="{labels["broker"]}"}}',
                              datetime.now(timezone.utc))
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
