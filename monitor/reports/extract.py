"""Extract: find the lake's files for a report window, check them, and read them as one DataFrame.

Faults are contained here and become ``problems`` (plain sentences that go into the report and the log):
a missing or incomplete day, a file that is not readable Parquet (skipped), a file whose schema drifted from
``lake.SCHEMA`` (missing columns become null, other types are cast with ``try_cast``: unparseable values dropped).
Files are checked by their Parquet footer (cheap); a file with a valid footer and corrupt pages still fails the job.

``scan`` checks (no Spark) and says per day whether the day is *final* (see ``DayFiles``), which is what the cache of
reductions (``monitor.reports.cache``) needs; ``read`` then reads the files of the days that are not cached.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from monitor.archive import lake as lakefs
from monitor.archive.series import ADDED_COLUMNS
from monitor.core.config import TenantConfig
from monitor.core.errors import ReportError
from monitor.core.times import iso_week_monday

log = logging.getLogger(__name__)
HISTORY_WEEKS = 4  # weeks before the report week that are read for comparison and trends

SPARK_SCHEMA = T.StructType(
    [T.StructField("ts", T.TimestampType()), T.StructField("series", T.StringType())]
    + [T.StructField(n, T.StringType()) for n in lakefs.SCHEMA.names if n not in ("ts", "series", "value")]
    + [T.StructField("value", T.DoubleType())]
)
# What extract returns: the file's columns plus the cluster from the partition path.
FRAME_SCHEMA = T.StructType(SPARK_SCHEMA.fields + [T.StructField("cluster", T.StringType())])


def parse_week(text: str) -> date:
    """``2026-W47`` -> the Monday that starts ISO week 47 of 2026 (``monitor.core.times.iso_week_monday``)."""
    try:
        return iso_week_monday(text)
    except ValueError as exc:
        raise ReportError(str(exc)) from None


def week_name(monday: date) -> str:
    y, w, _ = monday.isocalendar()
    return f"{y}-W{w:02d}"


@dataclass(frozen=True)
class ReportWindow:
    week: date  # Monday of the report week
    start: date  # first day read (HISTORY_WEEKS before the week)
    end: date  # day after the report week (exclusive)

    @classmethod
    def for_week(cls, week: date) -> ReportWindow:
        return cls(week, week - timedelta(days=7 * HISTORY_WEEKS), week + timedelta(days=7))

    def days(self) -> list[date]:
        return [self.start + timedelta(days=i) for i in range((self.end - self.start).days)]


@dataclass(frozen=True)
class DayFiles:
    """One day of the window that has a directory in the lake."""

    day: date
    marker: lakefs.DayMarker | None
    files: tuple[str, ...]  # every Parquet file of the day, readable or not (the day's content, for the cache)
    faulty: bool  # an unreadable or schema-drifted file: read as documented, but never cached
    contained: bool  # every readable file's ``ts`` statistics lie inside the day (False when unknown)

    @property
    def final(self) -> bool:
        """Archived completely and read as is: its reductions will not change until the day is re-archived."""
        return self.marker is not None and self.marker.complete and not self.faulty and self.contained


@dataclass
class Scanned:
    """What ``scan`` found: the readable files grouped by schema drift, the days, and the problems to report."""

    groups: dict[tuple[str, ...], list[str]]
    present: list[date]  # days with at least one file
    problems: list[str]
    days: dict[date, DayFiles] = field(default_factory=dict)

    @property
    def files(self) -> int:
        return sum(len(v) for v in self.groups.values())

    def groups_of(self, days: Iterable[date]) -> dict[tuple[str, ...], list[str]]:
        """``groups`` restricted to the files of ``days``."""
        wanted = {f for d in days if d in self.days for f in self.days[d].files}
        out = {drift: [f for f in files if f in wanted] for drift, files in self.groups.items()}
        return {drift: files for drift, files in out.items() if files}


def _drift(schema: pa.Schema) -> tuple[str, ...]:
    """What differs from lakefs.SCHEMA, as short phrases; empty when the file is canonical."""
    out = []
    for f in lakefs.SCHEMA:
        if f.name not in schema.names:
            if f.name not in ADDED_COLUMNS:  # files written before a column was added simply lack it
                out.append(f"{f.name} missing")
        else:
            got = schema.field(f.name).type
            if not got.equals(f.type) and not (pa.types.is_timestamp(got) and pa.types.is_timestamp(f.type)):
                out.append(f"{f.name} is {got} (expected {f.type})")
    return tuple(out)


def _inside(meta: pq.FileMetaData, day: date) -> bool:
    """Whether the file's ``ts`` statistics (every row group's min and max) lie inside ``day``; False when a row
    group has no statistics (unknown). Footer only: no page is read."""
    names = meta.schema.to_arrow_schema().names
    if "ts" not in names:
        return False
    i = names.index("ts")
    lo = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
    hi = lo + timedelta(days=1)
    for g in range(meta.num_row_groups):
        st = meta.row_group(g).column(i).statistics
        if st is None or not st.has_min_max or not isinstance(st.min, datetime) or not isinstance(st.max, datetime):
            return False
        mn, mx = (t if t.tzinfo else t.replace(tzinfo=timezone.utc) for t in (st.min, st.max))
        if mn < lo or mx >= hi:
            return False
    return True


def scan(lake: Path, window: ReportWindow, *, today: date) -> Scanned:
    """Check the window's days and files (directories, markers, Parquet footers). No Spark."""
    groups: dict[tuple[str, ...], list[str]] = {}
    present, problems, missing = [], [], []
    days: dict[date, DayFiles] = {}
    for day in window.days():
        if day > today:
            continue  # the future is not missing
        d = lakefs.day_dir(lake, day)
        marker = lakefs.read_marker(lake, day)
        if not d.is_dir():
            missing.append(day)
            continue
        if marker is None:
            problems.append(f"{day}: archive of this day is incomplete (no completion marker); using what is there")
        elif not marker.complete and day < today:
            problems.append(f"{day}: only part of the day was archived ({marker.start} to {marker.end})")
        files = sorted(d.glob("cluster=*/*.parquet"))
        if files:
            present.append(day)
        faulty, contained = False, True
        for f in files:
            try:
                meta = pq.read_metadata(f)
                schema = meta.schema.to_arrow_schema()
            except (pa.ArrowException, OSError) as exc:
                problems.append(
                    f"{day}: unreadable Parquet file {f.relative_to(lake)} skipped "
                    f"({type(exc).__name__}: {str(exc).splitlines()[0][:120]})"
                )
                faulty = True
                continue
            drift = _drift(schema)
            if drift:
                problems.append(
                    f"{day}: schema drift in {f.relative_to(lake)}: {'; '.join(drift)}; "
                    "read with nulls for missing columns and unparseable values dropped"
                )
                faulty = True
            contained = contained and _inside(meta, day)
            groups.setdefault(drift, []).append(str(f))
        days[day] = DayFiles(day, marker, tuple(str(f) for f in files), faulty, contained)
    problems = _missing_runs(missing) + problems
    for p in problems:
        log.warning("report input: %s", p)
    return Scanned(groups, present, problems, days)


def _missing_runs(days: list[date]) -> list[str]:
    """One sentence per run of consecutive missing days (a lake that starts late is one line, not 28)."""
    out, run = [], []
    for day in days + [None]:
        if run and (day is None or day != run[-1] + timedelta(days=1)):
            if len(run) == 1:
                out.append(f"{run[0]}: no archived data (missing day); figures for this day are absent")
            else:
                out.append(
                    f"{run[0]} to {run[-1]}: no archived data ({len(run)} missing days); "
                    "figures for these days are absent"
                )
            run = []
        if day is not None:
            run.append(day)
    return out


CLUSTER_DIR = re.compile(r"/cluster=([^/]+)/[^/]*$")


def _conform(df: DataFrame, cluster: str) -> DataFrame:
    cols = []
    for f in SPARK_SCHEMA.fields:
        if f.name in df.columns and df.schema[f.name].dataType != f.dataType:
            cols.append(F.col(f.name).try_cast(f.dataType).alias(f.name))
        elif f.name in df.columns:
            cols.append(F.col(f.name))
        else:
            cols.append(F.lit(None).cast(f.dataType).alias(f.name))
    # The cluster is a constant of each read (files are read per cluster): a per-row expression on the file path
    # would cost more than the rest of the scan.
    cols.append(F.lit(cluster).alias("cluster"))
    return df.select(*cols)


def read(spark: SparkSession, groups: dict[tuple[str, ...], list[str]]) -> DataFrame:
    """One DataFrame in the canonical schema (plus ``cluster`` from the path) from the checked files."""
    # Listing thousands of explicit file paths must not start a Spark job per read (the default parallel listing
    # threshold is 32 paths): the files are already known and checked.
    spark.conf.set("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")
    frames = []
    for drift, files in groups.items():
        by_cluster: dict[str, list[str]] = {}
        for f in files:
            m = CLUSTER_DIR.search(f)
            by_cluster.setdefault(m.group(1) if m else lakefs.NO_CLUSTER, []).append(f)
        for cluster, paths in sorted(by_cluster.items()):
            reader = spark.read.schema(SPARK_SCHEMA) if not drift else spark.read
            frames.append(_conform(reader.parquet(*paths), cluster))
    if not frames:
        return spark.createDataFrame([], FRAME_SCHEMA)
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out.where(
        F.col("ts").isNotNull() & F.col("series").isNotNull() & F.col("value").isNotNull() & ~F.isnan("value")
    )


def extract(
    spark: SparkSession, scanned: Scanned, window: ReportWindow, days: Iterable[date] | None = None
) -> DataFrame:
    """The rows of ``days`` (default: every day ``scan`` found) inside the window, as one DataFrame."""
    start = datetime(window.start.year, window.start.month, window.start.day, tzinfo=timezone.utc)
    end = datetime(window.end.year, window.end.month, window.end.day, tzinfo=timezone.utc)
    groups = scanned.groups if days is None else scanned.groups_of(days)
    return read(spark, groups).where((F.col("ts") >= F.lit(start)) & (F.col("ts") < F.lit(end)))


def selectors_frame(spark: SparkSession, tenants: Iterable[TenantConfig]) -> DataFrame:
    """The tenants' selectors as rows ``(s_tenant, s_cluster, s_kind, s_key)`` for ``transforms.attribute``."""
    rows = []
    for t in tenants:
        rows += [(t.name, c, "cluster", "") for c in t.whole_clusters]
        for s in t.selectors:
            rows += [(t.name, s.cluster, "topic", p) for p in s.topic_prefixes]
            rows += [(t.name, s.cluster, "client", p) for p in s.client_id_prefixes]
            rows += [(t.name, s.cluster, "group", p) for p in s.group_prefixes]
            rows += [(t.name, s.cluster, "principal", p) for p in s.principals]
            if not (s.topic_prefixes or s.client_id_prefixes or s.group_prefixes or s.principals):
                rows.append((t.name, s.cluster, "member", ""))  # on the cluster, owning nothing by name yet
    schema = "s_tenant string, s_cluster string, s_kind string, s_key string"
    return spark.createDataFrame(rows, schema)


def budgets_frame(spark: SparkSession, tenants: Iterable[TenantConfig]) -> DataFrame:
    rows = [
        (t.name, float(t.contract.storage_budget_bytes) if t.contract.storage_budget_bytes else None) for t in tenants
    ]
    return spark.createDataFrame(rows, "owner string, budget_bytes double")
