"""One tenant: throughput against its quota, throttling, storage against its budget, consumer lag, alerts, clients.

Every query filters on ``tenant``: the collectors attribute topics, clients and groups to tenants by their
selectors. The contract (quotas, budget) comes from the service config as ``kafka_health_tenant_*`` series.
"""

from __future__ import annotations

from alerts.slo import availability_query, minute_expr
from dashboards.boards.selectors import ALERT_COLUMNS, CT, alerts, client_throttle, rate
from dashboards.model import (
    GREEN,
    ORANGE,
    RED,
    Dashboard,
    Kind,
    Needs,
    Panel,
    Query,
    Row,
    Var,
)
from monitor.core.config import SloSettings

TT = 'tenant=~"$tenant"'
FIRING = f'alertstate="firing", {TT}'

OVERVIEW = Row(
    "Contract",
    (
        Panel(
            "Produce quota used",
            (
                Query(
                    f"{rate('kafka_topic_bytes_in_total', CT, 'tenant')} / on (tenant) "
                    f"max by (tenant) (kafka_health_tenant_produce_quota_bytes_per_second{{{TT}}})",
                    "{{tenant}}",
                ),
            ),
            "percentunit",
            kind=Kind.STAT,
            thresholds=((0.8, ORANGE), (1, RED)),
            min=0,
            width=6,
            height=5,
        ),
        Panel(
            "Fetch quota used",
            (
                Query(
                    f"{rate('kafka_topic_bytes_out_total', CT, 'tenant')} / on (tenant) "
                    f"max by (tenant) (kafka_health_tenant_fetch_quota_bytes_per_second{{{TT}}})",
                    "{{tenant}}",
                ),
            ),
            "percentunit",
            kind=Kind.STAT,
            thresholds=((0.8, ORANGE), (1, RED)),
            min=0,
            width=6,
            height=5,
        ),
        Panel(
            "Storage budget used",
            (
                Query(
                    f"sum by (tenant) (kafka_topic_log_size_bytes{{{CT}}}) / on (tenant) "
                    f"max by (tenant) (kafka_health_tenant_storage_budget_bytes{{{TT}}})",
                    "{{tenant}}",
                ),
            ),
            "percentunit",
            kind=Kind.STAT,
            thresholds=((0.8, ORANGE), (1, RED)),
            min=0,
            width=6,
            height=5,
        ),
        Panel(
            "Firing alerts",
            (Query(f"count({alerts(FIRING)}) or vector(0)", "firing"),),
            "none",
            kind=Kind.STAT,
            thresholds=((1, RED),),
            width=6,
            height=5,
        ),
    ),
)

THROUGHPUT = Row(
    "Throughput against quota",
    (
        Panel(
            "Produce bytes vs quota",
            (
                Query(rate("kafka_topic_bytes_in_total", CT, "tenant"), "produced {{tenant}}"),
                Query(
                    f"max by (tenant) (kafka_health_tenant_produce_quota_bytes_per_second{{{TT}}})", "quota {{tenant}}"
                ),
            ),
            "Bps",
            min=0,
            thresholds=((5e6, ORANGE),),
            description="Bytes produced to the tenant's topics, against the produce quota of its contract.",
        ),
        Panel(
            "Fetch bytes vs quota",
            (
                Query(rate("kafka_topic_bytes_out_total", CT, "tenant"), "fetched {{tenant}}"),
                Query(
                    f"max by (tenant) (kafka_health_tenant_fetch_quota_bytes_per_second{{{TT}}})", "quota {{tenant}}"
                ),
            ),
            "Bps",
            min=0,
            thresholds=((1e7, ORANGE),),
        ),
        Panel(
            "Throughput by topic",
            (Query(rate("kafka_topic_bytes_in_total", CT, "topic"), "in {{topic}}"),),
            "Bps",
            min=0,
        ),
        Panel(
            "Throttle time by client",
            (Query(client_throttle(CT, "client_id"), "{{client_id}}"),),
            "s",
            min=0,
            thresholds=((0.01, ORANGE), (0.5, RED)),
            description="Average time the brokers held back the client's requests to enforce a Kafka quota "
            "(the worst of produce, fetch and request quotas).",
        ),
    ),
)

STORAGE = Row(
    "Storage against budget",
    (
        Panel(
            "Storage vs budget",
            (
                Query(f"sum by (tenant) (kafka_topic_log_size_bytes{{{CT}}})", "used {{tenant}}"),
                Query(f"max by (tenant) (kafka_health_tenant_storage_budget_bytes{{{TT}}})", "budget {{tenant}}"),
            ),
            "bytes",
            min=0,
            thresholds=((1e9, ORANGE),),
            description="On-disk size of the tenant's topics, all replicas, against the storage budget.",
        ),
        Panel(
            "Storage by topic",
            (Query(f"sort_desc(sum by (topic) (kafka_topic_log_size_bytes{{{CT}}}))", "{{topic}}", instant=True),),
            "bytes",
            kind=Kind.BARGAUGE,
            min=0,
            thresholds=((1e9, ORANGE),),
        ),
    ),
)

LAG = Row(
    "Consumer lag",
    (
        Panel(
            "Lag (messages) by group",
            (Query(f"sum by (group) (kafka_consumergroup_lag{{{CT}}})", "{{group}}"),),
            "short",
            min=0,
            thresholds=((10000, ORANGE), (100000, RED)),
            width=8,
        ),
        Panel(
            "Lag (seconds) by group",
            (Query(f"max by (group) (kafka_consumergroup_lag_seconds{{{CT}}})", "{{group}}"),),
            "s",
            min=0,
            thresholds=((60, ORANGE), (600, RED)),
            width=8,
            description="Estimated age of the oldest unconsumed message (worst partition).",
        ),
        Panel(
            "Group members",
            (Query(f"sum by (group) (kafka_consumergroup_members{{{CT}}})", "{{group}}"),),
            "short",
            min=0,
            base=RED,
            thresholds=((1, GREEN),),
            width=8,
            description="A group with lag and no members is not consuming at all.",
        ),
    ),
)

# Share groups (KIP-932; collectors.group_kinds): records waiting and the collector's status per group. A share group
# has no committed offsets: "lag" is the broker's count of records at or above the start offset not yet acknowledged.
SHARE_GROUPS = Row(
    "Share groups",
    (
        Panel(
            "Share group lag (records waiting)",
            (Query(f"sum by (group) (kafka_sharegroup_lag{{{CT}}})", "{{group}}"),),
            "short",
            min=0,
            thresholds=((10000, ORANGE), (100000, RED)),
            width=12,
            needs=Needs.SHARE_GROUPS,
            description="Records of the group's topics from the share-partition start offsets on, not yet "
            "acknowledged (the broker's lag, KIP-1226).",
        ),
        Panel(
            "Share group status",
            (
                Query(
                    f"max by (group, status) (kafka_sharegroup_status{{{CT}}}) * on (group) group_left() "
                    f"sum by (group) (kafka_sharegroup_lag{{{CT}}})",
                    instant=True,
                ),
            ),
            "short",
            kind=Kind.TABLE,
            thresholds=((1, ORANGE),),
            width=12,
            needs=Needs.SHARE_GROUPS,
            columns=(("group", "group"), ("status", "status"), ("Value", "records waiting")),
            description="consuming, idle, stalled (members acquire nothing while records wait) or no_members: "
            "stalled and no_members page the tenant (KafkaShareGroupLag).",
        ),
        Panel(
            "Share records in flight",
            (Query(f"sum by (group) (kafka_broker_share_inflight_records{{{CT}}})", "{{group}}"),),
            "short",
            min=0,
            thresholds=((1000, ORANGE),),
            width=12,
            needs=Needs.SHARE_GROUPS,
            description="Records the group holds acquired by a member or waiting to be delivered again, summed over "
            "its share-partitions (the brokers' InFlightMessageCount, KIP-1103).",
        ),
        Panel(
            "Share records redelivered (lock timed out)",
            (Query(rate("kafka_broker_share_lock_timeouts_total", CT, "group"), "{{group}}"),),
            "ops",
            min=0,
            thresholds=((1, ORANGE),),
            width=12,
            needs=Needs.SHARE_GROUPS,
            description="Records whose acquisition lock ran out before the member acknowledged them "
            "(group.share.record.lock.duration.ms, 30 s by default): each is delivered again, and at "
            "group.share.delivery.count.limit (5) archived. The nearest Kafka comes to delivery counts: it names no "
            "member for them.",
        ),
    ),
)

# Kafka Streams groups (KIP-1071; collectors.group_kinds): their lag is exported as a consumer group's (the Consumer lag
# row shows it), their kind only in kafka_group_info{type="streams"}; this row lists them with the state and members
# StreamsGroupDescribe gave, so a streams application is found by what it is (docs/metrics.md).
_STREAMS = f'kafka_group_info{{{CT}, type="streams"}}'
STREAMS_GROUPS = Row(
    "Kafka Streams groups",
    (
        Panel(
            "Streams groups: state and lag",
            (
                Query(
                    f"max by (group, state) ({_STREAMS}) * on (group) group_left() "
                    f"sum by (group) (kafka_consumergroup_lag{{{CT}}})",
                    instant=True,
                ),
            ),
            "short",
            kind=Kind.TABLE,
            thresholds=((10000, ORANGE), (100000, RED)),
            width=12,
            needs=Needs.STREAMS_GROUPS,
            columns=(("group", "application.id"), ("state", "state"), ("Value", "lag (records)")),
            description="Each streams group of the tenant (its application.id), the group state the coordinator "
            "reported and its lag summed over partitions. KafkaConsumerGroupLag judges it as a consumer group.",
        ),
        Panel(
            "Streams group members",
            (
                Query(
                    f"sum by (group) (kafka_consumergroup_members{{{CT}}}) and on (group) {_STREAMS}",
                    "{{group}}",
                ),
            ),
            "short",
            min=0,
            base=RED,
            thresholds=((1, GREEN),),
            width=12,
            needs=Needs.STREAMS_GROUPS,
            description="Application instances in the group (StreamsGroupDescribe). Lag with no member: the "
            "application is down.",
        ),
    ),
)

# The tenant SLO (alerts/slo.py, the one definition; docs/alerts.md "Tenant SLOs"): availability and burn from the raw
# series, so the panels work without the exported recording rules. The objective: the contract's, else the default
# slo.objective (the dashboards cannot read the service's config; change it here if yours differs).
_SLO_C, _SLO_T = 'cluster=~"$cluster"', 'tenant=~"$tenant"'
_OBJECTIVE = (
    f"(max by (tenant) (kafka_health_tenant_availability_objective_ratio{{{TT}}}) "
    f"or max by (tenant) (kafka_health_tenant_info{{{TT}}}) * 0 + {SloSettings().objective:g})"
)


def _availability(window: str) -> str:
    return f"min by (tenant) ({availability_query(window, cluster=_SLO_C, tenant=_SLO_T)})"


def _burn(window: str) -> str:
    return f"(1 - {_availability(window)}) / on (tenant) (1 - {_OBJECTIVE})"


SLO_WINDOW = f"{SloSettings().window_days}d"
SLO = Row(
    "Availability objective (SLO)",
    (
        Panel(
            f"Availability ({SLO_WINDOW})",
            (Query(_availability(SLO_WINDOW), "{{tenant}}"),),
            "percentunit",
            kind=Kind.STAT,
            base=RED,
            thresholds=((0.99, ORANGE), (0.999, GREEN)),
            width=6,
            height=5,
            description="Good minutes over known minutes in the SLO window. A minute is bad when one of the tenant's "
            "partitions was offline or under min ISR, or the probe failed on a broker leading one of them; "
            "minutes while the probe was not up are unknown, not bad. The worst of the tenant's clusters.",
        ),
        Panel(
            f"Error budget left ({SLO_WINDOW})",
            (Query(f"1 - {_burn(SLO_WINDOW)}", "{{tenant}}"),),
            "percentunit",
            kind=Kind.STAT,
            base=RED,
            thresholds=((0.25, ORANGE), (0.5, GREEN)),
            width=6,
            height=5,
            description="1 - (1 - availability) / (1 - objective) over the window; below 0: overspent.",
        ),
        Panel(
            "Burn rate",
            (Query(_burn("1h"), "1 h {{tenant}}"), Query(_burn("6h"), "6 h {{tenant}}")),
            "none",
            min=0,
            thresholds=((6, ORANGE), (14.4, RED)),
            width=12,
            height=5,
            description="How fast the error budget burns (1: exactly over the window). The page thresholds of "
            "KafkaTenantSloFastBurn (14.4 over 1 h and 5 m) and KafkaTenantSloSlowBurn (6 over 6 h and "
            "30 m) are marked.",
        ),
        Panel(
            "Unavailable minutes",
            (Query(f"max by (tenant) ({minute_expr(cluster=_SLO_C, tenant=_SLO_T)})", "{{tenant}}"),),
            "none",
            min=0,
            max=1,
            thresholds=((1, RED),),
            width=24,
            height=5,
            description="1 for a bad minute, 0 for a good one, nothing while unknown (the probe not up).",
        ),
    ),
)

# When each finding that holds now first appeared in the last day (ms for Grafana's date unit): the series exists
# only while the finding holds, so its earliest sample is when it started (or came back, within the day). A finding
# younger than the subquery's first step has no point there yet: its current sample's timestamp stands in.
_FINDING = f"kafka_client_advisor_finding{{{CT}}}"
FINDINGS_SINCE = (
    f"min by (finding, client_id, group) ((min_over_time(timestamp({_FINDING})[24h:1m]) or timestamp({_FINDING})) "
    f"and on (cluster, tenant, client_id, group, finding) {_FINDING}) * 1000"
)

ALERTS = Row(
    "Alerts and clients",
    (
        Panel(
            "Firing alerts",
            (Query(alerts(FIRING), instant=True),),
            "none",
            kind=Kind.TABLE,
            thresholds=((1, RED),),
            needs=Needs.FAULT,
            width=12,
            columns=ALERT_COLUMNS,
            description="The tenant's alerts that fire now (empty when all is well): the alert engine's, its Python "
            "detectors' included, and Prometheus' own for rules the engine does not evaluate.",
        ),
        Panel(
            "Clients by produce / fetch rate",
            (
                Query(
                    f"sum by (client_id, user) (kafka_client_produce_bytes_per_second{{{CT}}})", "produce {{client_id}}"
                ),
                Query(f"sum by (client_id, user) (kafka_client_fetch_bytes_per_second{{{CT}}})", "fetch {{client_id}}"),
            ),
            "Bps",
            min=0,
            width=12,
            description="Per-client byte rates from the brokers' quota sensors (they exist once any quota is set).",
        ),
        Panel(
            "Client advisor findings",
            (Query(FINDINGS_SINCE, instant=True),),
            "dateTimeAsIso",
            kind=Kind.TABLE,
            needs=Needs.FAULT,
            width=24,
            columns=(("finding", "finding"), ("client_id", "client"), ("group", "group"), ("Value", "since")),
            description="What the client advisor finds now (GET /api/v1/tenants/{tenant}/advice has the evidence, "
            "cause and settings to change; docs/advisor.md). client: the client, or the first suspect of "
            "connection churn; group: the consumer group of frequent rebalances; since: first seen in "
            "the last 24 h. Exported by the alerts role (kafka_client_advisor_finding).",
        ),
    ),
)

BOARD = Dashboard(
    uid="kafka-health-tenant",
    title="Kafka health / Tenant",
    description="A tenant's slice of the platform against its contract: availability objective and error budget, "
    "throughput, throttling, storage, lag, alerts and clients.",
    rows=(OVERVIEW, SLO, THROUGHPUT, STORAGE, LAG, SHARE_GROUPS, STREAMS_GROUPS, ALERTS),
    variables=(Var.DATASOURCE, Var.CLUSTER, Var.TENANT),
)
