"""Silences and inhibition behind one interface (Alertmanager's ``types.Muter``): ``mutes(labels) -> reason | None``.

A muted alert is still evaluated, persisted and visible in the API (with ``muted_by``); only the pages not yet sent
are held back (a firing that starts muted is sent when the mute ends, if it still fires). An alert whose firing was
already delivered stays delivered: Alertmanager keeps getting its refreshes (as from Prometheus, which ignores
silences), so it neither times out into a false resolve nor pages again when the mute ends; webhooks get nothing
more. A resolve is always delivered for an alert whose firing was delivered, muted or not.

Silences are written by tenants and run on the engine's thread against every alert, so no silence may cost the
engine more than a bounded, predictable time:

- regex matchers are RE2 (``google-re2``: Alertmanager's syntax, time linear in the label's length, no
  backtracking), full-matched as Alertmanager anchors them, compiled once per pattern (``compile_regex``, cached);
  a pattern RE2 refuses, or longer than MAX_REGEX_LENGTH, is refused when the silence is created (422) and, should
  one reach the store another way, makes its silence inert (logged), never an error of the cycle;
- a tenant's silence is only ever tried against that tenant's alerts: ``Silencer`` files silences by the tenant
  they are confined to and picks them by the alert's ``tenant`` label before any matcher runs;
- a tenant has at most MAX_ACTIVE_SILENCES_PER_TENANT silences not yet expired (refused with 409 beyond; the engine
  uses the oldest that many should more reach the store), so an alert meets at most that many of its tenant's
  silences plus the operators';
- a regex's answer per label value is remembered for the cycle, and a tenant's regex silences get at most
  MUTE_BUDGET_SECONDS_PER_TENANT of a cycle (beyond it, its remaining alerts are not muted that cycle).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Protocol

import re2

from alerts.types import AlertState, Instance

log = logging.getLogger(__name__)

MAX_ACTIVE_SILENCES_PER_TENANT = 100  # pending or active; an operator's silences are not counted
MAX_REGEX_LENGTH = 512  # characters of one regex matcher's pattern
MUTE_BUDGET_SECONDS_PER_TENANT = 0.1  # per cycle, for one tenant's regex silences (see Silencer)
MEMO_LIMIT = 200_000  # (pattern, label value) answers remembered per cycle

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is reported to whoever gave it, not printed to stderr


class Muter(Protocol):
    def mutes(self, labels: dict[str, str]) -> str | None:
        """The reason ("silence:<id>", "inhibited:<alertname>") if ``labels`` must not be notified, else None.
        Implementations must be pure over their inputs (no I/O, no wall clock); the one exception is ``Silencer``'s
        time budget, read from a clock it is given, which only ever withholds a tenant's own silences."""
        ...


class PatternError(ValueError):
    """A regex matcher's pattern that RE2 cannot compile, or too long; ``str()`` says why."""


@lru_cache(maxsize=4096)
def _compiled(pattern: str) -> re2._Regexp | PatternError:
    if len(pattern) > MAX_REGEX_LENGTH:
        return PatternError(f"longer than {MAX_REGEX_LENGTH} characters")
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        why = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        return PatternError(why)


def compile_regex(pattern: str) -> Callable[[str], bool]:
    """Full match of ``pattern`` (RE2 syntax, as Alertmanager's ``^(?:pattern)$``) as a predicate on a label value.
    Compiled once per distinct pattern (cached, refusals too). Raises PatternError."""
    got = _compiled(pattern)
    if isinstance(got, PatternError):
        raise PatternError(str(got))
    return lambda value: got.fullmatch(value) is not None


@dataclass(frozen=True)
class Matcher:
    name: str
    value: str
    is_regex: bool = False
    is_equal: bool = True

    def compile(self) -> Callable[[dict[str, str]], bool]:
        """This matcher as a predicate on an alert's labels (a missing label is ""). Raises PatternError."""
        name, value, equal = self.name, self.value, self.is_equal
        if self.is_regex:
            hit = compile_regex(value)
            return lambda labels: hit(labels.get(name, "")) is equal
        return lambda labels: (labels.get(name, "") == value) is equal

    def matches(self, labels: dict[str, str]) -> bool:
        return self.compile()(labels)

    @classmethod
    def from_dict(cls, d: dict) -> Matcher:
        return cls(d["name"], d["value"], bool(d.get("is_regex", False)), bool(d.get("is_equal", True)))


@dataclass(frozen=True)
class SilenceView:
    id: str
    matchers: tuple[Matcher, ...]
    starts_at: datetime
    ends_at: datetime
    tenant: str | None = None  # the tenant it is confined to (created with its token); None: an operator's

    def active(self, now: datetime) -> bool:
        return self.starts_at <= now < self.ends_at

    @property
    def scope(self) -> str | None:
        """The only tenant whose alerts it can match: its own tenant, or the value of an equality ``tenant=``
        matcher; None when it may match any alert."""
        if self.tenant:
            return self.tenant
        return next(
            (m.value for m in self.matchers if m.name == "tenant" and m.is_equal and not m.is_regex and m.value), None
        )


@dataclass(frozen=True)
class _Compiled:
    id: str
    scope: str | None
    predicates: tuple[Callable[[dict[str, str]], bool], ...]  # equality matchers first: cheap ones decide most
    has_regex: bool


_inert_reported: set[str] = set()  # silence ids already logged as inert (a log line per silence, not per cycle)


class Silencer:
    """The silences active at ``now``, compiled once (per cycle) and filed by the tenant they are confined to.

    ``mutes(labels)`` tries the silences of the alert's tenant (its ``tenant`` label), then the unconfined ones: an
    alert of tenant A never meets tenant B's silences, whatever their regexes. A regex's answer for a label value is
    remembered for the cycle (alerts share most values). A silence with a pattern RE2 cannot compile is inert; a
    tenant with more than MAX_ACTIVE_SILENCES_PER_TENANT active silences gets its oldest that many.

    The one clock here: the time a tenant's regex silences take is summed per cycle (``clock``, monotonic seconds),
    and once it passes ``budget_seconds`` that tenant's silences are not tried again this cycle: its remaining
    alerts are not muted (they page; a tenant's silences can cost the others nothing more). Linear-time regexes
    make that rare, but a tenant with many alerts of distinct, long labels and 100 silences of 32 regexes each could
    otherwise spend seconds. All three are logged."""

    def __init__(
        self,
        silences: Iterable[SilenceView],
        now: datetime,
        *,
        budget_seconds: float = MUTE_BUDGET_SECONDS_PER_TENANT,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self._budget, self._clock = budget_seconds, clock
        self._memo: dict[tuple[str, str], bool] = {}  # (pattern, label value) -> full match
        self._spent: dict[str, float] = {}  # tenant -> seconds its regex silences took this cycle
        self._by_scope: dict[str | None, list[_Compiled]] = {}
        counted: dict[str, int] = {}
        for s in sorted((s for s in silences if s.active(now) and s.matchers), key=lambda s: (s.starts_at, s.id)):
            if s.tenant:
                counted[s.tenant] = counted.get(s.tenant, 0) + 1
                if counted[s.tenant] > MAX_ACTIVE_SILENCES_PER_TENANT:
                    continue
            compiled = self._compile(s)
            if compiled is not None:
                self._by_scope.setdefault(compiled.scope, []).append(compiled)
        for tenant, n in counted.items():
            if n > MAX_ACTIVE_SILENCES_PER_TENANT:
                log.warning(
                    "tenant %s has %d active silences; the engine uses its oldest %d",
                    tenant,
                    n,
                    MAX_ACTIVE_SILENCES_PER_TENANT,
                )

    @property
    def over_budget(self) -> list[str]:
        """The tenants whose silences were cut short this cycle."""
        return sorted(t for t, spent in self._spent.items() if spent > self._budget)

    def _compile(self, s: SilenceView) -> _Compiled | None:
        ordered = sorted(s.matchers, key=lambda m: (m.is_regex, m.name != "tenant"))
        try:
            predicates = tuple(self._regex(m) if m.is_regex else m.compile() for m in ordered)
        except PatternError as exc:
            if s.id not in _inert_reported and len(_inert_reported) < 10_000:
                _inert_reported.add(s.id)
                log.warning("silence %s is inert: a regex matcher cannot be compiled (%s)", s.id, exc)
            return None
        return _Compiled(s.id, s.scope, predicates, any(m.is_regex for m in s.matchers))

    def _regex(self, m: Matcher) -> Callable[[dict[str, str]], bool]:
        hit, memo, name, pattern, equal = compile_regex(m.value), self._memo, m.name, m.value, m.is_equal

        def predicate(labels: dict[str, str]) -> bool:
            key = (pattern, labels.get(name, ""))
            got = memo.get(key)
            if got is None:
                got = hit(key[1])
                if len(memo) < MEMO_LIMIT:
                    memo[key] = got
            return got is equal

        return predicate

    def mutes(self, labels: dict[str, str]) -> str | None:
        tenant = labels.get("tenant") or None
        if tenant is not None:
            hit = self._try_tenants(tenant, labels)
            if hit:
                return hit
        for s in self._by_scope.get(None, ()):
            if all(p(labels) for p in s.predicates):
                return f"silence:{s.id}"
        return None

    def _try_tenants(self, tenant: str, labels: dict[str, str]) -> str | None:
        before = self._spent.get(tenant, 0.0)
        if before > self._budget:
            return None
        clock, start, spent, found = self._clock, self._clock(), before, None
        for s in self._by_scope.get(tenant, ()):
            if all(p(labels) for p in s.predicates):
                found = f"silence:{s.id}"
                break
            if s.has_regex:  # only regexes can be slow: the clock is read after those alone
                spent = before + clock() - start
                if spent > self._budget:
                    log.warning(
                        "tenant %s's silences took over %.3f s of this cycle: its other alerts are not "
                        "checked against them until the next",
                        tenant,
                        self._budget,
                    )
                    break
        self._spent[tenant] = before + clock() - start
        return found


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
            self._sources[r.source_alertname] = {
                tuple(i.labels.get(k, "") for k in r.equal) for i in firing if i.rule == r.source_alertname
            }

    def mutes(self, labels: dict[str, str]) -> str | None:
        name = labels.get("alertname", "")
        for r in self._rules:
            if (
                name in r.target_alertnames
                and tuple(labels.get(k, "") for k in r.equal) in self._sources[r.source_alertname]
            ):
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
