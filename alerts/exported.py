"""The engine's alert instances as Prometheus series, so Grafana shows what the engine fires:

    kafka_health_alert_instance{alertname, alertstate, severity, cluster, broker, tenant, ...} 1

One series per pending or firing instance, labelled like Prometheus' own ``ALERTS`` (the instance's identity labels
plus ``alertstate``), so a dashboard reads both with one selector. Resolved instances have no series: the series
disappears when the alert resolves (Prometheus marks it stale), and a state change (pending -> firing) is a new
series, as in ``ALERTS``. An instance that hurts several tenants is several instances (``alerts.attribution``), so
each tenant's copy carries its ``tenant``; the engine's own alerts and those no tenant owns carry none.

Cardinality: the series are the active instances, nothing more; label names come from the rule catalog, the
detectors and the tenants' receiver labels. Silenced or inhibited instances are still exported (they fire; muting
is about notifications), like ``ALERTS`` under Alertmanager silences.

``ActiveAlerts`` holds the instances of the last evaluation, replaced whole by ``AlertService`` each cycle. They are
served however old they are: a stuck engine's last known alerts are what its store and API say too, and the
service's ``kafka_health_alert_last_evaluation_timestamp_seconds`` says it is stuck (unlike advisor findings,
hiding a firing alert is the worse failure).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from alerts.types import AlertState, Instance

ALERT_METRIC = "kafka_health_alert_instance"
_HELP = (
    "1 per pending or firing alert instance of the alert engine, with its labels and alertstate "
    "(like Prometheus' ALERTS; docs/metrics.md)"
)
_EXPORTED_STATES = (AlertState.PENDING, AlertState.FIRING)
# A label name Prometheus accepts and does not reserve; anything else would make the whole scrape fail.
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

Series = tuple[tuple[str, str], ...]  # sorted (label, value) pairs


def alert_series(instances: Iterable[Instance]) -> list[Series]:
    """Pure: the label sets of the series for ``instances``, sorted, one per pending or firing instance.

    ``alertname``, ``severity`` and ``alertstate`` come from the instance itself (they win over same-named labels);
    empty values and names Prometheus would refuse (``__name__``, invalid characters) are dropped. Two instances
    left with the same label set make one series, the firing one if either fires."""
    best: dict[Series, AlertState] = {}
    for inst in instances:
        if inst.state not in _EXPORTED_STATES:
            continue
        labels = {
            k: str(v)
            for k, v in inst.labels.items()
            if _LABEL_NAME.match(k) and not k.startswith("__") and k != "alertstate" and v not in (None, "")
        }
        labels.update(alertname=inst.rule, severity=inst.severity.value)
        key = tuple(sorted(labels.items()))
        if best.get(key) is not AlertState.FIRING:
            best[key] = inst.state
    return sorted(tuple(sorted((*key, ("alertstate", state.value)))) for key, state in best.items())


class ActiveAlerts(Collector):
    """The alert instances of the last evaluation, read on every scrape. Thread-safe: the engine thread publishes,
    the HTTP server's threads collect."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._series: list[Series] = []

    def publish(self, instances: Iterable[Instance]) -> None:
        """Replace the exported alerts with ``instances`` (all of them: an instance left out is not active)."""
        series = alert_series(instances)
        with self._lock:
            self._series = series

    def series(self) -> list[Series]:
        with self._lock:
            return list(self._series)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        g = GaugeMetricFamily(ALERT_METRIC, _HELP)
        for labels in self.series():  # label names differ between rules, as in ALERTS
            g.add_sample(ALERT_METRIC, dict(labels), 1.0)
        yield g
