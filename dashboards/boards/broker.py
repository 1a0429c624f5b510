"""Broker detail: JVM and GC, disk with the disk-full forecast, request latency breakdown, network."""

from __future__ import annotations

from dashboards.boards.selectors import CB, RI, C, rate
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

LEG = "broker {{broker}}"

JVM = Row(
    "JVM and GC",
    (
        Panel(
            "Heap used / max",
            (
                Query(f"kafka_jvm_heap_used_bytes{{{CB}}}", f"used {LEG}"),
                Query(f"kafka_jvm_heap_max_bytes{{{CB}}}", f"max {LEG}"),
            ),
            "bytes",
            min=0,
            width=8,
        ),
        Panel(
            "Heap after GC",
            (Query(f"kafka_jvm_heap_after_gc_used_bytes{{{CB}}} / kafka_jvm_heap_max_bytes{{{CB}}}", LEG),),
            "percentunit",
            thresholds=((0.7, ORANGE), (0.85, RED)),
            min=0,
            max=1,
            width=8,
            description="Live data left after the last collection of each heap pool: above 85% the JVM "
            "is close to running out of memory whatever the GC does.",
        ),
        Panel(
            "GC time",
            (
                Query(
                    f"sum by (broker, gc) (rate(kafka_jvm_gc_collection_seconds_total{{{CB}}}[{RI}]))", "{{gc}} " + LEG
                ),
            ),
            "percentunit",
            thresholds=((0.05, ORANGE), (0.15, RED)),
            min=0,
            width=8,
            description="Share of wall time spent in GC, per collector.",
        ),
        Panel(
            "GC runs",
            (Query(f"sum by (broker, gc) (rate(kafka_jvm_gc_collections_total{{{CB}}}[{RI}]))", "{{gc}} " + LEG),),
            "ops",
            min=0,
            width=8,
        ),
        Panel(
            "Process CPU",
            (Query(f"rate(kafka_jvm_process_cpu_seconds_total{{{CB}}}[{RI}])", LEG),),
            "short",
            thresholds=((1.5, ORANGE),),
            min=0,
            width=8,
            description="CPU cores used by the broker JVM.",
        ),
        Panel(
            "File descriptors used",
            (Query(f"kafka_jvm_open_fds{{{CB}}} / kafka_jvm_max_fds{{{CB}}}", LEG),),
            "percentunit",
            thresholds=((0.8, ORANGE), (0.9, RED)),
            min=0,
            max=1,
            width=8,
        ),
    ),
)

DISK = Row(
    "Disk",
    (
        Panel(
            "Log-dir filesystem used",
            (
                Query(
                    f"1 - kafka_host_filesystem_avail_bytes{{{CB}}} / kafka_host_filesystem_size_bytes{{{CB}}}",
                    "{{path}} " + LEG,
                ),
            ),
            "percentunit",
            thresholds=((0.8, ORANGE), (0.9, RED)),
            min=0,
            max=1,
            width=8,
            description="From the host (statvfs): Kafka has no JMX metric for free space.",
        ),
        Panel(
            "Free space now and forecast in 24 h",
            (
                Query(f"kafka_host_filesystem_avail_bytes{{{CB}}}", "now {{path}} " + LEG),
                Query(
                    f"predict_linear(kafka_host_filesystem_avail_bytes{{{CB}}}[1h], 86400)", "in 24 h {{path}} " + LEG
                ),
            ),
            "bytes",
            base=RED,
            thresholds=((1, GREEN),),
            width=8,
            description="Linear forecast over the last hour; red below zero: the disk fills within a day.",
        ),
        Panel(
            "Disk full in",
            (
                Query(
                    f"kafka_host_filesystem_avail_bytes{{{CB}}}"
                    f" / (-deriv(kafka_host_filesystem_avail_bytes{{{CB}}}[30m]) > 0)",
                    "{{path}} " + LEG,
                ),
            ),
            "s",
            kind=Kind.STAT,
            base=RED,
            thresholds=((21600, ORANGE), (86400, GREEN)),
            width=8,
            needs=Needs.FAULT,
            description="Time until the filesystem is full at the rate of the last 30 minutes; empty while free "
            "space is not shrinking.",
        ),
        Panel(
            "Log size by topic (top 10)",
            (Query(f"topk(10, sum by (topic) (kafka_topic_log_size_bytes{{{CB}}}))", "{{topic}}"),),
            "bytes",
            min=0,
            width=8,
        ),
        Panel(
            "Disk I/O",
            (
                Query(
                    f"sum by (host, device) (rate(kafka_host_disk_written_bytes_total{{{C}}}[{RI}]))",
                    "write {{host}} {{device}}",
                ),
                Query(
                    f"sum by (host, device) (rate(kafka_host_disk_read_bytes_total{{{C}}}[{RI}]))",
                    "read {{host}} {{device}}",
                ),
            ),
            "Bps",
            min=0,
            width=8,
        ),
        Panel(
            "Offline log dirs",
            (Query(f"kafka_broker_offline_log_dirs{{{CB}}}", LEG),),
            "none",
            kind=Kind.STAT,
            thresholds=((1, RED),),
            width=8,
        ),
    ),
)

LATENCY = Row(
    "Request latency breakdown",
    (
        Panel(
            "Produce p99 by phase",
            (
                Query(
                    f'max by (phase) (kafka_broker_request_latency_seconds{{{CB}, request="Produce", quantile="0.99", '
                    f'phase!="total"}})',
                    "{{phase}}",
                ),
            ),
            "s",
            thresholds=((0.1, ORANGE), (0.5, RED)),
            min=0,
            stacked=True,
            description="Where a produce request spends its time: queue, local write, waiting for followers "
            "(remote), throttle, response queue and send.",
        ),
        Panel(
            "Consumer fetch p99 by phase",
            (
                Query(
                    f"max by (phase) (kafka_broker_request_latency_seconds{{{CB}, "
                    'request="FetchConsumer", quantile="0.99", '
                    f'phase!="total"}})',
                    "{{phase}}",
                ),
            ),
            "s",
            thresholds=((0.6, ORANGE), (1, RED)),
            min=0,
            stacked=True,
            description="Remote time of a fetch includes fetch.max.wait.ms when there is nothing new to read.",
        ),
        Panel(
            "Total time p99 by request",
            (
                Query(
                    f'max by (request) (kafka_broker_request_latency_seconds{{{CB}, phase="total", quantile="0.99"}})',
                    "{{request}}",
                ),
            ),
            "s",
            thresholds=((0.5, ORANGE), (1, RED)),
            min=0,
        ),
        Panel(
            "Requests by API",
            (Query(rate("kafka_broker_requests_total", CB, "request"), "{{request}}"),),
            "reqps",
            min=0,
        ),
    ),
)

NETWORK = Row(
    "Network",
    (
        Panel(
            "Client bytes in / out",
            (
                Query(rate("kafka_broker_bytes_in_total", CB, "broker"), "in " + LEG),
                Query(rate("kafka_broker_bytes_out_total", CB, "broker"), "out " + LEG),
            ),
            "Bps",
            min=0,
            width=8,
        ),
        Panel(
            "Replication bytes in / out",
            (
                Query(rate("kafka_broker_replication_bytes_in_total", CB, "broker"), "in " + LEG),
                Query(rate("kafka_broker_replication_bytes_out_total", CB, "broker"), "out " + LEG),
            ),
            "Bps",
            min=0,
            width=8,
        ),
        Panel(
            "Host network",
            (
                Query(
                    f"sum by (host, device) (rate(kafka_host_network_receive_bytes_total{{{C}}}[{RI}]))",
                    "rx {{host}} {{device}}",
                ),
                Query(
                    f"sum by (host, device) (rate(kafka_host_network_transmit_bytes_total{{{C}}}[{RI}]))",
                    "tx {{host}} {{device}}",
                ),
            ),
            "Bps",
            min=0,
            width=8,
        ),
        Panel(
            "Network processor idle per thread",
            (Query(f"kafka_broker_network_processor_idle_ratio{{{CB}}}", "processor {{processor}} " + LEG),),
            "percentunit",
            base=RED,
            thresholds=((0.2, ORANGE), (0.3, GREEN)),
            min=0,
            max=1,
            width=8,
        ),
        Panel(
            "Response queue per processor",
            (Query(f"kafka_broker_processor_response_queue_size{{{CB}}}", "processor {{processor}} " + LEG),),
            "short",
            thresholds=((20, ORANGE), (100, RED)),
            min=0,
            width=8,
        ),
        Panel(
            "Connections",
            (Query(f"sum by (broker) (kafka_broker_connections{{{CB}}})", LEG),),
            "short",
            thresholds=((5000, ORANGE),),
            min=0,
            width=8,
        ),
    ),
)

BOARD = Dashboard(
    uid="kafka-health-broker",
    title="Kafka health / Broker detail",
    description="One or more brokers: JVM and GC, disk and the disk-full forecast, latency breakdown, network.",
    rows=(JVM, DISK, LATENCY, NETWORK),
    variables=(Var.DATASOURCE, Var.CLUSTER, Var.BROKER),
)
