"""What the API and the CLI call: one tenant's advice, one cluster's capacity plan.

Both take the data source, the tenants and ``now`` as parameters. A cluster whose Prometheus query fails is reported
as ``unavailable`` with the error's public message ("metrics backend unavailable": tenants read these answers and the
detail names the operator's infrastructure; the detail goes to the log); one for which Prometheus answers but holds
none of the brokers' series is ``no_data``, with the inputs that were empty. Neither is ever reported as ``ok`` with
no findings: no data, failed and "all good" stay distinct.

For the API's boundary (``monitor.advisor.views``): the longest windows it takes (``check_window``), what-if figures
within ``SCENARIO_BOUNDS`` (``parse_scenario``), a ``DeadlineSource`` that stops querying at a request's deadline
(``DeadlineExceeded``), and an ``AnswerCache`` for answers asked again within seconds.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from datetime import datetime

from monitor.advisor import capacity, findings
from monitor.advisor.source import read_snapshot, read_usage
from monitor.advisor.types import SNAPSHOT_INPUTS, DataStatus
from monitor.core.config import TenantConfig
from monitor.core.errors import Invalid, KafkaHealthError, QueryError
from monitor.core.prom import InstantSample, Series, Source
from monitor.core.times import parse_duration

log = logging.getLogger(__name__)

# A look-back window as PromQL takes it (it is put into queries, so nothing else may pass).
WINDOW = r"^[1-9][0-9]{0,4}[smhd]$"
# The longest windows the API takes. The cost of a query grows with its window (advice runs some twenty per cluster,
# one of them a subquery at a tenth of the window), and a 99999d window let one tenant keep Prometheus busy for all.
# Advice judges recent behaviour; a capacity plan reads a week at most (growth over longer spans is the weekly
# report's job).
ADVICE_MAX_WINDOW = "1d"
CAPACITY_MAX_WINDOW = "7d"


def check_window(window: str, *, most: str, field: str = "window") -> str:
    """``window`` (already of the ``WINDOW`` form) if it is at most ``most``; else ``Invalid`` naming ``field``."""
    if parse_duration(window) > parse_duration(most):
        raise Invalid(f"at most {most}, got {window!r}", field=field)
    return window


class DeadlineExceeded(KafkaHealthError):
    """The work passed its deadline before it was done (the API answers 504)."""


class DeadlineSource:
    """A ``Source`` that refuses to start a query at or after ``deadline`` (``clock`` seconds), and reports a query
    that failed after the deadline as the deadline, not as Prometheus being unavailable (a cut-short query is not a
    sick backend). So a request past its deadline stops costing Prometheus anything at its next query."""

    def __init__(self, inner: Source, *, deadline: float, clock: Callable[[], float]):
        self.inner, self.deadline, self.clock = inner, deadline, clock

    def _check(self) -> None:
        if self.clock() >= self.deadline:
            raise DeadlineExceeded("deadline passed before the answer was complete")

    def query(self, expr: str, at: datetime) -> list[InstantSample]:
        self._check()
        try:
            return self.inner.query(expr, at)
        except QueryError:
            self._check()
            raise

    def query_range(self, expr: str, start: datetime, end: datetime, step_seconds: float) -> list[Series]:
        self._check()
        try:
            return self.inner.query_range(expr, start, end, step_seconds)
        except QueryError:
            self._check()
            raise


class AnswerCache:
    """Answers remembered for ``ttl`` seconds (``clock``) under a key and a version (the store's registry version:
    a tenant change answers afresh). At most ``max_entries``: the oldest go first. Not thread-safe: the API touches it
    from the event loop only."""

    def __init__(self, *, ttl: float = 15.0, max_entries: int = 256, clock: Callable[[], float] = time.monotonic):
        self.ttl, self.max_entries, self.clock = ttl, max_entries, clock
        self._answers: dict[Hashable, tuple[float, int, dict]] = {}  # key -> (until, version, answer); oldest first

    def get(self, key: Hashable, version: int) -> dict | None:
        hit = self._answers.get(key)
        if hit is None or hit[1] != version or self.clock() >= hit[0]:
            return None
        return hit[2]

    def put(self, key: Hashable, version: int, answer: dict) -> None:
        self._answers.pop(key, None)
        now = self.clock()
        if len(self._answers) >= self.max_entries:
            self._answers = {k: v for k, v in self._answers.items() if v[0] > now}
            for k in list(self._answers)[: len(self._answers) - self.max_entries + 1]:
                del self._answers[k]
        self._answers[key] = (now + self.ttl, version, answer)

    def __len__(self) -> int:
        return len(self._answers)


@dataclass(frozen=True)
class ClusterStatus:
    cluster: str
    status: DataStatus
    message: str = ""

    def as_json(self) -> dict:
        return {"cluster": self.cluster, "status": self.status.value, "message": self.message}


def _no_data(cluster: str, window: str, empty: Iterable[str]) -> str:
    return f"Prometheus holds no data for cluster {cluster!r} in the last {window}: no {'; no '.join(empty)}"


def clusters_of(tenant: TenantConfig) -> list[str]:
    return sorted(set(tenant.whole_clusters) | {s.cluster for s in tenant.selectors})


def tenant_advice(
    *,
    source: Source,
    tenant: TenantConfig,
    tenants: Iterable[TenantConfig],
    now: datetime,
    window: str = "10m",
    thresholds: findings.Thresholds = findings.Thresholds(),
) -> dict:
    """Findings for ``tenant`` on every cluster it is on. ``tenants`` (all of them) attribute clients, so a client
    of another tenant is never reported to this one."""
    tenants = tuple(tenants)
    out, statuses = [], []
    for cluster in clusters_of(tenant):
        try:
            snap = read_snapshot(source, cluster=cluster, tenants=tenants, now=now, window=window)
        except QueryError as exc:
            log.warning("advice for %s: cluster %s unavailable: %s", tenant.name, cluster, exc)
            statuses.append(ClusterStatus(cluster, DataStatus.UNAVAILABLE, exc.public))
            continue
        if snap.has_broker_data:
            statuses.append(ClusterStatus(cluster, DataStatus.OK))
        else:  # the consumer-group rule may still find something; the client rules had nothing to read
            empty = [SNAPSHOT_INPUTS[k] for k, seen in snap.inputs_seen().items() if not seen]
            statuses.append(ClusterStatus(cluster, DataStatus.NO_DATA, _no_data(cluster, window, empty)))
        out.extend(findings.for_tenant(findings.advise(snap, thresholds), tenant.name))
    return {
        "tenant": tenant.name,
        "as_of": now.isoformat(),
        "window": window,
        "clusters": [s.as_json() for s in statuses],
        "findings": [f.as_json() for f in out],
    }


def cluster_capacity(
    *,
    source: Source,
    cluster: str,
    tenants: Iterable[TenantConfig],
    now: datetime,
    only_tenant: str | None = None,
    window: str = "1h",
    limits: capacity.Limits = capacity.Limits(),
    scenario: capacity.Scenario = capacity.Scenario(),
) -> dict:
    """The plan for ``cluster`` (with ``scenario`` applied when given). ``only_tenant``: a tenant's view, its own
    row only, without cluster-wide totals that would describe other tenants' usage."""
    head = {"cluster": cluster, "as_of": now.isoformat(), "window": window}
    try:
        usage = read_usage(source, cluster=cluster, tenants=tenants, now=now, window=window, limits=limits)
    except QueryError as exc:
        log.warning("capacity of cluster %s unavailable: %s", cluster, exc)
        return {**head, "status": DataStatus.UNAVAILABLE.value, "message": exc.public, "plan": None, "what_if": None}
    missing = capacity.missing_inputs(usage)
    if "brokers" in missing:  # nothing to plan with: no plan rather than one made of zeros ("disks full now")
        message = _no_data(cluster, window, [capacity.MISSING[k][0] for k in missing if k in ("brokers", "topics")])
        return {**head, "status": DataStatus.NO_DATA.value, "message": message, "plan": None, "what_if": None}
    current = capacity.plan(usage, limits)
    what_if = capacity.plan(usage, limits, scenario) if not scenario.is_empty else None

    def view(p: capacity.Plan | None) -> dict | None:
        if p is None:
            return None
        body = p.as_json(cluster_wide=only_tenant is None)
        if only_tenant is not None:
            body["tenants"] = [t for t in body["tenants"] if t["tenant"] == only_tenant]
        return body

    # Some inputs missing: a plan, the figures needing them null, and the message (and ``plan.missing``) says which.
    message = "; ".join(capacity.describe_missing(k) for k in missing)
    return {**head, "status": DataStatus.OK.value, "message": message, "plan": view(current), "what_if": view(what_if)}


# What a what-if may ask: far beyond any real plan, and small enough that nothing derived from it overflows (a factor
# of 1e308 once answered 500). (lowest, highest, lowest allowed itself, whole numbers only)
SCENARIO_BOUNDS = {
    "factor": (0.0, 1000.0, False, False),
    "MB/s": (0.0, 100_000.0, True, False),  # 100 GB/s
    "days": (0.0, 3650.0, False, False),  # ten years of retention
    "partitions": (0.0, 1_000_000.0, True, True),
}
MAX_NAME = 64  # a tenant name's longest (monitor.tenants)


def _figure(text: str, what: str, *, item: str, field: str) -> float:
    """One figure of a what-if entry, within ``SCENARIO_BOUNDS[what]``; else ``Invalid`` naming the parameter."""
    low, high, low_ok, whole = SCENARIO_BOUNDS[what]
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    in_range = math.isfinite(x) and (x >= low if low_ok else x > low) and x <= high and (not whole or x.is_integer())
    if not in_range:
        kind = "a whole number" if whole else "a number"
        raise Invalid(
            f"{what} in {item[:100]!r} must be {kind} {'>=' if low_ok else '>'} {low:.15g} and at most {high:.15g}",
            field=field,
        )
    return x


def _name(name: str, *, item: str, field: str, shape: str) -> str:
    if not name or len(name) > MAX_NAME:
        raise Invalid(f"expected {shape} with a name of 1 to {MAX_NAME} characters, got {item[:100]!r}", field=field)
    return name


def parse_scenario(grow: Iterable[str] = (), add: Iterable[str] = ()) -> capacity.Scenario:
    """``grow``: ``TENANT:FACTOR`` (e.g. ``shop:3``); ``add``: ``NAME:MB_PER_S:DAYS[:PARTITIONS]`` (MB = 10^6 B).
    Every figure is bounded (``SCENARIO_BOUNDS``). Raises ``Invalid`` naming the parameter (``grow`` or ``add``) and
    the bad entry."""
    g = []
    for item in grow:
        name, sep, factor = item.partition(":")
        if not sep:
            raise Invalid(f"expected TENANT:FACTOR, got {item[:100]!r}", field="grow")
        g.append(
            (
                _name(name, item=item, field="grow", shape="TENANT:FACTOR"),
                _figure(factor, "factor", item=item, field="grow"),
            )
        )
    a = []
    for item in add:
        parts = item.split(":")
        if len(parts) not in (3, 4):
            raise Invalid(f"expected NAME:MB_PER_S:DAYS[:PARTITIONS], got {item[:100]!r}", field="add")
        name = _name(parts[0], item=item, field="add", shape="NAME:MB_PER_S:DAYS[:PARTITIONS]")
        mb = _figure(parts[1], "MB/s", item=item, field="add")
        days = _figure(parts[2], "days", item=item, field="add")
        partitions = _figure(parts[3], "partitions", item=item, field="add") if len(parts) == 4 else 0.0
        a.append(
            capacity.NewTenant(
                name=name, bytes_in_per_second=mb * 1e6, retention_seconds=days * capacity.DAY, partitions=partitions
            )
        )
    return capacity.Scenario(grow=tuple(g), add=tuple(a))
