"""The end-to-end probe (collectors/probe.py) on the secured session stack, as the collector role runs it: with the
monitoring principal's ACLs it creates its topic as designed and measures every broker, leaving no consumer group
behind; a principal without the probe's ACLs says it cannot run and counts no record as a failure.

The fault scenarios (a frozen broker, a slowed listener, a controlled restart) are in tests/e2e/test_alert_restarts.py,
on that module's collectors."""

from __future__ import annotations

import time

import pytest

from collectors.probe import Probe
from monitor.core.config import SecretRef
from monitor.stack import security
from tests.conftest import wait_until

pytestmark = [pytest.mark.integration]


def _results(probe: Probe) -> dict[tuple[int, str], int]:
    return {k: v for k, v in probe.series.results().items() if v}


def test_probe_as_the_monitoring_principal_places_one_partition_per_broker_and_measures_each(stack):
    from confluent_kafka.admin import AdminClient, ConfigResource

    cluster = stack.config().clusters[0]
    assert cluster.security["security.protocol"] == "SASL_SSL"  # authenticates like the other collectors
    probe = Probe(cluster)
    probe.start()
    try:
        ok = wait_until(
            lambda: (r := _results(probe)) and {b for b, res in r if res == "ok"} == {1, 2, 3} and r,
            60,
            interval=1,
            what="ok records of every broker",
        )
        assert probe.series.up and probe.running
    finally:
        probe.stop()
    assert not [k for k in ok if k[1] != "ok"], ok
    admin = AdminClient({"bootstrap.servers": stack.layout.bootstrap_servers})
    topic = admin.list_topics(timeout=10).topics[cluster.probe.topic]
    preferred = sorted(p.replicas[0] for p in topic.partitions.values())
    assert preferred == [1, 2, 3] and all(len(set(p.replicas)) == 3 for p in topic.partitions.values()), {
        p: v.replicas for p, v in topic.partitions.items()
    }
    res = ConfigResource("topic", cluster.probe.topic)
    configs = admin.describe_configs([res])[res].result(10)
    assert configs["min.insync.replicas"].value == "2" and configs["retention.ms"].value == "3600000"
    groups = admin.list_consumer_groups().result(10).valid
    assert cluster.probe.topic not in {g.group_id for g in groups}, "the probe's consumer left a group with offsets"
    fams = {f.name: f for f in probe.series.families()}
    brokers = {s.labels["broker"] for s in fams["kafka_probe_roundtrip_latency_seconds"].samples}
    assert brokers == {"1", "2", "3"}


def test_probe_without_its_acls_says_it_cannot_run_and_counts_no_failure(stack):
    user = "probe-no-acls"
    sec = security.StackSecurity(stack.layout)
    security.create_scram_users(sec, [user])
    cluster = stack.config().clusters[0]
    settings = {
        **cluster.security,
        "sasl.username": user,
        "sasl.password": SecretRef(file=str(sec.scram_password_file(user))),
    }
    probe = Probe(cluster.model_copy(update={"security": settings}))
    probe.start()
    try:
        wait_until(
            lambda: "AUTHORIZATION_FAILED" in probe.series.reason,
            30,
            interval=0.5,
            what=lambda: f"the probe to say it is refused (reason: {probe.series.reason!r})",
        )
        time.sleep(2)
        assert not probe.series.up
        assert "User:probe-no-acls needs ACLs allowing" in probe.series.reason, probe.series.reason
        assert _results(probe) == {}, "a refused probe counted records, which would read as an outage"
    finally:
        probe.stop()
    up = [s.value for f in probe.series.families() if f.name == "kafka_health_probe_up" for s in f.samples]
    assert up == [0.0]
