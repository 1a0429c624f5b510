"""The report documents: plain dicts built from the transforms' collected rows. Pure: no Spark, no I/O.

A tenant document is JSON-ready; numbers are rounded to 12 significant digits so that the same data gives the same
document whether Spark summed in one partition order or another (local mode vs a cluster).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

DOC_VERSION = 1
OPERATOR = "_operator"  # index key of the operator summary; tenant names cannot start with "_"

COMPARED = (
    "bytes_in",
    "bytes_out",
    "messages_in",
    "messages_out",
    "produce_p99_mean_seconds",
    "produce_p99_max_seconds",
    "fetch_p99_mean_seconds",
    "fetch_p99_max_seconds",
    "throttled_minutes",
    "lag_mean_messages",
    "lag_max_messages",
    "availability_ratio",
    "bad_minutes",
    "offline_minutes",
    "under_min_isr_minutes",
    "observed_minutes",
    "slo_availability_ratio",
    "slo_bad_minutes",
    "slo_known_minutes",
    "alerts_raised",
)
MINUTES_PER_DAY = 1440


def num(x: Any) -> Any:
    if isinstance(x, float):
        return float(f"{x:.12g}")
    return x


def _row(r: Any) -> dict:
    return r if isinstance(r, dict) else r.asDict()


@dataclass
class Collected:
    """The transforms' results for one report, collected to the driver and grouped by tenant."""

    week: date
    generated_at: datetime
    data_first: datetime | None
    data_end: datetime | None
    problems: list[str]
    compare: dict[str, dict[str, dict]] = field(default_factory=lambda: defaultdict(dict))
    history: dict[str, dict[date, dict[str, float]]] = field(default_factory=lambda: defaultdict(dict))
    storage: dict[str, dict] = field(default_factory=dict)
    storage_daily: dict[str, list[tuple[date, float]]] = field(default_factory=lambda: defaultdict(list))
    disk: dict[str, dict] = field(default_factory=dict)
    members: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    alerts: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))
    clients: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))
    daily: dict[str, dict[str, dict[date, float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(dict))
    )
    seen: dict[str, dict] = field(default_factory=dict)
    clusters: list[dict] = field(default_factory=list)
    findings: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))

    @classmethod
    def from_rows(
        cls,
        week: date,
        generated_at: datetime,
        problems: list[str],
        *,
        span: Mapping,
        compare: Iterable,
        weekly: Iterable,
        storage: Iterable,
        storage_daily: Iterable,
        disk: Iterable,
        members: Iterable,
        alerts: Iterable,
        clients: Iterable,
        daily: Iterable,
        seen: Iterable,
        clusters: Iterable,
        findings: Iterable = (),
    ) -> Collected:
        c = cls(week, generated_at, span.get("first"), span.get("end"), list(problems))
        for r in map(_row, compare):
            c.compare[r["owner"]][r["metric"]] = r
        for r in map(_row, weekly):
            c.history[r["owner"]].setdefault(r["week_start"], {})[r["metric"]] = r["value"]
        for r in map(_row, storage):
            c.storage[r["owner"]] = r
        for r in map(_row, storage_daily):
            c.storage_daily[r["owner"]].append((r["date"], r["bytes"]))
        for r in map(_row, disk):
            c.disk[r["cluster"]] = r
        for r in map(_row, members):
            c.members[r["owner"]].add(r["cluster"])
        for r in map(_row, alerts):
            c.alerts[r["owner"]].append(r)
        for r in map(_row, clients):
            c.clients[r["owner"]].append(r)
        for r in map(_row, daily):
            c.daily[r["owner"]][r["metric"]][r["date"]] = r["value"]
        for r in map(_row, seen):
            c.seen[r["owner"]] = r
        c.clusters = [_row(r) for r in clusters]
        for r in map(_row, findings):
            c.findings[r["owner"]].append(r)
        return c


def _ratio(x: Any) -> Any:
    # x / y - 1 with x == y up to summation order gives +-1e-16: equal weeks must read 0 whatever the partitioning
    return num(round(x, 12)) if isinstance(x, float) else x


def _compared(row: dict | None) -> dict:
    row = row or {}
    out = {k: num(row.get(k)) for k in ("this_week", "previous_week", "previous4_mean", "previous4_weeks")}
    out.update({k: _ratio(row.get(k)) for k in ("growth_wow", "vs_previous4")})
    return out


def _week_label(d: date) -> str:
    y, w, _ = d.isocalendar()
    return f"{y}-W{w:02d}"


def tenant_problems(c: Collected, tenant: str) -> tuple[str, list[str]]:
    """(status, the tenant's own problems): pure decisions about missing or partial data of one tenant."""
    seen = c.seen.get(tenant)
    week_start = datetime.combine(c.week, time(), tzinfo=timezone.utc)
    out: list[str] = []
    this = c.compare.get(tenant, {})
    if seen is None or seen["last_seen"] < week_start:
        out.append(
            "no data for this tenant's topics, consumer groups or clients in the week: "
            "is the tenant new, idle, or are its selectors wrong?"
        )
        return "no_data", out
    first = seen["first_seen"]
    if first >= week_start and c.data_first is not None and first - c.data_first > timedelta(hours=1):
        out.append(
            f"first data of this tenant at {first:%Y-%m-%d %H:%M} UTC (added mid-week?): weekly figures "
            "cover only the time since, and week-over-week growth is not comparable"
        )
    elif this.get("bytes_in", {}).get("previous_week") is None:
        out.append("no data for the previous week: week-over-week growth is not available")
    return "ok", out


def slo_section(cmp: Mapping[str, dict], history: list[dict], *, objective: float, window_days: int) -> dict:
    """The week's availability against the objective (alerts/slo.py's minutes) and the error budget it burned:
    ``burn_rate`` (1 - availability) / (1 - objective), 1 spending the budget exactly over the SLO window;
    ``budget_spent`` the share of the window's whole error budget (window minutes x (1 - objective)) that the
    week's bad minutes spent. ``weeks``: the same per week of the history."""
    budget_minutes = window_days * MINUTES_PER_DAY * (1 - objective)

    def burn(avail: Any) -> Any:
        return num((1 - avail) / (1 - objective)) if isinstance(avail, (int, float)) else None

    def spent(bad: Any) -> Any:
        return num(bad / budget_minutes) if isinstance(bad, (int, float)) else None

    avail = cmp.get("slo_availability_ratio", {})
    bad = cmp.get("slo_bad_minutes", {}).get("this_week")
    return {
        "objective": objective,
        "window": f"{window_days}d",
        "availability": num(avail.get("this_week")),
        "met": (avail["this_week"] >= objective if avail.get("this_week") is not None else None),
        "known_minutes": num(cmp.get("slo_known_minutes", {}).get("this_week")),
        "bad_minutes": num(bad),
        "burn_rate": burn(avail.get("this_week")),
        "budget_spent": spent(bad),
        "comparison": _compared(avail),
        "weeks": [
            {
                "week": h["week"],
                "availability": h["slo_availability_ratio"],
                "burn_rate": burn(h["slo_availability_ratio"]),
                "budget_spent": spent(h["slo_bad_minutes"]),
            }
            for h in history
        ],
    }


def tenant_document(
    c: Collected,
    tenant: str,
    *,
    budget_bytes: int | None,
    retention_hours: float | None,
    objective: float = 0.999,
    window_days: int = 28,
) -> dict:
    status, own = tenant_problems(c, tenant)
    problems = c.problems + own
    if status == "ok" and problems:
        status = "partial"
    cmp = c.compare.get(tenant, {})
    st = c.storage.get(tenant, {})
    weeks = [c.week - timedelta(days=7 * i) for i in range(4, -1, -1)]
    history = [
        {"week": _week_label(w), **{m: num(c.history.get(tenant, {}).get(w, {}).get(m)) for m in COMPARED}}
        for w in weeks
    ]
    disk = []
    for cl in sorted(c.members.get(tenant, ())):
        d = c.disk.get(cl)
        if d:
            disk.append(
                {
                    "cluster": cl,
                    "size_bytes": num(d["limit"]),
                    "used_bytes": num(d["current"]),
                    "growth_bytes_per_week": num(d["slope_per_week"]),
                    "weeks_until_full": num(d["weeks_until_limit"]),
                }
            )
    days = [c.week - timedelta(days=28) + timedelta(days=i) for i in range(35)]
    dl = c.daily.get(tenant, {})
    sd = dict(c.storage_daily.get(tenant, ()))
    alerts = sorted(c.alerts.get(tenant, ()), key=lambda r: (-r["raised"], -r["firing_minutes"], r["alertname"]))
    clients = sorted(c.clients.get(tenant, ()), key=lambda r: r["rank"])
    avail = cmp.get("availability_ratio", {})
    return {
        "kind": "kafka-health/tenant-report",
        "version": DOC_VERSION,
        "tenant": tenant,
        "week": _week_label(c.week),
        "period": {"start": c.week.isoformat(), "end": (c.week + timedelta(days=7)).isoformat()},
        "generated_at": c.generated_at.isoformat(),
        "status": status,
        "problems": problems,
        "throughput": {m: _compared(cmp.get(m)) for m in ("bytes_in", "bytes_out", "messages_in", "messages_out")},
        "storage": {
            "used_bytes": num(st.get("current")),
            "budget_bytes": budget_bytes,
            "retention_hours": retention_hours,
            "growth_bytes_per_week": num(st.get("slope_per_week")),
            "days_in_trend": st.get("days"),
            "weeks_until_budget": num(st.get("weeks_until_limit")),
            "disk": disk,
        },
        "latency": {
            m: _compared(cmp.get(m))
            for m in (
                "produce_p99_mean_seconds",
                "produce_p99_max_seconds",
                "fetch_p99_mean_seconds",
                "fetch_p99_max_seconds",
            )
        },
        "throttling": {"throttled_minutes": _compared(cmp.get("throttled_minutes"))},
        "consumer_lag": {m: _compared(cmp.get(m)) for m in ("lag_mean_messages", "lag_max_messages")},
        "alerts": {
            "raised": sum(r["raised"] for r in alerts),
            "firing_minutes": sum(r["firing_minutes"] for r in alerts),
            "by_name": [
                {
                    k: num(r[k])
                    for k in (
                        "alertname",
                        "severity",
                        "raised",
                        "firing_minutes",
                        "resolved",
                        "mean_minutes_to_resolve",
                        "max_minutes_to_resolve",
                    )
                }
                for r in alerts
            ],
        },
        "availability": {
            "ratio": num(avail.get("this_week")),
            "bad_minutes": num(cmp.get("bad_minutes", {}).get("this_week")),
            "offline_minutes": num(cmp.get("offline_minutes", {}).get("this_week")),
            "under_min_isr_minutes": num(cmp.get("under_min_isr_minutes", {}).get("this_week")),
            "observed_minutes": num(cmp.get("observed_minutes", {}).get("this_week")),
            "comparison": _compared(avail),
        },
        "slo": slo_section(cmp, history, objective=objective, window_days=window_days),
        "noisiest_clients": [
            {
                k: num(r[k])
                for k in (
                    "rank",
                    "cluster",
                    "user",
                    "client_id",
                    "produce_bytes",
                    "fetch_bytes",
                    "total_bytes",
                    "throttled_minutes",
                )
            }
            for r in clients
        ],
        "client_findings": _findings(c.findings.get(tenant, ())),
        "history": history,
        "daily": {
            "dates": [d.isoformat() for d in days],
            **{
                m: [num(dl.get(m, {}).get(d)) for d in days]
                for m in ("bytes_in", "bytes_out", "produce_p99_seconds", "lag_mean_messages")
            },
            "storage_bytes": [num(sd.get(d)) for d in days],
        },
    }


def _findings(rows: Iterable[dict]) -> list[dict]:
    """The week's client-advisor findings of one tenant, longest-held first."""
    out = [
        {
            "finding": r["finding"],
            "cluster": r["cluster"],
            "client_id": r["client_id"],
            "group": r["group"],
            "minutes": r["minutes"],
            "first_seen": _iso(r["first_seen"]),
            "last_seen": _iso(r["last_seen"]),
        }
        for r in rows
    ]
    return sorted(out, key=lambda f: (-f["minutes"], f["finding"], f["client_id"] or "", f["group"] or ""))


def _iso(t: datetime | None) -> str | None:
    return t.isoformat() if t is not None else None


def operator_document(c: Collected, tenant_docs: Mapping[str, dict]) -> dict:
    """Across tenants and clusters: the platform team's view of the week."""
    tenants = []
    for name, d in sorted(tenant_docs.items()):
        tenants.append(
            {
                "tenant": name,
                "status": d["status"],
                "bytes_in": d["throughput"]["bytes_in"]["this_week"],
                "growth_wow": d["throughput"]["bytes_in"]["growth_wow"],
                "vs_previous4": d["throughput"]["bytes_in"]["vs_previous4"],
                "availability_ratio": d["availability"]["ratio"],
                "alerts_raised": d["alerts"]["raised"],
                "throttled_minutes": d["throttling"]["throttled_minutes"]["this_week"],
                "weeks_until_budget": d["storage"]["weeks_until_budget"],
                "problems": len(d["problems"]) - len(c.problems),
            }
        )
    tenants.sort(key=lambda t: -(t["bytes_in"] or 0))
    clusters = []
    for r in sorted(c.clusters, key=lambda r: r["cluster"]):
        disk = c.disk.get(r["cluster"], {})
        clusters.append(
            {
                **{k: num(v) for k, v in r.items()},
                "disk_used_bytes": num(disk.get("current")),
                "disk_size_bytes": num(disk.get("limit")),
                "disk_weeks_until_full": num(disk.get("weeks_until_limit")),
            }
        )
    return {
        "kind": "kafka-health/operator-report",
        "version": DOC_VERSION,
        "week": _week_label(c.week),
        "period": {"start": c.week.isoformat(), "end": (c.week + timedelta(days=7)).isoformat()},
        "generated_at": c.generated_at.isoformat(),
        "status": "partial" if c.problems else "ok",
        "problems": c.problems,
        "tenants": tenants,
        "clusters": clusters,
        "attention": _attention(tenants, clusters),
    }


def _attention(tenants: list[dict], clusters: list[dict]) -> list[str]:
    """What will run out first, in one list the platform team reads first."""
    out = []
    for t in tenants:
        if t["weeks_until_budget"] is not None and t["weeks_until_budget"] < 4:
            out.append(f"tenant {t['tenant']}: storage budget reached in {t['weeks_until_budget']:.1f} weeks")
        if t["availability_ratio"] is not None and t["availability_ratio"] < 0.999:
            out.append(f"tenant {t['tenant']}: availability {t['availability_ratio'] * 100:.3f} %")
    for cl in clusters:
        if cl["disk_weeks_until_full"] is not None and cl["disk_weeks_until_full"] < 8:
            out.append(f"cluster {cl['cluster']}: log-dir disks full in {cl['disk_weeks_until_full']:.1f} weeks")
    return out
