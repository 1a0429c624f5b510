"""Rule definitions as data: load the shipped ``rules.yaml`` (plus ``config.rules.files``), apply
``config.rules.overrides``, render PromQL templates, and export threshold rules as a Prometheus rule file.

Loading is strict (unknown keys rejected) so a typo in a rule file is an error, not a rule that never fires. An
override naming an unknown rule is an error too.
"""

from __future__ import annotations

import re
from pathlib import Path
from string import Template
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from alerts import slo
from alerts.detectors import lag
from alerts.types import Rule, Scope, Severity
from monitor.core.config import RulesSettings, SloSettings
from monitor.core.errors import ConfigError, ConfigProblem
from monitor.core.humanize import (
    humanize_bytes,
    humanize_number,
    humanize_seconds,
    humanize_share,
)
from monitor.core.metric_names import M
from monitor.core.times import format_duration, parse_duration

BUILTIN = Path(__file__).with_name("rules.yaml")
# Rule.params key of a rule's rendered ``expected_when``: metric name -> PromQL naming the clusters that must have it
EXPECTED_WHEN = "expected_when"
SLO_DETECTOR = "slo_burn"  # its rules' exprs read the SLO recording rules (alerts/slo.py), exported with them


class RuleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = Field(pattern=r"^[A-Z][A-Za-z0-9]+$")
    kind: Literal["threshold", "detector", "engine"] = "threshold"
    severity: Severity
    scope: Scope
    expr: str = ""
    detector: str = ""
    for_: str = Field(default="0s", alias="for")
    keep_firing_for: str = "0s"
    params: dict[str, Any] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    optional_inputs: tuple[str, ...] = ()
    # input key -> PromQL whose series' ``cluster`` labels name the clusters where that (optional) input must have
    # data: there, its absence is KafkaHealthRuleNoData like a required input's (alerts/engine.py)
    expected_when: dict[str, str] = Field(default_factory=dict)


def _load_specs(path: Path) -> list[RuleSpec]:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError([ConfigProblem(str(path), None, "", f"cannot load rules: {exc}")]) from None
    problems, specs = [], []
    for i, raw in enumerate(data.get("rules", [])):
        try:
            specs.append(RuleSpec.model_validate(raw))
        except ValidationError as exc:
            for err in exc.errors(include_url=False, include_input=False):
                where = ".".join(str(p) for p in err["loc"])
                problems.append(ConfigProblem(str(path), None, f"rules[{i}].{where}", err["msg"]))
    if problems:
        raise ConfigError(problems)
    return specs


def builtin_variant(name: str, *, for_: str | None = None, **params: Any) -> str:
    """A rule file (for ``rules.files``) holding the built-in rule ``name`` with some params (and ``for``) changed,
    e.g. a detector's window shortened for a test or a bench. Raises KeyError for an unknown rule."""
    raw = next(r for r in (yaml.safe_load(BUILTIN.read_text()) or {}).get("rules", []) if r["name"] == name)
    raw = {**raw, "params": {**raw.get("params", {}), **params}}
    if for_ is not None:
        raw["for"] = for_
    return yaml.safe_dump({"rules": [raw]}, sort_keys=False)


def render_expr(expr: str, params: dict[str, Any]) -> str:
    """Substitute ``${key}``: metric names from monitor/core/metric_names.py, then scalar params."""
    values = {
        k: (format(v, "g") if isinstance(v, float) else v)
        for k, v in params.items()
        if isinstance(v, (int, float, str)) and not isinstance(v, bool)
    }
    try:
        return Template(expr).substitute({**values, **M})
    except KeyError as exc:
        problem = ConfigProblem("rules", None, "", f"expression refers to unknown key {exc}: {expr}")
        raise ConfigError([problem]) from None


def load_rules(settings: RulesSettings | None = None) -> list[Rule]:
    """The effective rule set: built-in rules, extra files, then overrides. Raises ConfigError on any problem."""
    settings = settings or RulesSettings()
    specs = _load_specs(BUILTIN)
    for f in settings.files:
        extra = _load_specs(Path(f))
        names = {s.name for s in extra}
        specs = [s for s in specs if s.name not in names] + extra  # a file may replace a built-in rule
    known = {s.name for s in specs}
    unknown = sorted(set(settings.overrides) - known)
    if unknown:
        raise ConfigError([ConfigProblem("config", None, f"rules.overrides.{n}", "no such rule") for n in unknown])
    problems, rules = [], []
    for s in specs:
        o = settings.overrides.get(s.name)
        if o is not None and not o.enabled:
            continue
        params = dict(s.params)
        for key in ("threshold", "warning", "critical"):
            value = getattr(o, key, None) if o else None
            if value is not None:
                if key not in params:
                    problems.append(
                        ConfigProblem(
                            "config",
                            None,
                            f"rules.overrides.{s.name}.{key}",
                            f"rule has no '{key}' parameter (it has: {', '.join(params) or 'none'})",
                        )
                    )
                params[key] = value
        for key, value in o.params.items() if o else ():
            if key not in params:
                problems.append(
                    ConfigProblem(
                        "config",
                        None,
                        f"rules.overrides.{s.name}.params.{key}",
                        f"rule has no '{key}' parameter (it has: {', '.join(params) or 'none'})",
                    )
                )
            params[key] = value
        if s.detector == "consumer_lag":  # its per-group entries, checked here so check-config reports them
            problems += [ConfigProblem("rules", None, f"{s.name}.params", p) for p in lag.group_problems(params)]
        for key in s.inputs + s.optional_inputs:
            if key not in M:
                problems.append(ConfigProblem("rules", None, s.name, f"unknown input metric key {key!r}"))
        for key in s.expected_when:
            if key not in s.inputs + s.optional_inputs:
                problems.append(
                    ConfigProblem("rules", None, f"{s.name}.expected_when", f"{key!r} is not one of the rule's inputs")
                )
        if s.expected_when:
            try:
                params[EXPECTED_WHEN] = {M[k]: render_expr(e, params) for k, e in s.expected_when.items() if k in M}
            except ConfigError as exc:
                problems.extend(exc.problems)
        try:
            for_s = o.for_seconds if o and o.for_seconds is not None else parse_duration(s.for_)
            keep_s = (
                o.keep_firing_for_seconds
                if o and o.keep_firing_for_seconds is not None
                else parse_duration(s.keep_firing_for)
            )
        except ValueError as exc:
            problems.append(ConfigProblem("rules", None, s.name, str(exc)))
            continue
        rules.append(
            Rule(
                name=s.name,
                severity=s.severity,
                scope=s.scope,
                kind=s.kind,
                expr=render_expr(s.expr, params) if s.expr else "",
                detector=s.detector,
                for_seconds=for_s,
                keep_firing_for_seconds=keep_s,
                labels=dict(s.labels),
                annotations=_annotations(s, settings.runbook_base_url),
                params=params,
                inputs=tuple(M[k] for k in s.inputs if k in M),
                optional_inputs=tuple(M[k] for k in s.optional_inputs if k in M),
            )
        )
    if problems:
        raise ConfigError(problems)
    return rules


def _annotations(spec: RuleSpec, runbook_base_url: str) -> dict[str, str]:
    """The rule's annotations with its runbook: ``runbook_url``, absolute, as Alertmanager templates and on-call
    tools expect it (a link that works from a pager), and ``runbook``, the path inside the repository's docs, which
    the API has always returned. A rule file may set either itself."""
    anchor = spec.name.lower()
    return {
        **spec.annotations,
        "runbook": spec.annotations.get("runbook", f"{RUNBOOK_DOC}#{anchor}"),
        "runbook_url": spec.annotations.get("runbook_url", f"{runbook_base_url}#{anchor}"),
    }


RUNBOOK_DOC = "docs/alerts.md"


_TEMPLATE = re.compile(r"\{\{\s*\$(labels\.([A-Za-z_][A-Za-z0-9_]*)|value)\s*(?:\|\s*([A-Za-z0-9]+)\s*)?\}\}")
# Prometheus' template functions the summaries use on $value (so the exported rule file renders the same words).
_HUMANIZE = {
    "humanize": humanize_number,
    "humanizeDuration": humanize_seconds,
    "humanize1024": humanize_bytes,
    "humanizePercentage": humanize_share,
}


def render_annotations(annotations: dict[str, str], labels: dict[str, str], value: float | None) -> dict[str, str]:
    """The Prometheus template subset used in rules.yaml: ``{{ $labels.x }}``, ``{{ $value }}`` and ``{{ $value |
    humanizeDuration }}`` (also ``humanize``, ``humanize1024``, ``humanizePercentage``)."""

    def sub(m: re.Match) -> str:
        if m.group(2):
            return labels.get(m.group(2), "")
        if value is None:
            return ""
        fn = _HUMANIZE.get(m.group(3) or "")
        return fn(value) if fn else f"{value:.4g}"

    return {k: _TEMPLATE.sub(sub, v) for k, v in annotations.items()}


def export_prometheus(
    rules: list[Rule],
    *,
    group: str = "kafka-health",
    interval_seconds: float = 15,
    slo_objective: float = SloSettings().objective,
) -> str:
    """A Prometheus rule file with every rule that has a PromQL expression (threshold rules, and detectors' PromQL
    screens, marked with ``kafka_health_kind: detector`` so operators know the Python detector says more), and, when
    a tenant SLO rule is among them, a second group with the SLO recording rules they read (``slo_objective``: the
    objective of a tenant whose contract sets none)."""
    out = []
    for r in rules:
        if r.kind == "engine" or not r.expr:
            continue
        item: dict[str, Any] = {"alert": r.name, "expr": r.expr}
        if r.for_seconds:
            item["for"] = format_duration(r.for_seconds)
        if r.keep_firing_for_seconds:
            item["keep_firing_for"] = format_duration(r.keep_firing_for_seconds)
        labels = {"severity": r.severity.value, **r.labels}
        if r.kind == "detector":
            labels["kafka_health_kind"] = "detector"
        item["labels"] = labels
        item["annotations"] = dict(r.annotations)
        out.append(item)
    groups = [{"name": group, "interval": format_duration(interval_seconds), "rules": out}]
    if any(r.detector == SLO_DETECTOR and r.expr for r in rules):  # the burn-rate exprs read these records
        groups.append(slo.recording_rules(slo_objective))
    doc = {"groups": groups}
    header = "# Generated by `kafka-health rules export` from alerts/rules.yaml and config overrides. Do not edit.\n"
    return header + yaml.safe_dump(doc, sort_keys=False, width=120, allow_unicode=True)
