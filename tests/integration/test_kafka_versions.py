"""Every catalog MBean on every supported Kafka version: the session stack's version (4.4 by default; `make test`
runs this module again on 3.9 and 4.1 with KAFKA_HEALTH_TEST_KAFKA_VERSION) registers every MBean that
collectors/catalog.py reads, except those its row of monitor/core/kafka_versions.py says it lacks.

So a release that renames or drops an MBean the catalog expects fails here, in CI, the day the version table gains
its row, instead of leaving a user's alert without input. The reverse is checked too: a metric the table calls
absent must really be absent, so the table cannot hide a signal the version has.

Some catalog MBeans appear only once something happened on the broker; the test makes each happen first (a topic
with traffic, a consumer group, the stack's default client quota for the quota sensors) or names the condition
below, with the test that proves that family where it does appear.
"""

from __future__ import annotations

import logging
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client import CollectorRegistry

from collectors import catalog
from collectors.component import CollectionService
from monitor.core.config import CollectionSettings
from monitor.core.kafka_versions import release

pytestmark = [pytest.mark.integration, pytest.mark.kafka_versions]

# Catalog metrics whose MBean exists only under a condition this test does not create, and where it is proven.
CONDITIONAL = {
    # One MBean per client instance that pushed KIP-714 metrics; which signals depends on the client library.
    # Proven by tests/integration/test_client_telemetry.py (Java and librdkafka clients).
    **{f"kafka_client_telemetry_{stem}": "a client pushed KIP-714 telemetry" for stem, *_ in catalog.TELEMETRY_SIGNALS},
    # Counted only for requests on a protocol version the broker deprecates (KIP-896): 4.0 removed those versions.
    # Proven on 3.x below (test_an_old_clients_deprecated_requests_are_counted_on_3x), by a client on the 0.9 protocol.
    "kafka_broker_deprecated_requests_total": "a client sent a deprecated request version",
    # Per share-partition and per group (KIP-1103, KIP-1191): registered once a share group read a partition (and
    # dead-lettered a record). Proven on 4.4 by tests/e2e/test_share_groups.py (a real share consumer).
    "kafka_broker_share_lock_timeouts_total": "a share group read a partition",
    "kafka_broker_share_inflight_records": "a share group read a partition",
    "kafka_broker_share_dead_letter_records_total": "a share group dead-lettered a record",
    # Registered once some client was throttled (the stack's default quota is generous).
    "kafka_client_request_throttle_time_seconds": "a client was throttled for request time",
    # Per topic, Kafka 4.4 registers the failure meters at the topic's first failure (the broker-wide ones are always
    # there). The fixture has a record rejected (over message.max.bytes), which registers the rejected-bytes meter but
    # counts as no failed request (Kafka does not count a client's record errors there); a failed request it does
    # not make.
    "kafka_topic_failed_produce_requests_total": "a produce request to the topic failed on the broker",
    "kafka_topic_failed_fetch_requests_total": "a fetch request of the topic failed on the broker",
}


def catalog_metrics() -> dict[str, set[str]]:
    """Node kind -> the metric names its catalog rules export."""
    return {
        "broker": {r.metric for r in catalog.BROKER_RULES},
        "controller": {r.metric for r in catalog.CONTROLLER_RULES},
    }


def _family(name: str) -> str:
    return name.removesuffix("_total")


def exported(registry: CollectorRegistry, prefix: str) -> set[str]:
    """Family names (``_total`` dropped) of the samples whose broker label is a broker (``prefix`` "b") or the
    controller ("c")."""
    out = set()
    for fam in registry.collect():
        for s in fam.samples:
            broker = s.labels.get("controller") or s.labels.get("broker", "")
            is_controller = broker == "100" or "controller" in s.labels
            if (prefix == "c") == is_controller:
                out.add(_family(fam.name))
    return out


@pytest.fixture(scope="module")
def collected(stack):
    """Two collections (rates need two) after traffic that makes the conditional MBeans appear: a topic written and
    read, a group committed, quota sensors of a producer and a consumer."""
    run = uuid.uuid4().hex[:8]
    topic, group = f"versions.{run}", f"versions-g-{run}"
    servers = stack.layout.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": servers})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)])[topic].result(30)
    p = Producer({"bootstrap.servers": servers, "client.id": f"versions-p-{run}", "linger.ms": 5})
    for i in range(300):
        p.produce(topic, b"x" * 100, key=str(i).encode())
    assert p.flush(30) == 0
    # One record over the broker's message.max.bytes (1 MB), sent because the client allows it: the broker rejects
    # it, which registers the topic's rejected-bytes and failed-produce meters.
    big = Producer(
        {"bootstrap.servers": servers, "client.id": f"versions-big-{run}", "message.max.bytes": 3_000_000, "retries": 0}
    )
    errors: list = []
    big.produce(topic, b"x" * 2_000_000, partition=0, on_delivery=lambda err, _m: errors.append(err))
    big.flush(30)
    assert errors and errors[0] is not None, errors  # rejected by the broker
    c = Consumer(
        {
            "bootstrap.servers": servers,
            "group.id": group,
            "client.id": f"versions-c-{run}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    got, deadline = 0, time.monotonic() + 30
    while got < 300 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got += 1
    c.commit(asynchronous=False)
    c.close()
    if release(stack.layout.kafka_version).major < 4:
        legacy_produce(servers, topic, run)
    cluster = stack.config().clusters[0]
    cluster = cluster.model_copy(update={"jmx": cluster.jmx.model_copy(update={"timeout_seconds": 30})})
    registry = CollectorRegistry()
    # the Admin round's budget is 0.8 of the interval under jmx.timeout_seconds: 30 s, not the 4 s of a 5 s interval
    every = CollectionSettings(interval_seconds=40)
    svc = CollectionService(
        stack.config().model_copy(update={"clusters": (cluster,), "collection": every}), registry=registry
    )
    said = Said()
    admin_log = logging.getLogger("collectors.admin")
    admin_log.addHandler(said)
    admin_log.setLevel(logging.INFO)
    try:
        svc.collect_once()
        time.sleep(1)
        results = svc.collect_once()
    finally:
        svc.stop()
        admin_log.removeHandler(said)
    bad = {r.target.name: (r.status.value, r.message) for r in results if r.status.value != "ok"}
    assert not bad, bad
    samples = [s for fam in registry.collect() for s in fam.samples]
    versions = {s.labels["version"] for s in samples if s.name == "kafka_broker_info"}
    return {
        "broker": exported(registry, "b"),
        "controller": exported(registry, "c"),
        "versions": versions,
        "group": group,
        "group_types": {s.labels["group"]: s.labels["type"] for s in samples if s.name == "kafka_group_info"},
        "share_series": {s.name for s in samples if s.name.startswith("kafka_sharegroup_")},
        "admin_log": said.records,
        "deprecated": {
            (s.labels["request"], s.labels["api_version"], s.labels["client_software_name"])
            for s in samples
            if s.name == "kafka_broker_deprecated_requests_total" and s.value >= 1
        },
    }


def legacy_produce(servers: str, topic: str, run: str) -> None:
    """Five records sent as a client of a 0.9 broker would (librdkafka without ApiVersions): Produce v1, which 3.x
    deprecates (KIP-896) and 4.0 refuses."""
    p = Producer(
        {
            "bootstrap.servers": servers,
            "client.id": f"versions-legacy-{run}",
            "api.version.request": False,
            "broker.version.fallback": "0.9.0",
            "logger": logging.getLogger("versions-test-librdkafka"),
        }
    )
    delivered: list = []
    for _ in range(5):
        p.produce(topic, b"x", on_delivery=lambda err, _m: delivered.append(err))
    assert p.flush(60) == 0 and delivered == [None] * 5, delivered


class Said(logging.Handler):
    """The collector's log lines of the round (collectors.admin), kept."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_every_catalog_mbean_is_there_unless_the_version_table_says_it_is_not(stack, collected):
    rel = release(stack.layout.kafka_version)
    for kind, metrics in catalog_metrics().items():
        expected = {m for m in metrics if m not in CONDITIONAL and not rel.lacks_mbean(m)}
        missing = sorted(m for m in expected if _family(m) not in collected[kind])
        assert not missing, (
            f"Kafka {rel.version} {kind}s register no MBean for {missing}: the MBean moved or vanished. Map the new "
            f"name in collectors/catalog.py, or list the metric in absent_metrics of {rel.version}'s row in "
            "monitor/core/kafka_versions.py (and say in docs/operations.md what that costs)"
        )


def test_what_the_version_table_calls_absent_is_absent(stack, collected):
    rel = release(stack.layout.kafka_version)
    present = collected["broker"] | collected["controller"]
    claimed = sorted(m for m in rel.absent_metrics if _family(m) in present)
    assert not claimed, f"Kafka {rel.version} does register {claimed}: drop them from its absent_metrics"


def test_every_group_is_listed_as_its_kind_and_share_groups_only_where_the_release_has_them(stack, collected):
    """The Admin round lists the groups with their types (ListGroups v5 from 4.0; before it every group is classic):
    the fixture's confluent-kafka consumer is a classic group on every release. Where the release has no share
    groups (3.9: no ShareGroupDescribe; 4.1: offered, but no share group without share.version) the round exports no
    share series, says at INFO what the brokers offer, and logs no warning or error."""
    assert collected["group_types"].get(collected["group"]) == "classic", collected["group_types"]
    warned = [r.getMessage() for r in collected["admin_log"] if r.levelno >= logging.WARNING]
    assert not warned, warned
    said = [r.getMessage() for r in collected["admin_log"] if "ShareGroupDescribe" in r.getMessage()]
    assert len(said) == 1, said  # what the brokers' API versions say, once
    rel = release(stack.layout.kafka_version)
    if not rel.has("share_groups"):
        assert not collected["share_series"], collected["share_series"]
    if rel.version.startswith("3."):
        assert "no share groups on this cluster" in said[0], said


def test_an_old_clients_deprecated_requests_are_counted_on_3x(stack, collected):
    """The fixture's 0.9-protocol producer sends Produce v1, deprecated on 3.x (KIP-896): the collectors export it as
    kafka_broker_deprecated_requests_total with the request, its version and client software unknown (no ApiVersions,
    so no name). 4.0 removed those versions: nothing to count there."""
    if release(stack.layout.kafka_version).major >= 4:
        pytest.skip("Kafka 4.0 removed the request versions KIP-896 deprecated")
    assert ("Produce", "1", "unknown") in collected["deprecated"], collected["deprecated"]


def test_every_node_runs_the_version_it_was_asked_for(stack, collected):
    """The jars resolved for the version are what runs: each node's app-info version, read by the catalog."""
    assert collected["versions"] == {stack.layout.kafka_version}, collected["versions"]
