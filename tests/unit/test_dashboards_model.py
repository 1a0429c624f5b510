"""The dashboards' model and rendered JSON: every panel readable at a glance (unit, thresholds), wired to the
variables and the datasource variable, alert annotations, and queries that name only exported metrics."""

from __future__ import annotations

import re

import pytest

from collectors.contract import contract_families
from dashboards.boards import ALL
from dashboards.catalog import is_known, known_metrics
from dashboards.model import Kind, Needs, Panel, Query, Var
from dashboards.promql import metric_names, substitute
from dashboards.render import build
from monitor.core.config import TenantConfig, TenantContract, TenantSelector
from tests.unit._deploy import collectors_catalog

pytestmark = pytest.mark.unit

RENDERED = {b.uid: build(b) for b in ALL}
GRAFANA_VARIABLES = {"__rate_interval", "__interval", "__range", "__range_s", "datasource"}


def _panels(doc: dict) -> list[dict]:
    return [p for p in doc["panels"] if p["type"] != "row"]


def test_the_five_dashboards_exist():
    assert set(RENDERED) == {
        "kafka-health-cluster",
        "kafka-health-broker",
        "kafka-health-tenant",
        "kafka-health-clients",
        "kafka-health-service",
    }


@pytest.mark.parametrize("uid", sorted(RENDERED))
def test_every_panel_has_a_unit_and_thresholds(uid):
    for p in _panels(RENDERED[uid]):
        defaults = p["fieldConfig"]["defaults"]
        assert defaults.get("unit"), f"{uid}: {p['title']} has no unit"
        steps = defaults["thresholds"]["steps"]
        assert steps and steps[0]["value"] is None, f"{uid}: {p['title']} has no base threshold"
        assert [s["value"] for s in steps[1:]] == sorted(s["value"] for s in steps[1:])


@pytest.mark.parametrize("uid", sorted(RENDERED))
def test_every_query_uses_the_datasource_variable_and_declared_variables(uid):
    doc = RENDERED[uid]
    declared = {v["name"] for v in doc["templating"]["list"]} | GRAFANA_VARIABLES
    for p in _panels(doc):
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert p["targets"], p["title"]
        for t in p["targets"]:
            assert t["datasource"]["uid"] == "${datasource}"
            used = set(re.findall(r"\$\{?([A-Za-z_]+)", t["expr"]))
            assert used <= declared, f"{p['title']}: undeclared {used - declared}"


def test_variables_per_dashboard():
    names = {uid: [v["name"] for v in doc["templating"]["list"]] for uid, doc in RENDERED.items()}
    assert all(n[:2] == ["datasource", "cluster"] for n in names.values())
    assert "broker" in names["kafka-health-broker"]
    assert "tenant" in names["kafka-health-tenant"] and "tenant" in names["kafka-health-clients"]
    for doc in RENDERED.values():
        for v in doc["templating"]["list"]:
            if v["type"] == "query":
                assert v["includeAll"] and v["multi"] and v["allValue"] == ".*"  # queries use =~"$var"


def test_alert_annotations_read_the_engines_alerts_and_prometheus_alerts():
    for uid, doc in RENDERED.items():
        (ann,) = doc["annotations"]["list"]
        assert ann["enable"] and ann["datasource"]["uid"] == "${datasource}"
        assert {"ALERTS", "kafka_health_alert_instance"} <= metric_names(ann["expr"]), uid
        assert ann["expr"].count('alertstate="firing"') == 2, uid  # both sides of the union
    assert 'tenant=~"$tenant"' in RENDERED["kafka-health-tenant"]["annotations"]["list"][0]["expr"]


def test_layout_fits_the_grid_without_overlap():
    for uid, doc in RENDERED.items():
        ids = [p["id"] for p in doc["panels"]]
        assert len(ids) == len(set(ids)), uid
        cells = set()
        for p in doc["panels"]:
            g = p["gridPos"]
            assert 0 <= g["x"] and g["x"] + g["w"] <= 24, (uid, p["title"])
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    assert (x, y) not in cells, (uid, p["title"])
                    cells.add((x, y))


def test_required_views_are_there():
    exprs = {uid: " ".join(t["expr"] for p in _panels(d) for t in p["targets"]) for uid, d in RENDERED.items()}
    assert "predict_linear(kafka_host_filesystem_avail_bytes" in exprs["kafka-health-broker"]  # disk-full forecast
    assert "kafka_jvm_gc_collection_seconds_total" in exprs["kafka-health-broker"]
    assert 'phase!="total"' in exprs["kafka-health-broker"]  # latency breakdown
    assert "kafka_health_tenant_produce_quota_bytes_per_second" in exprs["kafka-health-tenant"]
    assert "kafka_health_tenant_storage_budget_bytes" in exprs["kafka-health-tenant"]
    assert "kafka_consumergroup_lag_seconds" in exprs["kafka-health-tenant"]
    assert "client_software_version" in exprs["kafka-health-clients"]
    assert "kafka_client_request_time_ratio" in exprs["kafka-health-clients"]
    assert "kafka_health_scrape_success" in exprs["kafka-health-service"]


def test_queries_name_only_metrics_kafka_health_exports():
    known = known_metrics(collectors_catalog())
    unknown = set()
    for board in ALL:
        for panel in board.panels():
            if panel.needs is Needs.ALERT_ENGINE:
                continue  # the alert engine's own series: the next test
            for q in panel.queries:
                unknown |= {(board.uid, panel.title, m) for m in metric_names(q.expr) if not is_known(m, known)}
    assert not unknown, sorted(unknown)


def test_alert_engine_panels_name_the_engine_series():
    from pathlib import Path

    from alerts import component as service

    source = Path(service.__file__).read_text()
    exported = frozenset(re.findall(r'"(kafka_health_[a-z0-9_]+)"', source))
    names = {
        m
        for b in ALL
        for p in b.panels()
        if p.needs is Needs.ALERT_ENGINE
        for q in p.queries
        for m in metric_names(q.expr)
    }
    assert names and all(is_known(m, exported) for m in names), sorted(n for n in names if not is_known(n, exported))


# ---------------------------------------------------------------------------------------------------------------
# The PromQL helpers the checks rely on


@pytest.mark.parametrize(
    "expr, names",
    [
        ("up", {"up"}),
        (
            'sum by (cluster) (rate(kafka_topic_bytes_in_total{cluster=~"$cluster"}[$__rate_interval]))',
            {"kafka_topic_bytes_in_total"},
        ),
        ("a / on (cluster, tenant) group_left max by (tenant) (b)", {"a", "b"}),
        ('max by (c) (label_replace(x, "quota", "p", "", "") or label_replace(y{a="1"}, "q","f","",""))', {"x", "y"}),
        ('ALERTS{alertstate="firing"} > 0 and on(x) y offset 5m', {"ALERTS", "y"}),
        ("topk(10, sum without (broker) (a)) * 1e3 - b", {"a", "b"}),
        ('{__name__="kafka_x"}', {"kafka_x"}),
        ('count(ALERTS{severity="critical"}) or vector(0)', {"ALERTS"}),
        ("histogram_quantile(0.9, sum by (le) (rate(h_bucket[1m])))", {"h_bucket"}),
        ("time() - max(t)", {"t"}),
    ],
)
def test_metric_names(expr, names):
    assert metric_names(expr) == names


def test_substitute_longest_variable_first():
    out = substitute(
        'rate(x{cluster=~"$cluster"}[$__rate_interval]) ${broker} $clusters',
        {"cluster": "local", "__rate_interval": "1m", "broker": "1", "__rate": "WRONG"},
    )
    assert out == 'rate(x{cluster=~"local"}[1m]) 1 $clusters'


def test_panel_rejects_descending_thresholds_and_no_query():
    with pytest.raises(ValueError, match="ascend"):
        Panel("p", (Query("up"),), "none", thresholds=((2, "red"), (1, "orange")))
    with pytest.raises(ValueError, match="no query"):
        Panel("p", (), "none")
    assert str(Needs.FAULT) == "fault" and str(Kind.STAT) == "stat" and str(Var.TENANT) == "tenant"


def test_contract_families_export_only_what_the_contract_sets():
    tenants = (
        TenantConfig(
            name="a",
            display_name="Team A",
            selectors=(TenantSelector(cluster="c", topic_prefixes=("a.",)),),
            contract=TenantContract(produce_quota_bytes_per_second=100, retention_hours=2),
        ),
        TenantConfig(name="b", whole_clusters=("c",)),
    )
    samples = {(f.name, tuple(s.labels.items()), s.value) for f in contract_families(tenants) for s in f.samples}
    assert samples == {
        ("kafka_health_tenant_info", (("tenant", "a"), ("display_name", "Team A")), 1.0),
        ("kafka_health_tenant_info", (("tenant", "b"), ("display_name", "b")), 1.0),
        ("kafka_health_tenant_produce_quota_bytes_per_second", (("tenant", "a"),), 100.0),
        ("kafka_health_tenant_retention_seconds", (("tenant", "a"),), 7200.0),
    }
