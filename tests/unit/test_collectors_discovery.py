"""Discovery's pure decisions (collectors.discovery), the log-dir disk series (collectors.protocol), and the service
asking the collectors for their targets every round, with a fake protocol client (the one seam)."""

from __future__ import annotations

import re

import pytest
from prometheus_client import CollectorRegistry

from collectors.component import CollectionService, build_collectors
from collectors.discovery import (
    DiscoveryBoard,
    Membership,
    Node,
    broker_targets,
    controller_addresses,
    expected_brokers,
)
from collectors.protocol import ProtocolCollector, log_dir_samples, protocol_disk_brokers, protocol_size_brokers
from collectors.protocol_client import LogDir, protocol_settings
from collectors.types import TargetStatus
from monitor.core.config import BrokerTarget, ClusterConfig, Config, ConfigError, parse_config
from monitor.core.errors import TransportError

pytestmark = pytest.mark.unit

N1, N2, N3, N4 = (Node(i, f"k{i}.example", 9092) for i in (1, 2, 3, 4))
DISCOVERING = ClusterConfig(
    name="prod",
    bootstrap_servers="k1.example:9092",
    discovery={
        "jolokia": "http://{host}:8778/jolokia",
        "jmx": "{host}:9999",
        "controller_jolokia": "http://{host}:8779/jolokia",
    },
)

# The service tests' cluster: every template reaches a closed loopback port, so a scrape fails at once (no DNS).
LOCAL = ClusterConfig(
    name="prod",
    bootstrap_servers="127.0.0.1:1",
    jmx={"timeout_seconds": 2},
    discovery={"jolokia": "http://127.0.0.1:1/jolokia-{id}", "controller_jolokia": "http://127.0.0.1:1/jolokia"},
)


# --- expected_brokers: the numbered rules of collectors.discovery --------------------------------------------------
@pytest.mark.parametrize(
    "case, previous, answer, expected",
    [
        ("1 a broker joins", (N1, N2, N3), Membership((N1, N2, N3, N4)), (1, 2, 3, 4)),
        (
            "2 a crashed broker is fenced, still registered",
            (N1, N2, N3),
            Membership((N1, N2, Node(3, "k3.example", 9092, fenced=True))),
            (1, 2, 3),
        ),
        ("3 unregistered: no longer expected", (N1, N2, N3, N4), Membership((N1, N2, N3)), (1, 2, 3)),
        (
            "4 before 4.0 a broker that left the metadata stays expected",
            (N1, N2, N3),
            Membership((N1, N2), fenced_known=False),
            (1, 2, 3),
        ),
        ("4 and a new one is added", (N1,), Membership((N2,), fenced_known=False), (1, 2)),
    ],
)
def test_expected_brokers(case, previous, answer, expected):
    assert tuple(n.id for n in expected_brokers(previous, answer)) == expected, case


def test_a_moved_broker_keeps_its_newest_address():
    moved = Node(2, "k2-new.example", 9092)
    assert expected_brokers((N1, N2), Membership((N1, moved), fenced_known=False))[1].host == "k2-new.example"


def test_templates_expand_per_broker_and_listed_brokers_keep_their_entries():
    cluster = DISCOVERING.model_copy(
        update={
            "discovery": DISCOVERING.discovery.model_copy(update={"enabled": True}),
            "brokers": (BrokerTarget(id=2, jolokia="http://special:1/jolokia"),),
        }
    )
    found = broker_targets(cluster, (N1, N2, N3))
    assert [(b.id, b.jolokia, b.jmx, b.host) for b in found] == [
        (1, "http://k1.example:8778/jolokia", "k1.example:9999", "k1.example"),
        (3, "http://k3.example:8778/jolokia", "k3.example:9999", "k3.example"),
    ]


def test_discovery_is_on_by_default_only_without_listed_brokers():
    assert DISCOVERING.discovers
    listed = DISCOVERING.model_copy(update={"brokers": (BrokerTarget(id=1, jmx="h:1"),)})
    assert not listed.discovers and broker_targets(listed, (N1, N2)) == ()


def test_controllers_from_their_own_template_and_id_template():
    jmx, jolokia = controller_addresses(DISCOVERING, (Node(100, "c1.example", 9093),))
    assert (jmx, jolokia) == ((), ("http://c1.example:8779/jolokia",))
    by_id = ClusterConfig(name="x", bootstrap_servers="h:1", discovery={"jmx": "ctl-{id}.example:9999"})
    assert controller_addresses(by_id, (Node(7, "c", 1),)) == (("ctl-7.example:9999",), ())


def test_board_keeps_the_last_controllers_when_an_answer_has_none():
    board = DiscoveryBoard()
    assert not board.known
    board.publish(Membership((N1,), (Node(100, "c", 1),)))
    board.publish(Membership((N1, N2), ()))
    assert [n.id for n in board.brokers()] == [1, 2] and [n.id for n in board.controllers()] == [100]


def test_a_template_field_other_than_host_and_id_is_a_config_error_with_its_line():
    text = "clusters:\n  - name: p\n    bootstrap_servers: h:1\n    discovery:\n      jolokia: http://{hostname}:1/j\n"
    with pytest.raises(ConfigError) as err:
        parse_config(text, "c.yaml")
    assert "c.yaml:5" in str(err.value) and "{hostname}" in str(err.value)


# --- disk from the protocol ---------------------------------------------------------------------------------------
def test_log_dir_samples_are_the_host_collectors_series_without_offline_dirs():
    dirs = [
        LogDir(1, "/data/a", "", 1000, 400, False),
        LogDir(1, "/data/b", "KafkaStorageError", None, None, None),
        LogDir(2, "/data/a", "", None, None, None),
    ]  # broker 2 below v4: no figures
    got = {
        (s.name, dict(s.labels).get("path"), dict(s.labels)["broker"]): s.value
        for s in log_dir_samples(dirs, base=(("cluster", "c"),), hosts={1: "k1", 2: "k2"})
    }
    assert got == {
        ("kafka_host_filesystem_size_bytes", "/data/a", "1"): 1000.0,
        ("kafka_host_filesystem_avail_bytes", "/data/a", "1"): 400.0,
        ("kafka_broker_log_dir_cordoned", "/data/a", "1"): 0.0,
    }
    size = next(s for s in log_dir_samples(dirs, base=(("cluster", "c"),), hosts={1: "k1"}))
    assert [k for k, _ in size.labels] == ["cluster", "host", "broker", "path"]  # the host collector's order


def test_protocol_disk_only_where_no_host_source_gives_it():
    cluster = ClusterConfig(
        name="c",
        bootstrap_servers="h:1",
        brokers=(BrokerTarget(id=1, jmx="h:1", log_dirs=("/d",)), BrokerTarget(id=2, jmx="h:2")),
    )
    assert protocol_disk_brokers(cluster, (1, 2, 3)) == (2, 3)
    off = cluster.model_copy(update={"log_dirs_from_protocol": False})
    assert protocol_disk_brokers(off, (1, 2, 3)) == ()


def test_protocol_settings_translate_security_and_refuse_what_they_cannot():
    got = protocol_settings(
        {
            "bootstrap.servers": "a:1, b:2",
            "security.protocol": "sasl_ssl",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "u",
            "sasl.password": "p",
            "ssl.ca.location": "/ca.pem",
            "socket.keepalive.enable": "true",
        },
        timeout=5,
    )
    assert got["bootstrap_servers"] == ["a:1", "b:2"] and got["security_protocol"] == "SASL_SSL"
    assert (got["sasl_plain_username"], got["ssl_cafile"], got["request_timeout_ms"]) == ("u", "/ca.pem", 5000)
    with pytest.raises(TransportError, match="sasl.oauthbearer.method") as err:
        protocol_settings(
            {"bootstrap.servers": "a:1", "sasl.oauthbearer.method": "oidc", "sasl.password": "s3"}, timeout=5
        )
    assert "s3" not in str(err.value)


# --- the service: targets asked every round -----------------------------------------------------------------------
class FakeProtocol:
    """The protocol client's seam: answers what the test sets in ``members``."""

    def __init__(self, members: list[Node]):
        self.members = members
        self.log_dir_reads = 0
        self.sized: list[int] = []  # the brokers last asked for their partitions' sizes
        self.parts = (("orders.a", 0, 30), ("__consumer_offsets", 7, 5))  # (topic, partition, bytes) in each dir

    def membership(self) -> Membership:
        return Membership(tuple(self.members), (Node(100, "127.0.0.1", 9093),))

    def log_dirs(self, brokers, *, timeout, sizes_of=()):
        self.log_dir_reads += 1
        self.sized = sorted(sizes_of)
        return [LogDir(b, "/data", "", 100, 50, None, self.parts if b in self.sized else ()) for b in brokers], {}

    def close(self) -> None:
        pass


def test_protocol_only_cluster_reads_log_sizes_from_describe_log_dirs_with_the_tenant():
    """No agent: the replicas' sizes come from DescribeLogDirs (labelled as the JMX catalog labels them), so
    disk-full risk can name the tenant whose data grows; where a JMX source reads them, they are not asked twice."""
    from collectors.catalog import TenantLookup
    from monitor.core.config import TenantConfig, TenantSelector
    from monitor.core.tenancy import TenantIndex

    tenants = (TenantConfig(name="shop", selectors=(TenantSelector(cluster="p", topic_prefixes=("orders.",)),)),)
    lookup = TenantLookup(TenantIndex(tenants), "p")
    protocol_only = ClusterConfig(name="p", bootstrap_servers="h:1")
    listed_jmx = protocol_only.model_copy(
        update={"brokers": (BrokerTarget(id=1, jmx_exporter="http://h:11001/metrics"),)}
    )
    assert protocol_size_brokers(protocol_only, (1, 2)) == (1, 2)
    assert protocol_size_brokers(listed_jmx, (1, 2)) == (2,)  # broker 1's exporter reads kafka.log Size
    templated = ClusterConfig(name="p", bootstrap_servers="h:1", discovery={"jmx_exporter": "http://{host}:11001/m"})
    assert protocol_size_brokers(templated, (1, 2)) == ()
    off = protocol_only.model_copy(update={"log_dirs_from_protocol": False})
    assert protocol_size_brokers(off, (1, 2)) == ()

    fake = FakeProtocol([N1, N2])
    c = ProtocolCollector(protocol_only, board=DiscoveryBoard(), client_factory=lambda _c: fake, tenants=lookup)
    result = c.collect_target(c.targets()[0], now=1.0)
    assert fake.sized == [1, 2]
    fake.parts = (("orders.a", 0, 30), ("orders.a", 1, 12), ("__consumer_offsets", 7, 5))  # summed per topic, as JMX
    result = c.collect_target(c.targets()[0], now=2.0)
    sizes = {
        (dict(s.labels)["broker"], dict(s.labels)["topic"], dict(s.labels)["tenant"]): s.value
        for s in result.samples
        if s.name == "kafka_topic_log_size_bytes"
    }
    assert sizes == {
        ("1", "orders.a", "shop"): 42.0,
        ("2", "orders.a", "shop"): 42.0,
        ("1", "__consumer_offsets", ""): 5.0,
        ("2", "__consumer_offsets", ""): 5.0,
    }
    size = next(s for s in result.samples if s.name == "kafka_topic_log_size_bytes")
    assert [k for k, _ in size.labels] == ["cluster", "broker", "topic", "tenant"]  # the JMX catalog's, in order

    fake = FakeProtocol([N1, N2])
    c = ProtocolCollector(listed_jmx, board=DiscoveryBoard(), client_factory=lambda _c: fake, tenants=lookup)
    result = c.collect_target(c.targets()[0], now=1.0)
    assert fake.sized == [2]  # never two sources summed for broker 1
    assert {dict(s.labels)["broker"] for s in result.samples if s.name == "kafka_topic_log_size_bytes"} == {"2"}
    # disk still from the protocol for both (no host source)
    assert {dict(s.labels)["broker"] for s in result.samples if s.name == "kafka_host_filesystem_size_bytes"} == {
        "1",
        "2",
    }


class FailingAdmin:
    stale_coordinator = replace_client = False

    def cluster(self, *, timeout):
        raise TransportError("no Admin in this test")


def test_a_joining_broker_is_collected_next_round_and_an_unregistered_one_is_forgotten():
    fake = FakeProtocol([N1, N2, N3])
    config = Config(clusters=(LOCAL,))
    collectors = build_collectors(config, protocol_factory=lambda c: fake, admin_factory=lambda c: FailingAdmin())
    svc = CollectionService(config, registry=CollectorRegistry(), collectors=collectors)

    def jmx_targets():
        return sorted(t.name for _, t in svc.work if t.collector in ("jmx", "controller"))

    first = {r.target.key for r in svc.collect_once(timeout=10)}  # the membership is read before the targets
    assert "prod/protocol/protocol" in first and "prod/jmx/broker-3" in first
    assert jmx_targets() == ["broker-1", "broker-2", "broker-3", "controller-127.0.0.1:1"]
    fake.members = [N1, N2, N3, N4]
    svc.collect_once(timeout=10)
    assert "broker-4" in jmx_targets()
    protocol = next(c for c in collectors if isinstance(c, ProtocolCollector))
    result = protocol.collect_target(protocol.targets()[0], now=1.0)
    assert result.status is TargetStatus.OK
    assert {dict(s.labels)["broker"] for s in result.samples if s.name == "kafka_host_filesystem_size_bytes"} == {
        "1",
        "2",
        "3",
        "4",
    }
    fake.members = [N1, N2, N3]  # broker 4 unregistered
    svc.collect_once(timeout=10)
    svc.collect_once(timeout=10)
    assert "broker-4" not in jmx_targets()
    assert "prod/jmx/broker-4" not in svc.store.snapshot()[0]  # nothing left to say it failed
    svc.stop()


# --- the capability table ------------------------------------------------------------------------------------------
def test_a_protocol_only_cluster_says_what_it_cannot_observe_and_how_to_enable_it():
    from collectors.capabilities import CapabilityExporter, capability_table, configured_sources, render

    protocol_only = ClusterConfig(name="p", bootstrap_servers="h:1")
    assert configured_sources(protocol_only) == ("admin", "probe", "protocol_disk")
    table = {c.signal: c for c in capability_table(protocol_only)}
    assert table["kafka_host_filesystem_avail_bytes"].sources == ("protocol_disk",)  # disk-full risk works
    assert table["kafka_cluster_broker_up"].observable
    idle = table["kafka_broker_request_handler_idle_ratio"]
    assert not idle.observable and idle.hint().startswith("enable discovery.jolokia")
    groups = re.findall(r"not observable on this cluster \((\d+)\): enable discovery\.jolokia", render(protocol_only))
    # the catalog's broker signals but their log sizes (DescribeLogDirs gives them), grouped by the exporters
    assert sum(int(n) for n in groups) == 79
    assert configured_sources(DISCOVERING) == ("admin", "probe", "protocol_disk", "broker_jmx", "controller_jmx")
    exported = {
        (s.labels["signal"], s.value)
        for fam in CapabilityExporter([protocol_only]).collect()
        for s in fam.samples
        if s.name == "kafka_health_signal_observable"
    }
    assert ("kafka_broker_request_handler_idle_ratio", 0.0) in exported


def test_every_shard_reads_the_membership_and_one_exports_it():
    """Sharded collectors (collection.shard i/n): each shard needs the membership to build its share of the brokers'
    targets, so the protocol target runs in each, and only the shard it belongs to serves its series."""
    fake = FakeProtocol([N1, N2, N3, N4])
    jmx, stored = set(), []
    for shard in ("0/2", "1/2"):
        config = Config(clusters=(LOCAL,), collection={"shard": shard})
        collectors = build_collectors(config, protocol_factory=lambda c: fake, admin_factory=lambda c: FailingAdmin())
        svc = CollectionService(config, registry=CollectorRegistry(), collectors=collectors)
        svc.collect_once(timeout=10)
        jmx |= {t.name for _, t in svc.work if t.collector == "jmx"}
        stored += [k for k in svc.store.snapshot()[0] if k.endswith("/protocol")]
        svc.stop()
    assert jmx == {"broker-1", "broker-2", "broker-3", "broker-4"}
    assert stored == ["prod/protocol/protocol"]
    assert fake.log_dir_reads == 1  # only the exporting shard asks DescribeLogDirs


def test_a_refused_connection_is_an_unreachable_target_not_a_crash():
    """kafka-python 3's connection errors (a stopped broker refuses with ECONNREFUSED) are TargetUnreachable: the
    translation once named an exception class kafka-python 3 no longer has and raised AttributeError instead."""
    import kafka.errors as ke

    from collectors.protocol_client import translate
    from monitor.core.errors import TargetTimeout, TargetUnreachable

    assert isinstance(translate("describe cluster", ke.KafkaConnectionError("111 ECONNREFUSED")), TargetUnreachable)
    assert isinstance(translate("log dirs", ConnectionRefusedError(111, "refused")), TargetUnreachable)
    assert isinstance(translate("log dirs", ke.KafkaTimeoutError("slow")), TargetTimeout)


class _RefusingFirst:
    """kafka-python's admin as KafkaProtocol sees it: the first ``refusals`` calls of each request fail as a broker
    that refuses the connection does (its least-loaded pick had just stopped or not yet opened its listener)."""

    def __init__(self, refusals: int, error: Exception | None = None):
        import kafka.errors as ke

        self.left = {"cluster": refusals, "quorum": refusals}
        self.error = error or ke.KafkaConnectionError("KafkaConnectionError: 111 ECONNREFUSED")
        self.calls = 0
        self._manager = type("M", (), {"broker_version_data": type("V", (), {"api_versions": {60: (0, 2)}})()})()

    def _answer(self, what: str, value: dict) -> dict:
        self.calls += 1
        if self.left[what] > 0:
            self.left[what] -= 1
            raise self.error
        return value

    def describe_cluster(self) -> dict:
        return self._answer("cluster", {"brokers": [{"broker_id": 1, "host": "b1", "port": 9092, "is_fenced": False}]})

    def describe_metadata_quorum(self) -> dict:
        voters = [{"replica_id": 9}]
        nodes = [{"node_id": 9, "listeners": [{"host": "c9", "port": 9093}]}]
        return self._answer("quorum", {"topics": [{"partitions": [{"current_voters": voters}]}], "nodes": nodes})


def _protocol_over(admin):
    from collectors.protocol_client import KafkaProtocol

    p = object.__new__(KafkaProtocol)  # no connection: the admin is the fake above
    p._admin, p._principal = admin, None
    return p


def test_membership_asks_another_broker_when_the_one_picked_refuses_the_connection():
    """CI (stop 40): a fourth broker, registered and unfenced, still refused on its listener; kafka-python sent
    DescribeCluster to it and the round failed though three brokers answered. Tried again (the refused broker is in
    reconnect backoff, so the library picks another), brokers and controllers are both known."""
    admin = _RefusingFirst(refusals=2)
    m = _protocol_over(admin).membership()
    assert [n.id for n in m.brokers] == [1] and [n.id for n in m.controllers] == [9]
    assert admin.calls == 6  # each request: two refusals, then an answer


def test_membership_gives_up_after_three_refusals_and_at_once_on_other_errors():
    import kafka.errors as ke

    from collectors.protocol_client import NODE_TRIES
    from monitor.core.errors import TargetForbidden, TargetUnreachable

    admin = _RefusingFirst(refusals=NODE_TRIES)
    with pytest.raises(TargetUnreachable):
        _protocol_over(admin).membership()
    assert admin.calls == NODE_TRIES
    denied = _RefusingFirst(refusals=1, error=ke.ClusterAuthorizationFailedError())
    with pytest.raises(TargetForbidden):
        _protocol_over(denied).membership()
    assert denied.calls == 1


def test_a_broker_the_offsets_client_lost_fails_its_own_request_and_asks_for_fresh_metadata():
    """After a broker restart kafka-python's metadata can lack it for metadata_max_age (5 min) while the round's
    metadata names it as a leader again: sending to it raises UnknownBrokerIdError. That request fails alone (a
    failed Future) and the client is told to refresh its metadata; before, every watermark of the round failed."""
    import kafka.errors as ke

    from collectors.protocol_client import send_to_node

    class Cluster:
        updates = 0

        def request_update(self):
            Cluster.updates += 1

    class Manager:
        cluster = Cluster()

        def send(self, request, node_id, request_timeout_ms):
            if node_id == 3:
                raise ke.UnknownBrokerIdError(3)
            return ("sent", node_id)

    m = Manager()
    assert send_to_node(m, "req", node_id=1, request_timeout_ms=10) == ("sent", 1)
    lost = send_to_node(m, "req", node_id=3, request_timeout_ms=10)
    assert lost.failed() and isinstance(lost.exception, ke.UnknownBrokerIdError)
    assert Cluster.updates == 1
