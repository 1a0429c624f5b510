"""One evaluation cycle, as a function of (rules, previous instances, source, now, mutes): no clock, no store.

for each rule:   threshold -> PromQL instant query;  detector -> Python over the source
                 an error marks the rule health=err, keeps its instances as they were (a failing query must
                 not resolve incidents) and raises KafkaHealthRuleFailing; the loop goes on
no data:         one query counts every rule input per cluster; a missing input raises KafkaHealthRuleNoData
                 (and per live broker for broker-scoped rules: a broker no collector watches)
attribution:     each observation becomes one instance per tenant hurt (alerts.attribution), each tenant's
                 copy confined to its own clients (the operator copy keeps all)
state machine:   alerts.state.advance per instance, then its annotations rendered
mute:            silences and inhibition hold back pages not yet sent (what Alertmanager already holds as
                 firing keeps being refreshed there)
notify:          alerts.state.decide per instance, the one place that decides; ``notified_state`` makes
                 notifications idempotent, so replaying a cycle after a restart sends nothing twice and loses no
                 resolve.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import NamedTuple

from alerts.attribution import Attributor, placement_from_samples
from alerts.detectors import Detector, DetectorContext
from alerts.mute import DEFAULT_INHIBIT_RULES, Inhibitor, InhibitRule, Muter, MuteStage
from alerts.observable import NotObservable
from alerts.rules import EXPECTED_WHEN, render_annotations
from alerts.state import advance, decide
from alerts.types import (
    AlertState,
    Decision,
    Instance,
    Observation,
    Rule,
    Scope,
    fingerprint,
)
from monitor.core.config import Config
from monitor.core.errors import KafkaHealthError, QueryError
from monitor.core.metric_names import M
from monitor.core.prom import Source
from monitor.core.tenancy import TenantIndex

log = logging.getLogger(__name__)

NO_DATA = "KafkaHealthRuleNoData"
FAILING = "KafkaHealthRuleFailing"


class RuleHealth(str, Enum):
    OK = "ok"
    ERR = "err"
    NO_DATA = "nodata"
    NOT_OBSERVABLE = "unobservable"  # an input no configured source of a cluster can give (alerts/observable.py)


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


@dataclass
class _RuleResults:
    """What the rules said this cycle; filled by the engine's rule-evaluating steps."""

    rules: dict[str, Rule]  # by name: every rule, and each of the engine's own rules that evaluated
    statuses: dict[str, RuleStatus] = field(default_factory=dict)
    # rule -> fingerprint -> (labels, observation)
    observed: dict[str, dict[str, tuple[dict, Observation]]] = field(default_factory=dict)
    failing: list[Observation] = field(default_factory=list)  # one per rule that raised: KafkaHealthRuleFailing's input


class _InputCheck(NamedTuple):
    missing: list[Observation]  # one per rule input with no series (per cluster, and per live broker)
    present: dict[str, set[str]]  # cluster -> the inputs it has
    error: str | None  # the check itself failed: which inputs are missing is unknown


class Engine:
    def __init__(
        self,
        config: Config,
        rules: list[Rule],
        detectors: dict[str, Detector],
        *,
        inhibit_rules: Iterable[InhibitRule] = DEFAULT_INHIBIT_RULES,
    ):
        self.config = config
        self.rules = [r for r in rules if r.kind != "engine"]
        self.engine_rules = {r.name: r for r in rules if r.kind == "engine"}
        self.detectors = detectors
        self.tenants = TenantIndex(config.tenants)
        self.inhibit_rules = tuple(inhibit_rules)
        self._not_observable = NotObservable()
        unknown = [r.name for r in self.rules if r.kind == "detector" and r.detector not in detectors]
        if unknown:
            raise KafkaHealthError(f"rules refer to unknown detectors: {', '.join(unknown)}")

    def _observable(self, inputs: _InputCheck) -> tuple[_InputCheck, dict[str, str]]:
        missing, why = self._not_observable.split(self.config, inputs.missing)
        return inputs._replace(missing=missing), why

    def use_tenants(self, config: Config, index: TenantIndex) -> None:
        """Follow a changed tenant set (``config.tenants`` and its index) from the next evaluation on."""
        self.config, self.tenants = config, index

    # ------------------------------------------------------------------------------------------- observing

    def _observe(self, rule: Rule, ctx: DetectorContext) -> list[Observation]:
        if rule.kind == "detector":
            return self.detectors[rule.detector](rule, ctx)
        return [
            Observation(
                labels=s.labels,
                value=s.value,
                evidence={
                    "value": s.value,
                    "expr": rule.expr,
                    **{k: v for k, v in rule.params.items() if isinstance(v, (int, float))},
                },
            )
            for s in ctx.source.query(rule.expr, ctx.now)
        ]

    def _no_data(self, source: Source, now: datetime) -> _InputCheck:
        """Observations for rule inputs with no series per configured cluster; also which inputs each cluster has.
        An optional input counts only on the clusters its rule's ``expected_when`` names (``_expected_inputs``)."""
        expected = self._expected_inputs(source, now)
        metrics = sorted({m for r in self.rules for m in r.inputs} | {m for _, m in expected})
        present: dict[str, set[str]] = {}
        if not metrics:
            return _InputCheck([], present, None)
        try:
            rows = source.query(f'count by (__name__, cluster) ({{__name__=~"{"|".join(metrics)}"}})', now)
        except KafkaHealthError as exc:
            return _InputCheck([], present, str(exc))
        for s in rows:
            present.setdefault(s.labels.get("cluster", ""), set()).add(s.labels.get("__name__", ""))
        clusters = [c.name for c in self.config.clusters] or sorted(c for c in present if c)
        out = []
        for cluster in clusters:
            have = present.get(cluster, set())
            for r in self.rules:
                for metric in r.inputs:
                    if metric not in have:
                        out.append(
                            Observation(
                                labels={"cluster": cluster, "rule": r.name, "metric": metric},
                                value=0.0,
                                evidence={"rule": r.name, "metric": metric, "reason": "no series in Prometheus"},
                            )
                        )
                for metric, guard in r.params.get(EXPECTED_WHEN, {}).items():
                    if cluster in expected.get((r.name, metric), ()) and metric not in have:
                        out.append(
                            Observation(
                                labels={"cluster": cluster, "rule": r.name, "metric": metric},
                                value=0.0,
                                evidence={
                                    "rule": r.name,
                                    "metric": metric,
                                    "reason": (
                                        f"no series in Prometheus, though the cluster should have them: {guard}"
                                    ),
                                },
                            )
                        )
        return _InputCheck(out + self._no_data_per_broker(source, now, clusters), present, None)

    def _expected_inputs(self, source: Source, now: datetime) -> dict[tuple[str, str], set[str]]:
        """(rule, optional input) -> the clusters where the input must have data: those with a series in the answer
        to the rule's ``expected_when`` guard for it (a cluster with consumer groups must have their lag; one whose
        quota sensors show byte rates must show their throttle times). Each guard is asked once per cycle. A guard
        that fails expects nothing this cycle (logged; the next cycle asks again): an optional input is reported
        missing only where it is known to be expected, never on a guess."""
        answers: dict[str, set[str] | None] = {}
        out: dict[tuple[str, str], set[str]] = {}
        for r in self.rules:
            for metric, guard in r.params.get(EXPECTED_WHEN, {}).items():
                if guard not in answers:
                    try:
                        answers[guard] = {s.labels.get("cluster", "") for s in source.query(guard, now)}
                    except KafkaHealthError as exc:
                        log.warning("expected_when guard of %s failed: %s", r.name, exc)
                        answers[guard] = None
                out[(r.name, metric)] = answers[guard] or set()
        return out

    def _no_data_per_broker(self, source: Source, now: datetime, clusters: list[str]) -> list[Observation]:
        """Broker-scoped rules' inputs that some live brokers have and others lack: a broker left out of the JMX or
        host collector's targets is otherwise watched by nothing, with no word about it. Live = in the metadata
        (``broker_up == 1``); a dead broker is KafkaBrokerUnreachable's business. An input absent on every broker
        is already reported for the whole cluster above."""
        # Broker-scoped rules, and rules whose inputs every broker has though the detector decides who is told
        # (``params.every_broker``: the disk-full risk reads each broker's filesystem).
        rules = [r for r in self.rules if r.scope is Scope.BROKER or r.params.get("every_broker")]
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
                row.labels.get("broker", "")
            )
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
                        out.append(
                            Observation(
                                labels={"cluster": cluster, "rule": r.name, "metric": metric, "broker": broker},
                                value=0.0,
                                evidence={
                                    "rule": r.name,
                                    "metric": metric,
                                    "broker": broker,
                                    "reason": (
                                        f"broker {broker} is up but has no {metric} series while "
                                        f"{len(have)} node(s) of the cluster have it: "
                                        "is the broker in the collectors' targets?"
                                    ),
                                },
                            )
                        )
        return out

    # ------------------------------------------------------------------------------------------- the cycle

    def evaluate(
        self,
        prev: dict[str, Instance],
        source: Source,
        now: datetime,
        *,
        silences: Muter | None = None,
        resend_seconds: float = 60.0,
    ) -> CycleResult:
        """``resend_seconds``: firing alerts already sent are refreshed to Alertmanager this often, muted or not (it
        resolves alerts whose ``endsAt`` passes), as Prometheus' resend delay does."""
        attributor = self._read_placement(source, now)
        results = self._evaluate_rules(source, now, attributor)
        inputs = self._no_data(source, now)
        inputs, not_observable = self._observable(inputs)
        self._evaluate_engine_rules(results, inputs, attributor)
        for rule, why in not_observable.items():  # reported as such, never as no data (alerts/observable.py)
            status = results.statuses.get(rule)
            if status is not None and status.health is RuleHealth.OK:
                results.statuses[rule] = RuleStatus(RuleHealth.NOT_OBSERVABLE, why[:500], status.duration_seconds)
        instances, deleted = _advance_instances(prev, results, now)
        instances = _confine_kept_evidence(instances, results, attributor)
        instances = _render_annotations(instances, results.rules, now)
        instances = _mute(instances, silences, self.inhibit_rules)
        instances, notes = _decide_notifications(instances, now, resend_seconds)
        data_ok, detail = self._data_health(inputs)
        return CycleResult(instances, deleted, notes, results.statuses, data_ok, detail)

    def _read_placement(self, source: Source, now: datetime) -> Attributor:
        """Which brokers hold which tenants' topics, to attribute broker alerts to the tenants they hurt."""
        try:
            placement = placement_from_samples(
                source.query(f"count by (cluster, broker, topic) (last_over_time({M['topic_size']}[1h]))", now),
                self.tenants,
            )
        except KafkaHealthError:
            placement = {}  # fall back to every tenant on the cluster
        return Attributor(self.config, self.tenants, placement)

    def _evaluate_rules(self, source: Source, now: datetime, attributor: Attributor) -> _RuleResults:
        """Every rule's observations, one instance per tenant hurt; a rule that raises is marked health=err."""
        ctx = DetectorContext(source=source, now=now, config=self.config, tenants=self.tenants)
        out = _RuleResults(rules={r.name: r for r in self.rules})
        for rule in self.rules:
            t0 = time.perf_counter()
            try:
                obs = self._observe(rule, ctx)
            except Exception as exc:  # a broken rule or detector must not stop the others
                msg = str(exc) if isinstance(exc, KafkaHealthError) else f"{type(exc).__name__}: {exc}"
                if not isinstance(exc, KafkaHealthError):
                    log.exception("rule %s failed", rule.name)
                out.statuses[rule.name] = RuleStatus(RuleHealth.ERR, msg[:500], time.perf_counter() - t0)
                out.failing.append(Observation(labels={"rule": rule.name}, value=1.0, evidence={"error": msg[:500]}))
                continue
            out.statuses[rule.name] = RuleStatus(RuleHealth.OK, "", time.perf_counter() - t0, len(obs))
            out.observed[rule.name] = self._expand(rule, obs, attributor)
        return out

    def _evaluate_engine_rules(self, results: _RuleResults, inputs: _InputCheck, attributor: Attributor) -> None:
        """Adds the engine's own rules (no data, rule failing) to ``results``; rules missing an input get
        health=nodata."""
        for rule_name, obs in ((NO_DATA, inputs.missing), (FAILING, results.failing)):
            r = self.engine_rules.get(rule_name)
            if r is None:
                continue
            if rule_name == NO_DATA and inputs.error is not None:
                results.statuses[NO_DATA] = RuleStatus(RuleHealth.ERR, inputs.error)
                continue  # unknown: keep its instances as they are
            results.statuses.setdefault(rule_name, RuleStatus(RuleHealth.OK, observations=len(obs)))
            results.observed[rule_name] = self._expand(r, obs, attributor)
            results.rules[rule_name] = r
        for o in inputs.missing:
            status = results.statuses.get(o.labels["rule"])
            if status and status.health is RuleHealth.OK:
                where = f" on broker {o.labels['broker']}" if "broker" in o.labels else ""
                results.statuses[o.labels["rule"]] = RuleStatus(
                    RuleHealth.NO_DATA, f"no data for {o.labels['metric']}{where}", status.duration_seconds
                )

    def _data_health(self, inputs: _InputCheck) -> tuple[dict[str, bool], dict[str, str]]:
        """Per configured cluster: whether every core input had data, and what is missing."""
        core = {M["broker_up"]}
        wanted = {m for r in self.rules for m in r.inputs}
        data_ok, detail = {}, {}
        for c in self.config.clusters:
            missing = sorted(m for m in wanted if m not in inputs.present.get(c.name, set()))
            missing = self._not_observable.observable(c, missing)  # what no source gives is not "no data"
            data_ok[c.name] = inputs.error is None and not (core & set(missing))
            # The heartbeat's detail reaches tenants (health reasons): the Prometheus error's public text only, never
            # its URL or host (the operator detail is in the rule status and the log).
            detail[c.name] = (
                f"prometheus: {QueryError.PUBLIC}"
                if inputs.error
                else f"no data: {', '.join(missing)}"
                if missing
                else "ok"
            )[:500]
        return data_ok, detail

    @staticmethod
    def _expand(rule: Rule, obs: list[Observation], attributor: Attributor) -> dict[str, tuple[dict, Observation]]:
        out = {}
        for o in obs:
            for labels, ob in attributor.expand(rule, o):
                out[fingerprint(rule.name, labels)] = (labels, ob)
        return out


# The pure steps of the cycle. Instances are immutable, and copying thousands per cycle is the engine's main cost:
# each step copies an instance only when it changes it.


def _advance_instances(
    prev: dict[str, Instance], results: _RuleResults, now: datetime
) -> tuple[dict[str, Instance], set[str]]:
    """The state machine over the union of known and observed instances of every rule that evaluated. Returns
    (fingerprint -> instance to keep, fingerprints to forget)."""
    keep: dict[str, Instance] = {}
    deleted: set[str] = set()
    fresh = {name: dict(hits) for name, hits in results.observed.items()}  # what no known instance claims

    def put(fp: str, inst: Instance | None) -> None:
        if inst is None:
            deleted.add(fp)
        else:
            keep[fp] = inst

    for fp, inst in prev.items():
        if inst.rule in fresh:
            hit = fresh[inst.rule].pop(fp, None)
            put(fp, advance(inst, hit[1] if hit else None, now, results.rules[inst.rule]))
        elif inst.rule in results.statuses:
            keep[fp] = inst  # the rule failed or its inputs are unknown: a failing query must not resolve incidents
        else:  # the rule was removed or disabled: its incidents resolve
            gone = Rule(name=inst.rule, severity=inst.severity, scope=None)  # type: ignore[arg-type]  # resolving reads no scope
            put(fp, advance(inst, None, now, gone))
    for name, hits in fresh.items():
        for fp, (labels, obs) in hits.items():
            put(fp, advance(None, obs, now, results.rules[name], labels))
    return keep, deleted


def _confine_kept_evidence(
    instances: dict[str, Instance], results: _RuleResults, attributor: Attributor
) -> dict[str, Instance]:
    """Tenants' instances kept without a new observation this cycle (resolved ones, for a week; those of a failing
    rule) hold the evidence they were stored with, which an older version did not confine to the tenant: confine it
    (``Attributor.confine``; confined evidence comes back equal, and its instance is not copied)."""
    fresh = {id(ob.evidence) for hits in results.observed.values() for _, ob in hits.values()}  # confined already
    out = {}
    for fp, inst in instances.items():
        if id(inst.evidence) not in fresh and inst.labels.get("tenant"):
            rule = results.rules.get(inst.rule)
            evidence = attributor.confine(rule.scope if rule else None, inst.labels, inst.evidence)
            if evidence != inst.evidence:
                inst = inst.evolve(evidence=evidence)
        out[fp] = inst
    return out


def _render_annotations(instances: dict[str, Instance], rules: dict[str, Rule], now: datetime) -> dict[str, Instance]:
    """The annotations of the instances evaluated now, with their labels and value filled in."""
    out = {}
    for fp, inst in instances.items():
        r = rules.get(inst.rule)
        if r is not None and inst.last_evaluated_at == now and inst.state is not AlertState.RESOLVED:
            ann = render_annotations(r.annotations, inst.labels, inst.value)
            if ann != inst.annotations:
                inst = inst.evolve(annotations=ann)
        out[fp] = inst
    return out


def _mute(
    instances: dict[str, Instance], silences: Muter | None, inhibit_rules: tuple[InhibitRule, ...]
) -> dict[str, Instance]:
    """What mutes each instance now: a silence, or inhibition by this cycle's firing instances. A resolve is always
    delivered: a resolved instance is never muted."""
    mute = MuteStage(*(m for m in (silences, Inhibitor(inhibit_rules, instances.values())) if m is not None))
    out = {}
    for fp, inst in instances.items():
        muted = mute.mutes(inst.labels) if inst.state is not AlertState.RESOLVED else None
        out[fp] = inst if muted == inst.muted_by else inst.evolve(muted_by=muted)
    return out


def _decide_notifications(
    instances: dict[str, Instance], now: datetime, resend_seconds: float
) -> tuple[dict[str, Instance], list[Notification]]:
    """``alerts.state.decide`` per instance: the notifications due, and the instances recording them."""
    out, notes = {}, []
    for fp, inst in instances.items():
        inst, decision = decide(inst, now, resend_seconds=resend_seconds)
        out[fp] = inst
        if decision is not Decision.NONE:
            notes.append(Notification(inst, decision))
    return out, notes
