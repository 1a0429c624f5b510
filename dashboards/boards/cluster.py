"""Cluster overview: is each cluster healthy, and if not, where to look next."""

from __future__ import annotations

from dashboards.boards.selectors import C, rate
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
)

_stat = dict(kind=Kind.STAT, width=4, height=4)

HEALTH = Row(
    "Health",
    (
        Panel(
            "Collector targets up",
            (
                Query(
                    f"sum by (cluster) (kafka_health_scrape_success{{{C}}})"
                    f" / count by (cluster) (kafka_health_scrape_success{{{C}}})",
                    "{{cluster}}",
                ),
            ),
            "percentunit",
            base=RED,
            thresholds=((0.9, ORANGE), (1, GREEN)),
            min=0,
            max=1,
            description="Share of this cluster's collection targets (brokers' JMX, hosts, Admin API) whose last "
            "collection succeeded.",
            **_stat,
        ),
        Panel(
            "Brokers up",
            (Query(f"sum by (cluster) (kafka_cluster_broker_up{{{C}}})", "{{cluster}}"),),
            "none",
            base=RED,
            thresholds=((1, GREEN),),
            description="Brokers registered in the cluster metadata.",
            **_stat,
        ),
        Panel(
            "Brokers down",
            (
                Query(
                    f"count by (cluster) (kafka_cluster_broker_up{{{C}}} == 0) "
                    f"or sum by (cluster) (kafka_cluster_broker_up{{{C}}}) * 0",
                    "{{cluster}}",
                ),
            ),
            "none",
            thresholds=((1, RED),),
            description="Configured brokers missing from the cluster metadata.",
            **_stat,
        ),
        Panel(
            "Active controller",
            (Query(f"max by (cluster) (kafka_cluster_controller_id{{{C}}})", "{{cluster}}"),),
            "none",
            base=RED,
            thresholds=((0, GREEN),),
            description="Node id of the active controller; -1 if none.",
            **_stat,
        ),
        Panel(
            "Offline partitions",
            (Query(f"sum by (cluster) (kafka_topic_offline_partitions{{{C}}})", "{{cluster}}"),),
            "none",
            thresholds=((1, RED),),
            description="Partitions without a leader: their producers and consumers fail.",
            **_stat,
        ),
        Panel(
            "Under-replicated / under min ISR",
            (
                Query(f"sum by (cluster) (kafka_broker_under_replicated_partitions{{{C}}})", "URP {{cluster}}"),
                Query(f"sum by (cluster) (kafka_broker_under_min_isr_partitions{{{C}}})", "under min ISR {{cluster}}"),
            ),
            "none",
            thresholds=((1, ORANGE),),
            description="Under min ISR means acks=all producers of those partitions are failing.",
            **_stat,
        ),
    ),
)

THROUGHPUT = Row(
    "Throughput",
    (
        Panel(
            "Bytes in / out",
            (
                Query(rate("kafka_broker_bytes_in_total", C, "cluster"), "in {{cluster}}"),
                Query(rate("kafka_broker_bytes_out_total", C, "cluster"), "out {{cluster}}"),
            ),
            "Bps",
            min=0,
            width=8,
            description="Client traffic (replication excluded).",
        ),
        Panel(
            "Messages in",
            (Query(rate("kafka_broker_messages_in_total", C, "cluster"), "{{cluster}}"),),
            "ops",
            min=0,
            width=8,
        ),
        Panel(
            "Requests by API",
            (Query(rate("kafka_broker_requests_total", C, "request"), "{{request}}"),),
            "reqps",
            min=0,
            width=8,
        ),
        Panel(
            "Request errors",
            (
                Query(
                    rate("kafka_broker_request_errors_total", f'{C}, error!="NONE"', "request, error"),
                    "{{request}} {{error}}",
                ),
            ),
            "reqps",
            thresholds=((1, ORANGE),),
            min=0,
            width=12,
            needs=Needs.FAULT,
            description="Responses with an error code. Kafka creates an error's meter on its first occurrence.",
        ),
        Panel(
            "Replication traffic",
            (
                Query(rate("kafka_broker_replication_bytes_in_total", C, "cluster"), "in {{cluster}}"),
                Query(rate("kafka_broker_replication_bytes_out_total", C, "cluster"), "out {{cluster}}"),
            ),
            "Bps",
            min=0,
            width=12,
        ),
    ),
)

REQUEST_PATH = Row(
    "Request path",
    (
        Panel(
            "Produce / fetch p99 total time",
            (
                Query(
                    f"max by (broker, request) (kafka_broker_request_latency_seconds{{{C}, "
                    'phase="total", quantile="0.99", '
                    f'request=~"Produce|FetchConsumer|FetchFollower"}})',
                    "{{request}} broker {{broker}}",
                ),
            ),
            "s",
            thresholds=((0.1, ORANGE), (0.5, RED)),
            min=0,
            width=12,
            description="Kafka's own histogram quantile over its recent reservoir, per broker.",
        ),
        Panel(
            "Request handler idle",
            (Query(f"kafka_broker_request_handler_idle_ratio{{{C}}}", "broker {{broker}}"),),
            "percentunit",
            base=RED,
            thresholds=((0.2, ORANGE), (0.3, GREEN)),
            min=0,
            max=1,
            width=6,
            description="Rate of the idle meter's Count (not MeanRate). Below 20%: requests queue for handlers.",
        ),
        Panel(
            "Network processor idle",
            (Query(f"kafka_broker_network_processor_avg_idle_ratio{{{C}}}", "broker {{broker}}"),),
            "percentunit",
            base=RED,
            thresholds=((0.2, ORANGE), (0.3, GREEN)),
            min=0,
            max=1,
            width=6,
        ),
        Panel(
            "Request queue",
            (Query(f"kafka_broker_request_queue_size{{{C}}}", "broker {{broker}}"),),
            "short",
            thresholds=((50, ORANGE), (200, RED)),
            min=0,
            width=12,
            description="Requests waiting for a request handler thread.",
        ),
        Panel(
            "Response queue",
            (Query(f"kafka_broker_response_queue_size{{{C}}}", "broker {{broker}}"),),
            "short",
            thresholds=((50, ORANGE), (200, RED)),
            min=0,
            width=12,
            description="Responses waiting for a network thread: a backlog points at a slow client.",
        ),
    ),
)

PARTITIONS = Row(
    "Partitions and controller",
    (
        Panel(
            "Partitions and leaders per broker",
            (
                Query(f"kafka_broker_partitions{{{C}}}", "replicas broker {{broker}}"),
                Query(f"kafka_broker_leader_partitions{{{C}}}", "leaders broker {{broker}}"),
            ),
            "short",
            min=0,
            width=8,
        ),
        Panel(
            "ISR shrinks / expands",
            (
                Query(rate("kafka_broker_isr_shrinks_total", C, "broker"), "shrinks broker {{broker}}"),
                Query(rate("kafka_broker_isr_expands_total", C, "broker"), "expands broker {{broker}}"),
            ),
            "ops",
            thresholds=((0.1, ORANGE),),
            min=0,
            width=8,
            description="Churn: a follower repeatedly falling out of and back into sync.",
        ),
        Panel(
            "Controller: fenced brokers, metadata lag",
            (
                Query(f"max by (cluster) (kafka_cluster_fenced_brokers{{{C}}})", "fenced {{cluster}}"),
                Query(f"max by (cluster) (kafka_cluster_active_controllers{{{C}}})", "active controllers {{cluster}}"),
            ),
            "short",
            thresholds=((2, RED),),
            min=0,
            width=8,
        ),
    ),
)

BOARD = Dashboard(
    uid="kafka-health-cluster",
    title="Kafka health / Cluster overview",
    description="Health per cluster: brokers, controller, partitions, throughput, request path.",
    rows=(HEALTH, THROUGHPUT, REQUEST_PATH, PARTITIONS),
)
