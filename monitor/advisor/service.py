"""What the API and the CLI call: one tenant's advice, one cluster's capacity plan.

Both take the data source, the tenants and ``now`` as parameters. A cluster whose Prometheus query fails is reported
as ``unavailable`` with the error's public message ("metrics backend unavailable": tenants read these answers and the
detail names the operator's infrastructure; the detail goes to the log); one for which Prometheus answers but holds
none of the brokers' series is ``no_data``, with the inputs that were empty. Neither is ever reported as ``ok`` with
no findings: no data, failed and "all good" stay distinct.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from monitor.advisor import capacity, findings
from monitor.advisor.source import read_snapshot, read_usage
from monitor.advisor.types import SNAPSHOT_INPUTS, DataStatus
from monitor.core.config import TenantConfig
from monitor.core.errors import QueryError
from monitor.core.prom import Source

log = logging.getLogger(__name__)

# A look-back window as PromQL takes it (it is put into queries, so nothing else may pass).
WINDOW = r"^[1-9][0-9]{0,4}[smhd]$"


@dataclass(frozen=True)
class ClusterStatus:
    cluster: str
    status: DataStatus
    message: str = ""

    def as_json(self) -> dict:
        return {"cluster": self.cluster, "status": self.status.value, "message": self.message}


def _no_data(cluster: str, window: str, empty: Iterable[str]) -> str:
    return f"Prometheus holds no data for cluster {cluster!r} in the last {window}: no {'; no '.join(empty)}"


def clusters_of(tenant: TenantConfig) -> list[str]:
    return sorted(set(tenant.whole_clusters) | {s.cluster for s in tenant.selectors})


def tenant_advice(*, source: Source, tenant: TenantConfig, tenants: Iterable[TenantConfig], now: datetime,
                  window: str = "10m", thresholds: findings.Thresholds = findings.Thresholds()) -> dict:
    """Findings for ``tenant`` on every cluster it is on. ``tenants`` (all of them) attribute clients, so a client
    of another tenant is never reported to this one."""
    tenants = tuple(tenants)
    out, statuses = [], []
    for cluster in clusters_of(tenant):
        try:
            snap = read_snapshot(source, cluster=cluster, tenants=tenants, now=now, window=window)
        except QueryError as exc:
            log.warning("advice for %s: cluster %s unavailable: %s", tenant.name, cluster, exc)
            statuses.append(ClusterStatus(cluster, DataStatus.UNAVAILABLE, exc.public))
            continue
        if snap.has_broker_data:
            statuses.append(ClusterStatus(cluster, DataStatus.OK))
        else:  # the consumer-group rule may still find something; the client rules had nothing to read
            empty = [SNAPSHOT_INPUTS[k] for k, seen in snap.inputs_seen().items() if not seen]
            statuses.append(ClusterStatus(cluster, DataStatus.NO_DATA, _no_data(cluster, window, empty)))
        out.extend(findings.for_tenant(findings.advise(snap, thresholds), tenant.name))
    return {"tenant": tenant.name, "as_of": now.isoformat(), "window": window,
            "clusters": [s.as_json() for s in statuses], "findings": [f.as_json() for f in out]}


def cluster_capacity(*, source: Source, cluster: str, tenants: Iterable[TenantConfig], now: datetime,
                     only_tenant: str | None = None, window: str = "1h",
                     limits: capacity.Limits = capacity.Limits(),
                     scenario: capacity.Scenario = capacity.Scenario()) -> dict:
    """The plan for ``cluster`` (with ``scenario`` applied when given). ``only_tenant``: a tenant's view, its own
    row only, without cluster-wide totals that would describe other tenants' usage."""
    head = {"cluster": cluster, "as_of": now.isoformat(), "window": window}
    try:
        usage = read_usage(source, cluster=cluster, tenants=tenants, now=now, window=window, limits=limits)
    except QueryError as exc:
        log.warning("capacity of cluster %s unavailable: %s", cluster, exc)
        return {**head, "status": DataStatus.UNAVAILABLE.value, "message": exc.public, "plan": None, "what_if": None}
    missing = capacity.missing_inputs(usage)
    if "brokers" in missing:  # nothing to plan with: no plan rather than one made of zeros ("disks full now")
        message = _no_data(cluster, window, [capacity.MISSING[k][0] for k in missing if k in ("brokers", "topics")])
        return {**head, "status": DataStatus.NO_DATA.value, "message": message, "plan": None, "what_if": None}
    current = capacity.plan(usage, limits)
    what_if = capacity.plan(usage, limits, scenario) if not scenario.is_empty else None

    def view(p: capacity.Plan | None) -> dict | None:
        if p is None:
            return None
        body = p.as_json(cluster_wide=only_tenant is None)
        if only_tenant is not None:
            body["tenants"] = [t for t in body["tenants"] if t["tenant"] == only_tenant]
        return body

    # Some inputs missing: a plan, the figures needing them null, and the message (and ``plan.missing``) says which.
    message = "; ".join(capacity.describe_missing(k) for k in missing)
    return {**head, "status": DataStatus.OK.value, "message": message, "plan": view(current), "what_if": view(what_if)}


def parse_scenario(grow: Iterable[str] = (), add: Iterable[str] = ()) -> capacity.Scenario:
    """``grow``: ``TENANT:FACTOR`` (e.g. ``shop:3``); ``add``: ``NAME:MB_PER_S:DAYS[:PARTITIONS]`` (MB = 10^6 B).
    Raises ``Invalid`` naming the bad entry."""
    from monitor.core.errors import Invalid

    g = []
    for item in grow:
        name, _, factor = item.partition(":")
        try:
            f = float(factor)
        except ValueError:
            raise Invalid(f"expected TENANT:FACTOR, got {item!r}", field="grow") from None
        if not name or not f > 0:
            raise Invalid(f"expected TENANT:FACTOR with a positive factor, got {item!r}", field="grow")
        g.append((name, f))
    a = []
    for item in add:
        parts = item.split(":")
        try:
            if len(parts) not in (3, 4) or not parts[0]:
                raise ValueError
            mb, days = float(parts[1]), float(parts[2])
            partitions = float(parts[3]) if len(parts) == 4 else 0.0
            if mb < 0 or days <= 0 or partitions < 0:
                raise ValueError
        except ValueError:
            raise Invalid(f"expected NAME:MB_PER_S:DAYS[:PARTITIONS], got {item!r}", field="add") from None
        a.append(capacity.NewTenant(name=parts[0], bytes_in_per_second=mb * 1e6, retention_seconds=days * capacity.DAY,
                                    partitions=partitions))
    return capacity.Scenario(grow=tuple(g), add=tuple(a))
