"""Label filters and expression pieces shared by the dashboards' queries."""

from __future__ import annotations

C = 'cluster=~"$cluster"'
CB = 'cluster=~"$cluster", broker=~"$broker"'
CT = 'cluster=~"$cluster", tenant=~"$tenant"'
RI = "$__rate_interval"


def rate(metric: str, selector: str, by: str) -> str:
    return f"sum by ({by}) (rate({metric}{{{selector}}}[{RI}]))"


def client_throttle(selector: str, by: str) -> str:
    """The worst throttle time of a client over the three quota types. label_replace keeps the three apart so
    ``or`` drops none of them (they differ only by metric name, which ``or`` ignores)."""
    parts = [
        f'label_replace(kafka_client_{q}_throttle_time_seconds{{{selector}}}, "quota", "{q}", "", "")'
        for q in ("produce", "fetch", "request")
    ]
    return f"max by ({by}) (" + " or ".join(parts) + ")"


# The rules the alert engine evaluates. Prometheus may evaluate the same rules too (`kafka-health rules export`,
# deploy/prometheus): their ALERTS copies are left out, or every such alert would count twice.
_ENGINE_RULES = 'label_replace(group by (rule) (kafka_health_alert_rule_health), "alertname", "$1", "rule", "(.+)")'
# The watchdog always fires by design (a dead man's switch for Alertmanager): on a dashboard it is noise.
_NOT_WATCHDOG = 'watchdog!="true"'


def alerts(selector: str) -> str:
    """Alert instances matching ``selector`` (labels of ``ALERTS``: ``alertstate``, ``alertname``, ``severity``,
    ``cluster``, ``tenant``...): the alert engine's own (``kafka_health_alert_instance``, its Python detectors
    included), and Prometheus' ``ALERTS`` of rules the engine does not evaluate. When the engine is not running,
    ``kafka_health_alert_rule_health`` goes stale and Prometheus' copies show instead."""
    sel = f"{selector}, {_NOT_WATCHDOG}"
    return f"(kafka_health_alert_instance{{{sel}}} or (ALERTS{{{sel}}} unless on (alertname) {_ENGINE_RULES}))"


# Columns of the firing-alerts tables, most telling first; other labels follow. __name__ says which side it came from.
ALERT_COLUMNS = (
    ("alertname", "alert"),
    ("severity", "severity"),
    ("cluster", "cluster"),
    ("broker", "broker"),
    ("tenant", "tenant"),
    ("topic", "topic"),
    ("group", "group"),
    ("client_id", "client"),
    ("__name__", "source"),
)
