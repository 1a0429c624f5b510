"""The tenants' contracts as series, so dashboards can draw throughput against quota and storage against budget.

No collector reads these (they are configuration, not measurements): ``TenantContractCollector`` turns the
configured tenants into gauges on every scrape of the service's ``/metrics``. A contract field that is not set
exports nothing (an absent quota is not a quota of 0). Values change only when the config is reloaded.

    kafka_health_tenant_info{tenant, display_name}                     1 for every configured tenant
    kafka_health_tenant_produce_quota_bytes_per_second{tenant}         contract.produce_quota_bytes_per_second
    kafka_health_tenant_fetch_quota_bytes_per_second{tenant}           contract.fetch_quota_bytes_per_second
    kafka_health_tenant_storage_budget_bytes{tenant}                   contract.storage_budget_bytes
    kafka_health_tenant_retention_seconds{tenant}                      contract.retention_hours * 3600
    kafka_health_tenant_availability_objective_ratio{tenant}           contract.availability_objective (where the
                                                                       contract sets none, the exported SLO rules
                                                                       use slo.objective: alerts/slo.py)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prometheus_client.core import GaugeMetricFamily, Metric

from monitor.core.config import TenantConfig

# (metric, help, value of a contract or None)
_FIELDS = (
    (
        "kafka_health_tenant_produce_quota_bytes_per_second",
        "Produce quota of the tenant's contract",
        lambda c: c.produce_quota_bytes_per_second,
    ),
    (
        "kafka_health_tenant_fetch_quota_bytes_per_second",
        "Fetch quota of the tenant's contract",
        lambda c: c.fetch_quota_bytes_per_second,
    ),
    (
        "kafka_health_tenant_storage_budget_bytes",
        "Storage budget of the tenant's contract",
        lambda c: c.storage_budget_bytes,
    ),
    (
        "kafka_health_tenant_retention_seconds",
        "Retention the tenant expects",
        lambda c: c.retention_hours * 3600 if c.retention_hours is not None else None,
    ),
    (
        "kafka_health_tenant_availability_objective_ratio",
        "Availability objective of the tenant's contract",
        lambda c: c.availability_objective,
    ),
)
INFO = "kafka_health_tenant_info"
METRICS = frozenset((INFO,) + tuple(name for name, _, _ in _FIELDS))


def contract_families(tenants: Sequence[TenantConfig]) -> list[Metric]:
    """Pure: configured tenants -> metric families."""
    info = GaugeMetricFamily(INFO, "1 for every configured tenant", labels=["tenant", "display_name"])
    families = {name: GaugeMetricFamily(name, help_, labels=["tenant"]) for name, help_, _ in _FIELDS}
    for t in tenants:
        info.add_metric([t.name, t.display_name or t.name], 1.0)
        for name, _, get in _FIELDS:
            value = get(t.contract)
            if value is not None:
                families[name].add_metric([t.name], float(value))
    return [info, *families.values()]


class TenantContractCollector:
    """A prometheus_client custom collector over the tenants: a fixed sequence, or the live set
    (``monitor.core.tenancy.Tenants``, asked at every scrape, so a tenant created through the API has its contract
    series from the next scrape on)."""

    def __init__(self, tenants):
        self._tenants = tenants if hasattr(tenants, "current") else tuple(tenants)

    def collect(self) -> Iterable[Metric]:
        tenants = self._tenants.current() if hasattr(self._tenants, "current") else self._tenants
        return contract_families(tenants)
