"""Grafana dashboards as code.

    model.py      the dashboards' own types: Dashboard, Row, Panel, Query, and Needs (when a panel has data)
    boards/       one module per dashboard (cluster, broker, tenant, clients, service); boards.ALL lists them
    render.py     model -> Grafana JSON with grafana-foundation-sdk (pure)
    build.py      `kafka-health dashboards build [--check]`: writes / checks dashboards/json/
    promql.py     metric names read by an expression, Grafana variable substitution (for the tests)
    contract.py   the tenants' contracts (quotas, budget) as kafka_health_tenant_* series the dashboards draw

deploy/grafana/ provisions dashboards/json/; docs/dashboards.md describes every dashboard.
"""
