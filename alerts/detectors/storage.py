"""Tenants near their storage budget: the size of a tenant's topics against its contract's storage_budget_bytes."""

from __future__ import annotations

from alerts.detectors.context import DetectorContext
from alerts.types import Observation, Rule, Severity
from monitor.core.metric_names import M


def budget_usage(topic_sizes: list[tuple[str, str, float]], owner, budgets: dict[str, int]) -> dict[str, dict]:
    """topic_sizes: (cluster, topic, bytes); owner(cluster, topic) -> tenant. Returns per tenant with a budget:
    {used_bytes, budget_bytes, ratio, by_cluster}."""
    out: dict[str, dict] = {}
    for cluster, topic, size in topic_sizes:
        tenant = owner(cluster, topic)
        if tenant is None or tenant not in budgets:
            continue
        row = out.setdefault(tenant, {"used_bytes": 0.0, "budget_bytes": budgets[tenant], "by_cluster": {}})
        row["used_bytes"] += size
        row["by_cluster"][cluster] = row["by_cluster"].get(cluster, 0.0) + size
    for row in out.values():
        row["ratio"] = row["used_bytes"] / row["budget_bytes"]
    return out


def detect(rule: Rule, ctx: DetectorContext) -> list[Observation]:
    budgets = {t.name: t.contract.storage_budget_bytes for t in ctx.config.tenants if t.contract.storage_budget_bytes}
    if not budgets:
        return []
    samples = ctx.source.query(f"sum by (cluster, topic) ({M['topic_size']})", ctx.now)
    rows = [(s.labels.get("cluster", ""), s.labels.get("topic", ""), s.value) for s in samples]
    usage = budget_usage(rows, ctx.tenants.for_topic, budgets)
    out = []
    for tenant, row in sorted(usage.items()):
        if row["ratio"] >= float(rule.params["critical"]):
            sev = Severity.CRITICAL
        elif row["ratio"] >= float(rule.params["warning"]):
            sev = Severity.WARNING
        else:
            continue
        out.append(
            Observation(
                labels={"tenant": tenant},
                value=round(row["ratio"], 3),
                severity=sev,
                evidence={k: row[k] for k in ("used_bytes", "budget_bytes", "ratio", "by_cluster")},
            )
        )
    return out
