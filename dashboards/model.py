"""The dashboards' own model: what a panel shows and how it is judged, independent of Grafana's JSON.

Dashboards are declared with these small frozen types (dashboards/boards/), rendered to Grafana JSON with
grafana-foundation-sdk (dashboards/render.py), and proven by running every ``Query.expr`` against a live Prometheus
(tests/integration/test_dashboards_live.py). A panel says when it is expected to show data (``Needs``): the live
test asserts data for ``Needs.DATA`` panels under the demo load; the others are honest about why they may be empty.

Rules a panel must follow (tests/unit/test_dashboards_model.py checks them):
- a unit and thresholds (at least the base step), so a value is read at a glance;
- queries use only the dashboard's variables ($cluster, $broker, $tenant) and Grafana's ($__rate_interval...);
- every metric it names is exported by kafka-health (collectors, the service, Prometheus' own ALERTS/up).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Needs(enum.StrEnum):
    """When a panel is expected to have data."""

    DATA = "data"  # always, on a healthy cluster under load: the live test requires data
    FAULT = "fault"  # only while something is wrong (an alert fires, an error is counted): checked by fault tests
    ALERT_ENGINE = "alert-engine"  # series of the alerts role (`serve --role alerts`)
    # only where the tenant has share groups (KIP-932, Kafka 4.2+): tests/e2e/test_share_groups.py runs these
    # panels' queries against the live Prometheus while its share group is there
    SHARE_GROUPS = "share-groups"
    # only where the tenant has Kafka Streams groups (KIP-1071, on by default from Kafka 4.2): the same e2e module runs
    # these panels' queries while its Kafka Streams application is in its group
    STREAMS_GROUPS = "streams-groups"


class Kind(enum.StrEnum):
    TIMESERIES = "timeseries"
    STAT = "stat"
    TABLE = "table"
    BARGAUGE = "bargauge"


# Threshold colours, Grafana's named palette.
GREEN, ORANGE, RED, BLUE = "green", "orange", "red", "blue"


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""
    instant: bool = False  # tables and "top N" bars read one instant, not a range


@dataclass(frozen=True)
class Panel:
    """One Grafana panel. ``thresholds`` are (value, colour) steps above the ``base`` colour."""

    title: str
    queries: tuple[Query, ...]
    unit: str
    kind: Kind = Kind.TIMESERIES
    thresholds: tuple[tuple[float, str], ...] = ()
    base: str = GREEN
    description: str = ""
    min: float | None = None
    max: float | None = None
    width: int = 12
    height: int = 8
    stacked: bool = False
    needs: Needs = Needs.DATA
    # Tables: (field, header) of the columns to show, in order (labels by name, the value as "Value"); Grafana's
    # "Time" column is hidden. Empty: Grafana's default columns.
    columns: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not self.queries:
            raise ValueError(f"panel {self.title!r} has no query")
        if self.columns and self.kind is not Kind.TABLE:
            raise ValueError(f"panel {self.title!r}: columns are for tables")
        values = [v for v, _ in self.thresholds]
        if values != sorted(values):
            raise ValueError(f"panel {self.title!r}: threshold steps must ascend")


@dataclass(frozen=True)
class Row:
    title: str
    panels: tuple[Panel, ...]


class Var(enum.StrEnum):
    """The dashboard variables. Every dashboard has DATASOURCE; the others as declared."""

    DATASOURCE = "datasource"
    CLUSTER = "cluster"
    BROKER = "broker"
    TENANT = "tenant"


# Where each variable's values come from: (metric, label). label_values(metric{filters}, label) in Grafana.
# Chosen so the list is complete even during faults: scrape_success has every configured cluster, broker_up every
# configured broker (0 when down), tenant_info every configured tenant.
VARIABLE_SOURCES: dict[Var, tuple[str, str]] = {
    Var.CLUSTER: ("kafka_health_scrape_success", "cluster"),
    Var.BROKER: ("kafka_cluster_broker_up", "broker"),
    Var.TENANT: ("kafka_health_tenant_info", "tenant"),
}


@dataclass(frozen=True)
class Dashboard:
    uid: str
    title: str
    description: str
    rows: tuple[Row, ...]
    variables: tuple[Var, ...] = (Var.DATASOURCE, Var.CLUSTER)
    tags: tuple[str, ...] = ("kafka", "kafka-health")
    # Alert annotations: firing alerts (the engine's and Prometheus' ALERTS), filtered by the dashboard's variables.
    alert_annotation: bool = True

    @property
    def filename(self) -> str:
        return f"{self.uid}.json"

    def panels(self) -> list[Panel]:
        return [p for row in self.rows for p in row.panels]
