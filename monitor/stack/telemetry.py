"""KIP-714 client telemetry: the broker plugin's jar (built once from deploy/kafka/telemetry/, cached) and the
``CLIENT_METRICS`` subscription that makes clients push what it keeps.

The plugin (a ``metric.reporters`` class: ``io.kafkahealth.telemetry.ClientTelemetryExporter`` for Kafka's
``ClientTelemetry`` up to 4.1, its subclass ``ProviderClientTelemetryExporter`` for ``ClientTelemetryExporterProvider``
from 4.2, both in one jar; ``KafkaRelease.telemetry_plugin_class`` says which) turns each push into one MBean per
client instance, which the JMX collector reads like any other broker MBean (collectors/catalog.py,
``kafka_client_telemetry_*``). Clients push only once a subscription names metrics of theirs: ``subscription_args``
is what ``kafka-configs --entity-type client-metrics`` needs for it, applied by ``stack up`` on the local stack and by
``kafka-health telemetry subscribe`` on users' clusters (confluent-kafka's Admin API has no CLIENT_METRICS resource,
so it goes through Kafka's own ConfigCommand, as the quotas do).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from monitor.core.errors import DependencyMissing, Invalid, StackError
from monitor.core.kafka_versions import KafkaRelease
from monitor.stack.layout import cache_dir
from monitor.stack.packaged import deploy_path

PLUGIN_DIR = deploy_path("kafka/telemetry")  # the plugin's pom and Java sources, as package data
JMX_REPORTER = "org.apache.kafka.common.metrics.JmxReporter"
JAR = "kafka-health-telemetry.jar"
# The broker settings of the plugin; docs/operations.md lists them for users' brokers.
MAX_CLIENTS_KEY, EXPIRY_KEY = "kafka.health.telemetry.max.clients", "kafka.health.telemetry.expiry.ms"

P = "org.apache.kafka."
# Every source metric of the plugin's signals (Signals.java SOURCES; a unit test keeps the two equal). Exact names:
# as subscription prefixes they match only themselves, so a Java client pushes these few, not its hundreds.
SUBSCRIBED_METRICS = tuple(
    P + m
    for m in (
        "producer.batch.size.avg",
        "producer.records.per.request.avg",
        "producer.record.queue.time.avg",
        "producer.request.rate",
        "consumer.request.rate",
        "producer.request.latency.avg",
        "consumer.request.latency.avg",
        "producer.node.request.latency.avg",
        "consumer.node.request.latency.avg",
        "producer.produce.throttle.time.avg",
        "consumer.fetch.manager.fetch.throttle.time.avg",
        "consumer.poll.idle.ratio.avg",
        "consumer.fetch.manager.fetch.latency.avg",
        "consumer.coordinator.commit.latency.avg",
    )
)
SUBSCRIPTION_NAME = "kafka-health"
DEFAULT_INTERVAL_MS = 60_000  # users' clusters: one push a minute per client
STACK_INTERVAL_MS = 10_000  # the local stack: the demo's and the tests' clients show up within seconds


def plugin_sources_digest() -> str:
    """A digest of the pom and every Java source: the cache key, so an edited plugin is rebuilt, never stale."""
    h = hashlib.sha256()
    for path in sorted(p for p in PLUGIN_DIR.rglob("*") if p.is_file() and p.suffix in (".xml", ".java")):
        h.update(str(path.relative_to(PLUGIN_DIR)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def plugin_jar() -> Path:
    """Where the built plugin of these sources lives (it may not be built yet: ``ensure_plugin``)."""
    return cache_dir() / "telemetry" / plugin_sources_digest() / JAR


def ensure_plugin(log: Path) -> Path:
    """Build the plugin jar with Maven once per source version (``mvn package``, tests skipped: they run in the test
    suite); later calls find it in the cache and start nothing."""
    jar = plugin_jar()
    if jar.exists():
        return jar
    mvn = shutil.which("mvn")
    if not mvn:
        raise DependencyMissing("mvn not found on PATH: install Maven (apt-get install maven)")
    out = jar.parent
    out.mkdir(parents=True, exist_ok=True)
    cmd = [mvn, "-B", "-q", "-f", str(PLUGIN_DIR / "pom.xml"), "-DskipTests", f"-Dtelemetry.out={out}", "package"]
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as f:
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if rc != 0 or not jar.exists():
        raise StackError(f"maven could not build the client telemetry plugin from {PLUGIN_DIR} (exit {rc}); see {log}")
    shutil.rmtree(out / "build", ignore_errors=True)  # classes and test output: only the jar is needed
    return jar


def broker_properties(release: KafkaRelease, *, max_clients: int = 2000, expiry_ms: int = 60_000) -> dict[str, object]:
    """The server.properties lines that load the plugin on a broker of ``release``: the class of the KIP-714 interface
    that release offers (the jar holds both; the provider's class does not load before 4.2). JmxReporter stays listed
    first: since Kafka 4.0 (auto.include.jmx.reporter removed) a broker whose metric.reporters omits it registers no
    Kafka-metrics MBean at all, so the client quota sensors and the connections by client software (KIP-511) would
    vanish from JMX."""
    return {
        "metric.reporters": f"{JMX_REPORTER},{release.telemetry_plugin_class}",
        MAX_CLIENTS_KEY: max_clients,
        EXPIRY_KEY: expiry_ms,
    }


@dataclass(frozen=True)
class Subscription:
    """One ``CLIENT_METRICS`` resource: which metrics (prefixes) clients push, how often, optionally only clients
    matching ``match`` (KIP-714 selectors such as ``client_software_name=apache-kafka-java``; regexes)."""

    name: str = SUBSCRIPTION_NAME
    metrics: tuple[str, ...] = SUBSCRIBED_METRICS
    interval_ms: int = DEFAULT_INTERVAL_MS
    match: tuple[str, ...] = ()

    def __post_init__(self):
        if not 100 <= self.interval_ms <= 3_600_000:  # the broker's own bounds for interval.ms
            raise Invalid(f"telemetry interval {self.interval_ms} ms: must be between 100 ms and 1 h")
        for value in (self.name, *self.metrics, *self.match):
            # ConfigCommand splits --add-config on ',' and '=' outside brackets: none may appear inside a value.
            if not value or any(c in value for c in ",[]\n") or len(value) > 256:
                raise Invalid(f"telemetry subscription value {value!r}: non-empty, no ',' '[' ']', at most 256")
        for m in self.match:
            if "=" not in m:
                raise Invalid(f"telemetry match {m!r}: want SELECTOR=REGEX (e.g. client_software_name=librdkafka)")

    @property
    def add_config(self) -> str:
        parts = [f"metrics=[{','.join(self.metrics)}]", f"interval.ms={self.interval_ms}"]
        if self.match:
            parts.append(f"match=[{','.join(self.match)}]")
        return ",".join(parts)

    def config_command_args(self) -> list[str]:
        """``kafka-configs --alter`` arguments (after ``--alter``) that create or replace this subscription."""
        return ["--entity-type", "client-metrics", "--entity-name", self.name, "--add-config", self.add_config]

    def delete_args(self) -> list[str]:
        """Arguments that empty the subscription: without metrics no client pushes for it."""
        return ["--entity-type", "client-metrics", "--entity-name", self.name, "--delete-config", "metrics,interval.ms"]
