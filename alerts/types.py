"""Shared types of the alert engine (Burrow's ``protocol`` module in spirit): rules, observations, instances,
notification decisions. Pure data; nothing here does I/O.

    Rule          what to watch: a PromQL threshold (``kind="threshold"``) or a Python detector, with ``for``,
                  ``keep_firing_for``, severity, labels, annotations and how to attribute tenants.
    Observation   one condition result of one evaluation: labels + value + evidence ("this label set is bad now").
    Instance      the state of one (rule, label set) over time; the state machine maps (Instance, Observation?,
                  now, Rule) -> Instance.
    Decision      whether and why a transition must be notified.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import Enum
from typing import Any


class AlertState(str, Enum):
    INACTIVE = "inactive"
    PENDING = "pending"
    FIRING = "firing"
    RESOLVED = "resolved"

    @property
    def order(self) -> int:
        return ["inactive", "pending", "firing", "resolved"].index(self.value)


class Severity(str, Enum):
    WARNING = "warning"
    CRITICAL = "critical"

    @property
    def order(self) -> int:
        return 1 if self is Severity.WARNING else 2


class Scope(str, Enum):
    """How an alert is attributed to tenants (see ``alerts.attribution``)."""

    BROKER = "broker"  # every tenant with partitions on the broker, else every tenant on the cluster
    CLUSTER = "cluster"  # every tenant on the cluster
    TOPIC = "topic"  # owner of the ``topic`` label
    CLIENT = "client"  # owner of ``user`` / ``client_id``
    GROUP = "group"  # owner of the consumer ``group``
    TENANT = "tenant"  # the series already carries ``tenant``
    NONE = "none"  # the engine's own alerts (watchdog, no data): operators only


@dataclass(frozen=True)
class Rule:
    name: str
    severity: Severity
    scope: Scope
    kind: str = "threshold"  # "threshold" (PromQL, exportable to Prometheus) or "detector" (Python)
    expr: str = ""  # rendered PromQL for threshold rules
    detector: str = ""  # detector name for kind="detector"
    for_seconds: float = 0.0
    keep_firing_for_seconds: float = 0.0
    labels: dict[str, str] = field(default_factory=dict)
    # summary, description, runbook_url, runbook; {{ $labels.x }}
    annotations: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)  # threshold, warning, critical... (after overrides)
    inputs: tuple[str, ...] = ()  # metric names that must have data, else a no-data alert
    optional_inputs: tuple[str, ...] = ()  # metric names that may legitimately be absent (documented per rule)


@dataclass(frozen=True)
class Observation:
    """The condition holds for this label set now. ``severity`` may override the rule's (warning vs critical), and
    ``for_seconds`` the rule's ``for``: a detector that knows more than the condition (the broker-down detector saw
    the broker's heartbeats stop while it was registered active: a crash, not a restart) may fire at once."""

    labels: dict[str, str]
    value: float | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    severity: Severity | None = None
    for_seconds: float | None = None


def fingerprint(rule: str, labels: dict[str, str]) -> str:
    raw = json.dumps([rule, sorted(labels.items())], separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Instance:
    """One (rule, label set) over time. Mirrors ``alerts.models.AlertInstance`` (see ``alerts.repo``)."""

    rule: str
    labels: dict[str, str]  # includes alertname, cluster, broker, tenant... (identity)
    state: AlertState
    severity: Severity
    annotations: dict[str, str] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)
    value: float | None = None
    active_at: datetime | None = None
    fired_at: datetime | None = None
    resolved_at: datetime | None = None
    keep_firing_since: datetime | None = None
    last_evaluated_at: datetime | None = None
    notified_state: AlertState | None = None  # the state last handed to the outbox (dedup across restarts)
    last_sent_at: datetime | None = None  # last time the state was handed to the outbox
    muted_by: str | None = None  # "silence:<id>" or "inhibited:<rule>" while muted

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.rule, self.labels)

    def evolve(self, **kw: Any) -> Instance:
        return replace(self, **kw)


class Decision(str, Enum):
    """What the state machine asks the notifier to do, with the reason in the name."""

    NONE = "none"
    NOTIFY_FIRING = "notify_firing"  # pending -> firing (or inactive -> firing when for=0)
    NOTIFY_RESOLVED = "notify_resolved"  # firing -> resolved
    REFRESH = "refresh"  # still firing: re-sent to Alertmanager so it does not time the alert out
