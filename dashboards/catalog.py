"""Which metric names exist: the collectors' catalog (docs/metrics.md), the service's own series, Prometheus' own.

The dashboards and the recording rules may only name metrics from here (tests/unit/test_dashboards_model.py,
tests/unit/test_deploy_prometheus.py). docs/metrics.md is the collectors' contract ("lists every metric"), so it is
read rather than the collectors' code, where many names are built from tables. A name in a backtick span of that
file counts, e.g. ``kafka_broker_bytes_in_total`` or ``kafka_broker_bytes_in_total{cluster, broker}``.
"""

from __future__ import annotations

import re
from pathlib import Path

from collectors import contract

# Series Prometheus itself creates: alert state and per-target scrape health.
PROMETHEUS_SERIES = frozenset(
    {
        "ALERTS",
        "ALERTS_FOR_STATE",
        "up",
        "scrape_duration_seconds",
        "scrape_samples_scraped",
        "scrape_series_added",
        "scrape_samples_post_metric_relabeling",
    }
)
# Series of monitor/serve.py itself.
SERVICE_SERIES = frozenset({"kafka_health_build_info"})
_CODE_SPAN = re.compile(r"`([^`]+)`")
_NAME = re.compile(r"\b(kafka_[a-z0-9_]+)\b")
_SUFFIXES = ("_total", "_bucket", "_sum", "_count", "_created")


def documented_metrics(doc: Path) -> frozenset[str]:
    """Metric names in code spans of a markdown catalog."""
    names: set[str] = set()
    for span in _CODE_SPAN.findall(doc.read_text()):
        names.update(_NAME.findall(span))
    return frozenset(names)


def known_metrics(collectors_doc: Path) -> frozenset[str]:
    return documented_metrics(collectors_doc) | contract.METRICS | SERVICE_SERIES | PROMETHEUS_SERIES


def is_known(name: str, known: frozenset[str]) -> bool:
    """Exact, or the same family: a counter documented with or without ``_total``, a histogram's series."""
    if name in known:
        return True
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in known:
            return True
    return name + "_total" in known
