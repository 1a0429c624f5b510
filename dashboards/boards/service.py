"""Alerts, and kafka-health's own health: collection targets, Prometheus' scrape of the service, the alert engine."""

from __future__ import annotations

from dashboards.boards.selectors import ALERT_COLUMNS, RI, C, alerts
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

JOB = 'job=~"kafka-health.*"'
FIRING, PENDING = f'alertstate="firing", {C}', f'alertstate="pending", {C}'
CRITICAL, WARNING = f'{FIRING}, severity="critical"', f'{FIRING}, severity="warning"'

ALERTS = Row(
    "Alerts",
    (
        Panel(
            "Critical firing",
            (Query(f"count({alerts(CRITICAL)}) or vector(0)", "critical"),),
            "none",
            kind=Kind.STAT,
            thresholds=((1, RED),),
            width=4,
            height=5,
        ),
        Panel(
            "Warning firing",
            (Query(f"count({alerts(WARNING)}) or vector(0)", "warning"),),
            "none",
            kind=Kind.STAT,
            thresholds=((1, ORANGE),),
            width=4,
            height=5,
        ),
        Panel(
            "Pending",
            (Query(f"count({alerts(PENDING)}) or vector(0)", "pending"),),
            "none",
            kind=Kind.STAT,
            thresholds=((1, ORANGE),),
            width=4,
            height=5,
        ),
        Panel(
            "Firing alerts",
            (Query(alerts(FIRING), instant=True),),
            "none",
            kind=Kind.TABLE,
            thresholds=((1, RED),),
            width=12,
            height=5,
            needs=Needs.FAULT,
            columns=ALERT_COLUMNS,
            description="The alert engine's instances (kafka_health_alert_instance) and Prometheus' own ALERTS of "
            "rules the engine does not evaluate; the watchdog is left out.",
        ),
        Panel(
            "Firing alerts over time",
            (Query(f"count by (alertname, severity) ({alerts(FIRING)})", "{{alertname}} ({{severity}})"),),
            "none",
            min=0,
            thresholds=((1, RED),),
            width=24,
            needs=Needs.FAULT,
            stacked=True,
        ),
    ),
)

COLLECTION = Row(
    "Collection",
    (
        Panel(
            "Targets failing",
            (
                Query(
                    f"sum by (cluster, collector) (1 - kafka_health_scrape_success{{{C}}})", "{{cluster}} {{collector}}"
                ),
            ),
            "none",
            min=0,
            thresholds=((1, RED),),
            width=8,
            description="Targets whose last collection failed or is stale (older than two intervals).",
        ),
        Panel(
            "Collection duration",
            (Query(f"max by (collector) (kafka_health_scrape_duration_seconds{{{C}}})", "{{collector}}"),),
            "s",
            min=0,
            thresholds=((5, ORANGE), (10, RED)),
            width=8,
            description="The slowest target per collector. Near the collection interval: add shards.",
        ),
        Panel(
            "Series per collector",
            (Query(f"sum by (collector) (kafka_health_scrape_series{{{C}}})", "{{collector}}"),),
            "short",
            min=0,
            width=8,
            thresholds=((20000, ORANGE),),
        ),
        Panel(
            "Series cut by the per-target cap",
            (Query(f"sum by (target) (kafka_health_scrape_series_dropped{{{C}}})", "{{target}}"),),
            "short",
            min=0,
            thresholds=((1, ORANGE),),
            width=8,
            description="Non-zero: raise collection.max_series_per_target or aggregate more.",
        ),
        Panel(
            "Collection failures by reason",
            (
                Query(
                    f"sum by (collector, reason) (increase(kafka_health_scrape_failures_total{{{C}}}[{RI}]))",
                    "{{collector}} {{reason}}",
                ),
            ),
            "short",
            min=0,
            thresholds=((1, RED),),
            width=8,
            needs=Needs.FAULT,
        ),
        Panel(
            "Last success age",
            (
                Query(
                    f"time() - max by (target) (kafka_health_scrape_last_success_timestamp_seconds{{{C}}})",
                    "{{target}}",
                ),
            ),
            "s",
            min=0,
            thresholds=((30, ORANGE), (60, RED)),
            width=8,
        ),
    ),
)

SERVICE = Row(
    "Service",
    (
        Panel(
            "Service scraped by Prometheus",
            (Query(f"up{{{JOB}}}", "{{instance}}"),),
            "none",
            kind=Kind.STAT,
            base=RED,
            thresholds=((1, GREEN),),
            width=6,
            height=5,
        ),
        Panel(
            "Scrape duration of /metrics",
            (Query(f"scrape_duration_seconds{{{JOB}}}", "{{instance}}"),),
            "s",
            min=0,
            thresholds=((5, ORANGE), (10, RED)),
            width=6,
            height=5,
        ),
        Panel(
            "Samples per scrape",
            (Query(f"scrape_samples_scraped{{{JOB}}}", "{{instance}}"),),
            "short",
            min=0,
            thresholds=((100000, ORANGE),),
            width=6,
            height=5,
        ),
        Panel(
            "Version and roles",
            (Query("kafka_health_build_info", "{{version}} {{roles}}", instant=True),),
            "none",
            kind=Kind.TABLE,
            width=6,
            height=5,
        ),
    ),
)

ENGINE = Row(
    "Alert engine",
    (
        Panel(
            "Evaluation age",
            (Query("time() - max(kafka_health_alert_last_evaluation_timestamp_seconds)", "age"),),
            "s",
            kind=Kind.STAT,
            thresholds=((60, ORANGE), (300, RED)),
            width=6,
            needs=Needs.ALERT_ENGINE,
            description="Seconds since the last good evaluation cycle; the watchdog alert stops when this grows.",
        ),
        Panel(
            "Evaluation duration p90",
            (
                Query(
                    "histogram_quantile(0.9, sum by (le) "
                    f"(rate(kafka_health_alert_evaluation_duration_seconds_bucket[{RI}])))",
                    "p90",
                ),
            ),
            "s",
            min=0,
            thresholds=((5, ORANGE), (15, RED)),
            width=6,
            needs=Needs.ALERT_ENGINE,
        ),
        Panel(
            "Rules not healthy",
            (Query('sum by (health) (kafka_health_alert_rule_health{health!="ok"})', "{{health}}"),),
            "none",
            min=0,
            thresholds=((1, ORANGE),),
            width=6,
            needs=Needs.ALERT_ENGINE,
            description="Rules that failed (err) or whose inputs have no data (nodata).",
        ),
        Panel(
            "Notification outbox",
            (
                Query("kafka_health_alert_notification_queue_depth", "queued"),
                Query("kafka_health_alert_dead_letters", "dead letters"),
            ),
            "short",
            min=0,
            thresholds=((1, ORANGE), (100, RED)),
            width=6,
            needs=Needs.ALERT_ENGINE,
        ),
    ),
)

BOARD = Dashboard(
    uid="kafka-health-service",
    title="Kafka health / Alerts and service health",
    description="Alerts firing, and whether kafka-health itself collects, is scraped and evaluates in time.",
    rows=(ALERTS, COLLECTION, SERVICE, ENGINE),
)
