"""jmx_exporter (vanilla, strimzi), Strimzi's metrics reporter (strimzi_reporter) and node_exporter scrapes recorded
from the real agents (tests/fixtures/exposition, record.py there; the reporter's from a 4.4.0 broker running
io.strimzi:metrics-reporter 0.2.0, trimmed by record.py's ``trim``) mapped onto the catalog: the same series and
labels the Jolokia/jmxquery and host collectors give, and docs/metrics.md's dialect table is what these scrapes
give."""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors import catalog
from collectors.jmx import JmxCollector
from collectors.transports import exposition
from collectors.transports.jolokia import JolokiaTransport
from collectors.types import TargetStatus
from monitor.core.config import BrokerTarget, ClusterConfig, ExporterSource

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "exposition"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
BASE = (("cluster", "prod"), ("broker", "1"))
DIALECTS = exposition.DIALECTS


def scrape(dialect: str) -> str:
    return (FIXTURES / f"jmx_exporter_{dialect}.prom").read_text()


def series(dialect: str) -> dict[str, list[catalog.Sample]]:
    samples = catalog.convert(
        exposition.readings(scrape(dialect), dialect),
        catalog.BROKER_TARGET_RULES,
        base=BASE,
        tenants=catalog.TenantLookup(None, "prod"),
    )
    out: dict[str, list[catalog.Sample]] = {}
    for s in samples:
        out.setdefault(s.name, []).append(s)
    return out


def dialect_table() -> str:
    """The table in docs/metrics.md: every catalog broker series, and what each dialect's recorded scrape gives."""
    got = {d: series(d) for d in DIALECTS}
    weak = {(d, s): basis for d in DIALECTS for s, basis, _ in exposition.weak_signals(d)}
    derived = {src: ratio for src, ratio, _ in catalog.RATIOS}
    rows = ["| catalog series | vanilla (MSK) | strimzi | strimzi_reporter |", "|---|---|---|---|"]
    for name in sorted({r.metric for r in catalog.BROKER_TARGET_RULES} | set(derived.values())):
        cells = []
        for d in DIALECTS:
            src = next((k for k, v in derived.items() if v == name), None)
            if (d, name) in weak:
                cells.append(f"weak: {weak[(d, name)]}")
            elif name in got[d] or (src is not None and src in got[d]):
                cells.append("yes")
            else:
                cells.append("not in scrape")
        rows.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_core_signals_map_with_the_jolokia_labels(dialect):
    got = series(dialect)
    urp = got["kafka_broker_under_replicated_partitions"]
    assert [(s.labels, s.value) for s in urp] == [(BASE, 0.0)]
    # per-topic meters come back per topic with the catalog's labels (the fixture's topics got 300 records); the
    # reporter's topic names have '_' for '.' (exposition.LOSSY_LABELS)
    topics = {dict(s.labels)["topic"]: s.value for s in got["kafka_topic_messages_in_total"]}
    sep = "_" if (dialect, "topic") in exposition.LOSSY_LABELS else "."
    want = {f"shop{sep}orders", f"shop{sep}payments", f"ads{sep}clicks"}
    assert want <= set(topics) and topics[f"shop{sep}orders"] >= 100
    assert all(
        dict(s.labels).keys() == {"cluster", "broker", "topic", "tenant"} for s in got["kafka_topic_messages_in_total"]
    )


def sample_values(text: str, name: str) -> dict[str, float]:
    """The recorded scrape's values of one family, keyed by their labels' values."""
    from prometheus_client.parser import text_string_to_metric_families

    return {
        ",".join(s.labels.values()): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
        if s.name == name
    }


@pytest.mark.parametrize("dialect", DIALECTS)
def test_jvm_series_come_from_the_agents_own_jvm_families_without_double_counting(dialect):
    """GC, heap after GC, file descriptors and CPU under either dialect from the javaagent's ``jvm_*``/``process_*``
    series (Strimzi's rules keep no java.lang; the rule-less agent has no GarbageCollector nor CollectionUsage);
    where the dialect has the java.lang attribute itself (vanilla's HeapMemoryUsage) that one counts, once."""
    text, got = scrape(dialect), series(dialect)
    gc_sum = sample_values(text, "jvm_gc_collection_seconds_sum")
    assert {dict(s.labels)["gc"]: s.value for s in got["kafka_jvm_gc_collection_seconds_total"]} == pytest.approx(
        gc_sum
    )
    gc_count = sample_values(text, "jvm_gc_collection_seconds_count")
    assert {dict(s.labels)["gc"]: s.value for s in got["kafka_jvm_gc_collections_total"]} == gc_count
    pools = sample_values(text, "jvm_memory_pool_collection_used_bytes")
    assert [s.value for s in got["kafka_jvm_heap_after_gc_used_bytes"]] == [sum(pools.values())]
    [cpu], [heap] = got["kafka_jvm_process_cpu_seconds_total"], got["kafka_jvm_heap_used_bytes"]
    if dialect == "vanilla":  # its own java.lang readings, not summed with the agent's (read a moment apart)
        assert cpu.value == pytest.approx(sample_values(text, "java_lang_OperatingSystem_ProcessCpuTime")[""] / 1e9)
        assert heap.value == sample_values(text, "java_lang_Memory_HeapMemoryUsage_used")[""]
    else:
        assert cpu.value == pytest.approx(sample_values(text, "process_cpu_seconds_total")[""])
        assert heap.value == sample_values(text, "jvm_memory_used_bytes")["heap"]


def test_vanilla_is_lossless_where_strimzi_exports_the_idle_meter_from_meanrate():
    assert "kafka_broker_request_handler_idle_seconds_total" in series("vanilla")
    assert "kafka_broker_request_handler_idle_seconds_total" not in series("strimzi")
    # the strimzi reading is there, but as MeanRate: no catalog rule turns it into the idle counter
    rd = [r for r in exposition.readings(scrape("strimzi"), "strimzi") if "RequestHandlerAvgIdlePercent" in r.mbean]
    assert [r.attribute for r in rd] == ["MeanRate"]
    weak = exposition.weak_signal_samples("strimzi", BASE)
    assert [dict(s.labels)["signal"] for s in weak] == ["kafka_broker_request_handler_idle_ratio"]
    assert exposition.weak_signal_samples("vanilla", BASE) == []


def test_the_documented_strimzi_fix_rule_restores_the_idle_counter():
    # what the rule of WEAK_SIGNALS exports (its name, the meter's Count) appended to the recorded Strimzi scrape
    count = next(
        r.value
        for r in exposition.readings(scrape("vanilla"), "vanilla")
        if "name=RequestHandlerAvgIdlePercent" in r.mbean and r.attribute == "Count"
    )
    fixed = scrape("strimzi") + f"kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_total {count}\n"
    (fix,) = [f for _, _, f in exposition.weak_signals("strimzi")]
    assert "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_total" in fix
    samples = catalog.convert(
        exposition.readings(fixed, "strimzi"),
        catalog.BROKER_TARGET_RULES,
        base=BASE,
        tenants=catalog.TenantLookup(None, "prod"),
    )
    assert "kafka_broker_request_handler_idle_seconds_total" in {s.name for s in samples}
    assert exposition.weak_signal_samples("strimzi", BASE, samples) == []


def test_the_reporter_gives_what_strimzis_rules_drop_from_its_own_names():
    """Strimzi's metrics reporter serves Yammer meters as their Count and Kafka's metrics with their tags: the idle
    counter, the quota sensors (per user and client-id), connections by client software and the version come back
    as Jolokia gives them; nothing is weak, and only the telemetry plugin's series are missing."""
    got = series("strimzi_reporter")
    [idle] = got["kafka_broker_request_handler_idle_seconds_total"]
    assert idle.value == pytest.approx(
        sample_values(
            scrape("strimzi_reporter"), "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_total"
        )[""]
        * 1e-9
    )
    quota = {dict(s.labels)["client_id"]: dict(s.labels)["user"] for s in got["kafka_client_produce_bytes_per_second"]}
    assert quota == {"fixture-writer": ""}
    # the other brokers' connections (the recorder's own clients had gone by then)
    assert "apache-kafka-java" in {dict(s.labels)["client_software_name"] for s in got["kafka_broker_connections"]}
    [info] = got["kafka_broker_info"]
    assert dict(info.labels)["version"] == "4.4.0" and info.value == 1.0
    assert exposition.weak_signal_samples("strimzi_reporter", BASE) == []
    assert exposition.dialect_gaps("strimzi_reporter") == {
        m for m in (r.metric for r in catalog.BROKER_TARGET_RULES) if m.startswith("kafka_client_telemetry_")
    }


def test_reporter_readings_name_the_mbeans_jolokia_reads():
    text = (
        'kafka_server_produce_byte_rate{client_id="a.b",user="u"} 5.0\n'
        'kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99"} 7.0\n'
        'kafka_network_requestmetrics_totaltimems_count{request="Produce"} 3\n'
        'kafka_server_app_info_version_info{client_id="2",version="4.4.0"} 1\n'
        "kafka_server_replicamanager_underreplicatedpartitions 2.0\n"
    )
    assert exposition.reporter_readings(text) == [
        ("kafka.server:type=Produce,client-id=a.b,user=u", "byte-rate", 5.0, None),
        ("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "99thPercentile", 7.0, None),
        ("kafka.server:type=app-info,id=2", "Version", "4.4.0", None),
        ("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "Value", 2.0, None),
    ]


def test_docs_dialect_table_is_what_the_recorded_scrapes_give():
    table = dialect_table()
    assert table in DOCS.read_text(), "docs/metrics.md 'Dialects' table is stale; paste:\n" + table


def test_node_exporter_maps_onto_the_host_series():
    text = (FIXTURES / "node_exporter.prom").read_text()
    base = (("cluster", "prod"), ("host", "k1"))
    samples = exposition.node_exporter_samples(text, base, [("1", "/var/lib/kafka/data")])
    names = {s.name for s in samples}
    assert {
        "kafka_host_cpu_seconds_total",
        "kafka_host_memory_total_bytes",
        "kafka_host_memory_available_bytes",
        "kafka_host_network_receive_bytes_total",
        "kafka_host_filesystem_avail_bytes",
    } <= names
    fs = [s for s in samples if s.name.startswith("kafka_host_filesystem_")]
    assert {dict(s.labels)["path"] for s in fs} == {"/var/lib/kafka/data"}  # held by "/" in the recording
    assert all(dict(s.labels)["broker"] == "1" and dict(s.labels)["device"] for s in fs)
    modes = {dict(s.labels)["mode"] for s in samples if s.name == "kafka_host_cpu_seconds_total"}
    assert {"idle", "user", "system"} <= modes
    size = next(s.value for s in fs if s.name == "kafka_host_filesystem_size_bytes")
    avail = next(s.value for s in fs if s.name == "kafka_host_filesystem_avail_bytes")
    assert 0 < avail <= size


def test_garbage_is_a_transport_error_not_an_empty_scrape():
    from monitor.core.errors import TransportError

    with pytest.raises(TransportError):
        exposition.readings("kafka_server_ReplicaManager_Value{name=\n", "vanilla")


@contextmanager
def serving(
    body: bytes | Callable[[str], bytes],
    login: tuple[str, str] | None = None,
    token: Callable[[], str] | None = None,
):
    """A loopback HTTP server answering every GET with ``body`` (or what ``body(path)`` gives for that GET's path and
    query) as Prometheus text, and with 401 where ``login`` (user, password) or a bearer ``token`` (what it is at
    that request) is asked and not given; yields its /metrics URL."""
    basic = login and "Basic " + base64.b64encode(":".join(login).encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # http.server calls it by this name
            want = f"Bearer {token()}" if token else basic
            if want and self.headers.get("Authorization") != want:
                self.send_response(401)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body(self.path) if callable(body) else body)

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()


@pytest.fixture
def exporter_url():
    with serving(scrape("strimzi").encode()) as url:
        yield url


def test_collector_reads_an_exporter_only_broker_over_http(exporter_url):
    cluster = ClusterConfig(
        name="prod",
        bootstrap_servers="k1:9092",
        brokers=(BrokerTarget(id=1, jmx_exporter=ExporterSource(url=exporter_url, dialect="strimzi")),),
    )
    c = JmxCollector(
        cluster,
        transport=JolokiaTransport(),
        controller_transport=JolokiaTransport(),
        tenants=catalog.TenantLookup(None, "prod"),
        max_series=100_000,
    )
    (target,) = c.targets()
    r = c.collect_target(target, now=0.0)
    assert r.status is TargetStatus.OK, r.message
    by_name = {s.name: s for s in r.samples}
    assert by_name["kafka_broker_under_replicated_partitions"].labels == BASE
    assert dict(by_name["kafka_source_weak_signal"].labels)["basis"].startswith("MeanRate")


@pytest.fixture
def node_exporter_url():
    with serving((FIXTURES / "node_exporter.prom").read_bytes()) as url:
        yield url


def test_host_collector_reads_a_broker_machine_through_its_node_exporter(node_exporter_url):
    from collectors.host import HostCollector

    cluster = ClusterConfig(
        name="prod",
        bootstrap_servers="k1:9092",
        brokers=(BrokerTarget(id=1, node_exporter=node_exporter_url, log_dirs=("/var/lib/kafka",)),),
    )
    hc = HostCollector(cluster)
    (target,) = hc.targets()  # no /proc target: the only broker's machine is read through its exporter
    r = hc.collect_target(target, now=0.0)
    assert r.status is TargetStatus.OK, r.message
    fs = [s for s in r.samples if s.name == "kafka_host_filesystem_avail_bytes"]
    assert [dict(s.labels)["path"] for s in fs] == ["/var/lib/kafka"]
    assert dict(fs[0].labels)["host"] == "127.0.0.1"
    hc_down = HostCollector(
        cluster.model_copy(
            update={
                "brokers": (
                    BrokerTarget(id=1, node_exporter="http://127.0.0.1:9/metrics", log_dirs=("/var/lib/kafka",)),
                )
            }
        )
    )
    assert hc_down.collect_target(hc_down.targets()[0], now=0.0).status is not TargetStatus.OK


def test_a_discovered_cluster_is_read_from_the_exporters_its_templates_name(exporter_url, node_exporter_url):
    """Only bootstrap_servers and the MSK-style templates: every broker the discovery board holds is read through
    its jmx_exporter, its machine through node_exporter (one target per URL), and the capability table counts both."""
    from collectors.capabilities import configured_sources
    from collectors.discovery import DiscoveryBoard, Membership, Node
    from collectors.host import HostCollector

    exporter_port = exporter_url.rsplit(":", 1)[1].split("/")[0]
    node_port = node_exporter_url.rsplit(":", 1)[1].split("/")[0]
    cluster = ClusterConfig(
        name="prod",
        bootstrap_servers="127.0.0.1:9092",
        discovery={
            "jmx_exporter": {"url": f"http://{{host}}:{exporter_port}/metrics", "dialect": "strimzi"},
            "node_exporter": f"http://{{host}}:{node_port}/metrics",
        },
    )
    board = DiscoveryBoard()
    jmx = JmxCollector(
        cluster,
        transport=JolokiaTransport(),
        controller_transport=JolokiaTransport(),
        tenants=catalog.TenantLookup(None, "prod"),
        max_series=100_000,
        board=board,
    )
    host = HostCollector(cluster, board=board)
    assert jmx.targets() == () and host.targets() == ()
    board.publish(Membership((Node(1, "127.0.0.1", 9092), Node(2, "127.0.0.1", 9093))))
    urp = {}
    for target in jmx.targets():
        r = jmx.collect_target(target, now=0.0)
        assert r.status is TargetStatus.OK, r.message
        urp[target.broker] = next(s for s in r.samples if s.name == "kafka_broker_under_replicated_partitions")
    assert {b: dict(s.labels)["broker"] for b, s in urp.items()} == {"1": "1", "2": "2"}
    (node,) = host.targets()  # both brokers on one machine: one node_exporter
    r = host.collect_target(node, now=0.0)
    assert r.status is TargetStatus.OK, r.message
    names = {s.name for s in r.samples}
    assert "kafka_host_cpu_seconds_total" in names and "kafka_host_filesystem_avail_bytes" not in names
    assert configured_sources(cluster) == ("admin", "probe", "protocol_disk", "jmx_exporter_strimzi", "node_exporter")


# A machine with a data volume beside its root: what node_exporter lists (its mounts, trimmed to the filesystem
# series the host collector reads), for the log dirs DescribeLogDirs names.
ROOT_SIZE, DATA_SIZE = 270_553_174_016, 2_147_483_648
TWO_MOUNTS = "".join(
    f'node_filesystem_{what}{{device="{dev}",fstype="ext4",mountpoint="{mount}"}} {value}\n'
    for dev, mount, size in (("/dev/vda", "/", ROOT_SIZE), ("/dev/vdb", "/data", DATA_SIZE))
    for what, value in (("size_bytes", size), ("free_bytes", size // 2), ("avail_bytes", size // 2))
)


def test_a_discovered_log_dir_is_mapped_to_the_mount_of_its_volumes_size_only():
    """A discovered broker's log dir (no listing: its path and volume size from DescribeLogDirs) takes the mount
    holding its path only where that mount has the size Kafka reports; a path only ``/`` holds (a container's PVC seen
    from the node) is left out rather than given the root filesystem. A listed log dir is trusted as before."""
    base = (("cluster", "prod"), ("host", "k1"))
    sizes = {("1", "/data/kafka"): float(DATA_SIZE), ("2", "/var/lib/kafka/data-0"): float(DATA_SIZE)}
    samples = exposition.node_exporter_samples(TWO_MOUNTS, base, [("3", "/srv/kafka"), *sizes], sizes)
    fs = {(dict(s.labels)["broker"], dict(s.labels)["device"]): s.value for s in samples if "size" in s.name}
    assert fs == {("1", "/dev/vdb"): DATA_SIZE, ("3", "/dev/vda"): ROOT_SIZE}, fs
    assert exposition.same_volume(DATA_SIZE + 4096, DATA_SIZE) and not exposition.same_volume(ROOT_SIZE, DATA_SIZE)


class LogDirsOnly:
    """The protocol client's seam: brokers 1 and 2 of one machine, each with one log dir on the 2 GiB volume."""

    def membership(self):
        from collectors.discovery import Membership, Node

        return Membership((Node(1, "127.0.0.1", 9092), Node(2, "127.0.0.1", 9093)))

    def log_dirs(self, brokers, *, timeout, sizes_of=()):
        from collectors.protocol_client import LogDir

        return [LogDir(b, f"/data/kafka-{b}", "", DATA_SIZE, DATA_SIZE // 2, None) for b in brokers], {}

    def close(self) -> None:
        pass


def test_discovered_brokers_disk_passes_from_describe_log_dirs_to_node_exporter_never_both():
    """Brokers found through the templates: DescribeLogDirs names their log dirs and sizes, the node_exporter their
    machine's mounts. The disk of each dir passes from the protocol to node_exporter (``device`` then set) through
    the board's handshake, and back when the node_exporter stops answering: in no round do both export a dir."""
    from collectors.discovery import DiscoveryBoard
    from collectors.host import HostCollector
    from collectors.protocol import ProtocolCollector

    def disk(*results):
        """(source, broker) of each filesystem size series in the round's results."""
        return sorted(
            (r.target.collector, dict(s.labels)["broker"])
            for r in results
            for s in r.samples
            if s.name == "kafka_host_filesystem_size_bytes"
        )

    with serving(TWO_MOUNTS.encode()) as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
        cluster = ClusterConfig(
            name="prod", bootstrap_servers="127.0.0.1:9092", discovery={"node_exporter": f"http://{{host}}:{port}/m"}
        )
        board = DiscoveryBoard()
        protocol = ProtocolCollector(cluster, board=board, client_factory=lambda _c: LogDirsOnly())
        host = HostCollector(cluster, board=board)

        def round_():
            p = protocol.collect_target(protocol.targets()[0], now=0.0)
            (node,) = host.targets()
            return p, host.collect_target(node, now=0.0)

        assert disk(*round_()) == [("protocol", "1"), ("protocol", "2")]  # mounts matched now: offered
        p, h = round_()  # yielded by the protocol, so exported by the host collector
        assert disk(p, h) == [("host", "1"), ("host", "2")]
        devices = {dict(s.labels)["device"] for s in h.samples if s.name == "kafka_host_filesystem_size_bytes"}
        assert devices == {"/dev/vdb"}
    (node,) = host.targets()
    assert host.collect_target(node, now=0.0).status is not TargetStatus.OK  # the exporter gone: offers nothing
    assert disk(protocol.collect_target(protocol.targets()[0], now=0.0)) == [("protocol", "1"), ("protocol", "2")]


# Broker series the recording could not show whatever the dialect: they need client telemetry pushes, deprecated
# request versions or failed requests, which the recorder's clients never made.
NEEDS_ACTIVITY = {
    "kafka_broker_deprecated_requests_total",
    "kafka_topic_bytes_rejected_total",
    "kafka_topic_failed_fetch_requests_total",
    "kafka_topic_failed_produce_requests_total",
    # registered once a share group reads a partition (and writes a dead letter): the recordings had none
    "kafka_broker_share_lock_timeouts_total",
    "kafka_broker_share_inflight_records",
    "kafka_broker_share_dead_letter_records_total",
} | {m for m in (r.metric for r in catalog.BROKER_TARGET_RULES) if m.startswith("kafka_client_telemetry_")} - {
    m for m in (r.metric for r in catalog.BROKER_TARGET_RULES) if m.startswith("kafka_client_telemetry_plugin_")
}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_capability_table_claims_what_the_recorded_scrapes_give(dialect):
    """``dialect_gaps`` (read by collectors.capabilities) is exactly what the real agent's scrape lacks."""
    from collectors.capabilities import source_signals

    derived = {src: ratio for src, ratio, _ in catalog.RATIOS}
    got = set(series(dialect))
    got |= {derived[s] for s in got if s in derived}
    broker = source_signals("broker_jmx")
    # what the recording can show; a series that needs activity may be declared missing on other evidence (the
    # reporter's telemetry series: the profile e2e)
    assert exposition.dialect_gaps(dialect) - NEEDS_ACTIVITY == broker - got - NEEDS_ACTIVITY
    weak = {s for s, _, _ in exposition.weak_signals(dialect)}
    assert weak <= exposition.dialect_gaps(dialect) and not source_signals(f"jmx_exporter_{dialect}") & weak


# The plain-line parser (issue 33, item 5: a jmx_exporter scrape of a broker with 10,000 partitions took 4.8 s of CPU
# in prometheus_client's parser) must give prometheus_client's samples, or step aside for it.


def _reference(text: str) -> list[tuple[str, dict[str, str], float]]:
    from prometheus_client.parser import text_string_to_metric_families

    return [(s.name, s.labels, float(s.value)) for f in text_string_to_metric_families(text) for s in f.samples]


def _same(a, b) -> bool:
    return len(a) == len(b) and all(
        x[:2] == y[:2] and (x[2] == y[2] or (x[2] != x[2] and y[2] != y[2])) for x, y in zip(a, b, strict=True)
    )


@pytest.mark.parametrize("fixture", [f"jmx_exporter_{d}.prom" for d in DIALECTS] + ["node_exporter.prom"])
def test_the_real_agents_scrapes_parse_by_the_plain_path_as_prometheus_client_parses_them(fixture):
    text = (FIXTURES / fixture).read_text()
    plain = exposition._plain_samples(text)
    assert plain is not None, "the real agents' lines are all plain"
    assert _same(plain, _reference(text))


_VALUE = st.text(alphabet='ab ,={}"\\n#', max_size=6)


@settings(deadline=None)  # no per-example time limit: a loaded CI machine is not a failure
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["kafka_log_Log_Value", "jvm_info", "up", "x:y_total"]),
            st.lists(st.tuples(st.sampled_from(["topic", "name", "le", "_x"]), _VALUE), max_size=3),
            st.sampled_from(["1", "-2.5", "NaN", "+Inf", "1e3", "1_0", "0x1", ""]),
            st.sampled_from(["", " 1700000000000", "\t", ' # {a="b"} 1']),
        ),
        max_size=4,
    )
)
def test_the_plain_path_agrees_with_prometheus_client_or_steps_aside(lines):
    text = "".join(
        name + ("{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}" if labels else "") + f" {value}{tail}\n"
        for name, labels, value, tail in lines
    )
    try:
        want = _reference(text)
    except ValueError:
        want = None
    plain = exposition._plain_samples(text)
    if plain is not None:  # it answered: prometheus_client must give the very same samples
        assert want is not None and _same(plain, want), (text, plain, want)
    assert exposition._samples(text) if want else True  # a refused scrape is prometheus_client's to judge
