"""KafkaClientHurtsOtherTenants: the client advisor's findings whose cost every tenant of the broker pays (poor
batching, request storms, polling too often, connection churn: shared network and request-handler threads).

The rules are the advisor's (``monitor.advisor.findings``), not repeated here: this shell reads the same snapshot
through the engine's source and turns each such finding into one observation labelled with the tenant and the
client (``client_id``, ``user``; for connection churn, whose culprit Kafka cannot name, the first suspect).

Every finding of every cluster (not only those that hurt others) is also published to ``board`` when one is given:
``serve``'s alerts role exports them as ``kafka_client_advisor_finding`` (monitor.advisor.exported), so the
snapshot is read once per cycle for both.
"""

from __future__ import annotations

from alerts.detectors import DetectorContext
from alerts.types import Observation, Rule
from monitor.advisor.exported import FindingsBoard
from monitor.advisor.findings import advise
from monitor.advisor.source import read_snapshot
from monitor.core.errors import QueryError


def detect(rule: Rule, ctx: DetectorContext, *, board: FindingsBoard | None = None) -> list[Observation]:
    window = str(rule.params.get("window", "10m"))
    out, failed = [], None
    for cluster in ctx.config.clusters:
        try:
            snap = read_snapshot(ctx.source, cluster=cluster.name, tenants=ctx.tenants, now=ctx.now, window=window)
        except QueryError as exc:
            # One unreadable cluster must not hide the others' findings; the rule still reports the error.
            if board is not None:
                board.forget(cluster.name)
            failed = failed or exc
            continue
        found = advise(snap)
        if board is not None:
            board.publish(cluster.name, found)
        for f in found:
            client = f.client_id or (f.suspects[0] if f.suspects else "")
            if not f.hurts_other_tenants or not f.tenant or not client:
                continue  # nobody to name: the advice endpoint still reports it
            labels = {"cluster": f.cluster, "tenant": f.tenant, "client_id": client, "user": f.user,
                      "finding": f.kind.value}
            out.append(Observation(labels=labels, value=f.evidence.get("thread_seconds_per_mib"),
                                   evidence={**f.evidence, "suspects": list(f.suspects), "cause": f.cause,
                                             "fix": f.fix, "metrics": list(f.metrics)}))
    if failed is not None:
        raise failed
    return out
