"""Which tenant owns a resource. Pure and fast: built once from the config's tenants, asked per series.

A tenant owns whole clusters, or slices of shared clusters given by prefixes (topics, client ids, consumer groups)
and exact principals. Config validation (monitor.tenants) rejects overlapping selectors, so each resource has at
most one owner; if overlaps slip through, the longest matching prefix wins, so the answer is deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol


class SelectorLike(Protocol):
    """What ownership reads of a selector (``monitor.core.config.TenantSelector`` is one)."""

    # Read-only properties: a frozen config model is one (a plain attribute here would demand a writable one).
    @property
    def cluster(self) -> str: ...
    @property
    def topic_prefixes(self) -> Sequence[str]: ...
    @property
    def client_id_prefixes(self) -> Sequence[str]: ...
    @property
    def group_prefixes(self) -> Sequence[str]: ...
    @property
    def principals(self) -> Sequence[str]: ...


class TenantLike(Protocol):
    """What ownership reads of a tenant (``monitor.core.config.TenantConfig`` is one). A Protocol, so the config
    module can validate with ``find_overlaps`` without the two modules importing each other."""

    @property
    def name(self) -> str: ...
    @property
    def whole_clusters(self) -> Sequence[str]: ...
    @property
    def selectors(self) -> Sequence[SelectorLike]: ...


@dataclass(frozen=True)
class _Rule:
    prefix: str
    tenant: str


class TenantIndex:
    def __init__(self, tenants: Iterable[TenantLike]):
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


# ---------------------------------------------------------------------------------------------------------------
# Overlap check: the one rule both the config file and the API/CLI path enforce, so each resource has one owner.


@dataclass(frozen=True, order=True)
class Overlap:
    """Two tenants claim the same resources on one cluster. ``str()`` is the message a user sees."""

    cluster: str
    kind: str  # "whole cluster", "topic prefix", "client-id prefix", "group prefix", "principal"
    tenant: str
    value: str
    other_tenant: str
    other_value: str

    def __str__(self) -> str:
        if self.kind == "whole cluster":
            return (
                f"tenants {self.tenant!r} and {self.other_tenant!r} overlap on cluster {self.cluster!r}: "
                f"{self.tenant!r} owns the whole cluster, so {self.other_tenant!r} cannot have "
                f"{'it too' if self.other_value == self.cluster else self.other_value}"
            )
        return (
            f"tenants {self.tenant!r} and {self.other_tenant!r} overlap on cluster {self.cluster!r}: "
            f"{self.kind} {self.value!r} of {self.tenant!r} and {self.other_value!r} of {self.other_tenant!r} "
            f"{'are the same' if self.value == self.other_value else 'match the same names'}"
        )


_PREFIX_KINDS = (
    ("topic prefix", "topic_prefixes"),
    ("client-id prefix", "client_id_prefixes"),
    ("group prefix", "group_prefixes"),
)


def find_overlaps(tenants: Iterable[TenantLike]) -> list[Overlap]:
    """Every pair of distinct tenants whose claims intersect, sorted; empty when ownership is unambiguous.

    Claims intersect when, on one cluster: one tenant owns the whole cluster and the other has anything there; a
    prefix of one is a prefix of (or equal to) a prefix of the other (both would match e.g. topic ``orders.eu.x``);
    or both name the same principal (``User:`` prefix ignored). Overlaps within one tenant are harmless and ignored.
    Runs in O(n log n) over all prefixes, so checking 1,000 tenants on every API write is cheap.
    """
    whole: dict[str, list[str]] = {}
    present: dict[str, dict[str, str]] = {}  # cluster -> tenant -> what it has there (for the message)
    prefixes: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (cluster, kind) -> [(prefix, tenant)]
    principals: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (cluster, normalised) -> [(as given, tenant)]
    for t in tenants:
        for c in t.whole_clusters:
            whole.setdefault(c, []).append(t.name)
            present.setdefault(c, {}).setdefault(t.name, c)
        for s in t.selectors:
            for kind, attr in _PREFIX_KINDS:
                for p in getattr(s, attr):
                    prefixes.setdefault((s.cluster, kind), []).append((p, t.name))
                    present.setdefault(s.cluster, {}).setdefault(t.name, f"{kind} {p!r}")
            for p in s.principals:
                principals.setdefault((s.cluster, _norm_principal(p)), []).append((p, t.name))
                present.setdefault(s.cluster, {}).setdefault(t.name, f"principal {p!r}")
    found: set[Overlap] = set()
    for cluster, owners in whole.items():
        for owner in owners:
            for other, what in present.get(cluster, {}).items():
                if other != owner and (other not in owners or owner < other):
                    found.add(Overlap(cluster, "whole cluster", owner, cluster, other, what))
    for (cluster, kind), entries in prefixes.items():
        entries.sort()
        # After sorting, every name that starts with p follows p directly; scan only that run.
        for i, (p, tenant) in enumerate(entries):
            for q, other in entries[i + 1 :]:
                if not q.startswith(p):
                    break
                if other != tenant:
                    found.add(Overlap(cluster, kind, tenant, p, other, q))
    for (cluster, _), entries in principals.items():
        for i, (p, tenant) in enumerate(entries):
            for q, other in entries[i + 1 :]:
                if other != tenant:
                    found.add(Overlap(cluster, "principal", tenant, p, other, q))
    return sorted(found)


# ---------------------------------------------------------------------------------------------------------------
# The tenant set as it is now: what every component asks, once per cycle, instead of holding the config's list.


class Tenants(Protocol):
    """The tenants as they are now: the config file's and those created through the API or CLI, one set.

    Implementers must: answer from memory (components ask once per collection round, evaluation cycle or scrape);
    follow a change within a few seconds; keep answering the last good set when their source fails. ``current``
    returns the same tuple object while nothing changed, so callers can compare by identity."""

    def current(self) -> tuple[TenantLike, ...]: ...

    def index(self) -> TenantIndex: ...


class FixedTenants:
    """A set that never changes: the config file's tenants where no store is at hand (tests, config-only tools)."""

    def __init__(self, tenants: Iterable[TenantLike]):
        self._tenants = tuple(tenants)
        self._index = TenantIndex(self._tenants)

    def current(self) -> tuple[TenantLike, ...]:
        return self._tenants

    def index(self) -> TenantIndex:
        return self._index
