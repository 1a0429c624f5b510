"""The advisor's findings as a Prometheus series, for the tenant dashboard and the weekly report's archive:

    kafka_client_advisor_finding{cluster, tenant, client_id, group, finding} 1

One series per finding that holds now; it disappears when the finding clears (Prometheus marks it stale), so
"since when" is the first sample of the series (the dashboard reads it with ``timestamp()``).

The findings are not computed here. ``FindingsBoard`` holds the latest ones per cluster, published by whoever
already computed them: in ``serve`` the alerts role's ``KafkaClientHurtsOtherTenants`` detector
(``alerts.detectors.noisy_clients``), which runs every rule over every cluster's snapshot each evaluation cycle.
Publishing must replace a cluster's findings whole; a cluster the publisher could not read is ``forget``-ed (unknown
is not "still holds"). Findings older than ``max_age_seconds`` are not served: a stuck engine shows no findings
rather than stale ones (its own ``kafka_health_alert_last_evaluation_timestamp_seconds`` says it is stuck).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from monitor.advisor.types import Finding

FINDING_METRIC = "kafka_client_advisor_finding"
FINDING_LABELS = ("cluster", "tenant", "client_id", "group", "finding")
_HELP = (
    "1 while the client advisor's finding holds (docs/advisor.md); client_id is the client, or the first "
    "suspect of a cluster-level finding (connection churn); group is the consumer group of group findings"
)


def finding_series(findings: Iterable[Finding]) -> list[tuple[str, ...]]:
    """Pure: the label values (``FINDING_LABELS`` order) of the series for ``findings``, sorted, without repeats.

    ``client_id`` is the finding's own: one Kafka cannot attribute to a client (connection churn, a tenant-and-topic
    finding whose culprit is not identified yet) has none, never a suspect's or a candidate's (issue 28: a name
    needs that client's own evidence); ``tenant`` is "" for operators-only findings (unknown or outdated software on
    a shared cluster, churn with every suspect). Two users of one client id collapse into one series."""
    out = set()
    for f in findings:
        out.add((f.cluster, f.tenant or "", f.client_id, f.group, f.kind.value))
    return sorted(out)


class FindingsBoard(Collector):
    """Latest findings per cluster, read on every scrape. Thread-safe: the engine thread publishes, the HTTP
    server's threads collect."""

    def __init__(self, *, max_age_seconds: float, clock: Callable[[], float] = time.monotonic):
        self.max_age_seconds, self._clock = max_age_seconds, clock
        self._lock = threading.Lock()
        self._by_cluster: dict[str, tuple[float, list[tuple[str, ...]]]] = {}

    def publish(self, cluster: str, findings: Iterable[Finding]) -> None:
        """Replace ``cluster``'s findings with ``findings`` (all of them: a finding left out has cleared)."""
        series = finding_series(findings)
        with self._lock:
            self._by_cluster[cluster] = (self._clock(), series)

    def forget(self, cluster: str) -> None:
        """``cluster`` could not be read: its findings are unknown, not still holding."""
        with self._lock:
            self._by_cluster.pop(cluster, None)

    def series(self) -> list[tuple[str, ...]]:
        now = self._clock()
        with self._lock:
            fresh = [s for at, rows in self._by_cluster.values() if now - at <= self.max_age_seconds for s in rows]
        return sorted(fresh)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        g = GaugeMetricFamily(FINDING_METRIC, _HELP, labels=FINDING_LABELS)
        for labels in self.series():
            g.add_metric(labels, 1.0)
        yield g
