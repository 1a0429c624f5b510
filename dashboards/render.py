"""Rendering the dashboards' model into Grafana JSON with grafana-foundation-sdk. Pure: spec in, dict out.

Every panel and query uses the ``$datasource`` variable (type prometheus), so one JSON works against any
Prometheus; deploy/grafana provisions the default one. Layout is computed here (rows of 24 columns), so the
declarations in dashboards/boards/ say only what to show.
"""

from __future__ import annotations

import json
from typing import Any

from grafana_foundation_sdk.builders import (
    bargauge,
    prometheus,
    stat,
    table,
    timeseries,
)
from grafana_foundation_sdk.builders import common as common_b
from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as dm
from grafana_foundation_sdk.models import prometheus as prom_models

from dashboards.boards.selectors import alerts
from dashboards.model import VARIABLE_SOURCES, Dashboard, Kind, Panel, Var

DATASOURCE = dm.DataSourceRef(type_val="prometheus", uid="${datasource}")
DEFAULT_DATASOURCE_UID = "kafka-health-prometheus"  # deploy/grafana/provisioning/datasources/kafka-health.yml
GRID_COLUMNS = 24

_PANEL_BUILDERS = {
    Kind.TIMESERIES: timeseries.Panel,
    Kind.STAT: stat.Panel,
    Kind.TABLE: table.Panel,
    Kind.BARGAUGE: bargauge.Panel,
}


def variable_query(var: Var) -> str:
    """The ``label_values`` query of a variable, filtered by the variables before it (broker by cluster)."""
    metric, label = VARIABLE_SOURCES[var]
    selector = '{cluster=~"$cluster"}' if var is Var.BROKER else ""
    return f"label_values({metric}{selector}, {label})"


def alert_annotation_expr(board: Dashboard) -> str:
    """Firing alerts (the engine's and Prometheus' own, ``boards.selectors.alerts``) filtered by the board's
    variables."""
    filters = ['alertstate="firing"']
    if Var.CLUSTER in board.variables:
        filters.append('cluster=~"$cluster"')
    if Var.TENANT in board.variables:
        filters.append('tenant=~"$tenant"')
    return alerts(", ".join(filters))


def _variable(var: Var):
    if var is Var.DATASOURCE:
        return (
            db.DatasourceVariable("datasource")
            .label("Data source")
            .type("prometheus")
            .current(dm.VariableOption(selected=True, text="kafka-health Prometheus", value=DEFAULT_DATASOURCE_UID))
        )
    return (
        db.QueryVariable(var.value)
        .label(var.value.capitalize())
        .datasource(DATASOURCE)
        .query(variable_query(var))
        .multi(True)
        .include_all(True)
        .all_value(".*")
        .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(dm.VariableSort.ALPHABETICAL_ASC)
    )


def _thresholds(panel: Panel):
    steps = [dm.Threshold(value=None, color=panel.base)]
    steps += [dm.Threshold(value=v, color=c) for v, c in panel.thresholds]
    return db.ThresholdsConfig().mode(dm.ThresholdsMode.ABSOLUTE).steps(steps)


def _panel(panel: Panel, panel_id: int, x: int, y: int):
    b = _PANEL_BUILDERS[panel.kind]()
    b = (
        b.id(panel_id)
        .title(panel.title)
        .datasource(DATASOURCE)
        .unit(panel.unit)
        .thresholds(_thresholds(panel))
        .grid_pos(dm.GridPos(h=panel.height, w=panel.width, x=x, y=y))
    )
    if panel.description:
        b = b.description(panel.description)
    if panel.min is not None:
        b = b.min(panel.min)
    if panel.max is not None:
        b = b.max(panel.max)
    for i, q in enumerate(panel.queries):
        target = prometheus.Dataquery().expr(q.expr).ref_id(chr(ord("A") + i)).datasource(DATASOURCE)
        if q.legend:
            target = target.legend_format(q.legend)
        target = target.instant() if q.instant else target.range()
        if panel.kind is Kind.TABLE:
            target = target.format(prom_models.PromQueryFormat.TABLE)
        b = b.with_target(target)
    if panel.kind is Kind.TIMESERIES:
        b = (
            b.fill_opacity(20 if panel.stacked else 10)
            .legend(
                common_b.VizLegendOptions()
                .display_mode(common.LegendDisplayMode.LIST)
                .placement(common.LegendPlacement.BOTTOM)
                .show_legend(True)
            )
            .tooltip(
                common_b.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI).sort(common.SortOrder.DESCENDING)
            )
        )
        if panel.stacked:
            b = b.stacking(common_b.StackingConfig().mode(common.StackingMode.NORMAL))
    elif panel.kind is Kind.TABLE:
        b = b.show_header(True)
        if panel.columns:
            b = b.with_transformation(
                dm.DataTransformerConfig(
                    id_val="organize",
                    options={
                        "excludeByName": {"Time": True},
                        "indexByName": {field: i for i, (field, _) in enumerate(panel.columns)},
                        "renameByName": {field: header for field, header in panel.columns},
                    },
                )
            )
    elif panel.kind in (Kind.STAT, Kind.BARGAUGE):
        b = b.reduce_options(common_b.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
    return b


def build(board: Dashboard) -> dict[str, Any]:
    """The Grafana dashboard JSON (as a dict) for ``board``."""
    d = (
        db.Dashboard(board.title)
        .uid(board.uid)
        .description(board.description)
        .tags(list(board.tags))
        .time("now-3h", "now")
        .refresh("1m")
        .timezone("utc")
        .readonly()
        .tooltip(dm.DashboardCursorSync.CROSSHAIR)
        .link(
            db.DashboardLink("Kafka health")
            .type(dm.DashboardLinkType.DASHBOARDS)
            .tags(["kafka-health"])
            .as_dropdown(True)
            .include_vars(True)
            .keep_time(True)
        )
    )
    for var in board.variables:
        d = d.with_variable(_variable(var))
    if board.alert_annotation:
        d = d.annotation(
            db.AnnotationQuery()
            .name("Firing alerts")
            .datasource(DATASOURCE)
            .enable(True)
            .icon_color("red")
            .expr(alert_annotation_expr(board))
        )
    panel_id, y = 1, 0
    for row in board.rows:
        d = d.with_row(db.Row(row.title).id(panel_id).grid_pos(dm.GridPos(h=1, w=GRID_COLUMNS, x=0, y=y)))
        panel_id, y = panel_id + 1, y + 1
        x, row_height = 0, 0
        for panel in row.panels:
            if x + panel.width > GRID_COLUMNS:
                x, y, row_height = 0, y + row_height, 0
            d = d.with_panel(_panel(panel, panel_id, x, y))
            panel_id += 1
            x += panel.width
            row_height = max(row_height, panel.height)
        y += row_height
    out = json.loads(JSONEncoder(sort_keys=True).encode(d.build()))
    for ann in out["annotations"]["list"]:
        # Prometheus annotation fields the SDK's generic AnnotationQuery does not model.
        ann.update(
            {
                "titleFormat": "{{alertname}} ({{severity}})",
                "tagKeys": "cluster,severity,tenant,broker",
                "step": "60s",
                "useValueForTime": False,
            }
        )
    return out


def to_json(board: Dashboard) -> str:
    """Stable text: sorted keys, two-space indent, trailing newline (what is committed under dashboards/json/)."""
    return json.dumps(build(board), indent=2, sort_keys=True) + "\n"
