"""deploy/alertmanager: amtool accepts both configs, and their routes send each tenant's alerts where they say."""

from __future__ import annotations

import pytest

from tests.unit._deploy import DEPLOY, run, tool

pytestmark = pytest.mark.unit

AM = DEPLOY / "alertmanager"


@pytest.mark.parametrize("name", ["alertmanager.yml", "alertmanager.local.yml"])
def test_amtool_accepts_config(name):
    res = run([tool("amtool", "prometheus-alertmanager"), "check-config", str(AM / name)])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


def _receivers(name: str, *labels: str) -> list[str]:
    res = run([tool("amtool", "prometheus-alertmanager"), "config", "routes", "test",
               f"--config.file={AM / name}", *labels])
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout.strip().split(",")


@pytest.mark.parametrize("labels, expected", [
    # A tenant's critical alert pages the tenant, and the platform on-call sees it too (continue: true).
    (("tenant=payments", "severity=critical", "alertname=KafkaUnderMinIsrPartitions"), ["payments-pager", "platform-pager"]),
    (("tenant=payments", "severity=warning", "alertname=KafkaConsumerLag"), ["payments"]),
    (("tenant=search", "severity=warning", "alertname=KafkaClientThrottled"), ["search"]),
    # Cluster-wide trouble without a tenant goes to the platform team only.
    (("severity=critical", "alertname=KafkaNoActiveController"), ["platform-pager"]),
    (("severity=warning", "alertname=KafkaIsrChurn"), ["platform"]),
    (("alertname=KafkaHealthWatchdog", "severity=warning"), ["deadmans-switch"]),
])
def test_production_routes_per_tenant(labels, expected):
    assert _receivers("alertmanager.yml", *labels) == expected


@pytest.mark.parametrize("labels, expected", [
    (("tenant=payments", "severity=critical"), ["payments", "oncall"]),
    (("tenant=search", "severity=warning"), ["search"]),  # a matched route replaces the root receiver
    (("severity=critical",), ["oncall"]),
    (("severity=warning",), ["default"]),
])
def test_local_routes_keep_the_critical_route_and_add_tenants(labels, expected):
    assert _receivers("alertmanager.local.yml", *labels) == expected
