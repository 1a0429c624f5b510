"""Delivery to the real Alertmanager of the local stack, evaluating against its real Prometheus."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from alerts.component import AlertService
from monitor.core.config import (
    RuleOverride,
    RulesSettings,
    TenantConfig,
    TenantSelector,
)
from monitor.core.store import Store
from monitor.schema import create_all
from tests.conftest import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.own_stack]


def _am_alerts(stack, url: str | None = None) -> list[dict]:
    """What an Alertmanager of the stack's pair holds now (the first unless ``url`` names another)."""
    return httpx.get(f"{url or stack.layout.alertmanager_url}/api/v2/alerts", timeout=5).json()


def _prom(stack, expr):
    return httpx.get(f"{stack.layout.prometheus_url}/api/v1/query", params={"query": expr}, timeout=5).json()["data"][
        "result"
    ]


def test_alerts_reach_alertmanager_with_tenant_labels_and_resolve(stack, tmp_path):
    now = datetime.now(timezone.utc)
    # All evaluation times are in the past: Alertmanager keeps the later of two explicit endsAt unless the
    # resolve's endsAt has already passed (as it has in production, where resolved_at <= wall clock).
    until = now - timedelta(seconds=5)
    # A probe rule in an extra rule file (config.rules.files): true until `until`, then false.
    probe = tmp_path / "probe.yaml"
    probe.write_text(f"""
rules:
  - name: KafkaHealthTestProbe
    kind: threshold
    severity: warning
    scope: cluster
    expr: 'label_replace(vector(1), "cluster", "local", "", "") and on() (vector(time()) < {until.timestamp():.0f})'
    for: 0s
    annotations: {{summary: "probe {{{{ $labels.cluster }}}}"}}
""")
    tenants = (
        TenantConfig(name="shop", selectors=(TenantSelector(cluster="local", topic_prefixes=("orders.",)),)),
        TenantConfig(name="ads", selectors=(TenantSelector(cluster="local", topic_prefixes=("clicks.",)),)),
    )
    config = stack.config(tenants=tenants, store_url=f"sqlite:///{tmp_path / 'a.db'}")
    config = config.model_copy(
        update={
            "rules": RulesSettings(
                files=(str(probe),), overrides={"KafkaHealthRuleNoData": RuleOverride(for_seconds=0)}
            )
        }
    )
    store = Store(config.store.url)
    create_all(store)
    registry = CollectorRegistry()
    svc = AlertService(config, store=store, registry=registry)
    result = svc.run_once(now - timedelta(seconds=10))
    assert result is not None and result.rules["KafkaHealthWatchdog"].health.value == "ok"

    def delivered(url: str) -> bool:
        got = {(a["labels"]["alertname"], a["labels"].get("tenant")) for a in _am_alerts(stack, url)}
        want = {("KafkaHealthWatchdog", None), ("KafkaHealthTestProbe", "shop"), ("KafkaHealthTestProbe", "ads")}
        return want <= got

    # the stack's config lists both Alertmanagers of its gossiping pair: each gets every alert (issue 31)
    for url in stack.layout.alertmanager_urls:
        wait_until(lambda: delivered(url), 30, what=f"alerts in the Alertmanager at {url}")
    probe_alert = next(a for a in _am_alerts(stack) if a["labels"]["alertname"] == "KafkaHealthTestProbe")
    assert probe_alert["labels"]["cluster"] == "local" and probe_alert["labels"]["severity"] == "warning"
    assert probe_alert["annotations"]["summary"] == "probe local"
    # Inputs without data are reported instead of rules silently never firing. Which inputs have data depends on
    # what earlier tests fed this Prometheus, so check the engine against Prometheus itself: every input it calls
    # missing really has no series, and every catalog input without series is called missing.
    no_data = [a["labels"] for a in _am_alerts(stack) if a["labels"]["alertname"] == "KafkaHealthRuleNoData"]
    reported = {a["metric"] for a in no_data if "broker" not in a}
    checked = reported | {"kafka_cluster_broker_up", "kafka_broker_under_replicated_partitions"}
    missing = {m for m in checked if not _prom(stack, f"count({m})")}
    assert reported == missing
    for a in no_data:  # per broker: a live broker lacks the input that others have
        if "broker" in a:
            assert _prom(stack, f"count({a['metric']})"), a
            assert not _prom(stack, f'count({a["metric"]}{{broker="{a["broker"]}"}})'), a
    assert "kafka_health_alert_rule_health" in generate_latest(registry).decode()

    svc.run_once(now - timedelta(seconds=2))  # the probe's condition is now false -> resolved, sent with endsAt
    for url in stack.layout.alertmanager_urls:
        wait_until(
            lambda: not [a for a in _am_alerts(stack, url) if a["labels"]["alertname"] == "KafkaHealthTestProbe"],
            30,
            what=f"probe resolved in the Alertmanager at {url}",
        )
    assert [a for a in _am_alerts(stack) if a["labels"]["alertname"] == "KafkaHealthWatchdog"]
    store.dispose()
