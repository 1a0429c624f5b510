"""Metric sources that serve the Prometheus text exposition: jmx_exporter (in its dialects) and node_exporter.

``ExpositionTransport`` is a ``Transport`` like Jolokia's: it GETs a jmx_exporter's ``/metrics`` and turns each
sample back into the ``Reading`` (ObjectName, attribute) it was exported from, so ``catalog.convert`` names, scales,
aggregates and attributes it exactly as for Jolokia and jmxquery: every alert, dashboard and report works
unchanged. Parsing is prometheus_client's text parser. The inverse is built from the catalog itself (its MBean
patterns name every domain, type, name and attribute it reads), so it covers what the catalog asks for, no more.

Dialects (``ExporterSource.dialect``):
- ``vanilla``: jmx_exporter with no rules (its default format), what Amazon MSK's open monitoring serves:
  ``kafka_server_ReplicaManager_Value{name="UnderReplicatedPartitions"}`` = domain_type_attribute, the other
  ObjectName keys as labels. Lossless: every catalog signal is there.
- ``strimzi``: Strimzi's ``kafka-metrics.yaml`` rules (deploy/kafka/jmx_exporter/strimzi-kafka-metrics.yml):
  lowercased ``kafka_<domain>_<type>_<name>`` with ``_total`` for a meter's Count, ``_percent`` for gauges named
  ...Percent, ``quantile`` for percentiles. Weaker: the request-handler idle meter is exported from ``MeanRate``
  (average since the broker started) instead of its Count, so ``kafka_broker_request_handler_idle_ratio`` cannot
  be derived; the reading comes back as ``MeanRate`` (which no catalog rule reads) and ``weak_signals`` says so.

- ``strimzi_reporter``: Strimzi's own metrics reporter (io.strimzi:metrics-reporter, a ``metric.reporters`` and
  ``kafka.metrics.reporters`` plugin in the broker, no javaagent): every Yammer metric as lowercased
  ``<domain>_<type>_<name>`` (a meter's Count as ``_total``, a timer's percentiles under ``quantile``, a gauge bare)
  and every Kafka metric as ``kafka_server_<group>_<name>`` (a string one as ``..._info`` with the value in a label),
  the tags and other ObjectName keys as labels, and client_java's JVM series. Nearly lossless: the request-handler
  idle meter keeps its Count, quota sensors and connections are there. What it lacks: kafka-health's telemetry
  plugin's series (its MBeans are registered in JMX, not as metrics), and, in the released 0.1.0-0.3.0, a ``.`` in
  a label value (a topic ``shop.orders``) comes back as ``_`` (``shop_orders``): Kafka folds it into the Yammer
  scope, which those releases parse (``LOSSY_LABELS``; fixed after 0.3.0, strimzi/metrics-reporter#128).

``node_exporter_samples`` maps a node_exporter scrape onto the host collector's ``kafka_host_*`` series.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial

import httpx
from prometheus_client.parser import text_string_to_metric_families

from collectors import catalog
from collectors.transports.httpclient import shared_client
from collectors.types import Endpoint, MBeanQuery, Reading, Sample
from monitor.core.config import NodeExporterSource, ScrapedSource
from monitor.core.errors import TargetAuthFailed, TargetForbidden, TargetTimeout, TargetUnreachable, TransportError
from monitor.core.redact import redact_url

DIALECTS = ("vanilla", "strimzi", "strimzi_reporter")
METER_ATTRIBUTES = ("Count", "MeanRate", "OneMinuteRate", "FiveMinuteRate", "FifteenMinuteRate")
_PERCENTILES = {
    "50thPercentile": "0.50",
    "75thPercentile": "0.75",
    "95thPercentile": "0.95",
    "98thPercentile": "0.98",
    "99thPercentile": "0.99",
    "999thPercentile": "0.999",
}
# A signal a dialect gives only in a weaker form: (dialect, catalog series) -> what it gives instead, and the one-line
# exporter rule that restores it (docs/metrics.md "Dialects").
WEAK_SIGNALS = {
    ("strimzi", "kafka_broker_request_handler_idle_ratio"): (
        "MeanRate (average since the broker started)",
        '- {pattern: "kafka.server<type=KafkaRequestHandlerPool, name=RequestHandlerAvgIdlePercent><>Count", '
        "name: kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_total, type: COUNTER}",
    ),
}

# Catalog broker series a dialect does not export at all, from the scrapes recorded from the real agents
# (tests/fixtures/exposition; tests/unit/test_exposition.py checks this against them, series that need client
# activity the recording had none of aside). The capability table (collectors.capabilities) reads it.
NOT_EXPORTED = {
    # (jmx_prometheus_javaagent 1.0.1 serves no java.lang GarbageCollector or pool CollectionUsage attribute, and
    # under Strimzi's rules no java.lang at all: the JVM series come from its own jvm_*/process_* series instead,
    # ``jvm_readings``)
    "vanilla": frozenset({"kafka_broker_info"}),
    # The reporter serves Kafka's metrics, not JMX: kafka-health's telemetry plugin registers MBeans of its own (its
    # counters, and each pushing client's series: seen missing on the profile e2e's broker-3, which the probe pushes to)
    "strimzi_reporter": frozenset(
        r.metric for r in catalog.BROKER_TARGET_RULES if r.metric.startswith("kafka_client_telemetry_")
    ),
    "strimzi": frozenset(
        {
            # Strimzi's rules keep kafka.server/network/controller/log meters and gauges: no KafkaMetrics-style
            # sensors (quotas, coordinators, connections, telemetry plugin), no app-info
            "kafka_broker_connections",
            "kafka_broker_coordinated_groups",
            "kafka_broker_coordinated_groups_by_state",
            "kafka_broker_coordinator_partitions",
            "kafka_broker_info",
            "kafka_broker_metadata_lag_seconds",
            "kafka_client_fetch_bytes_per_second",
            "kafka_client_fetch_throttle_time_seconds",
            "kafka_client_produce_bytes_per_second",
            "kafka_client_produce_throttle_time_seconds",
            "kafka_client_request_throttle_time_seconds",
            "kafka_client_request_time_ratio",
            "kafka_client_telemetry_plugin_clients",
            "kafka_client_telemetry_plugin_evicted_total",
            "kafka_client_telemetry_plugin_expired_total",
            "kafka_client_telemetry_plugin_failures_total",
            "kafka_client_telemetry_plugin_pushes_total",
        }
    ),
}


# The KRaft controller's own series (``catalog.CONTROLLER_RULES`` less the broker's) a dialect does not export, from the
# scrapes recorded from the real agent on the local stack's controller (tests/fixtures/exposition/controller_*.prom,
# checked by tests/unit/test_exposition.py). The capability table's controller_exporter_* rows read it.
CONTROLLER_NOT_EXPORTED = {
    # jmx_exporter's default format serves numeric attributes only: raft-metrics' current-state is a string
    "vanilla": frozenset({"kafka_cluster_raft_state"}),
    # Strimzi's rules serve the state as kafka_server_raftmetrics_current_state{current_state="..."} 1 (read back)
    "strimzi": frozenset(),
    # the reporter (0.2.0) on the stack's controller serves every one, the raft state as
    # kafka_server_raft_metrics_current_state_info{current_state="..."} 1 (record.py --reporter-controller)
    "strimzi_reporter": frozenset(),
}

# Strimzi's rules that turn a string attribute into a label of a 1-valued series: sample name -> (MBean, attribute,
# the label holding the value)
_STRIMZI_STRINGS = {
    "kafka_server_raftmetrics_current_state": ("kafka.server:type=raft-metrics", "current-state", "current_state"),
}


# Label values a dialect cannot give exactly: (dialect, label) -> what it gives instead (docs/metrics.md "Dialects").
LOSSY_LABELS = {
    ("strimzi_reporter", "topic"): "'.' read as '_' (metrics-reporter 0.1.0-0.3.0: Kafka's Yammer scope)",
}


def _sanitize(s: str) -> str:
    """jmx_exporter's name sanitising: every character outside [a-zA-Z0-9_:] becomes ``_``."""
    return re.sub(r"[^a-zA-Z0-9_:]", "_", s)


@dataclass(frozen=True)
class _Index:
    types: dict[str, tuple[str, str]]  # sanitised "domain_type_" -> (domain, type)
    attributes: dict[str, str]  # sanitised attribute -> attribute
    label_keys: dict[str, str]  # sanitised ObjectName key -> key
    strimzi: dict[str, tuple[str, str, str]]  # lowercased Strimzi name -> (domain, type, name); attribute by suffix
    yammer: dict[str, tuple[str, str, str]]  # the reporter's lowercased domain_type_name -> (domain, type, name)
    kafka_metrics: dict[str, tuple[str, str, str]]  # the reporter's kafka_server_group_name -> (domain, type, attr)


@lru_cache(maxsize=1)
def _index() -> _Index:
    types: dict[str, tuple[str, str]] = {}
    attributes = {_sanitize(a): a for a in METER_ATTRIBUTES + tuple(_PERCENTILES) + ("Value", "Mean", "Max")}
    label_keys: dict[str, str] = {}
    strimzi: dict[str, tuple[str, str, str]] = {}
    yammer: dict[str, tuple[str, str, str]] = {}
    kafka_metrics: dict[str, tuple[str, str, str]] = {}
    for rule in catalog.BROKER_TARGET_RULES + catalog.CONTROLLER_RULES:
        domain, props = catalog.parse_object_name(rule.mbean)
        p = dict(props)
        for k in [*p, *(prop for _, prop in rule.labels)]:
            if k != "*":
                label_keys[_sanitize(k)] = k
        attributes[_sanitize(rule.attribute)] = rule.attribute
        typ = p.get("type", "*")
        if "*" in typ or "{" in typ:
            continue
        types[_sanitize(f"{domain}_{typ}_")] = (domain, typ)
        name = p.get("name", "*")
        if domain.startswith("kafka.") and "*" not in name:
            yammer[_sanitize(f"{domain}_{typ}_{name}").lower()] = (domain, typ, name)
        elif domain == "kafka.server" and "name" not in p:  # a Kafka metric: group = type, metric name = attribute
            kafka_metrics[_sanitize(f"{domain}_{typ}_{rule.attribute}").lower()] = (domain, typ, rule.attribute)
        if domain.startswith("kafka.") and "*" not in name:
            short = domain.split(".", 1)[1].replace(".", "_")
            stem = f"kafka_{short}_{typ}_".lower()
            if "Percent" in name:
                strimzi[stem + name.split("Percent")[0].lower() + "_percent"] = (domain, typ, name)
                strimzi[stem + name.lower() + "_total"] = (domain, typ, name)  # the fix rule of WEAK_SIGNALS
            elif "PerSec" in name:
                strimzi[stem + name.split("PerSec")[0].lower() + "_total"] = (domain, typ, name)
            else:
                strimzi[stem + name.lower()] = (domain, typ, name)
                strimzi[stem + name.lower() + "_count"] = (domain, typ, name)
    return _Index(types, attributes, label_keys, strimzi, yammer, kafka_metrics)


def _object_name(domain: str, props: Iterable[tuple[str, str]]) -> str:
    return domain + ":" + ",".join(f"{k}={v}" for k, v in props)


_Samples = Sequence[tuple[str, dict[str, str], float]]


def _samples(text: str, keep: Callable[[str], bool] | None = None) -> _Samples:
    """Every sample of a scrape, parsed once (a broker of 10,000 partitions serves about 100,000).

    Lines of the plain shape (``name{label="value",...} value [timestamp]``, what jmx_exporter and node_exporter
    serve) are split by ``_plain_samples``, about ten times cheaper than prometheus_client's parser, which took 4.8 s
    of CPU for one such scrape. A scrape with any line that shape does not cover is parsed by prometheus_client
    whole: the same answer, or its error. ``keep`` (a sample name -> whether it is wanted) lets the plain path skip
    the labels of lines nobody reads."""
    plain = _plain_samples(text, keep)
    if plain is not None:
        return plain
    try:
        return [(s.name, s.labels, float(s.value)) for f in text_string_to_metric_families(text) for s in f.samples]
    except ValueError as exc:
        raise TransportError(f"not a Prometheus text exposition: {exc}") from None


_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')
_UNESCAPE = re.compile(r'\\[\\n"]')  # the format's three escapes; any other backslash stays as it is
_UNESCAPED = {"\\\\": "\\", "\\n": "\n", '\\"': '"'}


def _unescape(value: str) -> str:
    return _UNESCAPE.sub(lambda m: _UNESCAPED[m.group()], value) if "\\" in value else value


def _plain_samples(
    text: str, keep: Callable[[str], bool] | None = None
) -> list[tuple[str, dict[str, str], float]] | None:
    """The samples of a scrape whose every line is a comment, blank, or ``name{labels} value [timestamp]`` with
    well-formed labels; None as soon as one is not (``_samples`` then asks prometheus_client)."""
    out = []
    for line in text.split("\n"):
        if not line or line[0] == "#":
            continue
        head = _NAME.match(line)
        if head is None:
            return None
        name, at = head.group(), head.end()
        if keep is not None and not keep(name):
            continue
        labels: dict[str, str] = {}
        if at < len(line) and line[at] == "{":
            at += 1
            while at < len(line) and line[at] != "}":
                pair = _LABEL.match(line, at)
                if pair is None:
                    return None
                if pair.group(1) in labels:  # a label twice: prometheus_client refuses the scrape
                    return None
                labels[pair.group(1)] = _unescape(pair.group(2))
                at = pair.end()
            if at >= len(line):
                return None
            at += 1
        fields = line[at:].split()
        if not fields or len(fields) > 2 or line[at : at + 1] not in (" ", "\t"):
            return None
        if "_" in fields[0]:  # float() takes 1_000, the format does not
            return None
        try:
            value = float(fields[0])
        except ValueError:
            return None
        out.append((name, labels, value))
    return out


@lru_cache(maxsize=8192)
def _vanilla_name(name: str) -> tuple[str, str, str] | None:
    """(domain, type, attribute) of a default-format name, or None if the catalog reads nothing of it. Remembered: a
    scrape repeats a few hundred names in 100,000 samples, and each look-up tries every type prefix."""
    idx = _index()
    prefix = max((p for p in idx.types if name.startswith(p)), key=len, default=None)
    if prefix is None:
        return None
    rest = name[len(prefix) :]
    attr = idx.attributes.get(rest)
    if attr is None:  # a CompositeData item: attribute_key (java_lang_Memory_HeapMemoryUsage_used)
        head, _, key = rest.rpartition("_")
        attr = idx.attributes.get(head) and f"{idx.attributes[head]}/{key}"
    return None if attr is None else (*idx.types[prefix], attr)


def _own(dialect: str, name: str) -> bool:
    """Whether a sample name of ``dialect`` (not the JVM's) maps onto a catalog reading."""
    if dialect == "vanilla":
        return _vanilla_name(name) is not None
    if dialect == "strimzi":
        return name in _index().strimzi or name in _STRIMZI_STRINGS
    return _reporter_name(name) is not None


def mapped(name: str, dialect: str) -> bool:
    """Whether a sample name of ``dialect`` maps onto a catalog reading (what the fixtures keep)."""
    return _own(dialect, name) or name in _JVM


def vanilla_readings(text: str) -> list[Reading]:
    """Pure: a jmx_exporter scrape in its default format -> the readings it was exported from (catalog MBeans only).
    ``kafka_server_ReplicaManager_Value{name="UnderReplicatedPartitions"}`` ->
    ``Reading("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "Value", v)``."""
    return _vanilla(_samples(text))


def _vanilla(samples: _Samples) -> list[Reading]:
    idx = _index()
    out = []
    for name, labels, value in samples:
        hit = _vanilla_name(name)
        if hit is None:
            continue
        domain, typ, attr = hit
        attr, _, key = attr.partition("/")
        props = [("type", typ)] + [(idx.label_keys.get(k, k), v) for k, v in labels.items()]
        out.append(Reading(_object_name(domain, props), attr, value, key or None))
    return out


def strimzi_readings(text: str) -> list[Reading]:
    """Pure: a scrape under Strimzi's kafka-metrics.yaml rules -> readings. A ``_total`` is a meter's Count; a
    ``quantile`` label a percentile; ``_percent`` is a gauge's Value, except the request-handler idle meter, which
    those rules export from ``MeanRate`` (the reading says so: no catalog rule reads it)."""
    return _strimzi(_samples(text))


def _strimzi(samples: _Samples) -> list[Reading]:
    idx = _index()
    out = []
    for name, labels, value in samples:
        hit = idx.strimzi.get(name)
        if hit is None:
            string = _STRIMZI_STRINGS.get(name)
            if string is not None and value == 1 and string[2] in labels:
                out.append(Reading(string[0], string[1], labels[string[2]]))
            continue
        domain, typ, mname = hit
        labels = dict(labels)
        quantile = labels.pop("quantile", None)
        if quantile is not None:
            attr = next((a for a, q in _PERCENTILES.items() if q == quantile), None)
            if attr is None:
                continue
        elif name.endswith("_total") or name.endswith("_count"):
            attr = "Count"
        elif name.endswith("_percent") and mname == "RequestHandlerAvgIdlePercent":
            attr = "MeanRate"
        else:
            attr = "Value"
        props = [("type", typ), ("name", mname)] + list(labels.items())
        out.append(Reading(_object_name(domain, props), attr, value))
    return out


@lru_cache(maxsize=8192)
def _reporter_name(name: str) -> tuple[str, str, str, str] | None:
    """(domain, type, name or attribute, how the value reads) of a metrics-reporter sample name, or None. How:
    ``count`` (a meter's ``_total``), ``value`` (a gauge), ``quantile`` (a timer's percentile), ``info`` (a string
    Kafka metric: the value is in the label named after it), ``metric`` (a numeric Kafka metric)."""
    idx = _index()
    if name.endswith("_total") and name[: -len("_total")] in idx.yammer:
        return (*idx.yammer[name[: -len("_total")]], "count")
    if name in idx.yammer:  # a gauge, or a timer's quantiles (told apart by the quantile label)
        return (*idx.yammer[name], "value")
    if name in idx.kafka_metrics:
        return (*idx.kafka_metrics[name], "metric")
    if name.endswith("_info") and name[: -len("_info")] in idx.kafka_metrics:
        return (*idx.kafka_metrics[name[: -len("_info")]], "info")
    return None


# ObjectName keys the reporter's labels do not name as JMX does: app-info's MBean (registered by AppInfoParser, not a
# metric) is keyed ``id``, the metric of the same facts ``client-id``.
_REPORTER_KEYS = {("app-info", "client_id"): "id"}


def reporter_readings(text: str) -> list[Reading]:
    """Pure: a scrape of Strimzi's metrics reporter -> readings. ``kafka_server_replicamanager_underreplicatedpartitions
    3`` -> ``Reading("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "Value", 3)``; ``..._total``
    is a meter's Count; ``kafka_server_produce_byte_rate{user="",client_id="a"}`` -> ``Reading("kafka.server:
    type=Produce,user=,client-id=a", "byte-rate", v)``."""
    return _reporter(_samples(text))


def _reporter(samples: _Samples) -> list[Reading]:
    idx = _index()
    out = []
    for name, labels, value in samples:
        hit = _reporter_name(name)
        if hit is None:
            continue
        domain, typ, what, how = hit
        labels = dict(labels)
        val: float | str = value
        if how == "info":
            key = _sanitize(what).lower()
            if key not in labels:
                continue
            val = labels.pop(key)
        quantile = labels.pop("quantile", None)
        if how == "value" and quantile is not None:
            attr = next((a for a, q in _PERCENTILES.items() if float(q) == float(quantile)), None)
            if attr is None:
                continue
        else:
            attr = {"count": "Count", "value": "Value"}.get(how, what)
        keys = [(_REPORTER_KEYS.get((typ, k)) or idx.label_keys.get(k, k), v) for k, v in labels.items()]
        props = [("type", typ)] + ([("name", what)] if how in ("count", "value") else []) + keys
        out.append(Reading(_object_name(domain, props), attr, val))
    return out


# The JVM's own series, which jmx_prometheus_javaagent serves beside its rules' output in every dialect (client_java's
# JVM collectors; recorded from 1.0.1 on the JDK 17 broker, tests/fixtures/exposition): sample name -> the java.lang
# MBean attribute the catalog reads (JVM_RULES), its CompositeData key, the factor back to the MBean's unit, and the
# one label that names the MBean (with the value it must have, or None: the label is the MBean's ``name``).
_JVM: dict[str, tuple[str, str, str | None, float, tuple[str, str | None] | None]] = {
    "jvm_gc_collection_seconds_count": ("java.lang:type=GarbageCollector", "CollectionCount", None, 1.0, ("gc", None)),
    "jvm_gc_collection_seconds_sum": ("java.lang:type=GarbageCollector", "CollectionTime", None, 1e3, ("gc", None)),
    "jvm_memory_used_bytes": ("java.lang:type=Memory", "HeapMemoryUsage", "used", 1.0, ("area", "heap")),
    "jvm_memory_max_bytes": ("java.lang:type=Memory", "HeapMemoryUsage", "max", 1.0, ("area", "heap")),
    "jvm_memory_pool_collection_used_bytes": (
        "java.lang:type=MemoryPool",
        "CollectionUsage",
        "used",
        1.0,
        ("pool", None),
    ),
    "process_open_fds": ("java.lang:type=OperatingSystem", "OpenFileDescriptorCount", None, 1.0, None),
    "process_max_fds": ("java.lang:type=OperatingSystem", "MaxFileDescriptorCount", None, 1.0, None),
    "process_cpu_seconds_total": ("java.lang:type=OperatingSystem", "ProcessCpuTime", None, 1e9, None),
}


def jvm_readings(text: str) -> list[Reading]:
    """Pure: the javaagent's JVM series -> the java.lang readings they stand for. ``jvm_gc_collection_seconds_sum
    {gc="G1 Young Generation"} 0.18`` -> ``Reading("java.lang:type=GarbageCollector,name=G1 Young Generation",
    "CollectionTime", 180.0)``: GC, heap and heap after GC, file descriptors and CPU, which Strimzi's rules drop
    (no java.lang) and the rule-less exporter serves only in part (no GarbageCollector, no CollectionUsage)."""
    return _jvm(_samples(text))


def _jvm(samples: _Samples) -> list[Reading]:
    out = []
    for name, labels, value in samples:
        hit = _JVM.get(name)
        if hit is None:
            continue
        mbean, attr, key, factor, label = hit
        if label is not None:
            lname, want = label
            got = labels.get(lname)
            if got is None or (want is not None and got != want):
                continue
            if want is None:
                mbean += f",name={got}"
        out.append(Reading(mbean, attr, value * factor, key))
    return out


def _identity(rd: Reading) -> tuple[str, frozenset[tuple[str, str]], str, str | None]:
    domain, props = catalog.parse_object_name(rd.mbean)
    return domain, frozenset(props), rd.attribute, rd.key


@lru_cache(maxsize=8192)
def _wanted(dialect: str, name: str) -> bool:
    """Whether a sample name of ``dialect`` gives a reading: the dialect's own, or the JVM's."""
    return name in _JVM or _own(dialect, name)


def readings(text: str, dialect: str) -> list[Reading]:
    """The dialect's readings, then the JVM series' (``jvm_readings``) for the java.lang attributes the dialect did
    not give itself: the same attribute twice would be summed twice."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown jmx_exporter dialect {dialect!r}")
    return _readings(_samples(text, partial(_wanted, dialect)), dialect)


def _readings(samples: _Samples, dialect: str) -> list[Reading]:
    own = {"vanilla": _vanilla, "strimzi": _strimzi, "strimzi_reporter": _reporter}[dialect](samples)
    have = {_identity(r) for r in own if r.mbean.startswith("java.lang:")}  # what _jvm yields: java.lang only
    return own + [r for r in _jvm(samples) if _identity(r) not in have]


@lru_cache(maxsize=len(DIALECTS))
def wanted_names(dialect: str) -> str:
    """A regex (RE2, anchored as Prometheus anchors it) of the sample names ``_wanted`` keeps of ``dialect``, and
    ``up``: what a ``/federate`` read asks for, instead of every series of the target (a rule-less exporter serves
    about ten per partition, of which the catalog reads two). A superset by construction: a rule-less exporter's by
    its type prefixes (``kafka_server_ReplicaManager_.*``), the rules' and the reporter's exact names grouped by their
    first three words (1.1 to 4.5 KB: a GET's query stays well inside a proxy's 8 KB line)."""
    idx = _index()
    names: set[str] = {"up", *_JVM}
    if dialect == "vanilla":
        prefixes = [re.escape(p) + ".*" for p in sorted(idx.types)]
    else:
        prefixes = []
        if dialect == "strimzi":
            names |= set(idx.strimzi) | set(_STRIMZI_STRINGS)
        else:
            names |= set(idx.yammer) | {n + "_total" for n in idx.yammer}
            names |= set(idx.kafka_metrics) | {n + "_info" for n in idx.kafka_metrics}
    groups: dict[str, list[str]] = {}
    for name in sorted(names):
        head, _, rest = name.partition("_")
        second, _, rest = rest.partition("_")
        third, _, rest = rest.partition("_")
        stem = "_".join(t for t in (head, second, third) if t)
        groups.setdefault(stem, []).append(rest)
    parts = []
    for stem, rests in groups.items():
        tails = [re.escape(r) for r in rests if r]
        if not tails:
            parts.append(re.escape(stem))
        else:
            body = f"{re.escape(stem)}_({'|'.join(tails)})"
            parts.append(f"{re.escape(stem)}|{body}" if "" in rests else body)
    return "|".join(prefixes + parts)


def narrowed(selector: str, dialect: str) -> str:
    """``selector`` with the names the dialect reads added (``wanted_names``), unless it names its own: a metric
    name before the braces, or a ``__name__`` matcher."""
    if not selector.startswith("{") or "__name__" in selector:
        return selector
    inner = selector[1:-1].strip()
    return '{__name__=~"' + wanted_names(dialect) + '"' + ("," + inner if inner else "") + "}"


# The labels a Prometheus gives every series of a scrape target, whatever its relabelling adds besides
TARGET_LABELS = ("instance", "job")
# A target's ``up`` in a /federate answer: its value and the time of that scrape (milliseconds)
_UP = re.compile(r"^up(?:\{[^\n]*\})? (\S+)(?: (\d+))?$", re.M)


@dataclass(frozen=True)
class Federated:
    """One node's exporter as a Prometheus that scrapes it serves it (``/federate``): its readings, and when the
    Prometheus scraped them (seconds since the epoch; None if its answer gave no ``up`` time)."""

    readings: list[Reading]
    scraped_at: float | None


def federated_readings(
    text: str, dialect: str, *, drop: Sequence[str] = (), where: str = "the Prometheus", match: str = ""
) -> Federated:
    """Pure: a Prometheus' ``/federate`` answer for one scrape target -> the readings of ``readings`` on the
    exporter's own scrape. The labels the Prometheus adds (those of the target's ``up`` series, which are the target's
    labels after relabelling, ``TARGET_LABELS`` and ``drop``: for a selector that leaves ``up`` out) are removed
    first: in the exporter's dialects every label is an ObjectName key, and an ``instance`` key matches no MBean.

    A target that is down is an error, not an empty answer: Prometheus ends a failed target's series (stale markers),
    so its ``/federate`` answers HTTP 200 with ``up 0`` and nothing else, which read as a scrape would be a healthy
    broker with no series. ``up`` 0 or no series at all: ``TargetUnreachable``; ``up`` of more than one target (a
    selector naming several brokers, whose series would be summed as one's): ``TransportError``."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown jmx_exporter dialect {dialect!r}")
    scraped_at = _one_target_up(text, where, match, "exporter")
    samples = _samples(text, lambda n: n == "up" or _wanted(dialect, n))
    # ``up`` carries exactly the target's labels, its relabelling's included
    gone = frozenset(TARGET_LABELS) | frozenset(drop) | {k for n, labels, _ in samples if n == "up" for k in labels}
    own = [(n, {k: v for k, v in labels.items() if k not in gone}, v) for n, labels, v in samples if n != "up"]
    if not own:
        raise TargetUnreachable(f"{where} holds no series of the exporter's dialect for {match}")
    return Federated(_readings(own, dialect), scraped_at)


def _one_target_up(text: str, where: str, match: str, what: str) -> float | None:
    """The time (s) of the one scrape a /federate answer is of, None if it has no ``up``; raises where the selector
    names more than one target (``TransportError``: its series would be summed as one node's), where the Prometheus
    reports the target down (``up 0``: its series ended with it), and where nothing at all answered
    (``TargetUnreachable``)."""
    ups = _UP.findall(text)
    if len(ups) > 1:
        raise TransportError(f"{where}: the selector {match} names {len(ups)} scrape targets; it must name one")
    if ups and float(ups[0][0]) == 0:
        raise TargetUnreachable(f"{where} reports the {what} down (up 0) for {match}")
    if not ups and not re.search(r"^[a-zA-Z_:]", text, re.M):
        raise TargetUnreachable(f"{where} holds no series of {match}: no target it scrapes has that selector's labels")
    return int(ups[0][1]) / 1e3 if ups and ups[0][1] else None


def weak_signals(dialect: str) -> list[tuple[str, str, str]]:
    """(catalog series, what the dialect gives instead, the exporter rule that fixes it) for ``dialect``."""
    return [(series, basis, fix) for (d, series), (basis, fix) in WEAK_SIGNALS.items() if d == dialect]


# The series a weak signal is derived from: present when the exporter has the fix rule.
_WEAK_SOURCE = {"kafka_broker_request_handler_idle_ratio": "kafka_broker_request_handler_idle_seconds_total"}


def dialect_gaps(dialect: str) -> frozenset[str]:
    """Catalog broker series a dialect cannot give: not exported, or only in a weaker form (with the series that
    weak form stands in for)."""
    weak = {series for series, _, _ in weak_signals(dialect)}
    return NOT_EXPORTED[dialect] | weak | {_WEAK_SOURCE[s] for s in weak if s in _WEAK_SOURCE}


def controller_gaps(dialect: str) -> frozenset[str]:
    """The KRaft controller's own catalog series a dialect cannot give (``CONTROLLER_NOT_EXPORTED``)."""
    return CONTROLLER_NOT_EXPORTED[dialect]


def weak_signal_samples(
    dialect: str, base: tuple[tuple[str, str], ...], samples: Sequence[Sample] = ()
) -> list[Sample]:
    """``kafka_source_weak_signal{signal, basis} 1`` per catalog series this dialect gives only in a weaker form
    (unless ``samples``, the scrape's, hold its source: the exporter has the fix rule): the companion series that
    says why that series is absent (and what to add to the exporter's rules)."""
    have = {s.name for s in samples}
    return [
        Sample(
            "kafka_source_weak_signal",
            "gauge",
            "A catalog series this source cannot give at full strength (1): basis says what it gives instead",
            base + (("signal", series), ("basis", basis), ("dialect", dialect)),
            1.0,
        )
        for series, basis, _ in weak_signals(dialect)
        if _WEAK_SOURCE.get(series) not in have
    ]


def _get(
    url: str,
    timeout: float,
    client: httpx.Client | None,
    *,
    what: str = "exporter",
    params: dict | None = None,
    auth: tuple[str, str] | None = None,
    bearer: Callable[[], str | None] | None = None,
) -> str:
    shown = f"{what} {redact_url(url)}"
    headers = {}
    if bearer is not None:
        try:
            headers["Authorization"] = f"Bearer {bearer()}"
        except ValueError as exc:  # a token file gone or unreadable (the message names the file, never the token)
            raise TargetAuthFailed(f"{shown}: its bearer token: {exc}") from None
    try:
        resp = (client or shared_client()).get(
            url, params=params, auth=auth, headers=headers, timeout=httpx.Timeout(timeout)
        )
    except httpx.TimeoutException:
        raise TargetTimeout(f"{shown} did not answer within {timeout:g}s") from None
    except httpx.TransportError as exc:
        raise TargetUnreachable(f"{shown} unreachable: {type(exc).__name__}") from None
    if resp.status_code == 401:
        if what != "Prometheus":  # no credentials here: an exporter behind a login is read through its Prometheus
            how = "an exporter is read without credentials; read it through the Prometheus that scrapes it (federate)"
        else:
            how = (
                "check its username and password"
                if auth
                else "check its bearer token"
                if bearer
                else "it asks for credentials: give username and password, or bearer_token"
            )
        raise TargetAuthFailed(f"{shown} refused the login (HTTP 401): {how}")
    if resp.status_code == 403:
        raise TargetForbidden(f"{shown} answered HTTP 403: this login may not read it")
    if resp.status_code != 200:
        raise TransportError(f"{shown} answered HTTP {resp.status_code}")
    return resp.text


class ExpositionTransport:
    """Reads a jmx_exporter's ``/metrics`` (``Endpoint.exporter``, in ``Endpoint.dialect``) as readings. ``queries``
    are ignored: the exporter serves what its rules export, one GET per scrape."""

    name = "jmx_exporter"

    def __init__(self, *, client: httpx.Client | None = None):
        self._client = client

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery], *, timeout: float) -> list[Reading]:
        if not endpoint.exporter:
            raise TransportError("no jmx_exporter URL configured for this target")
        if endpoint.via:
            return self.read_federated(endpoint, timeout=timeout).readings
        return readings(_get(endpoint.exporter, timeout, self._client), endpoint.dialect or "vanilla")

    def read_federated(self, endpoint: Endpoint, *, timeout: float) -> Federated:
        """The exporter's series from the Prometheus at ``endpoint.exporter`` that scrapes it: one GET of its
        ``/federate`` with ``match[]`` the node's selector (``federated_readings``)."""
        source, dialect = endpoint.via, endpoint.dialect or "vanilla"
        if source is None or source.federate is None:
            raise TransportError("no Prometheus URL and selector configured for this target")
        text = _federate(source, narrowed(source.federate, dialect), timeout, self._client)
        where = f"Prometheus {redact_url(source.url)}"
        return federated_readings(text, dialect, drop=source.target_labels, where=where, match=source.federate)


def _federate(source: ScrapedSource, selector: str, timeout: float, client: httpx.Client | None) -> str:
    """The answer of the Prometheus ``source`` names (its base URL and login, each secret read now) to
    ``/federate?match[]=selector``."""
    url = source.url.rstrip("/") + "/federate"
    try:
        auth = source.basic_auth()
    except ValueError as exc:  # a password file gone (the message names the file, never the secret)
        raise TargetAuthFailed(f"Prometheus {redact_url(url)}: its password: {exc}") from None
    bearer = source.bearer if source.bearer_token else None
    return _get(url, timeout, client, what="Prometheus", params={"match[]": selector}, auth=auth, bearer=bearer)


# ---------------------------------------------------------------------------------------------------------------
# node_exporter -> kafka_host_*

_NODE_COUNTERS = {
    "node_disk_read_bytes_total": ("kafka_host_disk_read_bytes_total", "Bytes read from the device"),
    "node_disk_written_bytes_total": ("kafka_host_disk_written_bytes_total", "Bytes written to the device"),
    "node_disk_io_time_seconds_total": ("kafka_host_disk_io_time_seconds_total", "Time the device was busy"),
    "node_network_receive_bytes_total": ("kafka_host_network_receive_bytes_total", "Bytes received by the interface"),
    "node_network_transmit_bytes_total": ("kafka_host_network_transmit_bytes_total", "Bytes sent by the interface"),
}
_NODE_MEMORY = {
    "node_memory_MemTotal_bytes": ("kafka_host_memory_total_bytes", "Physical memory"),
    "node_memory_MemAvailable_bytes": ("kafka_host_memory_available_bytes", "Memory available without swapping"),
}
_NODE_FS = {
    "node_filesystem_size_bytes": ("kafka_host_filesystem_size_bytes", "Size of the filesystem holding the log dir"),
    "node_filesystem_free_bytes": (
        "kafka_host_filesystem_free_bytes",
        "Free bytes of the filesystem holding the log dir",
    ),
    "node_filesystem_avail_bytes": (
        "kafka_host_filesystem_avail_bytes",
        "Bytes available to the broker (free minus reserved)",
    ),
}


def _mount_of(path: str, mounts: Iterable[str]) -> str | None:
    """The longest mountpoint holding ``path`` (node_exporter lists mountpoints, Kafka log dirs)."""
    best = None
    for m in mounts:
        if path == m or path.startswith(m.rstrip("/") + "/"):
            if best is None or len(m) > len(best):
                best = m
    return best


def same_volume(node_size: float, kafka_total: float) -> bool:
    """Whether node_exporter's ``node_filesystem_size_bytes`` of a mount and DescribeLogDirs' ``TotalBytes`` of a log
    dir describe one volume: both are statvfs' block count times the block size (node_exporter ``f_bsize``, Kafka
    ``f_frsize``, equal on Linux's filesystems), so equal up to rounding; 0.1 % allows for a block-size quirk, and
    a different disk of the very same size is the one confusion left (docs/configuration.md says so)."""
    return kafka_total > 0 and abs(node_size - kafka_total) <= 0.001 * kafka_total


def node_exporter_samples(
    text: str,
    base: tuple[tuple[str, str], ...],
    log_dirs: Sequence[tuple[str, str]],
    sizes: Mapping[tuple[str, str], float] | None = None,
) -> list[Sample]:
    """Pure: a node_exporter scrape -> the host collector's series (collectors/host.py) with its labels: CPU seconds
    per mode summed over cores, memory, disk and network counters per device, and for each (broker, log dir) the
    size/free/avail of the filesystem mounted on its longest matching mountpoint (``device`` the block device).

    A (broker, log dir) in ``sizes`` (a discovered broker's, from DescribeLogDirs, not listed by hand) is mapped only
    where that mount's size is the size the broker reports for the dir's volume (``same_volume``): a log dir whose
    path this machine's mounts do not hold (a container's PVC seen from the node: only ``/`` matches) is left out,
    never given another filesystem's figures."""
    cpu: dict[str, float] = {}
    fs: dict[str, dict[str, tuple[float, str]]] = {}
    out: list[Sample] = []
    for name, labels, value in _samples(text):
        if name == "node_cpu_seconds_total":
            cpu[labels.get("mode", "")] = cpu.get(labels.get("mode", ""), 0.0) + value
        elif name in _NODE_MEMORY:
            metric, help_ = _NODE_MEMORY[name]
            out.append(Sample(metric, "gauge", help_, base, value))
        elif name in _NODE_COUNTERS and not labels.get("device", "").startswith(("loop", "ram")):
            metric, help_ = _NODE_COUNTERS[name]
            out.append(Sample(metric, "counter", help_, base + (("device", labels.get("device", "")),), value))
        elif name in _NODE_FS:
            fs.setdefault(labels.get("mountpoint", ""), {})[name] = (value, labels.get("device", ""))
    out += [
        Sample("kafka_host_cpu_seconds_total", "counter", "CPU time of all cores by mode", base + (("mode", m),), v)
        for m, v in sorted(cpu.items())
    ]
    for broker, path in log_dirs:
        mount = _mount_of(path, fs)
        if mount is None:
            continue
        expected = (sizes or {}).get((broker, path))
        if expected is not None and not same_volume(
            fs[mount].get("node_filesystem_size_bytes", (0.0, ""))[0], expected
        ):
            continue
        for name, (value, device) in sorted(fs[mount].items()):
            metric, help_ = _NODE_FS[name]
            out.append(
                Sample(metric, "gauge", help_, base + (("broker", broker), ("path", path), ("device", device)), value)
            )
    return out


def scrape_node_exporter(source: NodeExporterSource, *, timeout: float, client: httpx.Client | None = None) -> str:
    """A node_exporter's scrape: from its ``/metrics``, or as the Prometheus that scrapes it serves it (its labels
    stay: the host series read only ``mode``, ``device`` and ``mountpoint``), judged as a jmx_exporter's is
    (``_one_target_up``)."""
    if source.federate is None:
        return _get(source.url, timeout, client)
    text = _federate(source, source.federate, timeout, client)
    where = f"Prometheus {redact_url(source.url)}"
    _one_target_up(text, where, source.federate, "node_exporter")
    if not re.search(r"^node_", text, re.M):
        raise TargetUnreachable(f"{where} holds no node_exporter series for {source.federate}")
    return text
