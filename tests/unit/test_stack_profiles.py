"""``stack up --profile``: each profile's broker JVM carries the agent its platform runs, and the stack's config reads
the brokers as a user of that platform would (issue 30, item 5). The e2e on real brokers: tests/e2e/test_profiles.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.capabilities import configured_sources
from monitor.stack import Stack, StackLayout, kafka

pytestmark = pytest.mark.unit


def agents(layout: StackLayout, node: int) -> list[str]:
    return [a for a in kafka.jvm_argv(layout, node, "java") if a.startswith("-javaagent:")]


@pytest.mark.parametrize(
    ("profile", "agent", "sources"),
    [
        ("strimzi", "strimzi-kafka-metrics.yml", ("admin", "probe", "protocol_disk", "jmx_exporter_strimzi")),
        ("msk", "vanilla.yml", ("admin", "probe", "protocol_disk", "jmx_exporter_vanilla", "node_exporter")),
        ("protocol", None, ("admin", "probe", "protocol_disk")),
    ],
)
def test_each_profile_runs_its_agent_and_is_read_through_it(tmp_path: Path, profile, agent, sources):
    layout = StackLayout(dir=tmp_path, port_base=20400, profile=profile)
    (broker,) = agents(layout, 1) or [None]
    if agent is None:
        assert broker is None
    else:
        assert broker.endswith(f"=127.0.0.1:20481:{kafka.DEPLOY_KAFKA}/jmx_exporter/{agent}")
        assert "jmx_prometheus_javaagent" in broker
    cluster = Stack(layout).config().clusters[0]
    assert not cluster.brokers and cluster.discovers and configured_sources(cluster) == sources
    assert not cluster.controller_jmx and not cluster.controller_jolokia
    if agent:  # {id} spells each broker's exporter port
        url = cluster.discovery.jmx_exporter.url
        assert url.replace("{host}", "127.0.0.1").replace("{id}", "2") == "http://127.0.0.1:20482/metrics"
    assert "broker-1-jolokia" not in layout.all_ports()


def test_a_port_base_id_cannot_spell_lists_the_brokers(tmp_path: Path):
    cluster = Stack(StackLayout(dir=tmp_path, port_base=20405, profile="msk")).config().clusters[0]
    assert [(b.id, b.jmx_exporter.url, b.node_exporter) for b in cluster.brokers] == [
        (b, f"http://127.0.0.1:{20485 + b}/metrics", "http://127.0.0.1:20494/metrics") for b in (1, 2, 3)
    ]
    assert configured_sources(cluster)[-2:] == ("jmx_exporter_vanilla", "node_exporter")
