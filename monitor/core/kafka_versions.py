"""What differs between the Apache Kafka releases kafka-health supports: one table, read by the local stack (jars,
tool classes, the telemetry plugin's entry point), the collectors' catalog-coverage test and docs/operations.md.

Each supported release line has one ``KafkaRelease``. Code asks the release for what it needs
(``release.config_command``, ``release.has("share_groups")``, ``release.lacks_mbean(metric)``) instead of comparing
version numbers, so the next release is one new row here, and whatever that row gets wrong is found by the
per-version tests (tests/integration/test_kafka_versions.py), not by a user.

What each field means, and the Kafka change behind each difference:

- ``maven_profiles``: how deploy/kafka/pom.xml resolves the jars. 3.9 logs through reload4j (``kafka3``); 4.x through
  log4j2 (``kafka4``), and on 4.4 the command-line tools live in the ``kafka-tools`` artifact (``tools``).
- ``config_command``: the class behind ``kafka-configs.sh``: ``kafka.admin.ConfigCommand`` in the core jar up to
  4.1, ``org.apache.kafka.tools.ConfigCommand`` in the ``kafka-tools`` jar on 4.4 (the tools' move to Java).
- ``telemetry_interface``: the KIP-714 broker-side interface kafka-health's plugin implements. ``ClientTelemetry``
  (a ``MetricsReporter`` returning a receiver) until 4.1; 4.2 added ``ClientTelemetryExporterProvider`` (its
  exporter is also told the push interval, KAFKA-19773) and deprecated the former. deploy/kafka/telemetry ships one
  class per interface in one jar (``telemetry_plugin_class``; the provider's class extends the other).
- ``features``: capabilities that decide what the collectors may ask for and what the stack tests prove:
  ``share_groups`` (KIP-932; early access in 4.0-4.1 behind ``share.version``, production-ready in 4.2),
  ``streams_groups`` (KIP-1071's broker-side rebalance protocol, default-enabled from 4.2), ``list_groups_types``
  (ListGroups with a type filter, KIP-848, 3.8+), ``cordoned_log_dirs`` (DescribeLogDirs v5, 4.4).
- ``absent_metrics``: catalog metrics (collectors/catalog.py) whose MBean this release does not register at all;
  the coverage test expects every other catalog MBean to be there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from monitor.core.errors import Invalid

FEATURES = frozenset({"share_groups", "streams_groups", "list_groups_types", "cordoned_log_dirs"})
# The class of kafka-health's telemetry plugin (deploy/kafka/telemetry) that implements each interface.
TELEMETRY_PLUGIN_CLASSES = {
    "ClientTelemetry": "io.kafkahealth.telemetry.ClientTelemetryExporter",
    "ClientTelemetryExporterProvider": "io.kafkahealth.telemetry.ProviderClientTelemetryExporter",
}


@dataclass(frozen=True)
class KafkaRelease:
    """One supported release line: its exact version (the jars resolved from Maven Central) and what differs."""

    version: str
    maven_profiles: tuple[str, ...]
    config_command: str
    telemetry_interface: str  # "ClientTelemetry" or "ClientTelemetryExporterProvider"
    features: frozenset[str] = field(default_factory=frozenset)
    absent_metrics: frozenset[str] = field(default_factory=frozenset)
    storage_tool: str = "kafka.tools.StorageTool"

    def __post_init__(self) -> None:
        unknown = self.features - FEATURES
        if unknown:
            raise ValueError(f"unknown Kafka features {sorted(unknown)}")
        if self.telemetry_interface not in TELEMETRY_PLUGIN_CLASSES:
            raise ValueError(f"unknown KIP-714 interface {self.telemetry_interface!r}")

    @property
    def line(self) -> str:
        """``4.4`` for ``4.4.0``: what users say and ``--kafka-version`` accepts."""
        return ".".join(self.version.split(".")[:2])

    @property
    def telemetry_plugin_class(self) -> str:
        """The plugin class the brokers of this release load (``metric.reporters``)."""
        return TELEMETRY_PLUGIN_CLASSES[self.telemetry_interface]

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    def has(self, feature: str) -> bool:
        if feature not in FEATURES:
            raise ValueError(f"unknown Kafka feature {feature!r}")
        return feature in self.features

    def lacks_mbean(self, metric: str) -> bool:
        """Whether catalog ``metric``'s MBean is one this release never registers."""
        return metric in self.absent_metrics


RELEASES: tuple[KafkaRelease, ...] = (
    KafkaRelease(
        version="3.9.1",
        maven_profiles=("kafka3",),
        config_command="kafka.admin.ConfigCommand",
        telemetry_interface="ClientTelemetry",
        features=frozenset({"list_groups_types"}),
        # The controller's per-broker view came with 4.0: on 3.9 a crash is told from a controlled restart by the
        # plain broker-down rule's timing only (docs/alerts.md, broker liveness).
        absent_metrics=frozenset(
            {
                "kafka_cluster_broker_registration_state",
                "kafka_cluster_broker_heartbeat_age_seconds",
                "kafka_cluster_controlled_shutdown_brokers",
                # 3.9's group coordinator registers no group-coordinator-metrics counts, and share groups came with 4.x
                "kafka_broker_coordinated_groups",
                "kafka_broker_coordinated_groups_by_state",
                "kafka_broker_coordinator_partitions",
                "kafka_broker_share_acknowledgements_total",
                "kafka_broker_share_sessions",
                "kafka_broker_share_lock_timeouts_total",
                "kafka_broker_share_inflight_records",
                "kafka_broker_share_dead_letter_records_total",
                "kafka_broker_cordoned_log_dirs",
            }
        ),
    ),
    KafkaRelease(
        version="4.1.1",
        maven_profiles=("kafka4",),
        config_command="kafka.admin.ConfigCommand",
        telemetry_interface="ClientTelemetry",
        features=frozenset({"list_groups_types"}),
        absent_metrics=frozenset({"kafka_broker_cordoned_log_dirs"}),  # cordoning came with 4.4 (KIP-1066)
    ),
    KafkaRelease(
        version="4.4.0",
        maven_profiles=("kafka4", "tools"),
        config_command="org.apache.kafka.tools.ConfigCommand",
        telemetry_interface="ClientTelemetryExporterProvider",
        features=frozenset({"list_groups_types", "share_groups", "streams_groups", "cordoned_log_dirs"}),
    ),
)
DEFAULT_RELEASE = RELEASES[-1]  # the current release: what `stack up` and the demo run


def _aliases() -> dict[str, KafkaRelease]:
    out: dict[str, KafkaRelease] = {}
    for r in RELEASES:  # later lines win the major alias: "4" is the newest 4.x
        out[r.version] = out[r.line] = out[str(r.major)] = r
    return out


ALIASES = _aliases()


def supported_versions() -> list[str]:
    return [r.version for r in RELEASES]


def release(version: str | None) -> KafkaRelease:
    """The release of ``version`` (``4.4``, ``4.4.0``, ``4``; None: the default). Raises ``Invalid`` naming the
    supported versions for anything else."""
    if version is None:
        return DEFAULT_RELEASE
    try:
        return ALIASES[version]
    except KeyError:
        raise Invalid(
            f"unsupported Kafka version {version!r}; choose one of {', '.join(supported_versions())}"
        ) from None
