"""The dashboards' alert panels and annotations, evaluated by Prometheus' own engine (``promtool test rules``) over
known series: they show the alert engine's instances (``kafka_health_alert_instance``) and Prometheus' ``ALERTS`` of
rules the engine does not evaluate, count nothing twice when Prometheus evaluates the engine's rules too, leave the
watchdog out, and fall back to ``ALERTS`` when the engine stops."""

from __future__ import annotations

import json

import pytest
import yaml

from dashboards.boards import service, tenant
from dashboards.model import Dashboard, Kind
from dashboards.promql import substitute
from dashboards.render import alert_annotation_expr
from tests.unit._deploy import run, tool

pytestmark = pytest.mark.unit

SERVICE_VARS = {"cluster": "local"}
TENANT_VARS = {"cluster": ".*", "tenant": "payments"}


def _labels(**labels: str) -> str:
    return "{" + ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(labels.items())) + "}"


def _engine(**labels: str) -> dict:  # the engine's series: present at 0m, gone (stale) at 1m
    return {"series": "kafka_health_alert_instance" + _labels(**labels), "values": "1 stale"}


def _prometheus(**labels: str) -> dict:  # Prometheus' own ALERTS: present throughout
    return {"series": "ALERTS" + _labels(**labels), "values": "1 1"}


DISK = dict(alertname="KafkaDiskFullRisk", alertstate="firing", severity="critical", cluster="local", broker="1")
PROBE = dict(
    alertname="KafkaHealthDashboardsProbe", alertstate="firing", severity="warning", cluster="local", tenant="payments"
)
INPUT = [
    _engine(**DISK, tenant="payments"),
    _engine(**DISK, tenant="search"),
    _engine(
        alertname="KafkaConsumerGroupLag",
        alertstate="pending",
        severity="warning",
        cluster="local",
        tenant="payments",
        group="billing",
    ),
    _engine(alertname="KafkaHealthWatchdog", alertstate="firing", severity="warning", watchdog="true"),
    *(
        {"series": "kafka_health_alert_rule_health" + _labels(rule=r, health="ok"), "values": "1 stale"}
        for r in ("KafkaDiskFullRisk", "KafkaBrokerUnreachable", "KafkaConsumerGroupLag", "KafkaHealthWatchdog")
    ),
    # Prometheus evaluates an exported engine rule too: the engine's copy counts, this one only when it stops.
    _prometheus(
        alertname="KafkaBrokerUnreachable", alertstate="firing", severity="critical", cluster="local", broker="2"
    ),
    _prometheus(**PROBE),  # a rule only Prometheus evaluates
    _prometheus(alertname="KafkaHealthWatchdog", alertstate="firing", severity="warning", watchdog="true"),
]


def _query(board: Dashboard, title: str, variables: dict[str, str], kind: Kind | None = None) -> str:
    (panel,) = [p for p in board.panels() if p.title == title and kind in (None, p.kind)]
    (q,) = panel.queries
    return substitute(q.expr, variables)


def _count(expr: str, at: str, n: int) -> dict:
    return {"expr": expr, "eval_time": at, "exp_samples": [{"labels": "{}", "value": n}]}


def _series(expr: str, at: str, rows: list[tuple[str, dict]]) -> dict:
    return {
        "expr": expr,
        "eval_time": at,
        "exp_samples": [{"labels": name + _labels(**labels), "value": 1} for name, labels in rows],
    }


def test_alert_panels_and_annotations_in_prometheus(tmp_path):
    promtool = tool("promtool", "prometheus")
    tenant_table = [("kafka_health_alert_instance", {**DISK, "tenant": "payments"}), ("ALERTS", PROBE)]
    tests = [
        # The engine runs: its alerts, Prometheus' probe; Prometheus' copy of an engine rule and the watchdog left out.
        _count(_query(service.BOARD, "Critical firing", SERVICE_VARS), "0m", 2),
        _count(_query(service.BOARD, "Warning firing", SERVICE_VARS), "0m", 1),
        _count(_query(service.BOARD, "Pending", SERVICE_VARS), "0m", 1),
        {
            "expr": _query(service.BOARD, "Firing alerts over time", SERVICE_VARS),
            "eval_time": "0m",
            "exp_samples": [
                {"labels": _labels(alertname="KafkaDiskFullRisk", severity="critical"), "value": 2},
                {"labels": _labels(alertname="KafkaHealthDashboardsProbe", severity="warning"), "value": 1},
            ],
        },
        _count(_query(tenant.BOARD, "Firing alerts", TENANT_VARS, Kind.STAT), "0m", 2),
        _series(_query(tenant.BOARD, "Firing alerts", TENANT_VARS, Kind.TABLE), "0m", tenant_table),
        _series(substitute(alert_annotation_expr(tenant.BOARD), TENANT_VARS), "0m", tenant_table),
        # The engine stopped (its series stale): Prometheus' copy of its rule shows instead.
        _count(_query(service.BOARD, "Critical firing", SERVICE_VARS), "1m", 1),
        _count(_query(service.BOARD, "Pending", SERVICE_VARS), "1m", 0),
        _series(
            substitute(alert_annotation_expr(service.BOARD), SERVICE_VARS),
            "1m",
            [
                (
                    "ALERTS",
                    {
                        "alertname": "KafkaBrokerUnreachable",
                        "alertstate": "firing",
                        "severity": "critical",
                        "cluster": "local",
                        "broker": "2",
                    },
                ),
                ("ALERTS", PROBE),
            ],
        ),
    ]
    (tmp_path / "none.yml").write_text("groups: []\n")
    spec = {
        "rule_files": ["none.yml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": INPUT, "promql_expr_test": tests}],
    }
    (tmp_path / "test.yml").write_text(yaml.safe_dump(spec, sort_keys=False))
    res = run([promtool, "test", "rules", "test.yml"], cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
