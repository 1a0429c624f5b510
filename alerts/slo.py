"""Tenant SLOs: the one definition of a tenant's availability and of its error-budget burn.

    per minute, per (cluster, tenant)     unavailable 1 (bad), 0 (good), no value (unknown)
        bad     a partition of the tenant was offline or under min ISR during the minute (Admin API), or the probe
                failed (result error or lost) on a broker that led one of its partitions during the minute or the
                one before (a lost record is known a probe deadline after its broker stopped answering)
        unknown the probe was not up the whole minute (``kafka_health_probe_up`` < 1 or absent): we could not see,
                which is not an outage, so the minute counts neither way; also no partition data for the tenant
    availability over a window             good minutes / known minutes (unknown minutes left out)
    burn rate                              (1 - availability) / (1 - objective): 1 spends the budget exactly over
                                           the SLO window, 14.4 spends 2 % of a 30-day budget in an hour
    error budget remaining                 1 - burn rate over the SLO window (negative: overspent)

``MINUTE_EXPR`` is that minute in PromQL. Prometheus gets it as a recording rule and the windows as
``avg_over_time`` of it (``recording_rules``, written by ``kafka-health rules export``); the engine and the API,
which must work without rule files, evaluate the same expression as a subquery at 1-minute steps
(``availability_query``). ``minute_status`` and ``availability`` are the same rules in Python, on plain values: the
reference the unit tests compute by hand and the promtool tests hold the PromQL to.

The burn-rate alerts are the Google SRE workbook's multi-window, multi-burn-rate alerts (rules.yaml: page at 14.4x
over 1h and 5m, page at 6x over 6h and 30m, ticket at 1x over 3d and 6h); ``burning`` decides one of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from monitor.core.config import SloSettings, TenantConfig
from monitor.core.metric_names import M

# The windows the recording rules give ratios for; a burn-rate rule's windows must be among them.
WINDOWS = ("5m", "30m", "1h", "6h", "1d", "3d")

OBJECTIVE_RECORD = "tenant:kafka_tenant_slo_objective:ratio"
MINUTE_RECORD = "cluster_tenant:kafka_tenant_unavailable:1m"
AVAILABILITY_RECORD = "cluster_tenant:kafka_tenant_availability:ratio_{window}"
BURN_RECORD = "cluster_tenant:kafka_tenant_slo_burn_rate:{window}"
PROBE_FAILURES = "error|lost"  # kafka_probe_messages_total results that make a minute bad


def _sel(metric_key: str, *matchers: str) -> str:
    inner = ", ".join(m for m in matchers if m)
    return f"{M[metric_key]}{{{inner}}}" if inner else M[metric_key]


def minute_expr(*, cluster: str = "", tenant: str = "") -> str:
    """The minute in PromQL, per (cluster, tenant): 1 bad, 0 good, no value unknown. ``cluster`` and ``tenant``:
    extra label matchers (``cluster=~"$cluster"``) put on every selector they concern (the dashboards)."""
    tenant_of = ('tenant!=""', cluster, tenant)
    failed = f'result=~"{PROBE_FAILURES}"'
    # A broker's probe in the minute: 1 if some record failed or was lost, 0 if it ran without failure (should the
    # error series not exist, the ok series says the probe ran), no value if the probe has no series for the broker.
    probe_bad = (
        f"(sum by (cluster, broker) (increase({_sel('probe_messages', failed, cluster)}[1m])) > bool 0 "
        f"or sum by (cluster, broker) (increase({_sel('probe_messages', cluster)}[1m])) * 0)"
    )
    # Led "during the minute or the one before": a frozen leader is fenced and loses its partitions within about
    # 10 s, while its lost records are decided a probe deadline (20 s) later and scraped after that; with one minute
    # both signals fell into the same minute only if a minute boundary came between them, so such an outage often
    # made no bad minute at all (the restart e2e's freeze: no page in two full CI sessions, a page when alone).
    leads = (
        f"(max by (cluster, tenant, broker) (max_over_time({_sel('tenant_partition_leaders', cluster, tenant)}"
        f"[2m])) > bool 0)"
    )
    parts = [
        (
            f"max by (cluster, tenant) (max_over_time({_sel('topic_offline_partitions', *tenant_of)}[1m])) > bool 0",
            "offline",
        ),
        (
            f"max by (cluster, tenant) (max_over_time({_sel('topic_under_min_isr', *tenant_of)}[1m])) > bool 0",
            "under_min_isr",
        ),
        (f"max by (cluster, tenant) ({probe_bad} * on (cluster, broker) group_right () {leads})", "probe"),
    ]
    union = " or ".join(f'label_replace({expr}, "part", "{name}", "", "")' for expr, name in parts)
    up = f"min by (cluster) (min_over_time({_sel('probe_up', cluster)}[1m])) == 1"
    return f"max by (cluster, tenant) ({union}) and on (cluster) ({up})"


MINUTE_EXPR = minute_expr()


def availability_query(window: str, *, cluster: str = "", tenant: str = "") -> str:
    """PromQL: availability of every (cluster, tenant) over ``window`` from raw series, without recording rules."""
    return f"1 - avg_over_time(({minute_expr(cluster=cluster, tenant=tenant)})[{window}:1m])"


def recording_rules(default_objective: float, interval: str = "1m") -> dict:
    """The rule group ``kafka-health rules export`` writes beside the alerts: each tenant's objective (its contract's
    series, else ``default_objective``: the exporting config's ``slo.objective``), the minute, and availability and
    burn rate per window. Evaluated every minute, so ``avg_over_time`` over a window averages one value per minute."""
    objective = (
        f"max by (tenant) ({M['tenant_objective']}) or max by (tenant) ({M['tenant_info']}) * 0 + {default_objective:g}"
    )
    rules: list[dict] = [
        {"record": OBJECTIVE_RECORD, "expr": objective},
        {"record": MINUTE_RECORD, "expr": MINUTE_EXPR},
    ]
    for w in WINDOWS:
        rules.append(
            {"record": AVAILABILITY_RECORD.format(window=w), "expr": f"1 - avg_over_time({MINUTE_RECORD}[{w}])"}
        )
    for w in WINDOWS:
        rules.append(
            {
                "record": BURN_RECORD.format(window=w),
                "expr": f"(1 - {AVAILABILITY_RECORD.format(window=w)}) / on (tenant) group_left () "
                f"(1 - {OBJECTIVE_RECORD})",
            }
        )
    return {"name": "kafka-health-tenant-slo", "interval": interval, "rules": rules}


# ---------------------------------------------------------------------------------------- the maths, pure


class MinuteStatus(str, Enum):
    GOOD = "good"
    BAD = "bad"
    UNKNOWN = "unknown"


def minute_status(
    *, probe_up: bool, partitions_unavailable: bool, leaders: Iterable[str], failing_brokers: Iterable[str]
) -> MinuteStatus:
    """One minute of one tenant on one cluster, as ``MINUTE_EXPR`` judges it. ``probe_up``: up the whole minute;
    ``partitions_unavailable``: one of its partitions offline or under min ISR; ``leaders``: brokers that led its
    partitions; ``failing_brokers``: brokers whose probe failed in the minute."""
    if not probe_up:
        return MinuteStatus.UNKNOWN  # blind, not down
    if partitions_unavailable or set(leaders) & set(failing_brokers):
        return MinuteStatus.BAD
    return MinuteStatus.GOOD


def availability(minutes: Iterable[MinuteStatus]) -> float | None:
    """Good minutes over known minutes; None when no minute is known."""
    good = bad = 0
    for m in minutes:
        good += m is MinuteStatus.GOOD
        bad += m is MinuteStatus.BAD
    return good / (good + bad) if good + bad else None


def burn_rate(avail: float, objective: float) -> float:
    """How fast the error budget burns: the error ratio over the budget's ratio (1 - objective)."""
    return (1.0 - avail) / (1.0 - objective)


def error_budget_remaining(avail: float, objective: float) -> float:
    """Share of the window's error budget left, ``avail`` being the availability over the whole SLO window."""
    return 1.0 - burn_rate(avail, objective)


def burning(long_avail: float | None, short_avail: float | None, *, objective: float, factor: float) -> bool:
    """A multi-window burn-rate alert's condition: the budget burns faster than ``factor`` over both windows (the
    long one says it is significant, the short one that it is still going on). Unknown windows never fire."""
    if long_avail is None or short_avail is None:
        return False
    return burn_rate(long_avail, objective) > factor and burn_rate(short_avail, objective) > factor


def objective_for(tenant: TenantConfig, settings: SloSettings) -> float:
    return tenant.contract.availability_objective or settings.objective


@dataclass(frozen=True)
class TenantSlo:
    """A tenant's SLO now, as the API shows it (``GET /tenants/{t}/health``)."""

    objective: float
    window: str
    availability: float | None  # None: no known minute in the window
    error_budget_remaining: float | None

    @classmethod
    def of(cls, *, objective: float, window_days: int, avail: float | None) -> TenantSlo:
        remaining = None if avail is None else round(error_budget_remaining(avail, objective), 6)
        return cls(
            objective=objective,
            window=f"{window_days}d",
            availability=None if avail is None else round(avail, 6),
            error_budget_remaining=remaining,
        )
