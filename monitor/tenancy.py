"""Which tenant owns a resource. Pure and fast: built once from the config's tenants, asked per series.

A tenant owns whole clusters, or slices of shared clusters given by prefixes (topics, client ids, consumer groups)
and exact principals. Config validation (monitor.tenants) rejects overlapping selectors, so each resource has at
most one owner; if overlaps slip through, the longest matching prefix wins, so the answer is deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from monitor.config import TenantConfig


@dataclass(frozen=True)
class _Rule:
    prefix: str
    tenant: str


class TenantIndex:
    def __init__(self, tenants: Iterable[TenantConfig]):
        self._whole: dict[str, str] = {}
        self._topics: dict[str, list[_Rule]] = {}
        self._clients: dict[str, list[_Rule]] = {}
        self._groups: dict[str, list[_Rule]] = {}
        self._principals: dict[tuple[str, str], str] = {}
        self._by_cluster: dict[str, set[str]] = {}
        self.names: tuple[str, ...] = ()
        names = []
        for t in tenants:
            names.append(t.name)
            for c in t.whole_clusters:
                self._whole[c] = t.name
                self._by_cluster.setdefault(c, set()).add(t.name)
            for s in t.selectors:
                self._by_cluster.setdefault(s.cluster, set()).add(t.name)
                for table, prefixes in (
                    (self._topics, s.topic_prefixes),
                    (self._clients, s.client_id_prefixes),
                    (self._groups, s.group_prefixes),
                ):
                    table.setdefault(s.cluster, []).extend(_Rule(p, t.name) for p in prefixes)
                for p in s.principals:
                    self._principals[(s.cluster, _norm_principal(p))] = t.name
        for table in (self._topics, self._clients, self._groups):
            for rules in table.values():
                rules.sort(key=lambda r: len(r.prefix), reverse=True)  # longest prefix first
        self.names = tuple(names)

    @staticmethod
    def _match(table: dict[str, list[_Rule]], cluster: str, name: str | None) -> str | None:
        if not name:
            return None
        for rule in table.get(cluster, ()):
            if name.startswith(rule.prefix):
                return rule.tenant
        return None

    def for_topic(self, cluster: str, topic: str | None) -> str | None:
        return self._match(self._topics, cluster, topic) or self._whole.get(cluster)

    def for_group(self, cluster: str, group: str | None) -> str | None:
        return self._match(self._groups, cluster, group) or self._whole.get(cluster)

    def for_client(self, cluster: str, *, client_id: str | None = None, user: str | None = None) -> str | None:
        """A client belongs to a tenant by its principal first (authenticated), then by its client-id prefix."""
        if user:
            owner = self._principals.get((cluster, _norm_principal(user)))
            if owner:
                return owner
        return self._match(self._clients, cluster, client_id) or self._whole.get(cluster)

    def tenants_on_cluster(self, cluster: str) -> frozenset[str]:
        """Every tenant with anything on the cluster: the ones cluster-wide trouble (a broker down) may hurt."""
        return frozenset(self._by_cluster.get(cluster, ()))


def _norm_principal(p: str) -> str:
    # Kafka's quota sensors label users without the "User:" prefix; selectors may carry it.
    return p[5:] if p.startswith("User:") else p
