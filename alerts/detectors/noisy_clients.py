"""KafkaClientHurtsOtherTenants: the client advisor's findings whose cost every tenant of the broker pays (poor
batching, request storms, polling too often, connection churn: shared network and request-handler threads), when the
finding measured that cost as material (``Finding.hurts_other_tenants``; the thresholds are in
``monitor.advisor.findings.Thresholds``).

The rules are the advisor's (``monitor.advisor.findings``), not repeated here: this shell reads the same snapshot
through the engine's source and turns each such finding into one observation (``observation_for``, pure).

A name needs that client's own evidence (issue 28): ``client_id`` is a label only when the finding names the client
on its own figures. A tenant-and-topic finding (the brokers' per-topic counts, the culprit not identified yet) is an
observation labelled with the tenant and ``topic``, no ``client_id``, its candidates in the evidence; it waits the
rule's ``for`` plus one advisor window before firing, the time the culprit's own figures need to cover a window. When
they arrive the advisor names the client and the tenant-and-topic finding is gone, so the pending instance clears
without a page and the named one fires: one page, by name. Only a culprit whose figures never come in (no quota
sensors, no telemetry) is paged as tenant-and-topic.

Every finding of every cluster (not only those that hurt others) is also published to ``board`` when one is given:
``serve``'s alerts role exports them as ``kafka_client_advisor_finding`` (monitor.advisor.exported), so the
snapshot is read once per cycle for both.
"""

from __future__ import annotations

from alerts.detectors.context import DetectorContext, window_seconds
from alerts.types import Observation, Rule
from monitor.advisor.exported import FindingsBoard
from monitor.advisor.findings import advise
from monitor.advisor.source import read_snapshot
from monitor.advisor.types import Finding
from monitor.core.errors import QueryError


def observation_for(f: Finding, *, rule_for_seconds: float, window: float) -> Observation | None:
    """The alert observation of one finding, or None when it pages nobody: it does not hurt other tenants (kind, or
    a cost below the material threshold), or it has no tenant (operators read it from the advice endpoint). Named
    by ``client_id`` only when the finding names the client on its own evidence; a tenant-and-topic finding is
    labelled with its busiest poor topic and waits ``rule_for_seconds + window`` (see the module docstring). Pure."""
    if not f.hurts_other_tenants or not f.tenant:
        return None
    evidence = {
        **f.evidence,
        "suspects": list(f.suspects),
        "candidates": list(f.candidates),
        "cause": f.cause,
        "fix": f.fix,
        "metrics": list(f.metrics),
    }
    labels = {"cluster": f.cluster, "tenant": f.tenant, "finding": f.kind.value}
    if f.client_id:
        labels.update(client_id=f.client_id, user=f.user)
        return Observation(labels=labels, value=f.evidence.get("thread_seconds_per_mib"), evidence=evidence)
    topics = f.evidence.get("poor_topics") or {}
    if not topics:
        return None  # cluster-level (connection churn): Kafka cannot say which client; the advice endpoint lists it
    topic = max(sorted(topics), key=lambda tp: topics[tp].get("produce_requests_per_second", 0.0))
    return Observation(
        labels={**labels, "topic": topic},
        value=f.evidence.get("produce_requests_per_second"),
        evidence={**evidence, "client_identified": False},
        for_seconds=rule_for_seconds + window,
    )


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
            ob = observation_for(f, rule_for_seconds=rule.for_seconds, window=window_seconds(rule))
            if ob is not None:
                out.append(ob)
    if failed is not None:
        raise failed
    return out
