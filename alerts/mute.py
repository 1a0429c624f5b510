"""Silences and inhibition behind one interface (Alertmanager's ``types.Muter``): ``mutes(labels) -> reason | None``.

A muted alert is still evaluated, persisted and visible in the API (with ``muted_by``); only the pages not yet sent
are held back (a firing that starts muted is sent when the mute ends, if it still fires). An alert whose firing was
already delivered stays delivered: Alertmanager keeps getting its refreshes (as from Prometheus, which ignores
silences), so it neither times out into a false resolve nor pages again when the mute ends; webhooks get nothing
more. A resolve is always delivered for an alert whose firing was delivered, muted or not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from alerts.types import AlertState, Instance


class Muter(Protocol):
    def mutes(self, labels: dict[str, str]) -> str | None:
        """The reason ("silence:<id>", "inhibited:<alertname>") if ``labels`` must not be notified, else None.
        Implementations must be pure over their inputs (no clock, no I/O)."""
        ...


@dataclass(frozen=True)
class Matcher:
    name: str
    value: str
    is_regex: bool = False
    is_equal: bool = True

    def matches(self, labels: dict[str, str]) -> bool:
        got = labels.get(self.name, "")
        hit = re.fullmatch(self.value, got) is not None if self.is_regex else got == self.value
        return hit if self.is_equal else not hit

    @classmethod
    def from_dict(cls, d: dict) -> "Matcher":
        return cls(d["name"], d["value"], bool(d.get("is_regex", False)), bool(d.get("is_equal", True)))


@dataclass(frozen=True)
class SilenceView:
    id: str
    matchers: tuple[Matcher, ...]
    starts_at: datetime
    ends_at: datetime

    def active(self, now: datetime) -> bool:
        return self.starts_at <= now < self.ends_at


class Silencer:
    def __init__(self, silences: Iterable[SilenceView], now: datetime):
        self._active = [s for s in silences if s.active(now) and s.matchers]

    def mutes(self, labels: dict[str, str]) -> str | None:
        for s in self._active:
            if all(m.matches(labels) for m in s.matchers):
                return f"silence:{s.id}"
        return None


@dataclass(frozen=True)
class InhibitRule:
    source_alertname: str
    target_alertnames: tuple[str, ...]
    equal: tuple[str, ...]


DEFAULT_INHIBIT_RULES = (
    # A broker down: the under-replication it causes is a consequence, not news. Under-replicated counts come from
    # JMX on the partition *leaders*; the dead broker exports nothing, so they are reported by the surviving brokers
    # and carry their `broker` label, never the dead one's: only `cluster` can be equal. The price: while a broker
    # is down, under-replication of another cause on that cluster is hidden too (it is a warning; offline and
    # under-min-ISR partitions still page). KafkaUnderMinIsrPartitions is deliberately not a target: acks=all
    # writes are failing, which the broker-down page does not say and which needs its own decision
    # (restart, or lower min.insync.replicas).
    InhibitRule("KafkaBrokerUnreachable", ("KafkaUnderReplicatedPartitions",), ("cluster",)),
    # No data because the collector cannot scrape: the scrape alert says why.
    InhibitRule("KafkaHealthScrapeFailing", ("KafkaHealthRuleNoData",), ("cluster",)),
)


class Inhibitor:
    """Mutes targets while a *firing* source alert has equal values for the ``equal`` labels."""

    def __init__(self, rules: Iterable[InhibitRule], instances: Iterable[Instance]):
        self._rules = list(rules)
        self._sources: dict[str, set[tuple]] = {}
        firing = [i for i in instances if i.state is AlertState.FIRING]
        for r in self._rules:
            self._sources[r.source_alertname] = {tuple(i.labels.get(k, "") for k in r.equal)
                                                 for i in firing if i.rule == r.source_alertname}

    def mutes(self, labels: dict[str, str]) -> str | None:
        name = labels.get("alertname", "")
        for r in self._rules:
            if name in r.target_alertnames and tuple(labels.get(k, "") for k in r.equal) in self._sources[r.source_alertname]:
                return f"inhibited:{r.source_alertname}"
        return None


class MuteStage:
    def __init__(self, *muters: Muter):
        self._muters = muters

    def mutes(self, labels: dict[str, str]) -> str | None:
        for m in self._muters:
            reason = m.mutes(labels)
            if reason:
                return reason
        return None
