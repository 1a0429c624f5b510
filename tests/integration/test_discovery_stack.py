"""Brokers found from the cluster and disk from the protocol, on the session's real stack (issue 30, items 1, 3, 4):
a config with only bootstrap_servers, security and templates collects every broker and the controller; the log
dirs' DescribeLogDirs figures are the statvfs of the real dirs; a protocol-only config says what it cannot observe."""

from __future__ import annotations

import os

import pytest
from prometheus_client import CollectorRegistry

from collectors.capabilities import capability_table
from collectors.component import CollectionService
from collectors.types import TargetStatus
from monitor.core.config import ClusterConfig, DiscoverySettings
from monitor.stack import kafka

pytestmark = pytest.mark.integration


def discovering(stack) -> ClusterConfig:
    """The stack's cluster with no broker or controller listed: templates only. The stack's Jolokia agents listen on
    the port base + 40 + node id, which ``{id}`` spells for brokers 1-9 on a base that is a multiple of 100."""
    L = stack.layout
    cluster = stack.config().clusters[0]
    template = f"http://{{host}}:{L.port_base // 10 + 4}{{id}}/jolokia"
    assert all(template.format(host="127.0.0.1", id=b) == kafka.jolokia_url(L, b) for b in L.broker_ids)
    controller = (cluster.controller_jolokia or (None,))[0]
    data = cluster.model_dump() | {
        "brokers": (), "controller_jolokia": (), "controller_jmx": (),
        "jmx": cluster.jmx.model_dump() | {"timeout_seconds": 30},
        "discovery": DiscoverySettings(jolokia=template, controller_jolokia=controller).model_dump()}
    # model_dump resolved the secrets into SecretRefs' dicts; validate from the original objects to keep them
    data["security"], data["jmx"]["password"] = cluster.security, cluster.jmx.password
    return ClusterConfig.model_validate(data)


def test_discovery_only_config_collects_every_broker_and_the_log_dirs_statvfs(stack):
    cluster = discovering(stack)
    assert not cluster.brokers and cluster.discovers
    cfg = stack.config().model_copy(update={"clusters": (cluster,)})
    svc = CollectionService(cfg, registry=CollectorRegistry(), probes=[])
    try:
        results = {r.target.key: r for r in svc.collect_once(timeout=90)}
    finally:
        svc.stop()
    ids = stack.layout.broker_ids
    for b in ids:  # discovered in the first round, read through the expanded template
        r = results[f"local/jmx/broker-{b}"]
        assert r.status is TargetStatus.OK, r.message
        assert r.target.address == kafka.jolokia_url(stack.layout, b)
    controllers = [r for k, r in results.items() if k.startswith("local/controller/")]
    assert [r.status for r in controllers] == [TargetStatus.OK], [r.message for r in controllers]
    admin = results["local/admin/admin"]
    up = {dict(s.labels)["broker"]: s.value for s in admin.samples if s.name == "kafka_cluster_broker_up"}
    assert up == {str(b): 1.0 for b in ids}  # the expected brokers are the registered ones
    protocol = results["local/protocol/protocol"]
    assert protocol.status is TargetStatus.OK, protocol.message
    disk = {(dict(s.labels)["broker"], dict(s.labels)["path"], s.name): s.value for s in protocol.samples
            if s.name.startswith("kafka_host_filesystem_")}
    for b in ids:
        path = str(stack.layout.log_dir(b))
        st = os.statvfs(path)
        assert disk[(str(b), path, "kafka_host_filesystem_size_bytes")] == st.f_blocks * st.f_frsize
        # usable space moves with every write on the machine: within 256 MiB of this process's statvfs
        avail = disk[(str(b), path, "kafka_host_filesystem_avail_bytes")]
        assert abs(avail - st.f_bavail * st.f_frsize) < 256 * 2**20


def test_a_protocol_only_config_lists_what_is_not_observable(stack):
    cluster = stack.config().clusters[0].model_copy(update={"brokers": (), "controller_jolokia": (),
                                                            "controller_jmx": ()})
    table = {c.signal: c for c in capability_table(cluster)}
    assert table["kafka_host_filesystem_avail_bytes"].sources == ("protocol_disk",)
    assert not table["kafka_broker_under_replicated_partitions"].observable
    assert "enable discovery.jolokia" in table["kafka_broker_under_replicated_partitions"].hint()
    assert table["kafka_topic_under_replicated_partitions"].sources == ("admin",)  # URP still seen, by the metadata
