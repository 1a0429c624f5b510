"""The weekly report job: extract (lake) -> transforms (Spark) -> documents -> HTML -> load (lake + store index).

``run_report`` is the one place that wires the steps; the Spark session, config, ``now``, lake and store are
parameters, so the same code runs in tests, in ``kafka-health report`` (local or ``--master spark://...``) and in a
scheduler. The early reductions of final days come from the cache of the previous runs (``cache``); only the other
days' raw rows are read.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from alerts.slo import objective_for
from monitor.core.config import Config
from monitor.core.errors import ReportError
from monitor.core.store import Store
from monitor.reports import cache
from monitor.reports import document as D
from monitor.reports import transforms as T
from monitor.reports.extract import (
    ReportWindow,
    budgets_frame,
    parse_week,
    scan,
    selectors_frame,
    week_name,
)
from monitor.reports.load import index_report, write_report
from monitor.reports.render import operator_html, tenant_html

log = logging.getLogger(__name__)
STAGES = 5


def spark_session(master: str, *, app_name: str = "kafka-health-report", shuffle_partitions: int = 8) -> SparkSession:
    """A small-footprint session: 1 GiB driver, no UI, UTC (days and weeks are UTC days and weeks)."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.pyspark.python", sys.executable)
    )
    if master.startswith("spark://"):
        builder = builder.config("spark.executor.memory", "768m").config("spark.cores.max", "2")
    return builder.getOrCreate()


@dataclass
class ReportRun:
    week: str
    documents: dict[str, dict] = field(default_factory=dict)
    operator: dict | None = None
    problems: list[str] = field(default_factory=list)
    paths: dict[str, tuple[str, str]] = field(default_factory=dict)


def _epoch(col: str) -> F.Column:
    return F.col(col).cast("long").alias(col)


def _utc(x: int | None) -> datetime | None:
    return datetime.fromtimestamp(x, tz=timezone.utc) if x is not None else None


class Steps:
    """The transform stage's progress: each materialized frame and collected result, numbered and timed."""

    COMPUTE = 14  # steps of ``compute`` (attribution, figures)

    def __init__(self, progress: Callable[[str], None], total: int):
        self.progress, self.total, self.done = progress, total, 0

    def timed(self, name: str, fn: Callable[[], Any]) -> Any:
        t0 = time.monotonic()
        result = fn()
        self.done += 1
        size = f"{len(result)} rows" if isinstance(result, list) else "ready"
        self.progress(f"      {name} ({self.done}/{self.total}): {size} in {time.monotonic() - t0:.1f}s")
        return result

    def keep(self, name: str, df: DataFrame) -> DataFrame:
        # localCheckpoint: materialized once (memory, spilling to disk) and cut from the lineage of the raw scan.
        return self.timed(name, df.localCheckpoint)


def compute(
    spark: SparkSession,
    config: Config,
    parts: T.Reductions,
    week_text: str,
    *,
    problems: list[str],
    now: datetime,
    steps: Steps | None = None,
) -> D.Collected:
    """Attribute the window's early reductions (``parts``, materialized: see ``cache.reductions``) to the tenants,
    run every transform and collect the (small) results to the driver. Everything here works on frames small
    enough to keep in memory; the raw rows were read (at most) once per reduction, before.
    """
    monday = parse_week(week_text)
    steps = steps or Steps(lambda _m: None, Steps.COMPUTE)
    timed, keep = steps.timed, steps.keep
    selectors = selectors_frame(spark, config.tenants)
    r = T.reduce(parts, selectors, keep=keep)
    episodes = T.alert_episodes(r.mins).persist(StorageLevel.MEMORY_AND_DISK)
    daily_frame = r.owner_days()
    daily = timed("daily figures", daily_frame.collect)
    week_ts = datetime.combine(monday, datetime.min.time(), tzinfo=timezone.utc)
    span_rows = (
        r.clusters.where(F.col("ts") >= F.lit(week_ts))
        .agg(F.min("ts").alias("first"), F.max("ts").alias("last"))
        .select(_epoch("first"), _epoch("last"))
        .collect()
    )
    span = span_rows[0] if span_rows and span_rows[0]["last"] is not None else None
    # An alert still firing in the data's last minute is not resolved yet: the data's end bounds the week.
    span_end = min(_utc(span["last"]) + timedelta(minutes=1), week_ts + timedelta(days=7)) if span else None
    data_end = F.lit(span_end) if span_end is not None else None
    daily_df = spark.createDataFrame(daily, daily_frame.schema)
    out = {
        "weekly": timed("weekly figures", lambda: T.weekly(daily_df, episodes).collect()),
        "storage": timed("storage", lambda: T.storage_daily(r.owned_days).collect()),
        "disk": timed("disk", lambda: r.disk.collect()),  # small: the clusters' days
        "alerts": timed("alerts", lambda: T.alerts_by_name(episodes, monday, data_end).collect()),
        "clients": timed("noisiest clients", lambda: T.noisy_clients(r.owned_days, monday).collect()),
        "findings": timed(
            "client findings",
            lambda: (
                T.client_findings(r.mins, monday)
                .select(
                    "owner",
                    "cluster",
                    "finding",
                    "client_id",
                    "group",
                    "minutes",
                    _epoch("first_seen"),
                    _epoch("last_seen"),
                )
                .collect()
            ),
        ),
        "daily": T.daily_series(daily_df).collect(),
        "seen": T.first_seen(r.owned_days, r.mins).select("owner", _epoch("first_seen"), _epoch("last_seen")).collect(),
    }
    disk_df = spark.createDataFrame(
        out["disk"], "cluster string, date date, size_bytes double, used_bytes double, brokers long"
    )
    out["clusters"] = timed(
        "clusters", lambda: T.cluster_summary(r.days, r.clusters, r.rows, disk_df, monday).collect()
    )
    episodes.unpersist()
    # The comparisons and forecasts run on the small collected frames (same transforms as the tests use).
    weekly_df = spark.createDataFrame(out["weekly"], "owner string, week_start date, metric string, value double")
    compare = timed("comparison with previous weeks", lambda: T.compare(weekly_df, monday).collect())
    storage_df = spark.createDataFrame(out["storage"], "owner string, date date, bytes double")
    storage = timed(
        "storage forecast", lambda: T.storage_forecast(storage_df, budgets_frame(spark, config.tenants)).collect()
    )
    disk = T.disk_forecast(disk_df).collect()
    members = T.memberships(selectors).collect()
    seen = [
        {"owner": r["owner"], "first_seen": _utc(r["first_seen"]), "last_seen": _utc(r["last_seen"])}
        for r in out["seen"]
    ]
    findings = [
        {**r.asDict(), "first_seen": _utc(r["first_seen"]), "last_seen": _utc(r["last_seen"])} for r in out["findings"]
    ]
    return D.Collected.from_rows(
        monday,
        now,
        problems,
        span={"first": _utc(span["first"]) if span else None, "end": span_end},
        compare=compare,
        weekly=out["weekly"],
        storage=storage,
        storage_daily=out["storage"],
        disk=disk,
        members=members,
        alerts=out["alerts"],
        clients=out["clients"],
        daily=out["daily"],
        seen=seen,
        clusters=out["clusters"],
        findings=findings,
    )


def run_report(
    spark: SparkSession,
    config: Config,
    week_text: str,
    *,
    now: datetime,
    tenant: str | None = None,
    store: Store | None = None,
    lake: Path | None = None,
    use_cache: bool = True,
    progress: Callable[[str], None] = lambda _m: None,
) -> ReportRun:
    """``use_cache=False`` reads every day from the lake and leaves the reductions cache as it is."""
    monday = parse_week(week_text)
    week = week_name(monday)
    if tenant is not None and tenant not in {t.name for t in config.tenants}:
        raise ReportError(f"unknown tenant {tenant!r}: not in the config's tenants")
    if monday > now.date():
        raise ReportError(f"week {week} has not started yet")
    lake = Path(lake or config.lake.path)
    started = time.monotonic()

    def stage(n: int, text: str) -> None:
        progress(f"[{n}/{STAGES}] {text} (+{time.monotonic() - started:.0f}s)")

    stage(1, f"extract: checking the lake's files for {week} and the 4 weeks before")
    window = ReportWindow.for_week(monday)
    ex = scan(lake, window, today=now.date())
    current_week = now.date() - timedelta(days=now.date().weekday())  # its days may still be archived again
    plan = cache.plan(lake, ex, current_week=current_week, schemas=cache.schema_record(spark), enabled=use_cache)
    progress(f"      {ex.files} file(s) over {len(ex.present)} day(s); {len(ex.problems)} problem(s)")
    for p in ex.problems:
        progress(f"      problem: {p}")
    progress(f"      reductions cache: {plan.summary() if use_cache else 'not used (every day from the lake)'}")
    for _level, note in plan.notes:
        progress(f"      cache: {note}")
    if not ex.files:
        ex.problems.append(f"the lake at {lake} has no readable data for {week} or the 4 weeks before")
    stage(2, f"transform: {len(config.tenants)} tenant(s), every figure")
    steps = Steps(progress, Steps.COMPUTE + 4 + 5 * bool(plan.to_cache))
    parts = cache.reductions(spark, lake, ex, window, plan, now=now, keep=steps.keep, timed=steps.timed)
    collected = compute(spark, config, parts, week, problems=ex.problems, now=now, steps=steps)
    stage(3, "documents")
    run = ReportRun(week, problems=ex.problems)
    wanted = [t for t in config.tenants if tenant is None or t.name == tenant]
    for t in wanted:
        doc = D.tenant_document(
            collected,
            t.name,
            budget_bytes=t.contract.storage_budget_bytes,
            retention_hours=t.contract.retention_hours,
            objective=objective_for(t, config.slo),
            window_days=config.slo.window_days,
        )
        for p in doc["problems"][len(ex.problems) :]:
            log.warning("report %s %s: %s", week, t.name, p)
        run.documents[t.name] = doc
    if tenant is None:
        run.operator = D.operator_document(collected, run.documents)
    stage(4, f"render and write {len(run.documents)} report(s) to {lake / 'reports'}")
    for name, doc in run.documents.items():
        run.paths[name] = write_report(lake, doc, tenant_html(doc), tenant=name)
    if run.operator is not None:
        run.paths[D.OPERATOR] = write_report(lake, run.operator, operator_html(run.operator), tenant=D.OPERATOR)
    stage(5, "index in the store" if store is not None else "no store: index skipped")
    if store is not None:
        docs = dict(run.documents)
        if run.operator is not None:
            docs[D.OPERATOR] = run.operator
        for name, doc in docs.items():
            index_report(
                store,
                tenant=name,
                week=week,
                status=doc["status"],
                problems=len(doc["problems"]),
                json_path=run.paths[name][0],
                html_path=run.paths[name][1],
                generated_at=now,
            )
    progress(
        f"done: {len(run.documents)} tenant report(s){' + operator summary' if run.operator else ''} "
        f"for {week} in {time.monotonic() - started:.0f}s"
    )
    return run
