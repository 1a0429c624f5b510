"""Which tenants an alert hurts, and the labels and evidence each tenant's copy carries.

An alert hurting several tenants becomes several instances, one per tenant (``tenant`` label), so each tenant's
on-call sees exactly its own. Cluster-wide trouble on a broker maps to every tenant with partitions on that broker
(from where the topics' logs were seen in the last hour: ``kafka_topic_log_size_bytes`` per broker,
so a broker that just died still counts); when that placement is unknown, to every tenant on the cluster. An alert no
tenant owns (the engine's own, or a cluster without tenants) is one instance without ``tenant``: operators only.

A tenant's copy carries only that tenant's clients (``redact_evidence``, ``redact_labels``): a broker's evidence names
every client on the broker, and nothing of one tenant may reach another. The operator copy keeps everything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

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
        """One (identity labels, observation) per tenant affected; each tenant's copy redacted to its own clients
        (the only place copies are made, so every rule's and detector's evidence passes through the redaction)."""
        severity = (obs.severity or rule.severity).value
        shared = rule.scope in (Scope.BROKER, Scope.CLUSTER)  # copies for tenants the labels do not name
        out = []
        for tenant in self.tenants_for(rule, obs.labels):
            own, obs_copy = obs.labels, obs  # the operator copy keeps everything
            if tenant:
                owners = self.owners_of(obs.labels.get("cluster", ""), tenant, subject=None if shared else obs.labels)
                if shared:
                    own = redact_labels(obs.labels, tenant, owners)
                evidence = redact_evidence(obs.evidence, tenant, owners)
                if evidence is not obs.evidence:
                    obs_copy = replace(obs, evidence=evidence)
            labels = {**own, **rule.labels, "alertname": rule.name, "severity": severity}
            labels = {k: v for k, v in labels.items() if v not in (None, "")}
            if tenant:
                labels = {**self._extra.get(tenant, {}), **labels, "tenant": tenant}
            out.append((labels, obs_copy))
        return out

    def confine(self, scope: Scope | None, labels: Mapping[str, str], evidence: dict[str, Any]) -> dict[str, Any]:
        """The evidence an instance labelled ``labels`` may carry: ``redact_evidence`` for its ``tenant``, unchanged
        for an operator's. For instances the engine keeps without a new observation (resolved, or held while their
        rule fails) whose evidence an older version stored whole. ``scope`` None (a rule gone): judged as shared."""
        tenant = labels.get("tenant")
        if not tenant:
            return evidence
        shared = scope in (Scope.BROKER, Scope.CLUSTER, None)
        owners = self.owners_of(labels.get("cluster", ""), tenant, subject=None if shared else labels)
        return redact_evidence(evidence, tenant, owners)

    def owners_of(self, cluster: str, tenant: str, *, subject: Mapping[str, str] | None = None) -> OwnersOf:
        """The tenants an evidence entry names as its owner on ``cluster``: the index's answer for its principal and
        client id, for its consumer group, and its own ``tenant`` stamp. ``subject``: the labels of an alert
        attributed to ``tenant`` by those very labels (client, tenant scope): the client they name is that
        tenant's even where the index cannot tell from a client id alone (a tenant owning principals only)."""
        index = self._tenants
        subject_id = (subject or {}).get("client_id") or ""
        subject_user = (subject or {}).get("user") or ""

        def owners(entry: Mapping[str, Any]) -> frozenset[str]:
            client_id, user = _text(entry.get("client_id")), _text(entry.get("user") or entry.get("principal"))
            found: set[str | None] = set()
            if client_id or user:
                found.add(index.for_client(cluster, client_id=client_id, user=user))
            if _text(entry.get("group")):
                found.add(index.for_group(cluster, entry["group"]))
            if _text(entry.get("tenant")):
                found.add(entry["tenant"])
            if subject_id and client_id == subject_id and user in ("", subject_user):
                found.add(tenant)
            return frozenset(t for t in found if t is not None)

        return owners


# ---------------------------------------------------------------------------------------- a tenant's copy
#
# The evidence vocabulary that holds clients (alerts/detectors/clients.py, noisy_clients.py). A dict with one of
# CLIENT_FIELDS is one client's record (``clients[]``, ``slow_peers[].clients[]``, ``slow_client_detail``); a dict
# with one of PLACE_FIELDS and no client field is an address clients are at (``slow_peers[]``), a tenant's when one
# of its clients is there. The rule is the shape, not the key, so a detector that adds a list of client records
# under a new key is redacted too; bare client ids can only be known by key (CLIENT_NAME_*).
#
# An entry is a tenant's only when every owner it names is that tenant: unknown or ambiguous ownership (a client id
# two tenants' clients both use, a peer with no known client) is someone else's. What is taken out is counted
# (``other_<key>``, and for client records ``other_<key>_request_time_ratio`` and ``other_<key>_share``: their share
# of the thread time of ``all_<key>_request_time_ratio``, the whole broker's, when the detector gives it); then every
# identifier taken out (client id, principal, group, address) that the tenant's own entries do not also carry is
# scrubbed from whatever remains, keys and text included.

CLIENT_FIELDS = ("client_id", "user", "principal")
PLACE_FIELDS = ("peer", "client_host")
IDENTIFYING_FIELDS = (*CLIENT_FIELDS, *PLACE_FIELDS, "group", "groups")
CLIENT_NAME_KEYS = ("slow_client", "busy_client")  # one client id; another tenant's becomes None + <key>_other_tenant
CLIENT_NAME_LIST_KEYS = ("suspects",)  # client ids; another tenant's are counted in other_<key>
CLIENT_NAME_MAP_KEYS = ("suspects_thread_seconds_per_mib",)  # {client id: figure}
OTHER_TENANT = "(another tenant's client)"  # what replaces another tenant's identifier in text and labels
MIN_SCRUB_LENGTH = 4  # shorter identifiers are replaced only as whole values, not inside text (too many false hits)

OwnersOf = Callable[[Mapping[str, Any]], frozenset[str]]


def redact_labels(labels: Mapping[str, str], tenant: str, owners: OwnersOf) -> dict[str, str]:
    """The labels of a tenant's copy of an alert shared by several tenants: a client, group or address label that is
    not the tenant's becomes OTHER_TENANT (annotations are rendered from labels, so they name nobody else either)."""
    out = dict(labels)
    if not any(k in labels for k in IDENTIFYING_FIELDS):
        return out
    if any(labels.get(k) for k in CLIENT_FIELDS) and owners(labels) != {tenant}:
        out.update({k: OTHER_TENANT for k in CLIENT_FIELDS if labels.get(k)})
    if labels.get("group") and owners({"group": labels["group"]}) != {tenant}:
        out["group"] = OTHER_TENANT
    out.update({k: OTHER_TENANT for k in PLACE_FIELDS if labels.get(k)})  # whose an address is, labels cannot say
    return out


def redact_evidence(evidence: Mapping[str, Any], tenant: str, owners: OwnersOf) -> dict[str, Any]:
    """``evidence`` as ``tenant``'s copy of the alert may carry it: its own clients, the others as counts (see the
    vocabulary above). Pure; ``owners`` answers which tenants an entry names as its owner. Evidence with nothing to
    take out comes back as the same object."""
    if not any(isinstance(v, (Mapping, list, tuple)) or k in CLIENT_NAME_KEYS for k, v in evidence.items()):
        return evidence  # flat figures (every threshold rule's): no entry to judge, so nothing to take out or scrub
    return _Redaction(tenant, owners, evidence).run()


def _text(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _is_client(v: Any) -> bool:
    return isinstance(v, Mapping) and any(k in v for k in CLIENT_FIELDS)


def _is_place(v: Any) -> bool:
    return isinstance(v, Mapping) and not _is_client(v) and any(k in v for k in PLACE_FIELDS)


def _dicts(v: Any) -> Iterator[Mapping]:
    if isinstance(v, Mapping):
        yield v
        for x in v.values():
            yield from _dicts(x)
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _dicts(x)


def _identifiers(v: Any) -> Iterator[str]:
    """Every identifier an evidence value carries (in identifying fields, owning tenants and name keys, at any
    depth)."""
    for d in _dicts(v):
        for k, x in d.items():
            if k in IDENTIFYING_FIELDS or k == "tenant" or k in CLIENT_NAME_KEYS or k in CLIENT_NAME_LIST_KEYS:
                yield from (i for i in (x if isinstance(x, (list, tuple)) else [x]) if isinstance(i, str) and i)
            elif k in CLIENT_NAME_MAP_KEYS and isinstance(x, Mapping):
                yield from (i for i in x if isinstance(i, str) and i)


class _Redaction:
    def __init__(self, tenant: str, owners: OwnersOf, evidence: Mapping[str, Any]):
        self.tenant, self.owners, self.evidence = tenant, owners, evidence
        self.removed: set[str] = set()
        # a bare client id is owned by whoever the records naming that client id say (and the index)
        self.named: dict[str, set[str]] = {}
        for d in _dicts(evidence):
            if _is_client(d) and _text(d.get("client_id")):
                self.named.setdefault(d["client_id"], set()).update(owners(d))

    def run(self) -> dict[str, Any]:
        out = self._dict(self.evidence)
        foreign = self.removed - set(_identifiers(out))
        return self._scrub(out, foreign) if foreign else out

    # -- deciding

    def _mine(self, entry: Mapping) -> bool:
        if _is_place(entry):
            return any(_is_client(c) and self._mine(c) for c in entry.get("clients") or ())
        return self.owners(entry) == {self.tenant}

    def _name_mine(self, name: Any) -> bool:
        if not isinstance(name, str) or not name:
            return True  # no name, nothing to hide
        return set(self.owners({"client_id": name})) | self.named.get(name, set()) == {self.tenant}

    def _drop(self, v: Any) -> None:
        self.removed.update(_identifiers(v) if not isinstance(v, str) else [v])

    # -- walking

    def _dict(self, d: Mapping) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in d.items():
            if k in CLIENT_NAME_KEYS and isinstance(v, str) and not self._name_mine(v):
                self._drop(v)
                out[k], out[f"{k}_other_tenant"] = None, True
            elif k in CLIENT_NAME_LIST_KEYS and isinstance(v, (list, tuple)):
                mine = [x for x in v if self._name_mine(x)]
                self.removed.update(x for x in v if not self._name_mine(x))
                out[k] = mine
                if len(mine) < len(v):
                    out[f"other_{k}"] = len(v) - len(mine)
            elif k in CLIENT_NAME_MAP_KEYS and isinstance(v, Mapping):
                out[k] = {n: x for n, x in v.items() if self._name_mine(n)}
                self.removed.update(n for n in v if not self._name_mine(n))
            elif _is_client(v) or _is_place(v):
                if self._mine(v):
                    out[k] = self._dict(v)
                else:  # one other client (slow_client_detail): gone; the name key beside it says whose
                    self._drop(v)
            elif isinstance(v, (list, tuple)):
                counts: dict[str, Any] = {}
                out[k] = self._list(k, v, d, counts)
                out.update(counts)
            elif isinstance(v, Mapping):
                out[k] = self._dict(v)
            else:
                out[k] = v
        return out

    def _list(self, key: str, items: list | tuple, parent: Mapping, counts: dict[str, Any]) -> list:
        """The entries of ``items`` ``tenant`` may see; what was taken out counted into ``counts``."""
        kept, others = [], []
        for x in items:
            if _is_client(x) or _is_place(x):
                if self._mine(x):
                    kept.append(self._dict(x))
                else:
                    others.append(x)
                    self._drop(x)
            elif isinstance(x, Mapping):
                kept.append(self._dict(x))
            elif isinstance(x, (list, tuple)):
                kept.append(self._list(key, x, {}, {}))
            else:
                kept.append(x)
        if others:
            counts[f"other_{key}"] = len(others)
            ratios = [
                float(o["request_time_ratio"]) for o in others if isinstance(o.get("request_time_ratio"), (int, float))
            ]
            if ratios:
                theirs = sum(ratios)
                total = parent.get(f"all_{key}_request_time_ratio")
                if not isinstance(total, (int, float)) or total < theirs:
                    total = theirs + sum(
                        float(c.get("request_time_ratio") or 0) for c in kept if isinstance(c, Mapping)
                    )
                counts[f"other_{key}_request_time_ratio"] = round(theirs, 4)
                counts[f"other_{key}_share"] = round(theirs / total, 4) if total > 0 else None
        return kept

    # -- scrubbing what the vocabulary did not know

    def _scrub(self, v: Any, foreign: set[str]) -> Any:
        if isinstance(v, Mapping):
            return {k: self._scrub(x, foreign) for k, x in v.items() if k not in foreign}
        if isinstance(v, list):
            return [self._scrub(x, foreign) for x in v]
        if isinstance(v, str):
            if v in foreign:
                return OTHER_TENANT
            for ident in sorted((i for i in foreign if len(i) >= MIN_SCRUB_LENGTH), key=len, reverse=True):
                v = v.replace(ident, OTHER_TENANT)
            return v
        return v
