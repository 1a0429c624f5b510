"""The fixed list of series the archive copies from Prometheus into the lake: the one place naming them.

Each entry is a PromQL expression evaluated by ``query_range`` at one-minute steps, and the ``series`` name it gets in
the lake. The expression must aggregate to the labels in ``LABEL_COLUMNS`` (others are dropped) and always keep
``cluster``. Rates use a two-minute window so that one late scrape does not punch a hole in a one-minute step.

Metric names follow DESIGN.md's conventions; the ones marked ``uncertain`` are this module's guess at names the
collectors will export, to be reconciled at merge (only this module needs to change).
"""

from __future__ import annotations

from dataclasses import dataclass

from alerts.slo import MINUTE_EXPR

STEP_SECONDS = 60

# Label columns of the lake, in order. A label a series lacks is null.
LABEL_COLUMNS = (
    "broker",
    "topic",
    "user",
    "client_id",
    "group",
    "alertname",
    "severity",
    "tenant",
    "finding",
    "host",
    "device",
)
# Columns added after schema version 1: a file written before them lacks them, which is not drift (read as null).
ADDED_COLUMNS = ("finding", "host", "device")


@dataclass(frozen=True)
class ArchiveSeries:
    name: str  # value of the lake's `series` column
    promql: str
    unit: str
    help: str
    uncertain: bool = False  # metric name not yet confirmed by docs/metrics.md


SERIES: tuple[ArchiveSeries, ...] = (
    ArchiveSeries(
        "topic_bytes_in_rate",
        "sum by (cluster, topic) (rate(kafka_topic_bytes_in_total[2m]))",
        "bytes/s",
        "bytes produced to the topic",
    ),
    ArchiveSeries(
        "topic_bytes_out_rate",
        "sum by (cluster, topic) (rate(kafka_topic_bytes_out_total[2m]))",
        "bytes/s",
        "bytes fetched from the topic (consumers and followers excluded by the broker meter)",
    ),
    ArchiveSeries(
        "topic_messages_in_rate",
        "sum by (cluster, topic) (rate(kafka_topic_messages_in_total[2m]))",
        "messages/s",
        "messages produced to the topic",
    ),
    # Kafka has no per-topic messages-out meter and the collectors export lag, not committed offsets: what a group
    # consumed is what was produced minus the growth of its lag, summed over the topic's groups.
    ArchiveSeries(
        "topic_messages_out_rate",
        "sum by (cluster, topic) (clamp_min("
        "sum by (cluster, topic) (rate(kafka_topic_messages_in_total[2m])) - on (cluster, topic) "
        "group_right sum by (cluster, topic, group) (deriv(kafka_consumergroup_lag[2m])), 0))",
        "messages/s",
        "messages consumed from the topic by consumer groups (produced - lag growth)",
    ),
    ArchiveSeries(
        "topic_size_bytes",
        "sum by (cluster, topic) (kafka_topic_log_size_bytes)",
        "bytes",
        "bytes on disk for the topic (all replicas)",
    ),
    ArchiveSeries(
        "topic_offline_partitions",
        "max by (cluster, topic) (kafka_topic_offline_partitions)",
        "partitions",
        "partitions of the topic without a leader",
    ),
    # The Admin collector derives it from the metadata's ISR sizes and the topics' min.insync.replicas.
    ArchiveSeries(
        "topic_under_min_isr_partitions",
        "max by (cluster, topic) (kafka_topic_under_min_isr_partitions)",
        "partitions",
        "partitions of the topic with fewer in-sync replicas than min.insync.replicas",
    ),
    ArchiveSeries(
        "broker_produce_p99_seconds",
        "max by (cluster, broker) (kafka_broker_request_latency_seconds"
        '{request="Produce",phase="total",quantile="0.99"})',
        "seconds",
        "produce request total time, 99th percentile",
    ),
    ArchiveSeries(
        "broker_fetch_p99_seconds",
        "max by (cluster, broker) (kafka_broker_request_latency_seconds"
        '{request="FetchConsumer",phase="total",quantile="0.99"})',
        "seconds",
        "consumer fetch request total time, 99th percentile",
    ),
    ArchiveSeries(
        "client_produce_bytes_rate",
        "sum by (cluster, user, client_id) (kafka_client_produce_bytes_per_second)",
        "bytes/s",
        "produce byte rate of the client (quota sensor)",
    ),
    ArchiveSeries(
        "client_fetch_bytes_rate",
        "sum by (cluster, user, client_id) (kafka_client_fetch_bytes_per_second)",
        "bytes/s",
        "fetch byte rate of the client (quota sensor)",
    ),
    ArchiveSeries(
        "client_throttle_seconds",
        'max by (cluster, user, client_id) ({__name__=~"kafka_client_(produce|fetch|request)_throttle_time_seconds"})',
        "seconds",
        "average throttle time of the client's requests (quota)",
    ),
    ArchiveSeries(
        "group_lag_messages",
        "sum by (cluster, group, topic) (kafka_consumergroup_lag)",
        "messages",
        "consumer group lag per topic",
    ),
    # A share group (KIP-932) has no committed offsets: its "lag" is the brokers' count of records not yet
    # acknowledged. Kept with the tenant the collector gave it (group prefix, else the one tenant owning its topics:
    # collectors.group_kinds.share_tenant), which a group prefix alone cannot reproduce.
    ArchiveSeries(
        "share_group_lag_messages",
        "sum by (cluster, tenant, group, topic) (kafka_sharegroup_lag)",
        "messages",
        "share group records waiting (not acknowledged) per topic",
    ),
    # One row per broker and filesystem where the host collector names the filesystem (`device`, "major:minor":
    # the broker's log dirs on it all read the same figures, hence max), so the reports count a filesystem shared by
    # several brokers once, exactly; series without it (older collectors, other exporters) summed per broker as
    # before, and the reports fall back to comparing figures.
    ArchiveSeries(
        "host_filesystem_size_bytes",
        'max by (cluster, host, broker, device) (kafka_host_filesystem_size_bytes{device!=""}) '
        'or sum by (cluster, host, broker) (kafka_host_filesystem_size_bytes{device=""})',
        "bytes",
        "size of the brokers' log-dir filesystems",
    ),
    ArchiveSeries(
        "host_filesystem_free_bytes",
        'max by (cluster, host, broker, device) (kafka_host_filesystem_avail_bytes{device!=""}) '
        'or sum by (cluster, host, broker) (kafka_host_filesystem_avail_bytes{device=""})',
        "bytes",
        "space available to Kafka on the brokers' log-dir filesystems",
    ),
    ArchiveSeries(
        "client_advisor_finding",
        "max by (cluster, tenant, client_id, group, finding) (kafka_client_advisor_finding)",
        "1",
        "1 while a client-advisor finding holds for the client (exported by serve)",
    ),
    # A tenant's SLO minute (alerts/slo.py, the one definition): 1 bad, 0 good, no row while unknown (the probe down).
    ArchiveSeries(
        "tenant_slo_minute",
        MINUTE_EXPR,
        "1",
        "1 for a bad minute of the tenant on the cluster, 0 for a good one (docs/alerts.md, tenant SLOs)",
    ),
    # The alert engine's own instances (its Python detectors included), and Prometheus' ALERTS for rules it loaded
    # itself; max by collapses an alert both evaluate into one series. The watchdog always fires: not an alert.
    ArchiveSeries(
        "alert_firing",
        "max by (cluster, alertname, severity, tenant, broker, topic, group) "
        '(kafka_health_alert_instance{alertstate="firing", watchdog!="true"} '
        'or ALERTS{alertstate="firing", watchdog!="true"})',
        "1",
        "1 while the alert fires (the engine's instances, and Prometheus' own alerts)",
    ),
)

BY_NAME = {s.name: s for s in SERIES}
