"""Which tenants an alert hurts, and the labels each tenant's copy carries.

An alert hurting several tenants becomes several instances, one per tenant (``tenant`` label), so each tenant's
on-call sees exactly its own. Cluster-wide trouble on a broker maps to every tenant with partitions on that broker
(from where the topics' logs were seen in the last hour: ``kafka_topic_log_size_bytes`` per broker,
so a broker that just died still counts); when that placement is unknown, to every tenant on the cluster. An alert no
tenant owns (the engine's own, or a cluster without tenants) is one instance without ``tenant``: operators only.
"""

from __future__ import annotations

from collections.abc import Callable

from alerts.types import Observation, Rule, Scope
from monitor.core.config import Config
from monitor.core.tenancy import TenantIndex

# (cluster, broker) -> tenants with partitions there; built once per cycle from the replica placement metric.
Placement = dict[tuple[str, str], frozenset[str]]


def placement_from_samples(samples, tenants: TenantIndex) -> Placement:
    out: dict[tuple[str, str], set[str]] = {}
    for s in samples:
        if s.value <= 0:
            continue
        cluster, broker, topic = s.labels.get("cluster", ""), s.labels.get("broker", ""), s.labels.get("topic")
        owner = tenants.for_topic(cluster, topic)
        if owner:
            out.setdefault((cluster, broker), set()).add(owner)
    return {k: frozenset(v) for k, v in out.items()}


class Attributor:
    def __init__(self, config: Config, tenants: TenantIndex, placement: Placement | None = None):
        self._tenants = tenants
        self._placement = placement or {}
        self._placed_clusters = {c for c, _ in self._placement}
        self._extra = {t.name: dict(t.receivers.labels) for t in config.tenants}

    def tenants_for(self, rule: Rule, labels: dict[str, str]) -> list[str | None]:
        cluster = labels.get("cluster", "")
        scope = rule.scope
        t = self._tenants
        if scope is Scope.NONE:
            return [None]
        if scope is Scope.TENANT:
            return [labels.get("tenant")]
        single: Callable[[], str | None] | None = {
            Scope.TOPIC: lambda: t.for_topic(cluster, labels.get("topic")),
            Scope.GROUP: lambda: t.for_group(cluster, labels.get("group")),
            Scope.CLIENT: lambda: t.for_client(cluster, client_id=labels.get("client_id"), user=labels.get("user")),
        }.get(scope)
        if single is not None:
            owner = single()
            return [owner] if owner else [None]  # nobody's resource: operators only
        if scope is Scope.BROKER and labels.get("broker") and cluster in self._placed_clusters:
            hurt = self._placement.get((cluster, labels["broker"]), frozenset())
            return sorted(hurt) if hurt else [None]
        return self._cluster_wide(cluster)

    def _cluster_wide(self, cluster: str) -> list[str | None]:
        names = sorted(self._tenants.tenants_on_cluster(cluster))
        return list(names) if names else [None]

    def expand(self, rule: Rule, obs: Observation) -> list[tuple[dict[str, str], Observation]]:
        """One (identity labels, observation) per tenant affected."""
        severity = (obs.severity or rule.severity).value
        out = []
        for tenant in self.tenants_for(rule, obs.labels):
            labels = {**obs.labels, **rule.labels, "alertname": rule.name, "severity": severity}
            labels = {k: v for k, v in labels.items() if v not in (None, "")}
            if tenant:
                labels = {**self._extra.get(tenant, {}), **labels, "tenant": tenant}
            out.append((labels, obs))
        return out
