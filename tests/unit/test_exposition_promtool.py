"""The JMX catalog's exposition passes Prometheus' own linter, ``promtool check metrics``: one reading for every
rule of the catalog, converted and exported as a scrape would be (``collectors.exporter.families``). The scrape of
a running service is checked the same way in tests/integration/test_service_exposition.py."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.registry import Collector

from collectors import catalog
from collectors.exporter import families
from collectors.types import Reading
from tests.unit._deploy import run, tool

pytestmark = pytest.mark.unit
BASE = (("cluster", "c1"), ("broker", "1"))


def _reading(rule: catalog.MBeanRule) -> Reading:
    """A reading the rule matches: its pattern's wildcards and label properties filled in."""
    domain, props = catalog.parse_object_name(rule.mbean)
    filled = {k: ("x" if v == "*" else v) for k, v in props if k != "*"}
    filled.update({prop: "x" for _, prop in rule.labels if prop not in filled})
    name = f"{domain}:" + ",".join(f"{k}={v}" for k, v in filled.items())
    return Reading(name, rule.attribute, "leader" if rule.value_label else 0.25, rule.key)


class _Samples(Collector):
    def __init__(self, samples):
        self.samples = samples

    def collect(self):
        return families(self.samples)


def test_the_whole_catalog_passes_promtool_check_metrics():
    rules = catalog.BROKER_TARGET_RULES
    samples = catalog.convert([_reading(r) for r in rules], rules, base=BASE, tenants=catalog.TenantLookup(None, "c1"))
    assert {s.name for s in samples} == {r.metric for r in rules}  # every rule exported: nothing left unchecked
    registry = CollectorRegistry()
    registry.register(_Samples(samples))
    text = generate_latest(registry).decode()
    assert "# TYPE kafka_broker_request_latency_seconds summary" in text and 'quantile="0.99"' in text
    res = run([tool("promtool", "prometheus"), "check", "metrics"], input=text)
    assert res.returncode == 0, res.stdout + res.stderr
