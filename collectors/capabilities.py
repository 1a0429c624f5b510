"""Every signal accounted for: which catalog signals each configured source of a cluster gives, and which none does.

    ClusterConfig ──(configured_sources)──> sources ──(capability_table)──> one Capability per catalog signal:
                                                                             the sources giving it, or the hint
                                                                             that would ("enable X")

Pure, from the config alone: it says what the configuration *can* observe, not what answered this round (that is
``kafka_health_scrape_success`` and ``KafkaHealthRuleNoData``). Read by ``kafka-health sources``, ``check-config``,
the cluster health answer, the ``kafka_health_signal_observable`` series, and the alert engine, which reports a rule
whose input no source can give as "not observable on this cluster: enable X" instead of a no-data alert.

A source is listed in ``SOURCES`` with the signals it gives and how to enable it, and turned on by one clause of
``configured_sources``. A jmx_exporter gives the broker JMX signals less its dialect's gaps
(``collectors.transports.exposition.dialect_gaps``: what the recorded scrapes of the real agent lack); a controller's
jmx_exporter the KRaft controller signals less ``controller_gaps``, as ``controller_jmx`` gives them. node_exporter
gives the host signals but the per-peer socket backlogs; its filesystem series cover listed ``log_dirs`` only, so a
discovered broker's disk space is DescribeLogDirs' (``protocol_disk``). DescribeLogDirs also gives each replica's log
size, read where no JMX source does (collectors.protocol), so disk-full risk is attributed to tenants without agents.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from prometheus_client.core import GaugeMetricFamily, Metric

from collectors import catalog
from collectors.discovery import controller_template
from collectors.protocol import protocol_disk_brokers
from collectors.transports.exposition import DIALECTS, controller_gaps, dialect_gaps
from monitor.core.config import ClusterConfig, ExporterSource

HOST_SIGNALS = frozenset(
    {
        "kafka_host_cpu_seconds_total",
        "kafka_host_memory_total_bytes",
        "kafka_host_memory_available_bytes",
        "kafka_host_disk_read_bytes_total",
        "kafka_host_disk_written_bytes_total",
        "kafka_host_disk_io_time_seconds_total",
        "kafka_host_network_receive_bytes_total",
        "kafka_host_network_transmit_bytes_total",
        "kafka_host_tcp_send_queue_bytes",
        "kafka_host_filesystem_size_bytes",
        "kafka_host_filesystem_free_bytes",
        "kafka_host_filesystem_avail_bytes",
    }
)
DISK_SIGNALS = frozenset({"kafka_host_filesystem_size_bytes", "kafka_host_filesystem_avail_bytes"})
# DescribeLogDirs' replica sizes (topics null), asked of the brokers no JMX source reads
PROTOCOL_SIZE_SIGNALS = frozenset({"kafka_topic_log_size_bytes"})
ADMIN_SIGNALS = frozenset(
    {
        "kafka_cluster_brokers",
        "kafka_cluster_controller_id",
        "kafka_cluster_broker_up",
        "kafka_broker_request_handler_threads",
        "kafka_cluster_tenant_led_partitions",
        "kafka_topic_partitions",
        "kafka_topic_replicas",
        "kafka_topic_offline_partitions",
        "kafka_topic_under_replicated_partitions",
        "kafka_topic_under_min_isr_partitions",
        "kafka_consumergroup_committed_offset",
        "kafka_consumergroup_lag",
        "kafka_consumergroup_lag_seconds",
        "kafka_consumergroup_member_info",
        "kafka_consumergroup_member_lag",
        "kafka_consumergroup_member_partitions",
        "kafka_consumergroup_members",
        "kafka_consumergroup_partition_lag_max",
        "kafka_consumergroup_partitions",
        "kafka_consumergroup_state",
    }
)
PROBE_SIGNALS = frozenset(
    {"kafka_probe_messages_total", "kafka_probe_produce_latency_seconds", "kafka_probe_roundtrip_latency_seconds"}
)


@lru_cache(maxsize=1)
def _jmx_signals() -> tuple[frozenset[str], frozenset[str]]:
    """(broker JMX signals, KRaft controller JMX signals), from the catalog's own tables."""
    controller = frozenset(r.metric for r in catalog.CONTROLLER_RULES)
    broker = frozenset(r.metric for r in catalog.BROKER_RULES) | frozenset(g for _, g, _ in catalog.RATIOS)
    # The controller's own metrics (active controllers, broker registrations) exist on KRaft controllers only.
    return broker, controller - broker


@dataclass(frozen=True)
class SourceKind:
    name: str
    what: str  # what it is, in the user's words
    enable: str  # the config that turns it on


SOURCES = (
    SourceKind("admin", "Kafka Admin API (confluent-kafka) through bootstrap_servers", "bootstrap_servers (always on)"),
    SourceKind("probe", "end-to-end probe: produce and consume on every broker", "probe.enabled: true"),
    SourceKind(
        "protocol_disk",
        "DescribeLogDirs v4: each log dir's total and usable bytes, and its replicas' sizes where no JMX source reads",
        "log_dirs_from_protocol: true (Kafka 3.3+)",
    ),
    SourceKind(
        "broker_jmx",
        "broker JMX (Jolokia or remote JMX)",
        "discovery.jolokia (or discovery.jmx), or brokers[].jolokia / brokers[].jmx",
    ),
    SourceKind(
        "controller_jmx", "KRaft controller JMX", "discovery.controller_jolokia, or controller_jolokia / controller_jmx"
    ),
    SourceKind(
        "jmx_exporter_vanilla",
        "broker JMX through jmx_exporter's default format (MSK open monitoring, port 11001)",
        "discovery.jmx_exporter (or brokers[].jmx_exporter) with dialect vanilla",
    ),
    SourceKind(
        "jmx_exporter_strimzi",
        "broker JMX through jmx_exporter with Strimzi's kafka-metrics.yaml rules",
        "discovery.jmx_exporter (or brokers[].jmx_exporter) with dialect strimzi",
    ),
    SourceKind(
        "jmx_exporter_strimzi_reporter",
        "broker metrics through Strimzi's metrics reporter (a metric.reporters plugin, no javaagent)",
        "discovery.jmx_exporter (or brokers[].jmx_exporter) with dialect strimzi_reporter",
    ),
    SourceKind(
        "controller_exporter_vanilla",
        "KRaft controller JMX through jmx_exporter's default format",
        "discovery.controller_jmx_exporter (or controller_jmx_exporter) with dialect vanilla",
    ),
    SourceKind(
        "controller_exporter_strimzi",
        "KRaft controller JMX through jmx_exporter with Strimzi's kafka-metrics.yaml rules",
        "discovery.controller_jmx_exporter (or controller_jmx_exporter) with dialect strimzi",
    ),
    SourceKind(
        "controller_exporter_strimzi_reporter",
        "KRaft controller metrics through Strimzi's metrics reporter",
        "discovery.controller_jmx_exporter (or controller_jmx_exporter) with dialect strimzi_reporter",
    ),
    SourceKind(
        "host",
        "host collector on the broker's machine (/proc, statvfs)",
        "brokers[].log_dirs with host: localhost, one collector per broker host",
    ),
    SourceKind(
        "node_exporter",
        "node_exporter on the broker's machine (MSK open monitoring, port 11002)",
        "discovery.node_exporter (or brokers[].node_exporter)",
    ),
)
_BY_NAME = {s.name: s for s in SOURCES}


def source_signals(name: str) -> frozenset[str]:
    broker, controller = _jmx_signals()
    return {
        "admin": ADMIN_SIGNALS,
        "probe": PROBE_SIGNALS,
        "protocol_disk": DISK_SIGNALS | PROTOCOL_SIZE_SIGNALS,
        "broker_jmx": broker,
        "controller_jmx": controller,
        "host": HOST_SIGNALS,
        "node_exporter": HOST_SIGNALS - {"kafka_host_tcp_send_queue_bytes"},
        **{f"jmx_exporter_{d}": broker - dialect_gaps(d) for d in DIALECTS},
        **{f"controller_exporter_{d}": controller - controller_gaps(d) for d in DIALECTS},
    }[name]


def all_signals() -> frozenset[str]:
    out: frozenset[str] = frozenset()
    for s in SOURCES:
        out |= source_signals(s.name)
    return out


def configured_sources(cluster: ClusterConfig) -> tuple[str, ...]:
    """The sources the cluster's config turns on, in ``SOURCES`` order."""
    d = cluster.discovery
    on = {"admin"}
    if cluster.probe.enabled:
        on.add("probe")
    if any(b.jmx or b.jolokia for b in cluster.brokers) or (cluster.discovers and (d.jolokia or d.jmx)):
        on.add("broker_jmx")
    # A broker with both reads JMX/Jolokia (collectors.jmx); its exporter counts only where it is the one source.
    exporters = [b.jmx_exporter for b in cluster.brokers if b.jmx_exporter and not (b.jmx or b.jolokia)]
    if cluster.discovers and d.jmx_exporter and not (d.jolokia or d.jmx):
        exporters.append(d.jmx_exporter)
    on.update(f"jmx_exporter_{e.dialect}" for e in exporters)
    if any(b.node_exporter for b in cluster.brokers) or (cluster.discovers and d.node_exporter):
        on.add("node_exporter")
    # Discovered controllers are read one way (collectors.discovery.controller_template); listed ones each their own.
    found = controller_template(cluster)
    if cluster.controller_jmx or cluster.controller_jolokia or (found and found[0] != "jmx_exporter"):
        on.add("controller_jmx")
    controller_exporters = list(cluster.controller_jmx_exporter)
    if found and isinstance(found[1], ExporterSource):
        controller_exporters.append(found[1])
    on.update(f"controller_exporter_{e.dialect}" for e in controller_exporters)
    if any(b.log_dirs and not b.node_exporter for b in cluster.brokers):
        on.add("host")
    # Disk from the protocol for any broker the host collector does not cover (a discovered one, or one listed
    # without log dirs); the broker ids are not known here, so "some broker" is asked with an id no listing covers.
    if cluster.log_dirs_from_protocol and (
        cluster.discovers or protocol_disk_brokers(cluster, [b.id for b in cluster.brokers])
    ):
        on.add("protocol_disk")
    return tuple(s.name for s in SOURCES if s.name in on)


@dataclass(frozen=True)
class Capability:
    """One catalog signal on one cluster: the configured sources giving it (empty: not observable) and, when none
    does, the sources that could and how to enable them."""

    signal: str
    sources: tuple[str, ...]
    could: tuple[str, ...]

    @property
    def observable(self) -> bool:
        return bool(self.sources)

    def hint(self) -> str:
        """``enable X`` for a signal no configured source gives."""
        return "; or ".join(f"enable {_BY_NAME[s].enable}" for s in self.could)


def capability_table(cluster: ClusterConfig, signals: Iterable[str] | None = None) -> tuple[Capability, ...]:
    on = configured_sources(cluster)
    out = []
    for signal in sorted(all_signals() if signals is None else set(signals)):
        giving = tuple(s for s in on if signal in source_signals(s))
        could = tuple(s.name for s in SOURCES if signal in source_signals(s.name) and s.name not in on)
        out.append(Capability(signal, giving, could))
    return tuple(out)


def unobservable(cluster: ClusterConfig, signals: Iterable[str]) -> dict[str, str]:
    """Of ``signals`` (e.g. alert rule inputs), those no configured source of the cluster gives and which the
    catalog knows a source for, with the hint that enables one. A signal of no known source is not judged here."""
    return {c.signal: c.hint() for c in capability_table(cluster, set(signals) & all_signals()) if not c.observable}


def render(cluster: ClusterConfig, *, names: bool = True) -> str:
    """The table for a terminal: each source on or off with its signal count, then what is not observable, grouped
    by what would enable it (``names``: list the signals of each group)."""
    table = capability_table(cluster)
    on = configured_sources(cluster)
    lines = [f"cluster {cluster.name}: sources " + ", ".join(on)]
    width = max(len(s.name) for s in SOURCES)
    for s in SOURCES:
        state = "on " if s.name in on else "off"
        lines.append(f"  [{state}] {s.name:<{width}} {len(source_signals(s.name)):>3} signals  {s.what}")
    missing = [c for c in table if not c.observable]
    lines.append(f"  observable: {len(table) - len(missing)} of {len(table)} catalog signals")
    groups: dict[str, list[str]] = {}
    for c in missing:
        groups.setdefault(c.hint(), []).append(c.signal)
    for hint, signals in groups.items():
        lines.append(f"  not observable on this cluster ({len(signals)}): {hint}")
        if names:
            lines.append("    " + ", ".join(signals))
    return "\n".join(lines)


class CapabilityExporter:
    """``kafka_health_signal_observable{cluster, signal}``: 1 where a configured source gives the catalog signal, 0
    where none does; and ``kafka_health_source_configured{cluster, source}``. From the config: the same every scrape."""

    def __init__(self, clusters: Iterable[ClusterConfig]):
        self._clusters = tuple(clusters)

    def collect(self) -> Iterable[Metric]:
        sig = GaugeMetricFamily(
            "kafka_health_signal_observable",
            "1 if a configured source of the cluster gives the catalog signal, 0 if none does (kafka-health sources)",
            labels=["cluster", "signal"],
        )
        src = GaugeMetricFamily(
            "kafka_health_source_configured",
            "1 if the cluster's config turns the source on",
            labels=["cluster", "source"],
        )
        for c in self._clusters:
            on = configured_sources(c)
            for s in SOURCES:
                src.add_metric([c.name, s.name], 1.0 if s.name in on else 0.0)
            for cap in capability_table(c):
                sig.add_metric([c.name, cap.signal], 1.0 if cap.observable else 0.0)
        return [src, sig]
