"""Tenant SLO burn: the multi-window, multi-burn-rate alerts of ``alerts/slo.py``, evaluated by the engine from raw
series, so the built-in engine pages without Prometheus rule files.

Per rule (``params``: ``long``, ``short`` windows and the burn-rate ``factor``): the availability of every (cluster,
tenant) over both windows (``slo.availability_query``), each tenant judged against its own objective
(``slo.objective_for``) by ``slo.burning``. The observation is labelled ``cluster`` and ``tenant`` (scope tenant:
routed like the tenant's other alerts) with the long window's burn rate as its value, and its evidence says why: the
availability and burn rate over both windows, and over the short window the brokers leading the tenant's partitions
whose probe failed (with their error and lost counts) and the tenant's topics with offline or under-min-ISR
partitions. Nothing in it belongs to another tenant: the brokers are those leading this tenant's partitions, the
topics its own.
"""

from __future__ import annotations

from alerts import slo
from alerts.detectors.context import DetectorContext
from alerts.types import Observation, Rule
from monitor.core.metric_names import M

Key = tuple[str, str]  # (cluster, tenant)


def _by_key(samples) -> dict[Key, float]:
    return {(s.labels.get("cluster", ""), s.labels.get("tenant", "")): s.value for s in samples}


def judge(
    long_avail: dict[Key, float], short_avail: dict[Key, float], objectives: dict[str, float], *, factor: float
) -> list[tuple[Key, float, float]]:
    """Pure: the (cluster, tenant) pairs whose budget burns faster than ``factor`` over both windows, with their
    long and short burn rates. Tenants without an objective (not registered) are nobody's alert."""
    out = []
    for key in sorted(long_avail.keys() & short_avail.keys()):
        objective = objectives.get(key[1])
        if objective is None or not slo.burning(long_avail[key], short_avail[key], objective=objective, factor=factor):
            continue
        out.append((key, slo.burn_rate(long_avail[key], objective), slo.burn_rate(short_avail[key], objective)))
    return out


def _causes(ctx: DetectorContext, window: str) -> tuple[dict[Key, dict], dict[Key, dict]]:
    """Over ``window``: per (cluster, tenant), the brokers leading its partitions whose probe failed ({broker:
    {error, lost}}) and its topics with unavailable partitions ({topic: {offline, under_min_isr}})."""
    failures: dict[tuple[str, str], dict[str, int]] = {}
    for s in ctx.source.query(
        f"sum by (cluster, broker, result) (increase({M['probe_messages']}"
        f'{{result=~"{slo.PROBE_FAILURES}"}}[{window}])) > 0',
        ctx.now,
    ):
        failures.setdefault((s.labels.get("cluster", ""), s.labels.get("broker", "")), {})[
            s.labels.get("result", "")
        ] = round(s.value)
    brokers: dict[Key, dict] = {}
    for s in ctx.source.query(
        f"max by (cluster, tenant, broker) (max_over_time({M['tenant_partition_leaders']}[{window}])) > 0", ctx.now
    ):
        cluster, broker = s.labels.get("cluster", ""), s.labels.get("broker", "")
        if (cluster, broker) in failures:
            brokers.setdefault((cluster, s.labels.get("tenant", "")), {})[broker] = failures[(cluster, broker)]
    topics: dict[Key, dict] = {}
    for kind, key in (("offline", "topic_offline_partitions"), ("under_min_isr", "topic_under_min_isr")):
        for s in ctx.source.query(
            f'max by (cluster, tenant, topic) (max_over_time({M[key]}{{tenant!=""}}[{window}])) > 0', ctx.now
        ):
            row = topics.setdefault((s.labels.get("cluster", ""), s.labels.get("tenant", "")), {})
            row.setdefault(s.labels.get("topic", ""), {})[kind] = round(s.value)
    return brokers, topics


def detect(rule: Rule, ctx: DetectorContext) -> list[Observation]:
    long_w, short_w, factor = str(rule.params["long"]), str(rule.params["short"]), float(rule.params["factor"])
    objectives = {t.name: slo.objective_for(t, ctx.config.slo) for t in ctx.config.tenants}
    if not objectives:
        return []
    long_avail = _by_key(ctx.source.query(slo.availability_query(long_w), ctx.now))
    short_avail = _by_key(ctx.source.query(slo.availability_query(short_w), ctx.now))
    burning = judge(long_avail, short_avail, objectives, factor=factor)
    if not burning:
        return []
    brokers, topics = _causes(ctx, short_w)
    out = []
    for (cluster, tenant), long_burn, short_burn in burning:
        failing = brokers.get((cluster, tenant), {})
        out.append(
            Observation(
                labels={"cluster": cluster, "tenant": tenant},
                value=round(long_burn, 3),
                evidence={
                    "objective": objectives[tenant],
                    "factor": factor,
                    "availability": {
                        long_w: round(long_avail[(cluster, tenant)], 6),
                        short_w: round(short_avail[(cluster, tenant)], 6),
                    },
                    "burn_rate": {long_w: round(long_burn, 3), short_w: round(short_burn, 3)},
                    "brokers": sorted(failing, key=lambda b: (len(b), b)),
                    "probe_failures": failing,
                    "topics": topics.get((cluster, tenant), {}),
                    "window": short_w,
                },
            )
        )
    return out
