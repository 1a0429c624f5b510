"""One evaluation cycle, as a function of (rules, previous instances, source, now, mutes): no clock, no store.

    for each rule:   threshold -> PromQL instant query;  detector -> Python over the source
                     an error marks the rule health=err, keeps its instances as they were (a failing query must
                     not resolve incidents) and raises KafkaHealthRuleFailing; the loop goes on
    no data:         one query counts every rule input per cluster; a missing input raises KafkaHealthRuleNoData
                     (and per live broker for broker-scoped rules: a broker no collector watches)
    attribution:     each observation becomes one instance per tenant hurt (alerts.attribution)
    state machine:   alerts.state.step per instance
    mute + dedup:    silences and inhibition hold back pages not yet sent (what Alertmanager already holds as
                     firing keeps being refreshed there); ``notified_state`` makes notifications idempotent, so
                     replaying a cycle after a restart sends nothing twice and loses no resolve.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum

from alerts.attribution import Attributor, placement_from_samples
from alerts.detectors import Detector, DetectorContext
from monitor.core.metric_names import M
from alerts.models import AlertState
from alerts.mute import DEFAULT_INHIBIT_RULES, Inhibitor, InhibitRule, MuteStage, Muter
from monitor.core.prom import Source
from alerts.rules import render_annotations
from alerts.state import step
from alerts.types import Decision, Instance, Observation, Rule, Scope, fingerprint
from monitor.core.config import Config
from monitor.core.errors import KafkaHealthError
from monitor.core.tenancy import TenantIndex

log = logging.getLogger(__name__)

NO_DATA = "KafkaHealthRuleNoData"
FAILING = "KafkaHealthRuleFailing"


class RuleHealth(str, Enum):
    OK = "ok"
    ERR = "err"
    NO_DATA = "nodata"


@dataclass(frozen=True)
class RuleStatus:
    health: RuleHealth
    error: str = ""
    duration_seconds: float = 0.0
    observations: int = 0


@dataclass(frozen=True)
class Notification:
    instance: Instance
    decision: Decision


@dataclass
class CycleResult:
    instances: dict[str, Instance]  # fingerprint -> instance to keep (pending, firing, resolved)
    deleted: set[str]  # fingerprints to forget (pending that cleared)
    notifications: list[Notification]
    rules: dict[str, RuleStatus] = field(default_factory=dict)
    data_ok: dict[str, bool] = field(default_factory=dict)  # per configured cluster: every core input had data
    detail: dict[str, str] = field(default_factory=dict)


def _dedup(inst: Instance) -> Decision:
    """Alertmanager's dedup stage: notify what the receiver has not been told yet."""
    if inst.state is AlertState.FIRING and inst.notified_state is not AlertState.FIRING and not inst.muted_by:
        return Decision.NOTIFY_FIRING
    if inst.state is AlertState.RESOLVED and inst.notified_state is AlertState.FIRING:
        return Decision.NOTIFY_RESOLVED
    return Decision.NONE


class Engine:
    def __init__(self, config: Config, rules: list[Rule], detectors: dict[str, Detector], *,
                 inhibit_rules: Iterable[InhibitRule] = DEFAULT_INHIBIT_RULES):
        self.config = config
        self.rules = [r for r in rules if r.kind != "engine"]
        self.engine_rules = {r.name: r for r in rules if r.kind == "engine"}
        self.detectors = detectors
        self.tenants = TenantIndex(config.tenants)
        self.inhibit_rules = tuple(inhibit_rules)
        unknown = [r.name for r in self.rules if r.kind == "detector" and r.detector not in detectors]
        if unknown:
            raise KafkaHealthError(f"rules refer to unknown detectors: {', '.join(unknown)}")

    # ------------------------------------------------------------------------------------------- observing

    def _observe(self, rule: Rule, ctx: DetectorContext) -> list[Observation]:
        if rule.kind == "detector":
            return self.detectors[rule.detector](rule, ctx)
        return [Observation(labels=s.labels, value=s.value,
                            evidence={"value": s.value, "expr": rule.expr, **{k: v for k, v in rule.params.items()
                                                                             if isinstance(v, (int, float))}})
                for s in ctx.source.query(rule.expr, ctx.now)]

    def _no_data(self, source: Source, now: datetime) -> tuple[list[Observation], dict[str, set[str]], str | None]:
        """Observations for rule inputs with no series per configured cluster; also which inputs each cluster has."""
        metrics = sorted({m for r in self.rules for m in r.inputs})
        present: dict[str, set[str]] = {}
        if not metrics:
            return [], present, None
        try:
            rows = source.query(f'count by (__name__, cluster) ({{__name__=~"{"|".join(metrics)}"}})', now)
        except KafkaHealthError as exc:
            return [], present, str(exc)
        for s in rows:
            present.setdefault(s.labels.get("cluster", ""), set()).add(s.labels.get("__name__", ""))
        clusters = [c.name for c in self.config.clusters] or sorted(c for c in present if c)
        out = []
        for cluster in clusters:
            have = present.get(cluster, set())
            for r in self.rules:
                for metric in r.inputs:
                    if metric not in have:
                        out.append(Observation(labels={"cluster": cluster, "rule": r.name, "metric": metric},
                                               value=0.0, evidence={"rule": r.name, "metric": metric,
                                                                    "reason": "no series in Prometheus"}))
        return out + self._no_data_per_broker(source, now, clusters), present, None

    def _no_data_per_broker(self, source: Source, now: datetime, clusters: list[str]) -> list[Observation]:
        """Broker-scoped rules' inputs that some live brokers have and others lack: a broker left out of the JMX or
        host collector's targets is otherwise watched by nothing, with no word about it. Live = in the metadata
        (``broker_up == 1``); a dead broker is KafkaBrokerUnreachable's business. An input absent on every broker
        is already reported for the whole cluster above."""
        rules = [r for r in self.rules if r.scope is Scope.BROKER]
        metrics = sorted({m for r in rules for m in r.inputs} - {M["broker_up"]})
        if not metrics:
            return []
        try:
            rows = source.query(f'count by (__name__, cluster, broker) ({{__name__=~"{"|".join(metrics)}"}})', now)
            up = source.query(f"max by (cluster, broker) ({M['broker_up']}) == 1", now)
        except KafkaHealthError:
            return []  # the cluster-level check stands; the next cycle tries again
        seen: dict[tuple[str, str], set[str]] = {}
        for row in rows:
            seen.setdefault((row.labels.get("cluster", ""), row.labels.get("__name__", "")), set()).add(
                row.labels.get("broker", ""))
        live: dict[str, set[str]] = {}
        for row in up:
            live.setdefault(row.labels.get("cluster", ""), set()).add(row.labels.get("broker", ""))
        out = []
        for cluster in clusters:
            for r in rules:
                for metric in r.inputs:
                    have = seen.get((cluster, metric))
                    if metric == M["broker_up"] or not have:
                        continue
                    for broker in sorted(live.get(cluster, set()) - have, key=lambda b: (len(b), b)):
                        out.append(Observation(
                            labels={"cluster": cluster, "rule": r.name, "metric": metric, "broker": broker},
                            value=0.0, evidence={"rule": r.name, "metric": metric, "broker": broker, "reason": (
                                f"broker {broker} is up but has no {metric} series while "
                                f"{len(have)} node(s) of the cluster have it: is the broker in the collectors' targets?")}))
        return out

    # ------------------------------------------------------------------------------------------- the cycle

    def evaluate(self, prev: dict[str, Instance], source: Source, now: datetime, *,
                 silences: Muter | None = None, resend_seconds: float = 60.0) -> CycleResult:
        """``resend_seconds``: firing alerts already sent are refreshed to Alertmanager this often, muted or not (it
        resolves alerts whose ``endsAt`` passes), as Prometheus' resend delay does."""
        ctx = DetectorContext(source=source, now=now, config=self.config, tenants=self.tenants)
        try:
            placement = placement_from_samples(
                source.query(f"count by (cluster, broker, topic) (last_over_time({M['topic_size']}[1h]))", now),
                self.tenants)
        except KafkaHealthError:
            placement = {}  # fall back to every tenant on the cluster
        attributor = Attributor(self.config, self.tenants, placement)
        statuses: dict[str, RuleStatus] = {}
        observed: dict[str, dict[str, tuple[dict, Observation]]] = {}  # rule -> fp -> (labels, obs)
        failing: list[Observation] = []
        by_name = {r.name: r for r in self.rules}

        for rule in self.rules:
            t0 = time.perf_counter()
            try:
                obs = self._observe(rule, ctx)
            except Exception as exc:  # noqa: BLE001 - a broken rule or detector must not stop the others
                msg = str(exc) if isinstance(exc, KafkaHealthError) else f"{type(exc).__name__}: {exc}"
                if not isinstance(exc, KafkaHealthError):
                    log.exception("rule %s failed", rule.name)
                statuses[rule.name] = RuleStatus(RuleHealth.ERR, msg[:500], time.perf_counter() - t0)
                failing.append(Observation(labels={"rule": rule.name}, value=1.0, evidence={"error": msg[:500]}))
                continue
            statuses[rule.name] = RuleStatus(RuleHealth.OK, "", time.perf_counter() - t0, len(obs))
            observed[rule.name] = self._expand(rule, obs, attributor)

        no_data, present, nd_error = self._no_data(source, now)
        for rule_name, r in ((NO_DATA, self.engine_rules.get(NO_DATA)), (FAILING, self.engine_rules.get(FAILING))):
            if r is None:
                continue
            obs = no_data if rule_name == NO_DATA else failing
            if rule_name == NO_DATA and nd_error is not None:
                statuses[NO_DATA] = RuleStatus(RuleHealth.ERR, nd_error)
                continue  # unknown: keep its instances as they are
            statuses.setdefault(rule_name, RuleStatus(RuleHealth.OK, observations=len(obs)))
            observed[rule_name] = self._expand(r, obs, attributor)
            by_name[rule_name] = r
        for o in no_data:
            name = o.labels["rule"]
            if statuses.get(name) and statuses[name].health is RuleHealth.OK:
                where = f" on broker {o.labels['broker']}" if "broker" in o.labels else ""
                statuses[name] = RuleStatus(RuleHealth.NO_DATA, f"no data for {o.labels['metric']}{where}",
                                            statuses[name].duration_seconds)

        # state machine over the union of known and observed instances of every rule that evaluated
        keep: dict[str, Instance] = {}
        deleted: set[str] = set()
        for fp, inst in prev.items():
            if inst.rule not in observed:  # rule failed (or was removed/disabled: resolve below)
                if inst.rule in by_name or inst.rule in statuses:
                    keep[fp] = inst
                    continue
                nxt, _ = step(inst, None, now, Rule(name=inst.rule, severity=inst.severity, scope=None))  # type: ignore[arg-type]
                self._keep(fp, nxt, keep, deleted)
                continue
            hit = observed[inst.rule].pop(fp, None)
            nxt, _ = step(inst, hit[1] if hit else None, now, by_name[inst.rule])
            self._keep(fp, nxt, keep, deleted, hit[0] if hit else None)
        for rule_name, fresh in observed.items():
            for fp, (labels, obs) in fresh.items():
                nxt, _ = step(None, obs, now, by_name[rule_name], labels)
                self._keep(fp, nxt, keep, deleted, labels)

        # mute, then decide what to notify
        mute = MuteStage(*(m for m in (silences, Inhibitor(self.inhibit_rules, keep.values())) if m is not None))
        notes = []
        for fp, inst in keep.items():
            r = by_name.get(inst.rule)
            updates: dict = {}
            if r is not None and inst.last_evaluated_at == now and inst.state is not AlertState.RESOLVED:
                ann = render_annotations(r.annotations, inst.labels, inst.value)
                if ann != inst.annotations:
                    updates["annotations"] = ann
            muted = mute.mutes(inst.labels) if inst.state is not AlertState.RESOLVED else None
            if muted != inst.muted_by:
                updates["muted_by"] = muted
            if updates:  # instances are immutable; copying thousands per cycle is the engine's main cost
                inst = inst.evolve(**updates)
                keep[fp] = inst
            decision = _dedup(inst)
            # Refresh whatever Alertmanager already holds as firing, muted or not (Prometheus too keeps sending
            # firing alerts whatever Alertmanager's silences say): else Alertmanager times its copy out and reports
            # a false resolve, and the end of the silence pages again. A mute holds back pages not yet sent and
            # webhooks (refreshes never go to webhooks: alerts.notify.targets_for).
            if (decision is Decision.NONE and inst.state is AlertState.FIRING
                    and inst.notified_state is AlertState.FIRING and inst.last_sent_at is not None
                    and now - inst.last_sent_at >= timedelta(seconds=resend_seconds)):
                decision = Decision.REFRESH
            if decision is not Decision.NONE:
                inst = inst.evolve(notified_state=inst.state, last_sent_at=now)
                keep[fp] = inst
                notes.append(Notification(inst, decision))

        core = {M["broker_up"]}
        data_ok, detail = {}, {}
        for c in self.config.clusters:
            missing = sorted(m for m in {x for r in self.rules for x in r.inputs} if m not in present.get(c.name, set()))
            data_ok[c.name] = nd_error is None and not (core & set(missing))
            detail[c.name] = (f"prometheus: {nd_error}" if nd_error else
                              f"no data: {', '.join(missing)}" if missing else "ok")[:500]
        return CycleResult(keep, deleted, notes, statuses, data_ok, detail)

    @staticmethod
    def _expand(rule: Rule, obs: list[Observation], attributor: Attributor) -> dict[str, tuple[dict, Observation]]:
        out = {}
        for o in obs:
            for labels, ob in attributor.expand(rule, o):
                out[fingerprint(rule.name, labels)] = (labels, ob)
        return out

    @staticmethod
    def _keep(fp: str, inst: Instance | None, keep: dict, deleted: set, labels: dict | None = None) -> None:
        if inst is None:
            deleted.add(fp)
        else:
            keep[fp] = inst
