"""KafkaClientHurtsOtherTenants: the client advisor's findings whose cost every tenant of the broker pays (poor
batching, request storms, polling too often, connection churn: shared network and request-handler threads).

The rules are the advisor's (``monitor.advisor.findings``), not repeated here: this shell reads the same snapshot
through the engine's source and turns each such finding into one observation labelled with the tenant and the
client (``client_id``, ``user``; for connection churn, whose culprit Kafka cannot name, the first suspect).
"""

from __future__ import annotations

from alerts.detectors import DetectorContext
from alerts.types import Observation, Rule


def detect(rule: Rule, ctx: DetectorContext) -> list[Observation]:
    from monitor.advisor.findings import advise
    from monitor.advisor.source import read_snapshot

    window = str(rule.params.get("window", "10m"))
    out = []
    for cluster in ctx.config.clusters:
        snap = read_snapshot(ctx.source, cluster=cluster.name, tenants=ctx.tenants, now=ctx.now, window=window)
        for f in advise(snap):
            client = f.client_id or (f.suspects[0] if f.suspects else "")
            if not f.hurts_other_tenants or not f.tenant or not client:
                continue  # nobody to name: the advice endpoint still reports it
            labels = {"cluster": f.cluster, "tenant": f.tenant, "client_id": client, "user": f.user,
                      "finding": f.kind.value}
            out.append(Observation(labels=labels, value=f.evidence.get("thread_seconds_per_mib"),
                                   evidence={**f.evidence, "suspects": list(f.suspects), "cause": f.cause,
                                             "fix": f.fix, "metrics": list(f.metrics)}))
    return out
