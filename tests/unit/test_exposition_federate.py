"""An exporter's series read from a Prometheus that already scrapes it (``ExporterSource.federate``, its
``/federate``): the recorded scrapes of each dialect (tests/fixtures/exposition), as such a Prometheus serves them
(the target labels it adds to every series, a timestamp on each, its ``up``), read as the scrape itself is; a target
it reports down, or no target at all, is an error, never a healthy broker with no series. The same path on the real
stack, through a real Prometheus: tests/e2e/test_profiles.py."""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

import pytest
from pydantic import ValidationError

from collectors import catalog
from collectors.discovery import DiscoveryBoard, Membership, Node
from collectors.jmx import JmxCollector
from collectors.transports import exposition
from collectors.transports.jolokia import JolokiaTransport
from collectors.types import FailureReason, TargetStatus
from monitor.core.config import ClusterConfig, ControllerExporter, ExporterSource, parse_config
from monitor.core.errors import ConfigError, TargetUnreachable, TransportError
from tests.unit.test_exposition import serving

pytestmark = pytest.mark.unit
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "exposition"
TARGET = {"instance": "10.0.0.7:9404", "job": "kafka", "namespace": "kafka", "pod": "my-cluster-kafka-1"}
SCRAPED_MS = 1_795_927_001_234


def _value(v: float) -> str:
    return repr(v) if v == v and abs(v) != float("inf") else {True: "NaN"}.get(v != v, "+Inf" if v > 0 else "-Inf")


def asked_for(match: str) -> str:
    """A selector as the user wrote it: the one asked of the Prometheus less the names kafka-health added to it."""
    return re.sub(r'__name__=~"[^"]*",?', "", match)


def federated(text: str, labels: dict[str, str] = TARGET, *, up: float | None = 1.0, at: int = SCRAPED_MS) -> str:
    """``text`` (an exporter's scrape) as a Prometheus that scraped it with target ``labels`` serves it on /federate:
    every series with those labels and the scrape's timestamp, untyped, and the target's ``up``."""
    lines = []
    samples = [(n, lbl, v) for n, lbl, v in exposition._samples(text)]
    if up is not None:
        samples.append(("up", {}, up))
    for name, own, value in sorted(samples, key=lambda s: s[0]):
        merged = dict(sorted({**own, **labels}.items()))
        body = ",".join(f'{k}="{v}"' for k, v in merged.items())
        lines.append(f"{name}{{{body}}} {_value(value)} {at}")
    return "\n".join(lines) + "\n"


def same(readings) -> list[tuple]:
    """Readings comparable whatever their order (a Prometheus sorts by name) and NaN (a sensor with no sample)."""
    return sorted((r.mbean, r.attribute, r.key or "", repr(r.value)) for r in readings)


@pytest.mark.parametrize("dialect", exposition.DIALECTS)
def test_a_dialects_series_through_a_prometheus_read_as_the_exporters_own_scrape(dialect):
    text = (FIXTURES / f"jmx_exporter_{dialect}.prom").read_text()
    direct = exposition.readings(text, dialect)
    got = exposition.federated_readings(federated(text), dialect)  # the target's labels: those of its up
    assert same(got.readings) == same(direct) and len(direct) > 100
    assert got.scraped_at == SCRAPED_MS / 1e3
    # a selector that leaves up out: its relabelled labels named by target_labels (instance and job always go)
    no_up = federated(text, up=None)
    named = exposition.federated_readings(no_up, dialect, drop=("namespace", "pod"))
    assert same(named.readings) == same(direct) and named.scraped_at is None
    # and left in: ObjectName keys no catalog MBean has (what the probe of the issue's note saw: nothing matches)
    kept = exposition.federated_readings(no_up, dialect)
    assert [r for r in kept.readings if "pod=" in r.mbean] and same(kept.readings) != same(direct)


def test_a_target_the_prometheus_reports_down_is_unreachable_not_a_broker_with_no_series():
    """A dead broker's /federate answer is HTTP 200 with ``up 0`` and its series ended (stale): no readings, and
    without this check a healthy target with nothing to say."""
    with pytest.raises(TargetUnreachable, match=r"down \(up 0\)"):
        exposition.federated_readings(federated("", up=0.0), "vanilla", match='{job="kafka"}')
    with pytest.raises(TargetUnreachable, match="no target it scrapes"):
        exposition.federated_readings("", "vanilla", match='{pod="my-cluster-kafka-9"}')


def test_a_selector_naming_several_targets_is_refused_not_summed():
    text = (FIXTURES / "jmx_exporter_vanilla.prom").read_text()
    two = federated(text) + federated(text, {**TARGET, "pod": "my-cluster-kafka-2"})
    with pytest.raises(TransportError, match="names 2 scrape targets"):
        exposition.federated_readings(two, "vanilla", drop=("namespace", "pod"), match='{job="kafka"}')


def test_a_selector_is_one_series_selector_with_only_host_and_id_fields():
    ok = ExporterSource(url="http://prom:9090", federate='{job="kafka",pod="my-cluster-kafka-{id}"}')
    assert ok.for_node('k1"} or vector(1) #', 7).federate == '{job="kafka",pod="my-cluster-kafka-7"}'
    by_host = ExporterSource(url="http://prom:9090", federate='{instance="{host}:9404"}')
    # a host name cannot end the PromQL string it is put in
    assert by_host.for_node('k1"} or up{x="', 1).federate == '{instance="k1\\"} or up{x=\\":9404"}'
    for bad in ('{job="kafka"} or {job="x"}', '{job="{name}"}', '{job="kafka"\n}', "up{", "{}"):
        with pytest.raises(ValidationError):
            ExporterSource(url="http://prom:9090", federate=bad)
    with pytest.raises(ValidationError, match="give federate too"):
        ExporterSource(url="http://k1:9404/metrics", target_labels=("pod",))
    with pytest.raises(ValidationError, match="needs its node id"):
        ControllerExporter(url="http://prom:9090", federate='{pod="c-0"}')
    with pytest.raises(ValidationError, match="query string"):  # the selector has a field of its own
        ExporterSource(url='http://prom:9090/federate?match[]={job="kafka"}')


def collector(cluster: ClusterConfig, board: DiscoveryBoard | None = None) -> JmxCollector:
    """The JMX collector of ``cluster`` (its exporter-read brokers need no JMX transport: Jolokia's stands by)."""
    return JmxCollector(
        cluster,
        transport=JolokiaTransport(),
        controller_transport=JolokiaTransport(),
        tenants=catalog.TenantLookup(None, cluster.name),
        max_series=100_000,
        board=board,
    )


def test_discovered_brokers_are_read_through_the_prometheus_each_by_its_own_selector():
    """Only bootstrap_servers and a federate template: each broker the discovery board holds is asked of the
    Prometheus by its own selector, its series named by the broker (the Prometheus' labels dropped), and a broker the
    Prometheus reports down fails as unreachable."""
    text = (FIXTURES / "jmx_exporter_vanilla.prom").read_text()
    asked: list[str] = []

    def prometheus(path: str) -> bytes:
        url = urllib.parse.urlsplit(path)
        (match,) = urllib.parse.parse_qs(url.query)["match[]"]
        asked.append(f"{url.path} {asked_for(match)}")
        pod = match.split('pod="', 1)[1].split('"', 1)[0]
        if pod == "my-cluster-kafka-2":
            return federated("", {**TARGET, "pod": pod}, up=0.0).encode()
        return federated(text, {**TARGET, "pod": pod}).encode()

    with serving(prometheus) as url:
        base = url.removesuffix("/metrics")
        template = {"url": base, "federate": '{job="kafka",pod="my-cluster-kafka-{id}"}'}
        cluster = ClusterConfig(
            name="prod", bootstrap_servers="127.0.0.1:9092", discovery={"jmx_exporter": {**template}}
        )
        board = DiscoveryBoard()
        jmx = collector(cluster, board)
        board.publish(Membership((Node(1, "10.0.0.7", 9092), Node(2, "10.0.0.8", 9092))))
        results = {t.broker: jmx.collect_target(t, now=0.0) for t in jmx.targets()}
    assert sorted(asked) == [f'/federate {{job="kafka",pod="my-cluster-kafka-{b}"}}' for b in (1, 2)]
    assert results["1"].status is TargetStatus.OK, results["1"].message
    urp = [s for s in results["1"].samples if s.name == "kafka_broker_under_replicated_partitions"]
    assert [s.labels for s in urp] == [(("cluster", "prod"), ("broker", "1"))]
    assert results["2"].reason is FailureReason.UNREACHABLE and "up 0" in (results["2"].message or "")


class _Scrapes:
    """A transport standing in for the Prometheus: each read answers the next (idle counter, scrape time)."""

    name = "jmx_exporter"

    def __init__(self, answers):
        self._answers = iter(answers)

    def read_federated(self, endpoint, *, timeout):
        idle, at = next(self._answers)
        mbean = "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent"
        return exposition.Federated([exposition.Reading(mbean, "Count", idle)], at)


def test_rates_are_taken_between_the_prometheus_scrapes_not_between_our_reads():
    """Read every 15 s from a Prometheus that scrapes every 30 s, a counter moves every other read: the idle ratio
    is the counter's growth over the scrape times (not over our reads: 0 then twice the truth), and a read that gets
    the same scrape again repeats the ratio of the first."""
    cluster = ClusterConfig(
        name="prod",
        bootstrap_servers="k1:9092",
        brokers=({"id": 1, "jmx_exporter": {"url": "http://prom:9090", "federate": '{pod="kafka-1"}'}},),
    )
    jmx = collector(cluster)
    # 1e9 ns of idle a second of scrape time: 0.25 over 30 s is 7.5e9 ns (the meter counts nanoseconds)
    jmx._exporter = _Scrapes([(0.0, 1000.0), (0.0, 1000.0), (7.5e9, 1030.0), (7.5e9, 1030.0)])
    (target,) = jmx.targets()
    ratios = []
    for i in range(4):
        r = jmx.collect_target(target, now=2000.0 + 15 * i)
        assert r.status is TargetStatus.OK, r.message
        ratios.append([s.value for s in r.samples if s.name == "kafka_broker_request_handler_idle_ratio"])
    assert ratios == [[], [], [pytest.approx(0.25)], [pytest.approx(0.25)]]


def test_a_prometheus_behind_a_login_is_read_with_its_secret_and_a_wrong_one_is_said_not_shown(monkeypatch):
    text = (FIXTURES / "jmx_exporter_vanilla.prom").read_text()
    monkeypatch.setenv("KAFKA_HEALTH_TEST_PROM_PASSWORD", "s3cret-right")
    with serving(federated(text).encode(), login=("kafka-health", "s3cret-right")) as metrics:
        url = metrics.removesuffix("/metrics")
        results = {}
        for name, secret in (("right", "s3cret-right"), ("wrong", "s3cret-wrong")):
            monkeypatch.setenv("KAFKA_HEALTH_TEST_PROM_PASSWORD", secret)
            source = {
                "url": url,
                "federate": '{pod="kafka-1"}',
                "username": "kafka-health",
                "password": {"env": "KAFKA_HEALTH_TEST_PROM_PASSWORD"},
            }
            cluster = ClusterConfig(
                name="prod", bootstrap_servers="k1:9092", brokers=({"id": 1, "jmx_exporter": source},)
            )
            c = collector(cluster)
            (target,) = c.targets()
            results[name] = c.collect_target(target, now=0.0)
    assert results["right"].status is TargetStatus.OK, results["right"].message
    wrong = results["wrong"]
    assert wrong.reason is FailureReason.AUTHENTICATION and "check its username and password" in (wrong.message or "")
    assert "s3cret" not in (wrong.message or "") and "s3cret" not in repr(wrong)
    with pytest.raises(ValidationError, match="an exporter takes none"):
        ExporterSource(url="http://k1:9404/metrics", username="u", password={"env": "KAFKA_HEALTH_X"})


def test_a_prometheus_password_that_does_not_resolve_is_a_config_error_where_it_is_written(monkeypatch):
    monkeypatch.delenv("KAFKA_HEALTH_PROM_PASSWORD", raising=False)
    text = """clusters:
  - name: a
    bootstrap_servers: "x:1"
    discovery:
      jmx_exporter:
        url: http://prom:9090
        federate: '{pod="kafka-{id}"}'
        username: kafka-health
        password: {env: KAFKA_HEALTH_PROM_PASSWORD}
"""
    with pytest.raises(ConfigError) as exc:
        parse_config(text, "p.yaml")
    (problem,) = exc.value.problems
    assert problem.path == "clusters[0].discovery.jmx_exporter.password"
    assert "KAFKA_HEALTH_PROM_PASSWORD is not set" in problem.message and problem.line == 9


def test_each_machines_node_exporter_is_read_through_the_prometheus_by_its_own_selector():
    """``discovery.node_exporter`` through a Prometheus: one target per machine's selector (two brokers of one
    machine share it), named by the selector's values; its series are the host series of the machine, named by the
    brokers' host; a machine the Prometheus reports down fails as unreachable."""
    from collectors.host import HostCollector

    text = (FIXTURES / "node_exporter.prom").read_text()
    asked: list[str] = []

    def prometheus(path: str) -> bytes:
        (match,) = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)["match[]"]
        asked.append(match)
        instance = match.split('instance="', 1)[1].split('"', 1)[0]
        labels = {"instance": instance, "job": "node"}
        return federated(
            text if instance.startswith("10.0.0.7") else "", labels, up=float(instance < "10.0.0.8")
        ).encode()

    with serving(prometheus) as url:
        base = url.removesuffix("/metrics")
        cluster = ClusterConfig(
            name="prod",
            bootstrap_servers="10.0.0.7:9092",
            discovery={"node_exporter": {"url": base, "federate": '{job="node",instance="{host}:9100"}'}},
        )
        board = DiscoveryBoard()
        host = HostCollector(cluster, board=board)
        board.publish(Membership((Node(1, "10.0.0.7", 9092), Node(2, "10.0.0.7", 9093), Node(3, "10.0.0.8", 9092))))
        targets = host.targets()
        results = {t.name: host.collect_target(t, now=0.0) for t in targets}
    assert sorted(results) == ["node-exporter-node,10.0.0.7:9100", "node-exporter-node,10.0.0.8:9100"]
    assert sorted(set(asked)) == [f'{{job="node",instance="10.0.0.{i}:9100"}}' for i in (7, 8)]
    up = results["node-exporter-node,10.0.0.7:9100"]
    assert up.status is TargetStatus.OK, up.message
    cpu = [s for s in up.samples if s.name == "kafka_host_cpu_seconds_total"]
    assert cpu and {dict(s.labels)["host"] for s in cpu} == {"10.0.0.7"}
    down = results["node-exporter-node,10.0.0.8:9100"]
    assert down.reason is FailureReason.UNREACHABLE and "node_exporter down (up 0)" in (down.message or "")


def test_discovered_controllers_through_the_prometheus_are_named_by_their_ids_and_not_watched():
    """One Prometheus URL serves every controller: each is its own target, named by its node id, its selector
    expanded for it; the 2 s controller watch stays off (what the Prometheus serves is a scrape interval old)."""
    text = (FIXTURES / "controller_vanilla.prom").read_text()
    asked: list[str] = []

    def prometheus(path: str) -> bytes:
        (match,) = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)["match[]"]
        asked.append(asked_for(match))
        return federated(text, {"job": "kafka", "pod": match.split('pod="', 1)[1].split('"', 1)[0]}).encode()

    with serving(prometheus) as url:
        template = {"url": url.removesuffix("/metrics"), "federate": '{pod="my-cluster-controller-{id}"}'}
        cluster = ClusterConfig(
            name="prod", bootstrap_servers="10.0.0.7:9092", discovery={"controller_jmx_exporter": template}
        )
        board = DiscoveryBoard()
        jmx = collector(cluster, board)
        board.publish(Membership((Node(1, "10.0.0.7", 9092),), (Node(3, "10.0.0.3", 9093), Node(4, "10.0.0.4", 9093))))
        targets = [t for t in jmx.targets() if t.collector == "controller"]
        results = {t.name: jmx.collect_target(t, now=0.0) for t in targets}
    assert sorted(results) == ["controller-3", "controller-4"]
    assert sorted(asked) == ['{pod="my-cluster-controller-3"}', '{pod="my-cluster-controller-4"}']
    for name, r in results.items():
        assert r.status is TargetStatus.OK, r.message
        active = [s for s in r.samples if s.name == "kafka_cluster_active_controllers"]
        assert [dict(s.labels)["broker"] for s in active] == [name.removeprefix("controller-")]
    assert jmx._watches == {}


def test_a_prometheus_bearer_token_is_read_from_its_file_at_each_request(tmp_path):
    """A Kubernetes service-account token rotates: the token file is read at each request, so a broker listed once
    (its endpoint built at start) follows it; a token the Prometheus refuses, or a file gone, fails the target as
    authentication, naming the file, never the token."""
    text = (FIXTURES / "jmx_exporter_vanilla.prom").read_text()
    token_file = tmp_path / "token"
    accepted = {"token": "tok-1"}
    with serving(federated(text).encode(), token=lambda: accepted["token"]) as metrics:
        source = {
            "url": metrics.removesuffix("/metrics"),
            "federate": '{pod="kafka-1"}',
            "bearer_token": {"file": str(token_file)},
        }
        c = collector(
            ClusterConfig(name="prod", bootstrap_servers="k1:9092", brokers=({"id": 1, "jmx_exporter": source},))
        )
        (target,) = c.targets()
        results = []
        for written, wanted in (("tok-1", "tok-1"), ("tok-1", "tok-2"), ("tok-2", "tok-2"), (None, "tok-2")):
            if written is None:
                token_file.unlink()
            else:
                token_file.write_text(written + "\n")
            accepted["token"] = wanted
            results.append(c.collect_target(target, now=0.0))
    assert [r.status for r in results] == [TargetStatus.OK, TargetStatus.FAILED, TargetStatus.OK, TargetStatus.FAILED]
    refused, gone = results[1], results[3]
    assert refused.reason is FailureReason.AUTHENTICATION and "check its bearer token" in (refused.message or "")
    assert gone.reason is FailureReason.AUTHENTICATION and str(token_file) in (gone.message or "")
    assert not [r for r in results if "tok-" in (r.message or "")]
    with pytest.raises(ValidationError, match="not both"):
        ExporterSource(
            url="http://prom:9090",
            federate='{pod="k"}',
            username="u",
            password={"env": "KAFKA_HEALTH_X"},
            bearer_token={"env": "KAFKA_HEALTH_Y"},
        )


@pytest.mark.parametrize("dialect", exposition.DIALECTS)
def test_a_federate_read_asks_only_for_the_names_the_dialect_reads_and_loses_none(dialect):
    """The selector sent names the series the dialect reads (``wanted_names``): every name of the recorded scrape
    the mapping keeps matches it (a superset, so the answer so narrowed reads as the whole one), most others do not,
    and a selector that names its own series is sent as written."""
    text = (FIXTURES / f"jmx_exporter_{dialect}.prom").read_text()
    wanted = re.compile(exposition.wanted_names(dialect))
    names = {n for n, _, _ in exposition._samples(text)}
    kept = {n for n in names if exposition._wanted(dialect, n)}
    assert kept and all(wanted.fullmatch(n) for n in kept | {"up"})
    narrowed_answer = "".join(
        line + "\n"
        for line in federated(text).splitlines()
        if line.startswith("#") or wanted.fullmatch(line.split("{", 1)[0].split(" ", 1)[0])
    )
    direct = exposition.readings(text, dialect)
    assert same(exposition.federated_readings(narrowed_answer, dialect).readings) == same(direct)
    # (the recorded scrapes keep only what maps: record.py) the per-partition families no catalog rule reads are left
    # out; a rule-less exporter's other Log values stay (their names differ only in a label: name="LogEndOffset")
    unread = {"kafka_cluster_Partition_Value", "kafka_cluster_partition_underreplicated", "kafka_log_log_logendoffset"}
    assert not [n for n in unread if wanted.fullmatch(n)]
    sent = exposition.narrowed('{job="kafka",pod="my-cluster-kafka-1"}', dialect)
    assert sent.startswith('{__name__=~"') and sent.endswith(',job="kafka",pod="my-cluster-kafka-1"}')
    assert len(sent) < 6000  # a GET's query line stays inside a proxy's 8 KB
    for own in ('kafka_server_ReplicaManager_Value{pod="x"}', '{__name__=~"kafka_.*",pod="x"}'):
        assert exposition.narrowed(own, dialect) == own
