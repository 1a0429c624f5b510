"""The KIP-714 pieces that are pure: the subscription kafka-health applies, its agreement with the broker plugin's
sources (deploy/kafka/telemetry), the catalog's reading of the plugin's MBeans, and the brokers loading it."""

from __future__ import annotations

import math
import re

import pytest

from collectors import catalog
from collectors.types import Reading
from monitor.cli import build_parser
from monitor.core import kafka_versions
from monitor.core.errors import Invalid
from monitor.stack import telemetry
from monitor.stack.kafka import node_properties
from monitor.stack.layout import CONTROLLER_ID, StackLayout
from monitor.stack.telemetry_cli import subscription_from_args

pytestmark = pytest.mark.unit
JAVA = telemetry.PLUGIN_DIR / "src" / "main" / "java" / "io" / "kafkahealth" / "telemetry"


def test_the_subscription_names_exactly_the_plugins_sources():
    sources = re.findall(r'P \+ "([a-z.]+)"', (JAVA / "Signals.java").read_text())
    assert sorted(telemetry.P + s for s in sources) == sorted(telemetry.SUBSCRIBED_METRICS)


def test_the_catalog_reads_every_signal_the_plugin_exposes():
    getters = re.findall(r"double get(\w+)\(\)", (JAVA / "ClientTelemetryMBean.java").read_text())
    assert sorted(getters) == sorted(attr for _, attr, _, _ in catalog.TELEMETRY_SIGNALS)


def test_subscription_as_config_command_arguments():
    sub = telemetry.Subscription(
        metrics=("org.apache.kafka.producer.",), interval_ms=10_000, match=("client_software_name=librdkafka",)
    )
    assert sub.config_command_args() == [
        "--entity-type",
        "client-metrics",
        "--entity-name",
        "kafka-health",
        "--add-config",
        "metrics=[org.apache.kafka.producer.],interval.ms=10000,match=[client_software_name=librdkafka]",
    ]
    assert sub.delete_args()[-2:] == ["--delete-config", "metrics,interval.ms"]


@pytest.mark.parametrize(
    "bad",
    [
        {"interval_ms": 50},
        {"interval_ms": 7_200_000},
        {"metrics": ("a,b",)},
        {"metrics": ("",)},
        {"name": "x]y"},
        {"match": ("client_id",)},
        {"match": ("client_id=a\nb",)},
    ],
)
def test_subscription_refuses_what_config_command_would_misread(bad):
    with pytest.raises(Invalid):
        telemetry.Subscription(**bad)


def test_plugin_mbeans_become_client_series_and_unpushed_signals_none():
    mbean = (
        "kafka.health:type=ClientTelemetry,client-instance-id=AbC_d-1,user=payments-app,client-id=batch-import,"
        "client-software-name=confluent-kafka-python,client-software-version=2.16.1"
    )
    readings = [
        Reading(mbean, "RecordQueueTimeAvgMs", 250.0),
        Reading(mbean, "BatchSizeAvg", math.nan),
        Reading(mbean, "PollIdleRatioAvg", math.nan),
        Reading(mbean, "LastPushTimestampSeconds", 1.7e9),
        Reading("kafka.health:type=ClientTelemetryExporter", "Failures", 2.0),
    ]
    samples = catalog.convert(
        readings,
        catalog.BROKER_TARGET_RULES,
        base=(("cluster", "c"), ("broker", "2")),
        tenants=catalog.TenantLookup(None, "c"),
    )
    got = {s.name: s for s in samples}
    assert sorted(got) == [
        "kafka_client_telemetry_last_push_timestamp_seconds",
        "kafka_client_telemetry_plugin_failures_total",
        "kafka_client_telemetry_producer_record_queue_time_avg_seconds",
    ]
    queue = got["kafka_client_telemetry_producer_record_queue_time_avg_seconds"]
    assert queue.value == pytest.approx(0.25)
    assert dict(queue.labels) == {
        "cluster": "c",
        "broker": "2",
        "user": "payments-app",
        "client_id": "batch-import",
        "client_instance_id": "AbC_d-1",
        "client_software_name": "confluent-kafka-python",
        "client_software_version": "2.16.1",
        "tenant": "",
    }


@pytest.mark.parametrize("release", kafka_versions.RELEASES, ids=lambda r: r.line)
def test_brokers_load_the_plugin_class_of_their_release_and_the_controller_none(tmp_path, release):
    layout = StackLayout(dir=tmp_path, port_base=23900, kafka_version=release.version)
    broker = dict(line.split("=", 1) for line in node_properties(layout, 1).splitlines())
    controller = node_properties(layout, CONTROLLER_ID)
    plugin = {
        "ClientTelemetry": "io.kafkahealth.telemetry.ClientTelemetryExporter",
        "ClientTelemetryExporterProvider": "io.kafkahealth.telemetry.ProviderClientTelemetryExporter",
    }[release.telemetry_interface]
    # JmxReporter kept: Kafka 4 registers no Kafka-metrics MBean (quota sensors, connections by software) without it
    assert broker["metric.reporters"] == f"org.apache.kafka.common.metrics.JmxReporter,{plugin}"
    assert int(broker[telemetry.MAX_CLIENTS_KEY]) > 0 and int(broker[telemetry.EXPIRY_KEY]) > 0
    assert "metric.reporters" not in controller


def test_each_plugin_class_implements_its_interface_and_the_jar_is_built_against_a_line_with_both():
    for interface, cls in kafka_versions.TELEMETRY_PLUGIN_CLASSES.items():
        source = (JAVA / f"{cls.rsplit('.', 1)[1]}.java").read_text()
        assert re.search(rf"public class {cls.rsplit('.', 1)[1]}\b[^{{]*\bimplements\b[^{{]*\b{interface}\b", source)
    # The shipped jar (pom default) is compiled against the default release, which must offer the provider interface.
    pom = (telemetry.PLUGIN_DIR / "pom.xml").read_text()
    assert re.search(r"<kafka.api.version>([^<]+)<", pom)[1] == kafka_versions.DEFAULT_RELEASE.version
    assert kafka_versions.DEFAULT_RELEASE.telemetry_interface == "ClientTelemetryExporterProvider"


def test_subscribe_command_arguments_become_the_subscription():
    args = build_parser().parse_args(
        [
            "telemetry",
            "subscribe",
            "--interval",
            "1.5s",
            "--metric",
            "org.apache.kafka.",
            "--match",
            "client_software_name=apache-kafka-java",
            "--dry-run",
        ]
    )
    sub = subscription_from_args(args)
    assert (sub.name, sub.metrics, sub.interval_ms, sub.match) == (
        "kafka-health",
        ("org.apache.kafka.",),
        1500,
        ("client_software_name=apache-kafka-java",),
    )
    default = subscription_from_args(build_parser().parse_args(["telemetry", "subscribe"]))
    assert default.metrics == telemetry.SUBSCRIBED_METRICS and default.interval_ms == 60_000
    with pytest.raises(Invalid):
        subscription_from_args(build_parser().parse_args(["telemetry", "subscribe", "--interval", "2h"]))
