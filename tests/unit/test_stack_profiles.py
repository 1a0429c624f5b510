"""``stack up --profile``: each profile's broker JVM carries the agent its platform runs, and the stack's config reads
the brokers as a user of that platform would (issue 30, item 5). The e2e on real brokers: tests/e2e/test_profiles.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.capabilities import configured_sources
from monitor.stack import Stack, StackLayout, kafka
from monitor.stack.layout import CONTROLLER_ID

pytestmark = pytest.mark.unit


def agents(layout: StackLayout, node: int) -> list[str]:
    return [a for a in kafka.jvm_argv(layout, node, "java") if a.startswith("-javaagent:")]


@pytest.mark.parametrize(
    ("profile", "agent", "sources"),
    [
        (
            "strimzi",
            "strimzi-kafka-metrics.yml",
            ("admin", "probe", "protocol_disk", "jmx_exporter_strimzi", "controller_exporter_strimzi"),
        ),
        ("msk", "vanilla.yml", ("admin", "probe", "protocol_disk", "jmx_exporter_vanilla", "node_exporter")),
        ("protocol", None, ("admin", "probe", "protocol_disk")),
    ],
)
def test_each_profile_runs_its_agent_and_is_read_through_it(tmp_path: Path, profile, agent, sources):
    layout = StackLayout(dir=tmp_path, port_base=20400, profile=profile)
    (broker,) = agents(layout, 1) or [None]
    if agent is not None:
        assert broker.endswith(f"=127.0.0.1:20481:{kafka.DEPLOY_KAFKA}/jmx_exporter/{agent}")
        assert "jmx_prometheus_javaagent" in broker
        # the controller runs it too, as Strimzi's nodes do (MSK's cannot be reached: the msk config reads none)
        assert agents(layout, CONTROLLER_ID) == [broker.replace(":20481:", ":20480:")]
        assert layout.all_ports()["controller-exporter"] == 20480
    else:
        assert broker is None and agents(layout, CONTROLLER_ID) == []
    cluster = Stack(layout).config().clusters[0]
    assert not cluster.brokers and cluster.discovers and configured_sources(cluster) == sources
    assert not cluster.controller_jmx and not cluster.controller_jolokia
    if agent:  # {id} spells each broker's exporter port
        url = cluster.discovery.jmx_exporter.url
        assert url.replace("{host}", "127.0.0.1").replace("{id}", "2") == "http://127.0.0.1:20482/metrics"
    controller = cluster.discovery.controller_jmx_exporter
    if profile == "strimzi":  # one controller: a fixed port, {host} from DescribeQuorum
        assert (controller.url, controller.dialect) == ("http://{host}:20480/metrics", "strimzi")
    else:
        assert controller is None
    assert "broker-1-jolokia" not in layout.all_ports()


def test_a_port_base_id_cannot_spell_lists_the_brokers(tmp_path: Path):
    cluster = Stack(StackLayout(dir=tmp_path, port_base=20405, profile="msk")).config().clusters[0]
    assert [(b.id, b.jmx_exporter.url, b.node_exporter and b.node_exporter.url) for b in cluster.brokers] == [
        (b, f"http://127.0.0.1:{20485 + b}/metrics", "http://127.0.0.1:20494/metrics") for b in (1, 2, 3)
    ]
    assert configured_sources(cluster)[-2:] == ("jmx_exporter_vanilla", "node_exporter")
    assert cluster.controller_jmx_exporter == ()
    listed = Stack(StackLayout(dir=tmp_path, port_base=20405, profile="strimzi")).config().clusters[0]
    (controller,) = listed.controller_jmx_exporter
    assert (controller.url, controller.dialect) == ("http://127.0.0.1:20485/metrics", "strimzi")
    assert "controller_exporter_strimzi" in configured_sources(listed)


def test_strimzis_metrics_reporter_runs_on_the_brokers_asked_beside_jmx_reporter(tmp_path: Path):
    layout = StackLayout(dir=tmp_path, port_base=20400, profile="msk", reporter_brokers=(3,))
    props = {n: dict(line.split("=", 1) for line in kafka.node_properties(layout, n).splitlines()) for n in (1, 2, 3)}
    # Kafka 4.x registers no Kafka-metrics MBean when JmxReporter is not listed: it stays first
    assert props[3]["metric.reporters"].split(",") == [
        "org.apache.kafka.common.metrics.JmxReporter",
        layout.release.telemetry_plugin_class,
        kafka.REPORTER_CLASS,
    ]
    assert props[3]["kafka.metrics.reporters"] == kafka.YAMMER_REPORTER_CLASS
    assert props[3]["prometheus.metrics.reporter.listener"] == "http://127.0.0.1:20493"
    assert kafka.REPORTER_CLASS not in props[1]["metric.reporters"] and "kafka.metrics.reporters" not in props[2]
    classpath = {n: kafka.jvm_argv(layout, n, "java")[-3] for n in (1, 3)}
    assert classpath[3] == classpath[1] + f":{kafka.reporter_dir()}/*"
    assert layout.all_ports()["broker-3-reporter"] == 20493 and "broker-1-reporter" not in layout.all_ports()
    # instead of the profile's jmx_exporter: both in one JVM share client_java's registry and fail on shared names
    assert agents(layout, 3) == [] and agents(layout, 1) and "broker-3-exporter" not in layout.all_ports()


def test_the_controller_runs_strimzis_metrics_reporter_when_asked_instead_of_its_exporter(tmp_path: Path):
    """Where the controller fixture of dialect strimzi_reporter is recorded (record.py --reporter-controller):
    JmxReporter first, no telemetry plugin (the controller's classpath has none), its own port, no jmx_exporter."""
    layout = StackLayout(dir=tmp_path, port_base=20400, profile="strimzi", reporter_controller=True)
    props = dict(line.split("=", 1) for line in kafka.node_properties(layout, CONTROLLER_ID).splitlines())
    assert props["metric.reporters"].split(",") == ["org.apache.kafka.common.metrics.JmxReporter", kafka.REPORTER_CLASS]
    assert props["kafka.metrics.reporters"] == kafka.YAMMER_REPORTER_CLASS
    assert props["prometheus.metrics.reporter.listener"] == "http://127.0.0.1:20490"
    assert kafka.jvm_argv(layout, CONTROLLER_ID, "java")[-3].endswith(f":{kafka.reporter_dir()}/*")
    assert agents(layout, CONTROLLER_ID) == [] and agents(layout, 1)
    ports = layout.all_ports()
    assert ports["controller-reporter"] == 20490 and "controller-exporter" not in ports
    plain = StackLayout(dir=tmp_path, port_base=20400, profile="strimzi")
    assert "metric.reporters" not in kafka.node_properties(plain, CONTROLLER_ID)
    assert "controller-reporter" not in plain.all_ports() and agents(plain, CONTROLLER_ID)


def test_a_heap_asked_for_one_broker_is_the_heap_its_jvm_runs_with(tmp_path: Path):
    """The benches' bigger broker heap: the JVM takes the last -Xmx, so it must replace the stack's, not precede it
    (bench/sources.py passed -Xmx1g among the extra arguments, before the stack's, and its broker ran out of heap)."""
    layout = StackLayout(dir=tmp_path, port_base=19700)
    heaps = [a for a in kafka.jvm_argv(layout, 1, "java", heap="1g") if a.startswith(("-Xmx", "-Xms"))]
    assert heaps == ["-Xms1g", "-Xmx1g"]
    assert [a for a in kafka.jvm_argv(layout, 1, "java") if a.startswith("-Xmx")] == [f"-Xmx{kafka.HEAP['broker']}"]
