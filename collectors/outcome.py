"""Turning one collection attempt into a ``TargetResult``: the per-target cap, and failures classified by reason.

Partial-failure policy (every collector): an error of the target itself (timeout, refused, malformed answer, a
library error) becomes ``TargetStatus.FAILED`` with a reason and a message, logged once at WARNING without
secrets; the other targets are unaffected. Only programming errors propagate, and the service still contains them
per target (logged with a traceback, reported as reason ``error``).

Series cap (``collection.max_series_per_target``): a round that produced more series than the cap keeps the cap's
worth, chosen on purpose so that every tenant keeps its consumer groups' lag as long as it can (``cap``). A series
with a ``group`` label (``kafka_consumergroup_*``, ``kafka_sharegroup_*``, ``kafka_group_info``) is a group's; every
other series (cluster, broker, topic, client) is the target's own. (A group's kind counted as the target's own would
be kept while groups lose their lag: 10,000 of them at the old 20,000 cap left the lag of 1,787 groups, not 3,155.)
Series are cut in this order, until the rest fits:

    1. per-member detail of groups: ``member_lag``, ``member_partitions``, ``member_info``
    2. per-partition detail of groups: ``partition_lag_max``, ``partitions``
    3. whole groups: their lag, lag seconds, committed offsets, members and state, all together (a group keeps
       all of what the lag alerts judge it by, or nothing)
    4. the target's own series, from the end (the JMX catalog puts its per-client series last)

Within steps 1-3 a group loses its series together, groups in ``group_keep_order`` from its end: each tenant's
groups are ranked by name, and every tenant's first group is kept before any tenant's second one, and so on; groups
no tenant owns go after all tenants' groups. So a tenant loses its only group only once one group per tenant does
not fit, and the same groups are kept round after round (an order by lag would make series come and go, and the
lag detector lose their history). What a cut left out is counted (``Cut``: series, groups whose lag is gone), said
in the result's message with the figure to raise the cap to, and counted per cause by the exporter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from collectors.types import Cut, CutCause, FailureReason, Sample, Target, TargetResult, TargetStatus
from monitor.core.errors import (
    TargetAuthFailed,
    TargetForbidden,
    TargetTimeout,
    TargetUnreachable,
    TransportError,
)

# Cut levels of a group's series, cut first to last (see the module docstring).
MEMBER_DETAIL = (
    "kafka_consumergroup_member_lag",
    "kafka_consumergroup_member_partitions",
    "kafka_consumergroup_member_info",
)
PARTITION_DETAIL = ("kafka_consumergroup_partition_lag_max", "kafka_consumergroup_partitions")
_LEVEL = {**{n: 0 for n in MEMBER_DETAIL}, **{n: 1 for n in PARTITION_DETAIL}}
_GROUP_LEVEL = 2  # everything else of a group
# The series of a group, whatever its kind: consumer groups, share groups, and each group's kind (group_kinds).
GROUP_SERIES = ("kafka_consumergroup_", "kafka_sharegroup_", "kafka_group_info")
_STEPS = ("per-member detail", "per-partition detail", "all series, lag too,")

GroupKey = tuple[str, str]  # (tenant, group); tenant "" when no tenant owns the group


@dataclass(frozen=True)
class Capped:
    """What ``cap`` kept and left out. ``detail_cut[i]``: groups that lost step ``i + 1``'s series; ``groups_cut``:
    groups whose lag is gone (step 3); ``tenants_cut``: tenants left with no group's lag; ``own_cut``: series of the
    target's own (step 4)."""

    kept: tuple[Sample, ...]
    produced: int
    detail_cut: tuple[int, int]
    groups_cut: tuple[GroupKey, ...]
    tenants_cut: tuple[str, ...]
    own_cut: int

    @property
    def dropped(self) -> int:
        return self.produced - len(self.kept)


def group_keep_order(groups: Iterable[GroupKey]) -> list[GroupKey]:
    """Groups in the order they are kept (the cap cuts from the end): round-robin over tenants by name rank, so each
    tenant's first group comes before any tenant's second; groups no tenant owns last. Pure and stable."""
    by_tenant: dict[str, list[str]] = {}
    for tenant, group in set(groups):
        by_tenant.setdefault(tenant, []).append(group)
    ranked = [
        ((tenant == "", i, tenant, group), (tenant, group))
        for tenant, names in by_tenant.items()
        for i, group in enumerate(sorted(names))
    ]
    return [key for _, key in sorted(ranked)]


def _group_of(s: Sample) -> tuple[int, GroupKey] | None:
    """(cut level, group) of a group's series; None for the target's own."""
    if not s.name.startswith(GROUP_SERIES):
        return None
    group, tenant = None, ""
    for name, value in s.labels:
        if name == "group":
            group = value
        elif name == "tenant":
            tenant = value
    return None if group is None else (_LEVEL.get(s.name, _GROUP_LEVEL), (tenant, group))


def cap(samples: Sequence[Sample], max_series: int) -> Capped:
    """Pure: at most ``max_series`` of ``samples``, cut in the order of the module docstring; order kept."""
    excess = len(samples) - max_series
    if excess <= 0:
        return Capped(tuple(samples), len(samples), (0, 0), (), (), 0)
    tags = [_group_of(s) for s in samples]
    counts: dict[tuple[int, GroupKey], int] = {}
    for tag in tags:
        if tag is not None:
            counts[tag] = counts.get(tag, 0) + 1
    order = group_keep_order(key for _, key in counts)
    cut: set[tuple[int, GroupKey]] = set()
    for level in range(_GROUP_LEVEL + 1):
        for key in reversed(order):
            if excess <= 0:
                break
            n = counts.get((level, key), 0)
            if n:
                cut.add((level, key))
                excess -= n
    kept = [s for s, tag in zip(samples, tags) if tag is None or tag not in cut]
    own_cut = max(0, len(kept) - max_series)
    if own_cut:  # every group's series is gone and the target's own still do not fit
        kept = kept[:max_series]
    groups_cut = tuple(key for key in order if (_GROUP_LEVEL, key) in cut)
    gone = {t for t, _ in groups_cut}
    kept_tenants = {t for (level, (t, _)) in counts if level == _GROUP_LEVEL and (level, (t, _)) not in cut}
    detail = tuple(sum(1 for lv, _ in cut if lv == level) for level in range(_GROUP_LEVEL))
    return Capped(
        tuple(kept),
        len(samples),
        (detail[0], detail[1]),
        groups_cut,
        tuple(sorted(t for t in gone - kept_tenants if t)),
        own_cut,
    )


def cap_message(c: Capped, max_series: int) -> str:
    """What the cap cut and the figure to raise it to, for the result's message and the log."""
    parts = [f"{what} of {n} groups" for n, what in zip((*c.detail_cut, len(c.groups_cut)), _STEPS) if n]
    if c.own_cut:
        parts.append(f"{c.own_cut} of the target's own series")
    tenants = ""
    if c.tenants_cut:
        shown = ", ".join(c.tenants_cut[:5]) + (f" and {len(c.tenants_cut) - 5} more" if len(c.tenants_cut) > 5 else "")
        tenants = f"; tenants left without any group's lag: {shown}"
    return (
        f"series cap reached: {c.produced} series, collection.max_series_per_target is {max_series}: "
        f"{c.dropped} dropped ({', '.join(parts)}){tenants}; raise collection.max_series_per_target to at "
        f"least {c.produced}"
    )


def succeeded(
    target: Target,
    samples: Sequence[Sample],
    *,
    started_at: float,
    duration: float,
    max_series: int,
    exempt: Callable[[Capped], Sequence[Sample]] | None = None,
) -> TargetResult:
    """OK, or NO_DATA when the target answered with nothing; beyond ``max_series`` the cap cuts (``cap``), counted
    in ``series_dropped`` and a ``Cut`` whose message is the result's. ``exempt``: builds, from what the cap cut,
    the series that say what the round left out (the Admin collector's skipped groups): added after the cap, never
    cut by it."""
    c = cap(samples, max_series)
    kept = c.kept + (tuple(exempt(c)) if exempt is not None else ())
    cuts: tuple[Cut, ...] = ()
    message = ""
    if c.dropped:
        message = cap_message(c, max_series)
        cuts = (Cut(CutCause.SERIES_CAP, c.dropped, len(c.groups_cut), message),)
    return TargetResult(
        target,
        TargetStatus.OK if kept else TargetStatus.NO_DATA,
        kept,
        started_at,
        duration,
        message=message,
        series_dropped=c.dropped,
        cuts=cuts,
    )


def reason_of(exc: BaseException) -> FailureReason:
    if isinstance(exc, TargetAuthFailed):
        return FailureReason.AUTHENTICATION
    if isinstance(exc, TargetForbidden):
        return FailureReason.AUTHORIZATION
    if isinstance(exc, TargetTimeout):
        return FailureReason.TIMEOUT
    if isinstance(exc, TargetUnreachable):
        return FailureReason.UNREACHABLE
    if isinstance(exc, TransportError):
        return FailureReason.MALFORMED
    return FailureReason.ERROR


def failed(target: Target, exc: BaseException, *, started_at: float, duration: float) -> TargetResult:
    return TargetResult(target, TargetStatus.FAILED, (), started_at, duration, reason_of(exc), str(exc)[:300])
