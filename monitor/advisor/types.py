"""Shared types of the advisor: what the Prometheus shell reads (samples) and what the rules produce (findings).

Samples are plain numbers already reduced over the window (rates, changes, minima), so the rules in
``monitor.advisor.findings`` are pure functions of them, unit-tested with tables of cases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class FindingKind(str, Enum):
    POOR_BATCHING = "poor_batching"
    REQUEST_STORM = "request_storm"
    POLLING_TOO_OFTEN = "polling_too_often"
    FREQUENT_REBALANCES = "frequent_rebalances"
    OUTDATED_CLIENT = "outdated_client"
    THROTTLED_BY_QUOTA = "throttled_by_quota"
    CONNECTION_CHURN = "connection_churn"
    SLOW_CONSUMER_LOOP = "slow_consumer_loop"
    UNKNOWN_SOFTWARE = "unknown_software"  # connections without a KIP-511 software name: not "outdated" by itself


# Findings whose cost is paid by every tenant of the broker (shared request-handler and network threads), not
# only by the client's own tenant: these are the ones worth an alert (KafkaClientHurtsOtherTenants), and only when
# the finding measured a material cost (``Finding.material``; the thresholds are in monitor.advisor.findings).
HURTS_OTHERS = frozenset(
    {FindingKind.POOR_BATCHING, FindingKind.REQUEST_STORM, FindingKind.POLLING_TOO_OFTEN, FindingKind.CONNECTION_CHURN}
)


class FindingSeverity(str, Enum):
    INFO = "info"
    WARNING = "warning"


class DataStatus(str, Enum):
    """What a cluster's answer rests on. ``NO_DATA``: Prometheus answered but held none of the series the answer needs
    (never read as "all good"); ``UNAVAILABLE``: the query failed. The two stay distinct."""

    OK = "ok"
    NO_DATA = "no_data"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class ClientSample:
    """One client (user, client_id) on one cluster, summed over brokers (rates, thread share) or the worst broker
    (throttle times). From the brokers' quota sensors: present only once a quota of the type is configured."""

    cluster: str
    user: str
    client_id: str
    tenant: str | None
    produce_bytes_per_second: float = 0.0
    fetch_bytes_per_second: float = 0.0
    request_time_ratio: float = 0.0  # share of one broker thread spent on its requests (network + handler)
    produce_throttle_seconds: float = 0.0
    fetch_throttle_seconds: float = 0.0
    request_throttle_seconds: float = 0.0
    fetch_seen: bool = False  # a fetch quota sensor exists: the client has sent fetches (a consumer)
    # The share of the window since the client's first sample (1.0: seen all along). A client that has just started
    # is judged on its start-up (group join, metadata, offset lookups, first empty fetches), not on how it runs.
    seen_share: float = 1.0

    @property
    def bytes_per_second(self) -> float:
        return self.produce_bytes_per_second + self.fetch_bytes_per_second

    @property
    def is_producer(self) -> bool:
        return self.produce_bytes_per_second > 0 and self.produce_bytes_per_second >= self.fetch_bytes_per_second


@dataclass(frozen=True)
class TopicSample:
    """Produce efficiency of one topic over the window (BrokerTopicMetrics, summed over brokers)."""

    cluster: str
    topic: str
    tenant: str | None
    messages_per_second: float
    produce_requests_per_second: float
    bytes_per_second: float


@dataclass(frozen=True)
class TelemetrySample:
    """What one client pushed itself (KIP-714 client telemetry, averaged over the window), by the metrics plugin's
    gauges ``kafka_client_telemetry_*`` (docs/metrics.md). ``None``: the client did not push that metric (a producer
    pushes no consumer metrics, librdkafka and Java push different sets)."""

    cluster: str
    user: str
    client_id: str
    tenant: str | None
    software_name: str = ""
    software_version: str = ""
    batch_size_avg_bytes: float | None = None
    records_per_request: float | None = None
    record_queue_time_seconds: float | None = None
    produce_request_rate: float | None = None  # the producer's requests per second
    request_latency_seconds: float | None = None
    throttle_seconds: float | None = None
    poll_idle_ratio: float | None = None  # share of time the consumer application waits inside poll()
    fetch_latency_seconds: float | None = None
    commit_latency_seconds: float | None = None

    @property
    def is_producer(self) -> bool:
        return self.records_per_request is not None or self.batch_size_avg_bytes is not None


@dataclass(frozen=True)
class GroupSample:
    """A consumer group over the window (Admin API collector, sampled every collection interval)."""

    cluster: str
    group: str
    tenant: str | None
    members: float  # now
    member_changes: float  # changes() of the member count over the window
    rebalancing_share: float  # share of samples in PreparingRebalance/CompletingRebalance/Assigning/Reconciling
    window_seconds: float
    # Its members' client ids over the window, and its lag (records behind the high watermarks, summed over its
    # topics): now, its change over the window, the worst partition's age in seconds, and the records per second its
    # committed offsets advanced. None: not collected (a group the collector could not read offsets for).
    client_ids: tuple[str, ...] = ()
    lag_records: float | None = None
    lag_change_records: float | None = None
    lag_seconds: float | None = None
    committed_records_per_second: float | None = None


@dataclass(frozen=True)
class SoftwareSample:
    """Open connections by client software (KIP-511), summed over brokers. No client id: Kafka does not export it."""

    cluster: str
    name: str
    version: str
    connections: float


@dataclass(frozen=True)
class DeprecatedSample:
    """Requests per second in one deprecated API version (KIP-896) from one client software, summed over brokers.
    Kafka labels them with the KIP-511 software name and version only: no client id."""

    cluster: str
    name: str
    version: str
    request: str
    api_version: str
    requests_per_second: float


@dataclass(frozen=True)
class ClusterSample:
    """Cluster-wide request figures over the window."""

    cluster: str
    window_seconds: float
    requests_per_second: float = 0.0
    errors_per_second: float = 0.0  # responses with an error code other than NONE
    new_connections_per_second: float = 0.0  # ApiVersions requests/s: the first request of every connection
    open_connections: float = 0.0  # KIP-511 connections gauge, summed
    # Connections whose client sent no KIP-511 software name (the broker labels them "unknown"), averaged over the
    # window: a Java client older than 2.4 or a librdkafka older than 1.4 holds them all along; a new connection of
    # any client is "unknown" only until its ApiVersions, so churn alone averages far below one.
    nameless_connections: float = 0.0
    errors_by_request: dict[str, float] = field(default_factory=dict)
    errors_by_code: dict[str, float] = field(default_factory=dict)  # the same errors by Kafka's error name
    # The cluster's own state over the window, each the worst sample (request_storm's guard, docs/advisor.md): brokers
    # out of the metadata at once (kafka_cluster_broker_up 0), partitions under-replicated (summed over brokers) and
    # offline (the larger of the controller's count and the Admin API's per-topic sum).
    brokers_down: float = 0.0
    under_replicated_partitions: float = 0.0
    offline_partitions: float = 0.0
    # Fetch requests of every consumer of the cluster per second (kafka_broker_requests_total{request="FetchConsumer"}):
    # no one consumer sends more. None: the brokers do not export that request type.
    consumer_fetches_per_second: float | None = None
    # The most brokers seen at once over the window (reporting requests, or in the metadata): the request-handler
    # capacity a client's cost is a share of (Thresholds.material_requests_per_handler_thread). 0: not known.
    brokers: float = 0.0
    # broker -> its request-handler threads (num.io.threads: kafka_broker_request_handler_threads, the most over the
    # window); a broker missing here is counted at Thresholds.handler_threads_per_broker (Kafka's default)
    handler_threads: dict[str, float] = field(default_factory=dict)


# The snapshot's inputs, as a "no data" message names them.
SNAPSHOT_INPUTS = {
    "brokers": "broker requests and connections (kafka_broker_requests_total, kafka_broker_connections)",
    "clients": "client quota sensors (kafka_client_*)",
    "topics": "topic produce metrics (kafka_topic_*)",
    "groups": "consumer groups (kafka_consumergroup_*)",
}


@dataclass(frozen=True)
class Snapshot:
    """Everything the rules read for one cluster."""

    cluster: ClusterSample
    clients: tuple[ClientSample, ...] = ()
    topics: tuple[TopicSample, ...] = ()
    groups: tuple[GroupSample, ...] = ()
    software: tuple[SoftwareSample, ...] = ()
    deprecated: tuple[DeprecatedSample, ...] = ()
    telemetry: tuple[TelemetrySample, ...] = ()
    whole_cluster_tenant: str | None = None  # the tenant owning the whole cluster, if any

    def inputs_seen(self) -> dict[str, bool]:
        """Whether each input of the rules (``SNAPSHOT_INPUTS``) had any sample in the window. Broker request
        figures are rates the query sums, so "no series" and "all zero" look alike; a live broker always serves some
        requests (the collectors' own among them), so zero is read as none."""
        c = self.cluster
        return {
            "brokers": bool(
                c.requests_per_second > 0
                or c.new_connections_per_second > 0
                or c.open_connections > 0
                or c.errors_by_request
                or self.software
                or self.deprecated
            ),
            "clients": bool(self.clients or self.telemetry),
            "topics": bool(self.topics),
            "groups": bool(self.groups),
        }

    @property
    def has_broker_data(self) -> bool:
        """Any series from the brokers' JMX (requests, connections, client quota sensors, topics). Without them only
        the consumer-group rule can run, and "no finding" would say nothing about the clients."""
        seen = self.inputs_seen()
        return seen["brokers"] or seen["clients"] or seen["topics"]


@dataclass(frozen=True)
class Finding:
    kind: FindingKind
    severity: FindingSeverity
    cluster: str
    tenant: str | None
    client_id: str  # "" when Kafka cannot say which client (cluster-level evidence); the group for rebalances
    user: str
    evidence: dict
    metrics: tuple[str, ...]  # the exported metrics the evidence comes from
    cause: str
    fix: str  # the concrete setting(s) to change
    group: str = ""
    suspects: tuple[str, ...] = ()  # clients that may cause a cluster-level finding (correlation, not proof)
    # What the finding rests on, best first: "client_telemetry" (what the client pushed, KIP-714),
    # "topic_records_per_request" (the brokers' per-topic counts, absolute), "thread_time_per_mib" (the quota sensors'
    # request time compared with the cluster's other clients, relative), "client_software" (KIP-511/KIP-896), or
    # "" for rules with one kind of evidence only.
    basis: str = ""
    # Whether the client's measured cost on shared broker threads is material (Thresholds.material_*): below it the
    # finding is advice for its own tenant (severity info), never a page for the others.
    material: bool = True
    # Clients that may cause a tenant-and-topic finding whose culprit's own figures are not in yet (client_id ""):
    # every producer of the tenant not cleared by its own evidence, new ones included. Not a name: nobody is blamed.
    candidates: tuple[str, ...] = ()

    @property
    def hurts_other_tenants(self) -> bool:
        return self.kind in HURTS_OTHERS and self.material

    def as_json(self) -> dict:
        return {
            "kind": self.kind.value,
            "severity": self.severity.value,
            "cluster": self.cluster,
            "tenant": self.tenant,
            "client_id": self.client_id,
            "user": self.user,
            "group": self.group,
            "evidence": self.evidence,
            "metrics": list(self.metrics),
            "cause": self.cause,
            "fix": self.fix,
            "suspects": list(self.suspects),
            "hurts_other_tenants": self.hurts_other_tenants,
            "basis": self.basis,
            "candidates": list(self.candidates),
            "material": self.material,
        }
