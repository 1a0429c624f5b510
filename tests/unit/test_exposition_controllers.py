"""KRaft controllers read through their jmx_exporter (issue 30): the scrapes recorded from the real agent on the
local stack's controller (tests/fixtures/exposition/controller_<dialect>.prom, record.py ``--controller-of``) map onto
the controller series the Jolokia/jmxquery path gives, with its labels; discovery reaches a controller found by
DescribeQuorum through ``discovery.controller_jmx_exporter``; the capability table claims what the scrapes give."""

from __future__ import annotations

import re
import time
from functools import partial
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from pydantic import ValidationError

from collectors import catalog
from collectors.capabilities import configured_sources, render, source_signals
from collectors.controller_watch import DEPARTURES, UNSTATED
from collectors.discovery import DiscoveryBoard, Membership, Node, controller_addresses, controller_exporters
from collectors.jmx import WATCH_EXPOSITION_NAMES, JmxCollector
from collectors.transports import exposition
from collectors.transports.jolokia import JolokiaTransport
from collectors.types import Reading, TargetResult, TargetStatus
from monitor.core.config import ClusterConfig
from tests.unit.test_exposition import serving

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "exposition"
RECORDED = ("vanilla", "strimzi", "strimzi_reporter")
CTL = "100"  # the recorded controller's node id
BASE = (("cluster", "prod"), ("broker", CTL))
CONTROLLER_SIGNALS = frozenset(r.metric for r in catalog.CONTROLLER_RULES) - frozenset(
    r.metric for r in catalog.BROKER_RULES
)


def scrape(dialect: str) -> str:
    return (FIXTURES / f"controller_{dialect}.prom").read_text()


def series(dialect: str, text: str | None = None) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    samples = catalog.convert(
        exposition.readings(scrape(dialect) if text is None else text, dialect),
        catalog.CONTROLLER_RULES,
        base=BASE,
        tenants=catalog.TenantLookup(None, "prod"),
    )
    return {(s.name, s.labels): s.value for s in samples}


@pytest.mark.parametrize("dialect", RECORDED)
def test_the_recorded_controller_maps_onto_the_jolokia_series_and_labels(dialect):
    got = series(dialect)
    assert got[("kafka_cluster_active_controllers", BASE)] == 1
    assert got[("kafka_cluster_fenced_brokers", BASE)] == 0
    assert got[("kafka_cluster_active_brokers", BASE)] == 3
    assert got[("kafka_cluster_offline_partitions", BASE)] == 0
    assert got[("kafka_cluster_metadata_errors", BASE)] == 0
    # the controller's view of each broker: ``broker`` is the broker, ``controller`` the node that sees it
    states = {
        dict(labels)["broker"]: (dict(labels)["controller"], v)
        for (name, labels), v in got.items()
        if name == "kafka_cluster_broker_registration_state"
    }
    assert states == {b: (CTL, 30.0) for b in ("1", "2", "3")}  # 30: UNFENCED
    ages = [v for (name, _), v in got.items() if name == "kafka_cluster_broker_heartbeat_age_seconds"]
    assert len(ages) == 3 and all(0 <= a < 10 for a in ages)  # milliseconds read as seconds


@pytest.mark.parametrize("dialect", RECORDED)
def test_the_capability_table_claims_what_the_recorded_controller_gives(dialect):
    """Each controller signal the table says this dialect gives is in the recorded scrape, and each it says is not
    exported is absent from it."""
    names = {name for name, _ in series(dialect)}
    claimed = source_signals(f"controller_exporter_{dialect}")
    assert claimed == CONTROLLER_SIGNALS - exposition.CONTROLLER_NOT_EXPORTED[dialect]
    assert claimed <= names, sorted(claimed - names)
    assert not names & exposition.CONTROLLER_NOT_EXPORTED[dialect]


def test_strimzis_rules_give_the_raft_state_the_rule_less_agent_cannot():
    assert ("kafka_cluster_raft_state", BASE + (("state", "leader"),)) in series("strimzi")
    assert "kafka_cluster_raft_state" not in {name for name, _ in series("vanilla")}
    assert exposition.controller_gaps("vanilla") == {"kafka_cluster_raft_state"}


def test_the_reporters_recorded_controller_gives_the_raft_state_as_an_info_series():
    """Strimzi's metrics reporter on the stack's real controller (record.py --reporter-controller): its Kafka-metric
    naming serves the raft state, a string, as an ``_info`` series, read back to the controller's MBean; its Yammer
    naming a meter's Count as ``_total``."""
    text = scrape("strimzi_reporter")
    assert 'kafka_server_raft_metrics_current_state_info{current_state="leader"} 1' in text
    assert Reading("kafka.server:type=raft-metrics", "current-state", "leader") in exposition.readings(
        text, "strimzi_reporter"
    )
    got = series("strimzi_reporter")
    assert got[("kafka_cluster_raft_state", BASE + (("state", "leader"),))] == 1
    assert exposition.controller_gaps("strimzi_reporter") == set()


Q = (Node(100, "c1.example", 9093), Node(101, "c2.example", 9093))


def test_discovered_controllers_are_reached_through_the_exporter_template():
    c = ClusterConfig(
        name="x",
        bootstrap_servers="h:1",
        discovery={"controller_jmx_exporter": {"url": "http://{host}:9404/metrics", "dialect": "strimzi"}},
    )
    assert [(i, e.url, e.dialect) for i, e in controller_exporters(c, Q)] == [
        (100, "http://c1.example:9404/metrics", "strimzi"),
        (101, "http://c2.example:9404/metrics", "strimzi"),
    ]
    assert controller_addresses(c, Q) == ((), ())
    # a controller listed by hand keeps its entry; discovery adds the others
    listed = ClusterConfig.model_validate(
        c.model_dump() | {"controller_jmx_exporter": ({"url": "http://c2.example:9404/metrics", "id": 101},)}
    )
    assert [i for i, _ in controller_exporters(listed, Q)] == [100]


@pytest.mark.parametrize(
    ("discovery", "read_as"),
    [
        # an exporter template for controllers wins over the brokers' Jolokia/JMX templates (their default) ...
        ({"jolokia": "http://{host}:8778/jolokia", "controller_jmx_exporter": "http://{host}:9404/m"}, "exporter"),
        # ... not over a controller template of their own
        ({"controller_jmx": "{host}:9999", "controller_jmx_exporter": "http://{host}:9404/m"}, "jmx"),
        ({"controller_jolokia": "http://{host}:8778/j", "controller_jmx_exporter": "http://{host}:9404/m"}, "jolokia"),
        # the brokers' exporter template is never the controllers' (MSK's controllers cannot be reached)
        ({"jmx_exporter": "http://{host}:11001/metrics"}, None),
        ({"jolokia": "http://{host}:8778/jolokia"}, "jolokia"),
    ],
)
def test_one_way_to_read_the_discovered_controllers(discovery, read_as):
    c = ClusterConfig(name="x", bootstrap_servers="h:1", discovery=discovery)
    (jmx, jolokia), exporters = controller_addresses(c, Q[:1]), controller_exporters(c, Q[:1])
    got = {"jmx": bool(jmx), "jolokia": bool(jolokia), "exporter": bool(exporters)}
    assert [k for k, v in got.items() if v] == ([read_as] if read_as else [])
    controller_sources = [s for s in configured_sources(c) if s.startswith("controller_")]
    want = {None: [], "exporter": ["controller_exporter_vanilla"]}.get(read_as, ["controller_jmx"])
    assert controller_sources == want


def test_a_controller_exporter_template_takes_host_and_id_only():
    with pytest.raises(ValidationError, match=r"unknown template field\(s\) \{port\}"):
        ClusterConfig(
            name="x", bootstrap_servers="h:1", discovery={"controller_jmx_exporter": "http://{host}:{port}/m"}
        )
    with pytest.raises(ValidationError, match="dialect"):
        ClusterConfig(
            name="x", bootstrap_servers="h:1", controller_jmx_exporter=({"url": "http://c:1/m", "dialect": "msk"},)
        )


# Jolokia for what the clusters below list by JMX: nothing (the controllers are read through their exporter)
collector = partial(
    JmxCollector, transport=JolokiaTransport(), controller_transport=JolokiaTransport(), max_series=100_000
)
LOOKUP = catalog.TenantLookup(None, "prod")


def test_a_discovered_controller_is_read_over_http_and_named_by_its_node_id():
    with serving(scrape("strimzi").encode()) as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
        cluster = ClusterConfig(
            name="prod",
            bootstrap_servers="127.0.0.1:9092",
            discovery={"controller_jmx_exporter": {"url": f"http://{{host}}:{port}/metrics", "dialect": "strimzi"}},
        )
        board = DiscoveryBoard()
        board.publish(Membership((Node(1, "127.0.0.1", 9092),), (Node(100, "127.0.0.1", 9093),)))
        c = collector(cluster, tenants=LOOKUP, board=board)
        (target,) = c.targets()  # no broker template: the broker has no target; the controller has
        assert (target.collector, target.name, target.broker) == ("controller", f"controller-127.0.0.1:{port}", CTL)
        r = c.collect_target(target, now=0.0)
    assert r.status is TargetStatus.OK, r.message
    got = {(s.name, s.labels): s.value for s in r.samples}
    assert got == series("strimzi") | {k: v for k, v in got.items() if k[0] == "kafka_health_series_dropped"}
    assert not [s for s in r.samples if s.name == "kafka_source_weak_signal"]  # request handlers: a broker's matter
    shown = render(cluster)
    assert "[on ] controller_exporter_strimzi" in shown and "[off] controller_jmx" in shown


def test_a_listed_controller_is_named_by_its_id_else_its_host_port():
    with serving(scrape("vanilla").encode()) as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
        for entry, name in (({"url": url, "id": 100}, CTL), (url, f"127.0.0.1:{port}")):
            cluster = ClusterConfig(name="prod", bootstrap_servers="h:1", controller_jmx_exporter=(entry,))
            c = collector(cluster, tenants=LOOKUP)
            (target,) = c.targets()
            r = c.collect_target(target, now=0.0)
            assert r.status is TargetStatus.OK, r.message
            active = [s for s in r.samples if s.name == "kafka_cluster_active_controllers"]
            assert [dict(s.labels)["broker"] for s in active] == [name]


def _broker_2_as(dialect: str, state: float, age_ms: float) -> bytes:
    """The recorded scrape with broker 2's registration state and heartbeat age replaced."""
    text = scrape(dialect)
    if dialect != "vanilla":  # Strimzi's rules and the reporter name them alike
        text = re.sub(r'(brokerregistrationstate\{broker="2"\}) \S+', rf"\1 {state}", text)
        text = re.sub(r'(timesincelastheartbeatreceivedms\{broker="2"\}) \S+', rf"\1 {age_ms}", text)
    else:
        text = re.sub(r'(\{broker="2",name="BrokerRegistrationState"\}) \S+', rf"\1 {state}", text)
        text = re.sub(r'(\{broker="2",name="TimeSinceLastHeartbeatReceivedMs"\}) \S+', rf"\1 {age_ms}", text)
    assert text != scrape(dialect)
    return text.encode()


@pytest.mark.parametrize("dialect", RECORDED)
def test_the_controller_watch_reads_an_exporter_controller_and_counts_a_crash(dialect):
    """The watch that tells a crash from a restart (collectors/controller_watch.py) reads a controller's exporter too,
    not only its Jolokia: broker 2 stops heartbeating (registered active while its age climbs past 5 s), then is
    fenced; the controller's round exports one ``heartbeats_lost`` departure of broker 2, seen by controller 100.
    Before, an exporter-read controller had no watch, and at a 15 s scrape such a crash was told from a restart by
    no one (docs/alerts.md, case E)."""
    # by time since the first GET, whoever asks (the watch every 0.1 s, the round): healthy, silent, then fenced at
    # the session timeout
    phases = [
        (1.0, _broker_2_as(dialect, 30.0, 900.0)),
        (1.5, _broker_2_as(dialect, 30.0, 6500.0)),
        (float("inf"), _broker_2_as(dialect, 10.0, 9000.0)),
    ]
    first: list[float] = []
    asked: list[str] = []

    def now_served(path: str) -> bytes:
        asked.append(path)
        first[:] = first or [time.monotonic()]
        return next(b for until, b in phases if time.monotonic() - first[0] < until)

    with serving(now_served) as url:
        departures = _watched_departures(url, dialect)
    assert departures == [({"cluster": "prod", "broker": "2", "controller": CTL, "cause": "heartbeats_lost"}, 1.0)]
    # the watch asks for its gauges alone (the rule-less agent's whole answer is 565 KB on the stack's controller);
    # the round asks for everything
    queries = [parse_qs(urlsplit(path).query).get("name[]") for path in asked]
    assert list(WATCH_EXPOSITION_NAMES[dialect]) in queries and None in queries


@pytest.mark.parametrize("dialect", RECORDED)
def test_a_broker_the_controller_exports_no_state_for_is_said_not_judged(dialect):
    """KAFKA-20370: a controller restarted from a metadata snapshot exports the heartbeat age of brokers but not their
    registration state until each registers again (seen on 4.4.0, through Jolokia and the exporter alike). Broker 2's
    state is missing while its age sits at the session timeout: the watch counts no departure of it (the age alone
    cannot tell a crash from a restart) and says so, in a series naming the broker and in the round's message.
    Before, the watch was silent: no series, no message, as if it watched broker 2."""
    # broker 2's state line, in either dialect's names
    state_line = re.compile(
        r'^\S+(brokerregistrationstate\{broker="2"\}|\{broker="2",name="BrokerRegistrationState"\}).*\n', re.M
    )
    silent = state_line.sub("", _broker_2_as(dialect, 30.0, 9000.0).decode(), count=1).encode()
    assert b'"2"' in silent and silent != _broker_2_as(dialect, 30.0, 9000.0)
    said_at: list[float] = []

    def said_for_a_while(r: TargetResult) -> bool:  # the series, then several more watch readings of broker 2
        if any(s.name == UNSTATED for s in r.samples):
            said_at[:] = said_at or [time.monotonic()]
        return bool(said_at) and time.monotonic() - said_at[0] >= 0.5

    with serving(silent) as url:
        r = _watched_round(url, dialect, said_for_a_while)
    said = [dict(s.labels) for s in r.samples if s.name == UNSTATED]
    assert said == [{"cluster": "prod", "broker": "2", "controller": CTL}]
    assert "no registration state for broker(s) 2" in r.message and "KAFKA-20370" in r.message, r.message
    assert not [s for s in r.samples if s.name == DEPARTURES]


def _watched_departures(url: str, dialect: str) -> list:
    """The departures the controller's rounds export, read until one shows (10 s at most), the watch every 0.1 s."""
    r = _watched_round(url, dialect, lambda r: any(s.name == DEPARTURES for s in r.samples))
    return [(dict(s.labels), s.value) for s in r.samples if s.name == DEPARTURES]


def _watched_round(url: str, dialect: str, done) -> TargetResult:
    """The controller's round, collected until ``done`` holds for it (10 s at most), the watch reading every 0.1 s."""
    cluster = ClusterConfig(
        name="prod",
        bootstrap_servers="h:1",
        controller_jmx_exporter=({"url": url, "id": 100, "dialect": dialect},),
        jmx={"controller_watch_seconds": 0.1},
    )
    c = collector(cluster, tenants=LOOKUP)
    (target,) = c.targets()
    try:
        deadline = time.monotonic() + 10
        while True:
            r = c.collect_target(target, now=time.time())
            assert r.status is TargetStatus.OK, r.message
            if done(r) or time.monotonic() > deadline:
                return r
            time.sleep(0.1)
    finally:
        c.close()
