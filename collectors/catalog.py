"""The JMX catalog: which MBeans are read, and the pure conversion of readings into exported samples.

One table (``BROKER_RULES``, ``CONTROLLER_RULES``) drives both sides, so what is queried and what is exported never
drift apart, and every transport yields the same series: transports only return raw ``Reading``s, this module alone
names, scales, aggregates and attributes them. docs/metrics.md documents the same table for users.

Aggregation: readings that map to the same (metric, labels) are summed. That is how per-partition log sizes become
per-topic sizes, per-version request meters become per-request rates, per-processor connections become per-client-
software counts: high partition counts never explode series.

Traps handled here (DESIGN.md "known traps"):
- RequestHandlerAvgIdlePercent: exported from the meter's ``Count`` (idle nanoseconds / threads), and the ratio is
  the rate of that counter between two collections (``derive_rates``), never ``MeanRate`` (average since start).
- RequestsPerSec / ErrorsPerSec have one MBean per API version / error code: summed per request.
- Quota sensor averages are NaN when a client is idle: exported as 0 (nothing throttled), see ``MBeanRule.nan``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Literal

from collectors.types import MBeanQuery, MetricKind, Reading, Sample

# ---------------------------------------------------------------------------------------------------------------
# ObjectName parsing and matching (JMX pattern semantics, enough for the patterns below)


@lru_cache(maxsize=65536)
def parse_object_name(name: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``'d:k=v,k2="a,b"'`` -> ``('d', (('k','v'), ('k2','a,b')))``. Quoted values are unquoted (JMX escapes)."""
    domain, _, rest = name.partition(":")
    props: list[tuple[str, str]] = []
    i, n = 0, len(rest)
    while i < n:
        eq = rest.find("=", i)
        if eq < 0:
            if rest[i:].strip() == "*":
                props.append(("*", "*"))
            break
        key = rest[i:eq]
        j = eq + 1
        if j < n and rest[j] == '"':
            out = []
            j += 1
            while j < n and rest[j] != '"':
                if rest[j] == "\\" and j + 1 < n:
                    nxt = rest[j + 1]
                    out.append({"n": "\n"}.get(nxt, nxt))
                    j += 2
                else:
                    out.append(rest[j])
                    j += 1
            value = "".join(out)
            j += 1  # closing quote
            comma = rest.find(",", j)
        else:
            comma = rest.find(",", j)
            value = rest[j:] if comma < 0 else rest[j:comma]
        props.append((key, value))
        if comma < 0:
            break
        i = comma + 1
    return domain, tuple(props)


def _properties(name: str) -> tuple[str, dict[str, str]]:
    """An MBean's domain and properties as a dict, for ``convert``.

    Names without a quote or a wildcard (nearly all: a broker's per-partition MBeans) split on commas and ``=``, about
    four times cheaper than the scan. Not cached: a fleet's distinct names outnumber any cache (500 brokers of 10,000
    partitions are 5 million), and a cache that always misses cost more than the split (bench/collector_fleet.py)."""
    domain, _, rest = name.partition(":")
    if '"' not in rest and "*" not in rest:
        try:
            return domain, dict([part.split("=", 1) for part in rest.split(",")])
        except ValueError:  # a property without "=": the scan decides what it is
            pass
    return domain, dict(parse_object_name(name)[1])


@dataclass(frozen=True)
class _Pattern:
    domain: str
    exact: tuple[tuple[str, str], ...]  # key must equal value
    present: tuple[str, ...]  # key must exist (value '*')
    size: int | None  # how many properties a name has; None when the pattern is open (',*': other keys allowed)

    @classmethod
    def of(cls, pattern: str) -> _Pattern:
        domain, props = parse_object_name(pattern)
        exact = tuple((k, v) for k, v in props if k != "*" and v != "*")
        present = tuple(k for k, v in props if k != "*" and v == "*")
        return cls(domain, exact, present, None if any(k == "*" for k, _ in props) else len(exact) + len(present))

    def admits(self, props: dict[str, str]) -> bool:
        """Whether an MBean's properties match (its domain is the caller's to compare: ``convert`` compares it once
        per MBean shape)."""
        for k, v in self.exact:
            if props.get(k) != v:
                return False
        for k in self.present:
            if k not in props:
                return False
        return self.size is None or len(props) == self.size


# ---------------------------------------------------------------------------------------------------------------
# Rules


@dataclass(frozen=True)
class MBeanRule:
    """One exported metric from one MBean attribute.

    ``labels`` maps exported label names to MBean properties (missing property -> ""); ``const`` adds fixed labels;
    ``tenant`` adds a ``tenant`` label resolved from the topic, the client (user, client-id) or the group (its
    prefix, else the topic's owner, as collectors.group_kinds.share_tenant attributes a share group); ``value_label``
    turns a string attribute into a label of a 1-valued gauge (raft state); ``nan`` says what a NaN becomes.
    ``query`` widens the MBean pattern actually queried, so several rules share one query.
    ``about_broker`` names the MBean property holding the id of the broker the value is about (the controller's
    per-broker gauges): that id becomes the ``broker`` label, and the node read from moves to ``controller``.
    """

    metric: str
    kind: MetricKind
    help: str
    mbean: str
    attribute: str
    key: str | None = None
    scale: float = 1.0
    labels: tuple[tuple[str, str], ...] = ()
    const: tuple[tuple[str, str], ...] = ()
    tenant: Literal["topic", "client", "group"] | None = None
    value_label: str | None = None
    nan: Literal["skip", "zero"] = "skip"
    query: str | None = None
    about_broker: str | None = None

    @property
    def pattern(self) -> _Pattern:
        return _Pattern.of(self.mbean)

    def label_names(self) -> tuple[str, ...]:
        names = [n for n, _ in self.labels] + [n for n, _ in self.const]
        if self.about_broker:
            names.append("controller")
        if self.value_label:
            names.append(self.value_label)
        if self.tenant:
            names.append("tenant")
        return tuple(names)


MS = 1e-3
NS = 1e-9
BTM = "kafka.server:type=BrokerTopicMetrics"
BTM_QUERY = "kafka.server:type=BrokerTopicMetrics,*"
# The APIs whose latency breakdown is exported. Others are counted (requests_total) but not broken down.
BUSY_REQUESTS = (
    "Produce",
    "FetchConsumer",
    "FetchFollower",
    "Metadata",
    "ListOffsets",
    "OffsetCommit",
    "OffsetFetch",
    "FindCoordinator",
    "JoinGroup",
    "SyncGroup",
    "Heartbeat",
    "ConsumerGroupHeartbeat",
)
PHASES = (
    ("TotalTimeMs", "total"),
    ("RequestQueueTimeMs", "request_queue"),
    ("LocalTimeMs", "local"),
    ("RemoteTimeMs", "remote"),
    ("ThrottleTimeMs", "throttle"),
    ("ResponseQueueTimeMs", "response_queue"),
    ("ResponseSendTimeMs", "response_send"),
)
QUANTILES = (("50thPercentile", "0.5"), ("99thPercentile", "0.99"), ("999thPercentile", "0.999"))
TOPIC_METERS = (
    ("BytesInPerSec", "bytes_in", "Bytes produced to"),
    ("BytesOutPerSec", "bytes_out", "Bytes fetched from (consumers and followers)"),
    ("MessagesInPerSec", "messages_in", "Messages produced to"),
    ("BytesRejectedPerSec", "bytes_rejected", "Bytes rejected (record too large, ...) by"),
    ("TotalProduceRequestsPerSec", "produce_requests", "Produce requests served by"),
    ("TotalFetchRequestsPerSec", "fetch_requests", "Fetch requests served by"),
    ("FailedProduceRequestsPerSec", "failed_produce_requests", "Failed produce requests of"),
    ("FailedFetchRequestsPerSec", "failed_fetch_requests", "Failed fetch requests of"),
)


INFO_RULE = MBeanRule(
    "kafka_broker_info",
    "gauge",
    "Kafka version of the node (1)",
    "kafka.server:type=app-info,id=*",
    "Version",
    value_label="version",
)


def _broker_rules() -> tuple[MBeanRule, ...]:
    r: list[MBeanRule] = []
    add = r.append
    # --- threads and queues
    add(
        MBeanRule(
            "kafka_broker_request_handler_idle_seconds_total",
            "counter",
            "Idle time of the request handler pool, averaged over its threads (rate = idle ratio)",
            "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent",
            "Count",
            scale=NS,
        )
    )
    add(
        MBeanRule(
            "kafka_broker_network_processor_avg_idle_ratio",
            "gauge",
            "Average idle ratio of the network processor threads",
            "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent",
            "Value",
        )
    )
    add(
        MBeanRule(
            "kafka_broker_network_processor_idle_ratio",
            "gauge",
            "Idle ratio of one network processor thread",
            "kafka.network:type=Processor,name=IdlePercent,networkProcessor=*",
            "Value",
            labels=(("processor", "networkProcessor"),),
        )
    )
    add(
        MBeanRule(
            "kafka_broker_request_queue_size",
            "gauge",
            "Requests waiting for a request handler thread",
            "kafka.network:type=RequestChannel,name=RequestQueueSize",
            "Value",
        )
    )
    add(
        MBeanRule(
            "kafka_broker_response_queue_size",
            "gauge",
            "Responses waiting for a network processor (all)",
            "kafka.network:type=RequestChannel,name=ResponseQueueSize",
            "Value",
        )
    )
    add(
        MBeanRule(
            "kafka_broker_processor_response_queue_size",
            "gauge",
            "Responses waiting for one network processor",
            "kafka.network:type=RequestChannel,name=ResponseQueueSize,processor=*",
            "Value",
            labels=(("processor", "processor"),),
        )
    )
    # --- requests
    for mbean_name, phase in PHASES:
        for req in BUSY_REQUESTS:
            for attr, q in QUANTILES:
                add(
                    MBeanRule(
                        "kafka_broker_request_latency_seconds",
                        "summary",
                        "Request latency by phase (Kafka's histogram quantile over its recent reservoir)",
                        f"kafka.network:type=RequestMetrics,name={mbean_name},request={req}",
                        attr,
                        scale=MS,
                        labels=(("request", "request"),),
                        const=(("phase", phase), ("quantile", q)),
                    )
                )
    add(
        MBeanRule(
            "kafka_broker_requests_total",
            "counter",
            "Requests received, summed over API versions",
            "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=*,version=*",
            "Count",
            labels=(("request", "request"),),
        )
    )
    add(
        MBeanRule(
            "kafka_broker_request_errors_total",
            "counter",
            'Responses by request and error code (error="NONE" counts successes)',
            "kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=*,error=*",
            "Count",
            labels=(("request", "request"), ("error", "error")),
        )
    )
    # --- throughput, broker-wide and per topic
    for mbean_name, stem, what in TOPIC_METERS:
        add(
            MBeanRule(
                f"kafka_broker_{stem}_total",
                "counter",
                f"{what} this broker",
                f"{BTM},name={mbean_name}",
                "Count",
                query=BTM_QUERY,
            )
        )
        add(
            MBeanRule(
                f"kafka_topic_{stem}_total",
                "counter",
                f"{what} this topic on this broker",
                f"{BTM},name={mbean_name},topic=*",
                "Count",
                labels=(("topic", "topic"),),
                tenant="topic",
                query=BTM_QUERY,
            )
        )
    for mbean_name, stem in (
        ("ReplicationBytesInPerSec", "replication_bytes_in"),
        ("ReplicationBytesOutPerSec", "replication_bytes_out"),
    ):
        add(
            MBeanRule(
                f"kafka_broker_{stem}_total",
                "counter",
                "Replication traffic between brokers",
                f"{BTM},name={mbean_name}",
                "Count",
                query=BTM_QUERY,
            )
        )
    # --- partitions and replication
    for mbean_name, metric, what in (
        ("UnderReplicatedPartitions", "kafka_broker_under_replicated_partitions", "Led partitions with ISR < replicas"),
        (
            "UnderMinIsrPartitionCount",
            "kafka_broker_under_min_isr_partitions",
            "Led partitions with ISR < min.insync.replicas",
        ),
        (
            "AtMinIsrPartitionCount",
            "kafka_broker_at_min_isr_partitions",
            "Led partitions with ISR = min.insync.replicas",
        ),
        ("OfflineReplicaCount", "kafka_broker_offline_replicas", "Replicas on this broker that are offline"),
        ("PartitionCount", "kafka_broker_partitions", "Partition replicas on this broker"),
        ("LeaderCount", "kafka_broker_leader_partitions", "Partitions this broker leads"),
    ):
        add(MBeanRule(metric, "gauge", what, f"kafka.server:type=ReplicaManager,name={mbean_name}", "Value"))
    add(
        MBeanRule(
            "kafka_broker_isr_shrinks_total",
            "counter",
            "ISR shrinks of partitions led by this broker",
            "kafka.server:type=ReplicaManager,name=IsrShrinksPerSec",
            "Count",
        )
    )
    add(
        MBeanRule(
            "kafka_broker_isr_expands_total",
            "counter",
            "ISR expands of partitions led by this broker",
            "kafka.server:type=ReplicaManager,name=IsrExpandsPerSec",
            "Count",
        )
    )
    add(
        MBeanRule(
            "kafka_broker_metadata_lag_seconds",
            "gauge",
            "Age of the last metadata record this broker applied",
            "kafka.server:type=broker-metadata-metrics",
            "last-applied-record-lag-ms",
            scale=MS,
        )
    )
    # --- storage
    add(
        MBeanRule(
            "kafka_topic_log_size_bytes",
            "gauge",
            "Size of this topic's partition logs on this broker",
            "kafka.log:type=Log,name=Size,topic=*,partition=*",
            "Value",
            labels=(("topic", "topic"),),
            tenant="topic",
        )
    )
    add(
        MBeanRule(
            "kafka_broker_offline_log_dirs",
            "gauge",
            "Log directories this broker has taken offline",
            "kafka.log:type=LogManager,name=OfflineLogDirectoryCount",
            "Value",
        )
    )
    add(
        MBeanRule(
            "kafka_broker_cordoned_log_dirs",
            "gauge",
            "Log directories cordoned on this broker: they keep their partitions but take no new ones (Kafka 4.4)",
            "kafka.log:type=LogManager,name=CordonedLogDirectoryCount",
            "Value",
        )
    )
    # --- group coordinators: every kind of group (classic, consumer KIP-848, share KIP-932, streams KIP-1071) as the
    # broker that coordinates it counts them, and the state of the internal partitions the coordinators serve from
    # (a "failed" partition leaves its groups unable to commit or be described).
    gcm = "kafka.server:type=group-coordinator-metrics"
    add(
        MBeanRule(
            "kafka_broker_coordinated_groups",
            "gauge",
            "Groups this broker coordinates, by group protocol",
            f"{gcm},protocol=*",
            "group-count",
            labels=(("protocol", "protocol"),),
            query=f"{gcm},*",
        )
    )
    for proto in ("classic", "consumer", "share", "streams"):
        add(
            MBeanRule(
                "kafka_broker_coordinated_groups_by_state",
                "gauge",
                "Groups this broker coordinates, by group protocol and group state",
                f"{gcm},state=*",
                f"{proto}-group-count",
                labels=(("state", "state"),),
                const=(("protocol", proto),),
                query=f"{gcm},*",
            )
        )
    for coordinator in ("group", "share"):
        add(
            MBeanRule(
                "kafka_broker_coordinator_partitions",
                "gauge",
                "Internal-topic partitions this broker's coordinator serves, by state (active, loading, failed)",
                f"kafka.server:type={coordinator}-coordinator-metrics,state=*",
                "num-partitions",
                labels=(("state", "state"),),
                const=(("coordinator", coordinator),),
                query=f"kafka.server:type={coordinator}-coordinator-metrics,*",
            )
        )
    # --- share groups (KIP-932): deliveries acknowledged by kind (a growing Reject or Release share is records
    # failing or coming back), and the share fetch sessions the broker holds
    add(
        MBeanRule(
            "kafka_broker_share_acknowledgements_total",
            "counter",
            "Records share consumers acknowledged on this broker, by acknowledgement (Accept, Release, Reject, Renew)",
            "kafka.server:type=ShareGroupMetrics,name=RecordAcknowledgementsPerSec,ackType=*",
            "Count",
            labels=(("ack_type", "ackType"),),
        )
    )
    # Per share-partition (KIP-1103): records whose acquisition lock ran out before the consumer acknowledged them,
    # each delivered again with its delivery count one higher (at group.share.delivery.count.limit, 5 by default,
    # archived), and the records the share-partition holds in flight. The nearest Kafka comes to a share member's
    # delivery counts: no broker metric nor describe names the member. Summed per group and topic (partitions never
    # explode series); registered only once a share group has read the partition.
    share_partition: tuple[tuple[str, MetricKind, str, str, str], ...] = (
        (
            "kafka_broker_share_lock_timeouts_total",
            "counter",
            "Records a share group acquired and did not acknowledge within the lock duration: each is delivered again",
            "AcquisitionLockTimeoutPerSec",
            "Count",
        ),
        (
            "kafka_broker_share_inflight_records",
            "gauge",
            "Records a share group holds in flight on this broker's share-partitions (acquired or waiting redelivery)",
            "InFlightMessageCount",
            "Value",
        ),
    )
    for metric, kind, help_, name, attribute in share_partition:
        add(
            MBeanRule(
                metric,
                kind,
                help_,
                f"kafka.server:type=SharePartitionMetrics,name={name},group=*,topic=*,partition=*",
                attribute,
                labels=(("group", "group"), ("topic", "topic")),
                tenant="group",
            )
        )
    add(
        MBeanRule(
            "kafka_broker_share_dead_letter_records_total",
            "counter",
            "Records of a share group written to its dead-letter queue (KIP-1191) once their deliveries ran out",
            "kafka.server:type=ShareGroupMetrics,name=DeadLetterQueueRecordCount,group=*",
            "Count",
            labels=(("group", "group"),),
            tenant="group",
        )
    )
    add(
        MBeanRule(
            "kafka_broker_share_sessions",
            "gauge",
            "Share fetch sessions this broker holds",
            "kafka.server:type=ShareSessionCache,name=ShareSessionsCount",
            "Value",
        )
    )
    # --- clients (quota sensors exist only once a quota of that type is configured: see docs/metrics.md)
    client = (("user", "user"), ("client_id", "client-id"))
    for typ, stem in (("Produce", "produce"), ("Fetch", "fetch")):
        add(
            MBeanRule(
                f"kafka_client_{stem}_bytes_per_second",
                "gauge",
                f"{typ} byte rate of the client (quota sensor)",
                f"kafka.server:type={typ},*",
                "byte-rate",
                labels=client,
                tenant="client",
                nan="zero",
            )
        )
        add(
            MBeanRule(
                f"kafka_client_{stem}_throttle_time_seconds",
                "gauge",
                f"Average {stem} throttle time of the client's requests (quota sensor)",
                f"kafka.server:type={typ},*",
                "throttle-time",
                scale=MS,
                labels=client,
                tenant="client",
                nan="zero",
            )
        )
    add(
        MBeanRule(
            "kafka_client_request_time_ratio",
            "gauge",
            "Share of one broker thread the client's requests used (quota sensor; 1 = one thread busy)",
            "kafka.server:type=Request,*",
            "request-time",
            scale=0.01,
            labels=client,
            tenant="client",
            nan="zero",
        )
    )
    add(
        MBeanRule(
            "kafka_client_request_throttle_time_seconds",
            "gauge",
            "Average throttle time of the client's requests for the request-rate quota (quota sensor)",
            "kafka.server:type=Request,*",
            "throttle-time",
            scale=MS,
            labels=client,
            tenant="client",
            nan="zero",
        )
    )
    add(
        MBeanRule(
            "kafka_broker_connections",
            "gauge",
            "Open connections by client software name and version",
            "kafka.server:type=socket-server-metrics,clientSoftwareName=*,clientSoftwareVersion=*,listener=*,"
            "networkProcessor=*",
            "connections",
            labels=(
                ("client_software_name", "clientSoftwareName"),
                ("client_software_version", "clientSoftwareVersion"),
            ),
        )
    )
    # KIP-896: requests in API versions Kafka deprecated, by client software (KIP-511 name/version from ApiVersions).
    # The MBean exists only once such a request arrived; Kafka 4.x removed every version 3.x deprecated, so today
    # it appears on 3.7+ brokers (docs/advisor.md, outdated_client).
    add(
        MBeanRule(
            "kafka_broker_deprecated_requests_total",
            "counter",
            "Requests in a deprecated API version (KIP-896), by request, API version and client software",
            "kafka.network:type=RequestMetrics,name=DeprecatedRequestsPerSec,request=*,version=*,"
            "clientSoftwareName=*,clientSoftwareVersion=*",
            "Count",
            labels=(
                ("request", "request"),
                ("api_version", "version"),
                ("client_software_name", "clientSoftwareName"),
                ("client_software_version", "clientSoftwareVersion"),
            ),
        )
    )
    r += _client_telemetry_rules()
    add(INFO_RULE)
    return tuple(r)


# KIP-714 client telemetry, as kafka-health's broker plugin keeps it (deploy/kafka/telemetry): one MBean per client
# instance whose attributes are its last push; an attribute the client did not push reads NaN and is skipped, so
# only what a client pushed becomes a series. Queried after the broker's own MBeans: were the per-target series cap
# reached, clients' series are the ones dropped.
TELEMETRY_QUERY = "kafka.health:type=ClientTelemetry,*"
TELEMETRY_SIGNALS = (
    ("producer_batch_size_avg_bytes", "BatchSizeAvg", 1.0, "Average producer batch size (batch-size-avg)"),
    (
        "producer_records_per_request_avg",
        "RecordsPerRequestAvg",
        1.0,
        "Average records per produce request (records-per-request-avg)",
    ),
    (
        "producer_record_queue_time_avg_seconds",
        "RecordQueueTimeAvgMs",
        MS,
        "Average time a record waits in the producer's queue before it is sent (record-queue-time-avg)",
    ),
    ("producer_request_rate", "RequestRate", 1.0, "Requests the client sends per second (request-rate)"),
    (
        "request_latency_avg_seconds",
        "RequestLatencyAvgMs",
        MS,
        "Average request latency the client sees (request-latency-avg, else the mean of its per-node ones)",
    ),
    (
        "throttle_time_avg_seconds",
        "ThrottleTimeAvgMs",
        MS,
        "Average time brokers throttled the client (produce-throttle-time-avg / fetch-throttle-time-avg)",
    ),
    (
        "consumer_poll_idle_ratio_avg",
        "PollIdleRatioAvg",
        1.0,
        "Share of time the consumer waits in poll for records (poll-idle-ratio-avg, 0-1)",
    ),
    ("consumer_fetch_latency_avg_seconds", "FetchLatencyAvgMs", MS, "Average fetch latency (fetch-latency-avg)"),
    ("consumer_commit_latency_avg_seconds", "CommitLatencyAvgMs", MS, "Average commit latency (commit-latency-avg)"),
    (
        "last_push_timestamp_seconds",
        "LastPushTimestampSeconds",
        1.0,
        "When the client last pushed its metrics to this broker (Unix time)",
    ),
)


def _client_telemetry_rules() -> list[MBeanRule]:
    labels = (
        ("user", "user"),
        ("client_id", "client-id"),
        ("client_instance_id", "client-instance-id"),
        ("client_software_name", "client-software-name"),
        ("client_software_version", "client-software-version"),
    )
    r = [
        MBeanRule(
            f"kafka_client_telemetry_{stem}",
            "gauge",
            f"{what} (KIP-714 push)",
            TELEMETRY_QUERY,
            attr,
            scale=scale,
            labels=labels,
            tenant="client",
        )
        for stem, attr, scale, what in TELEMETRY_SIGNALS
    ]
    plugin = "kafka.health:type=ClientTelemetryExporter"
    r += [
        MBeanRule(
            "kafka_client_telemetry_plugin_clients",
            "gauge",
            "Client instances the telemetry plugin holds on this broker (at most its max.clients)",
            plugin,
            "Clients",
        ),
        MBeanRule(
            "kafka_client_telemetry_plugin_pushes_total",
            "counter",
            "Telemetry pushes the plugin received",
            plugin,
            "Pushes",
        ),
        MBeanRule(
            "kafka_client_telemetry_plugin_failures_total",
            "counter",
            "Pushes the plugin could not read (the broker answered them anyway)",
            plugin,
            "Failures",
        ),
        MBeanRule(
            "kafka_client_telemetry_plugin_evicted_total",
            "counter",
            "Client instances dropped to stay within max.clients (least recently pushed first)",
            plugin,
            "Evicted",
        ),
        MBeanRule(
            "kafka_client_telemetry_plugin_expired_total",
            "counter",
            "Client instances dropped because they stopped pushing or closed",
            plugin,
            "Expired",
        ),
    ]
    return r


def _controller_rules() -> tuple[MBeanRule, ...]:
    kc = "kafka.controller:type=KafkaController"
    r = [
        MBeanRule(metric, "gauge", what, f"{kc},name={name}", "Value", scale=scale, query=f"{kc},*")
        for name, metric, what, scale in (
            ("ActiveControllerCount", "kafka_cluster_active_controllers", "1 on the active controller", 1.0),
            ("OfflinePartitionsCount", "kafka_cluster_offline_partitions", "Partitions without a leader", 1.0),
            ("FencedBrokerCount", "kafka_cluster_fenced_brokers", "Registered brokers that are fenced", 1.0),
            ("ActiveBrokerCount", "kafka_cluster_active_brokers", "Registered, unfenced brokers", 1.0),
            ("GlobalPartitionCount", "kafka_cluster_partitions", "Partitions in the cluster", 1.0),
            ("GlobalTopicCount", "kafka_cluster_topics", "Topics in the cluster", 1.0),
            (
                "PreferredReplicaImbalanceCount",
                "kafka_cluster_preferred_replica_imbalance",
                "Partitions not led by their preferred replica",
                1.0,
            ),
            ("MetadataErrorCount", "kafka_cluster_metadata_errors", "Metadata errors seen by the controller", 1.0),
            (
                "LastAppliedRecordLagMs",
                "kafka_cluster_controller_metadata_lag_seconds",
                "Age of the last metadata record the controller applied",
                MS,
            ),
            (
                "ControlledShutdownBrokerCount",
                "kafka_cluster_controlled_shutdown_brokers",
                "Registered brokers in controlled shutdown",
                1.0,
            ),
        )
    ]
    # Per registered broker (Kafka 4.x; absent on 3.9): how the controller sees each broker. What tells a crash from
    # a restart (alerts/detectors/brokers.py): a crashed or hung broker stays registered ACTIVE while its heartbeat
    # age grows to broker.session.timeout.ms, where the controller fences it; a controlled shutdown is fenced while
    # its heartbeats are fresh. The heartbeat age is kept by the active controller only (others report the session
    # timeout for every broker) and is capped at the session timeout.
    r += [
        MBeanRule(
            "kafka_cluster_broker_registration_state",
            "gauge",
            "Broker registration as the controller sees it: 10 fenced, 20 in controlled shutdown, 30 active",
            f"{kc},name=BrokerRegistrationState,broker=*",
            "Value",
            query=f"{kc},*",
            about_broker="broker",
        ),
        MBeanRule(
            "kafka_cluster_broker_heartbeat_age_seconds",
            "gauge",
            "Time since the controller last received the broker's heartbeat (capped at the session timeout)",
            f"{kc},name=TimeSinceLastHeartbeatReceivedMs,broker=*",
            "Value",
            scale=MS,
            query=f"{kc},*",
            about_broker="broker",
        ),
        MBeanRule(
            "kafka_cluster_broker_heartbeats_timed_out_total",
            "counter",
            "Broker heartbeat requests that timed out in the controller's event queue (an overloaded "
            "controller, not a lost broker)",
            f"{kc},name=TimedOutBrokerHeartbeatCount",
            "Value",
            query=f"{kc},*",
        ),
    ]
    r.append(
        MBeanRule(
            "kafka_cluster_unclean_leader_elections_total",
            "counter",
            "Unclean leader elections",
            "kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec",
            "Count",
        )
    )
    r.append(
        MBeanRule(
            "kafka_cluster_raft_state",
            "gauge",
            "KRaft state of this node (1 for the current state)",
            "kafka.server:type=raft-metrics",
            "current-state",
            value_label="state",
        )
    )
    return tuple(r)


JVM_RULES: tuple[MBeanRule, ...] = (
    MBeanRule(
        "kafka_jvm_gc_collections_total",
        "counter",
        "GC runs per collector",
        "java.lang:type=GarbageCollector,name=*",
        "CollectionCount",
        labels=(("gc", "name"),),
    ),
    MBeanRule(
        "kafka_jvm_gc_collection_seconds_total",
        "counter",
        "GC time per collector",
        "java.lang:type=GarbageCollector,name=*",
        "CollectionTime",
        scale=MS,
        labels=(("gc", "name"),),
    ),
    MBeanRule(
        "kafka_jvm_heap_used_bytes", "gauge", "Heap in use", "java.lang:type=Memory", "HeapMemoryUsage", key="used"
    ),
    MBeanRule(
        "kafka_jvm_heap_max_bytes", "gauge", "Maximum heap", "java.lang:type=Memory", "HeapMemoryUsage", key="max"
    ),
    # CollectionUsage exists only for heap pools: the sum is the heap left after each pool's last GC.
    MBeanRule(
        "kafka_jvm_heap_after_gc_used_bytes",
        "gauge",
        "Heap in use right after the last GC of each pool (sum)",
        "java.lang:type=MemoryPool,name=*",
        "CollectionUsage",
        key="used",
    ),
    MBeanRule(
        "kafka_jvm_open_fds",
        "gauge",
        "Open file descriptors",
        "java.lang:type=OperatingSystem",
        "OpenFileDescriptorCount",
    ),
    MBeanRule(
        "kafka_jvm_max_fds",
        "gauge",
        "File descriptor limit",
        "java.lang:type=OperatingSystem",
        "MaxFileDescriptorCount",
    ),
    MBeanRule(
        "kafka_jvm_process_cpu_seconds_total",
        "counter",
        "CPU time of the JVM process",
        "java.lang:type=OperatingSystem",
        "ProcessCpuTime",
        scale=NS,
    ),
)

BROKER_RULES: tuple[MBeanRule, ...] = _broker_rules() + JVM_RULES
# A broker also answers the controller queries: on Kafka 3.9 in ZooKeeper mode the controller metrics live on the
# brokers; on KRaft brokers the patterns simply match nothing.
BROKER_TARGET_RULES: tuple[MBeanRule, ...] = BROKER_RULES + _controller_rules()
CONTROLLER_RULES: tuple[MBeanRule, ...] = _controller_rules() + (INFO_RULE,) + JVM_RULES

# Rate-derived gauges: (counter, gauge, help). Computed from two collections, clamped to [0, 1].
RATIOS = (
    (
        "kafka_broker_request_handler_idle_seconds_total",
        "kafka_broker_request_handler_idle_ratio",
        "Idle ratio of the request handler pool, from the rate of the idle meter's Count",
    ),
)


def queries_for(rules: Sequence[MBeanRule]) -> tuple[MBeanQuery, ...]:
    """The MBean queries that read everything ``rules`` need, each pattern once with its attributes."""
    by_pattern: dict[str, list[str]] = {}
    for rule in rules:
        attrs = by_pattern.setdefault(rule.query or rule.mbean, [])
        if rule.attribute not in attrs:
            attrs.append(rule.attribute)
    return tuple(MBeanQuery(p, tuple(a)) for p, a in by_pattern.items())


class TenantLookup:
    """What the catalog needs from the tenant set, bound to one cluster.

    ``tenants`` is a ``monitor.core.tenancy.Tenants`` (the live set: asked at every lookup, so a tenant created or
    deleted through the API labels the very next series), a fixed ``TenantIndex``, or None (no tenants)."""

    def __init__(self, tenants, cluster: str):
        self._tenants, self._cluster = tenants, cluster

    def _index(self):
        return self._tenants.index() if hasattr(self._tenants, "current") else self._tenants

    def topic(self, topic: str) -> str:
        index = self._index()
        return (index.for_topic(self._cluster, topic) if index else None) or ""

    def client(self, client_id: str, user: str) -> str:
        index = self._index()
        if not index:
            return ""
        return index.for_client(self._cluster, client_id=client_id or None, user=user or None) or ""

    def group(self, group: str) -> str:
        index = self._index()
        return (index.for_group(self._cluster, group) if index else None) or ""


@dataclass(frozen=True)
class _Compiled:
    """A rule with its pattern split for ``convert``: ``type`` and ``name`` (the pattern's exact ones, when it has
    them) are the cheap first sieve, checked once per MBean shape by ``_Table.candidates``; ``rest`` is the pattern
    without them, for ``rest.admits`` per MBean (the domain is the shape's too)."""

    rule: MBeanRule
    domain: str
    type: str | None
    name: str | None
    rest: _Pattern
    # the rule decides and labels the same whatever a name's ``partition`` is (convert's per-topic shapes)
    partition_blind: bool

    @classmethod
    def of(cls, rule: MBeanRule) -> _Compiled:
        pattern = rule.pattern
        exact = dict(pattern.exact)
        rest = replace(pattern, exact=tuple((k, v) for k, v in pattern.exact if k not in ("type", "name")))
        blind = (
            "partition" not in exact
            and "partition" not in {p for _, p in rule.labels}
            and rule.about_broker != "partition"
            and rule.value_label is None
        )
        return cls(rule, pattern.domain, exact.get("type"), exact.get("name"), rest, blind)


_NARROWED_MAX = 4096  # distinct (attribute, key, domain, type, name) remembered per rule set: a few hundred are seen


@dataclass
class _Table:
    """The rules of a set by (attribute, key), then narrowed to what an MBean's domain, ``type`` and ``name`` allow.

    A broker's answer is mostly one MBean shape many times (``kafka.log:type=Log,name=Size`` once per partition) and
    about thirty rules read a ``Value``: every reading used to be matched against all of them (31 matches a reading
    at 10,000 partitions, bench/collector_fleet.py). The narrowed lists are remembered per shape, bounded."""

    by_attribute: dict[tuple[str, str | None], list[_Compiled]]
    narrowed: dict[tuple[str, str | None, str, str | None, str | None], tuple[_Compiled, ...]] = field(
        default_factory=dict
    )

    def candidates(self, attribute: str, key: str | None, domain: str, props: dict[str, str]) -> tuple[_Compiled, ...]:
        shape = (attribute, key, domain, props.get("type"), props.get("name"))
        found = self.narrowed.get(shape)
        if found is None:
            found = tuple(
                c
                for c in self.by_attribute.get((attribute, key), ())
                if c.domain == domain
                and (c.type is None or c.type == shape[3])
                and (c.name is None or c.name == shape[4])
            )
            if len(self.narrowed) < _NARROWED_MAX:
                self.narrowed[shape] = found  # a race only computes the same tuple twice
        return found


@lru_cache(maxsize=8)
def _compile(rules: tuple[MBeanRule, ...]) -> _Table:
    out: dict[tuple[str, str | None], list[_Compiled]] = {}
    for rule in rules:
        out.setdefault((rule.attribute, rule.key), []).append(_Compiled.of(rule))
    return _Table(out)


def convert(
    readings: Iterable[Reading],
    rules: tuple[MBeanRule, ...],
    *,
    base: tuple[tuple[str, str], ...],
    tenants: TenantLookup,
) -> list[Sample]:
    """Pure: readings of one JVM -> samples, summed per (metric, labels). ``base`` labels go first (cluster, broker).

    Readings no rule wants are ignored (transports may return more than asked: jmxquery ignores attribute keys).
    """
    table = _compile(rules)
    wanted, narrowed, candidates = table.by_attribute, table.narrowed, table.candidates
    sums: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    meta: dict[str, MBeanRule] = {}
    owners: dict[str, str] = {}  # a topic's tenant, looked up once per call: thousands of partitions share a topic
    # A partition's MBean (kafka.log:type=Log,name=Size,topic=T,partition=P: 10,000 a read for a broker of 10,000
    # partitions; bench/collector_fleet.py) is decided as every other partition of its topic is when none of its
    # candidate rules reads or constrains ``partition`` (``_Compiled.partition_blind``): the same rules admit it, under
    # the same keys. What the first one decides is remembered per name without the partition (``shapes``), so each
    # other partition of the topic costs a slice and a lookup, not a parse and a match.
    shapes: dict[tuple[str, str, str | None], tuple[tuple[tuple, float, bool], ...]] = {}
    for mbean, attribute, value, akey in readings:
        if (attribute, akey) not in wanted:
            continue
        shape = None
        cut = mbean.find(",partition=")
        if cut > 0:
            end = mbean.find(",", cut + 11)
            shape = (mbean[:cut] + mbean[end:] if end > 0 else mbean[:cut], attribute, akey)
            known = shapes.get(shape)
            if known is not None:
                if not isinstance(value, float):
                    continue
                for key, scale, skip_nan in known:
                    if value != value:  # NaN
                        if skip_nan:
                            continue
                        sums[key] = sums.get(key, 0.0)
                    else:
                        sums[key] = sums.get(key, 0.0) + value * scale
                continue
        domain, props = _properties(mbean)
        found = narrowed.get((attribute, akey, domain, props.get("type"), props.get("name")))
        if found is None:
            found = candidates(attribute, akey, domain, props)
        learnt: list[tuple[tuple, float, bool]] | None = None  # what this name's shape decides, when it may be kept
        if shape is not None and '"' not in mbean and all(c.partition_blind for c in found):
            learnt = []
        for c in found:
            if not c.rest.admits(props):
                continue
            rule = c.rule
            v = value
            extra: tuple[tuple[str, str], ...] = ()
            where = base
            if rule.about_broker:  # the value is about another broker: it is the ``broker``, we are the controller
                node = dict(base).get("broker", "")
                where = tuple((k, props.get(rule.about_broker, "")) if k == "broker" else (k, x) for k, x in base)
                extra = (("controller", node),)
            if rule.value_label:
                if not isinstance(v, str):
                    continue
                extra += ((rule.value_label, v),)
                v = 1.0
            tenant = rule.tenant
            if tenant == "topic":
                topic = props.get("topic", "")
                owner = owners.get(topic)
                if owner is None:
                    owner = owners[topic] = tenants.topic(topic)
                extra += (("tenant", owner),)
            elif tenant == "client":
                extra += (("tenant", tenants.client(props.get("client-id", ""), props.get("user", ""))),)
            elif tenant == "group":
                owner = tenants.group(props.get("group", "")) or tenants.topic(props.get("topic", ""))
                extra += (("tenant", owner),)
            key = (rule.metric, (*where, *[(n, props.get(p, "")) for n, p in rule.labels], *rule.const, *extra))
            meta[rule.metric] = rule
            if learnt is not None:
                learnt.append((key, rule.scale, rule.nan == "skip"))
            if not isinstance(v, float):
                continue
            if v != v:  # NaN (``v != v`` spares math.isnan's call: this loop runs once per reading)
                if rule.nan == "skip":
                    continue
                v = 0.0
            sums[key] = sums.get(key, 0.0) + v * rule.scale
        if learnt is not None and shape is not None:
            shapes[shape] = tuple(learnt)
    return [Sample(m, meta[m].kind, meta[m].help, labels, v) for (m, labels), v in sums.items()]


def derive_rates(current: Sequence[Sample], previous: Sequence[Sample] | None, elapsed_seconds: float) -> list[Sample]:
    """Pure: the ``RATIOS`` gauges from two collections of the same target. None on the first collection, after a
    counter reset (restart) or when no time elapsed: a wrong ratio is worse than a missing one."""
    if not previous or elapsed_seconds <= 0:
        return []
    prev = {(s.name, s.labels): s.value for s in previous}
    out = []
    for counter, gauge, help_ in RATIOS:
        for s in current:
            if s.name != counter:
                continue
            before = prev.get((s.name, s.labels))
            if before is None or s.value < before:
                continue
            ratio = min(1.0, max(0.0, (s.value - before) / elapsed_seconds))
            out.append(Sample(gauge, "gauge", help_, s.labels, ratio))
    return out


# ---------------------------------------------------------------------------------------------------------------
# Documentation: docs/metrics.md embeds this table (a unit test keeps them equal). Regenerate with
#   python -m collectors.catalog


def markdown_table() -> str:
    """One row per exported JMX metric, with every MBean attribute it comes from."""
    rows: dict[str, list] = {}
    for rules, where in ((BROKER_RULES, "broker"), (_controller_rules(), "controller")):
        for rule in rules:
            source = f"`{rule.mbean}` `{rule.attribute}{'.' + rule.key if rule.key else ''}`"
            if rule.scale != 1.0:
                source += f" ×{rule.scale:g}"
            row = rows.setdefault(rule.metric, [rule.kind, ", ".join(rule.label_names()), where, [], rule.help])
            if source not in row[3]:
                row[3].append(source)
    for counter, gauge, help_ in RATIOS:
        rows[gauge] = ["gauge", "", "broker", [f"rate of `{counter}` between two collections"], help_]
    out = [
        "| metric | type | labels (besides cluster, broker) | read from | JMX source | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for metric, (kind, labels, where, sources, help_) in rows.items():
        if metric == "kafka_broker_request_latency_seconds":  # the latency breakdown: one line instead of 252
            sources = [
                f"`kafka.network:type=RequestMetrics,name={{{','.join(p for p, _ in PHASES)}}},"
                f"request={{{','.join(BUSY_REQUESTS)}}}` `{{{','.join(a for a, _ in QUANTILES)}}}` ×0.001"
            ]
        out.append(f"| `{metric}` | {kind} | {labels} | {where} | {'<br>'.join(sources)} | {help_} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
