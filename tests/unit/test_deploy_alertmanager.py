"""deploy/alertmanager: amtool accepts both configs, their routes send each tenant's alerts where they say, and their
inhibition is the engine's."""

from __future__ import annotations

import re

import pytest
import yaml

from alerts.mute import DEFAULT_INHIBIT_RULES
from tests.unit._deploy import DEPLOY, run, tool

pytestmark = pytest.mark.unit

AM = DEPLOY / "alertmanager"


@pytest.mark.parametrize("name", ["alertmanager.yml", "alertmanager.local.yml"])
def test_amtool_accepts_config(name):
    res = run([tool("amtool", "prometheus-alertmanager"), "check-config", str(AM / name)])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


def _receivers(name: str, *labels: str) -> list[str]:
    res = run(
        [tool("amtool", "prometheus-alertmanager"), "config", "routes", "test", f"--config.file={AM / name}", *labels]
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout.strip().split(",")


@pytest.mark.parametrize(
    "labels, expected",
    [
        # A tenant's critical alert pages the tenant, and the platform on-call sees it too (continue: true).
        (
            ("tenant=payments", "severity=critical", "alertname=KafkaUnderMinIsrPartitions"),
            ["payments-pager", "platform-pager"],
        ),
        (("tenant=payments", "severity=warning", "alertname=KafkaConsumerLag"), ["payments"]),
        (("tenant=search", "severity=warning", "alertname=KafkaClientThrottled"), ["search"]),
        # Cluster-wide trouble without a tenant goes to the platform team only.
        (("severity=critical", "alertname=KafkaNoActiveController"), ["platform-pager"]),
        (("severity=warning", "alertname=KafkaIsrChurn"), ["platform"]),
        (("alertname=KafkaHealthWatchdog", "severity=warning"), ["deadmans-switch"]),
    ],
)
def test_production_routes_per_tenant(labels, expected):
    assert _receivers("alertmanager.yml", *labels) == expected


@pytest.mark.parametrize(
    "labels, expected",
    [
        (("tenant=payments", "severity=critical"), ["payments", "oncall"]),
        (("tenant=search", "severity=warning"), ["search"]),  # a matched route replaces the root receiver
        (("severity=critical",), ["oncall"]),
        (("severity=warning",), ["default"]),
    ],
)
def test_local_routes_keep_the_critical_route_and_add_tenants(labels, expected):
    assert _receivers("alertmanager.local.yml", *labels) == expected


def _alertnames(matchers: list[str]) -> set[str]:
    """The alertnames an Alertmanager matcher list selects (only `alertname="A"` and `alertname=~"A|B"` are used)."""
    [m] = matchers
    name, op, value = re.fullmatch(r'(\w+)(=~|=)"(.*)"', m).groups()
    assert name == "alertname", m
    return set(value.split("|")) if op == "=~" else {value}


@pytest.mark.parametrize("name", ["alertmanager.yml", "alertmanager.local.yml"])
def test_inhibition_is_the_engines(name):
    """Alertmanager inhibits exactly as alerts/mute.py does: it also gets the exported rules' alerts from Prometheus,
    and keeps getting what the engine delivered before a mute began. Under-replication is reported by the
    surviving leaders when a broker dies, so broker-down inhibits it on `cluster` alone; under-min-ISR still pages."""
    rules = yaml.safe_load((AM / name).read_text())["inhibit_rules"]
    got = {
        (frozenset(_alertnames(r["source_matchers"])), frozenset(_alertnames(r["target_matchers"])), tuple(r["equal"]))
        for r in rules
        if "alertname" in "".join(r["source_matchers"])
    }
    want = {(frozenset({r.source_alertname}), frozenset(r.target_alertnames), r.equal) for r in DEFAULT_INHIBIT_RULES}
    assert got == want
    broker_down = next(t for s, t, _ in got if s == {"KafkaBrokerUnreachable"})
    assert "KafkaUnderMinIsrPartitions" not in broker_down
