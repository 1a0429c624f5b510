"""Cache of the report's daily reductions, so that a weekly report reads the raw rows of its new days only.

A report reads 35 days (its week and the four before) and its cost grows with the raw rows it reduces; from one week
to the next, 28 of those days are the same. The early reductions (``transforms.Reductions``: ``key_days``,
``cluster_minutes``, ``minute_rows``, ``disk_days``) involve no tenant, and each of their rows belongs to one UTC day
and depends on that day's rows only. So a *final* day's reductions are written once into a derived area of the lake
and read back by the next reports, which reduce only the other days and take the union. Tenants are attributed
afterwards, on every report: a tenant added or changed since is still right.

Layout (``lake.reduced_dir``; deleting it only costs a slower next report)::

    reduced/<kind>/date=2026-11-16/part-*.parquet   the day's rows of one reduction (written by Spark)
    reduced/_days/2026-11-16.json                   the day's record, written last: version, source, files

Which days (``plan``):

- *cached*: the day is final (``extract.DayFiles.final``: complete marker, every file readable and canonical, every
  file's rows inside the day) and before the week of ``now``, and its record is valid: same ``REDUCTION_VERSION``
  and frame schemas as this code, same source (the day's completion marker, which re-archiving rewrites, and its
  files' names, sizes and mtimes), and every file it lists has the recorded size and SHA-256.
- *fresh*: every other day is reduced from the lake; the final ones among them are then written to the cache (a
  missing, stale or corrupt cache is replaced). Days of the current week, partial days, days with an unreadable or
  drifted file are never cached.
- If any file of the window has rows outside its day (or no ``ts`` statistics), the cache is not used at all for
  the run: such a row would be reduced with another day's rows, so days would not be independent.

A corrupt cache never fails a report: a record or file that does not check out is logged and its day recomputed;
if reading the checked cache still fails in Spark, every day is read from the lake. Failing to write the cache is
logged; the report goes on. Writes are atomic per day: the record is removed first and written last, so a crash
leaves a day without a record (recomputed), never a record that names other files.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from pathlib import Path

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from monitor.archive import lake as lakefs
from monitor.reports import transforms as TR
from monitor.reports.extract import FRAME_SCHEMA, DayFiles, ReportWindow, Scanned, extract

log = logging.getLogger(__name__)
KINDS = TR.Reductions.KINDS
RECORDS = "_days"
LEFTOVER_SECONDS = 6 * 3600  # staging directories older than this are an interrupted run's (a run is killed at 6 h)
SparkFailure = (PySparkException, Py4JError)


def record_path(lake: Path, day: date) -> Path:
    return lakefs.reduced_dir(lake) / RECORDS / f"{day.isoformat()}.json"


def kind_dir(lake: Path, kind: str) -> Path:
    return lakefs.reduced_dir(lake) / kind


def expected_schemas(spark: SparkSession) -> dict[str, T.StructType]:
    """The schema of each reduction as this code computes it (analysis only, no Spark job)."""
    empty = spark.createDataFrame([], FRAME_SCHEMA)
    return {k: df.schema for k, df in TR.reductions(empty).frames().items()}


def schema_record(spark: SparkSession) -> dict[str, str]:
    """``expected_schemas`` as recorded with a cached day (names and types per kind): a day cached by code whose
    reductions had other columns or types is recomputed."""
    return {k: v.simpleString() for k, v in expected_schemas(spark).items()}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:200] if text else ''}"


def source_of(lake: Path, day: DayFiles) -> dict:
    """What a day's reductions are computed from: its completion marker and its files (name, size, mtime)."""
    files = []
    for f in day.files:
        st = Path(f).stat()
        files.append([str(Path(f).relative_to(lake)), st.st_size, st.st_mtime_ns])
    return json.loads(json.dumps({"marker": asdict(day.marker) if day.marker else None, "files": files}))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass
class DaySources:
    """Where each day of the window comes from in this run."""

    cached: dict[date, dict[str, list[str]]] = field(default_factory=dict)  # day -> kind -> files (under reduced/)
    fresh: list[date] = field(default_factory=list)  # reduced from the lake
    to_cache: list[date] = field(default_factory=list)  # of fresh: written to the cache after reduction
    sources: dict[date, dict] = field(default_factory=dict)  # source_of each day in to_cache
    notes: list[tuple[int, str]] = field(default_factory=list)  # (log level, message) per day not served

    def summary(self) -> str:
        return (
            f"{len(self.cached)} day(s) from the cache, {len(self.fresh)} from the lake "
            f"({len(self.to_cache)} to be cached)"
        )


def check(
    lake: Path, day: date, source: dict, schemas: dict[str, str]
) -> tuple[dict[str, list[str]] | None, tuple[int, str] | None]:
    """The day's cached files if its record is valid for ``source``; else None and why (None: never cached)."""
    path = record_path(lake, day)
    try:
        record = json.loads(path.read_text())
        version, written_for, written_from, files = (
            record["version"],
            record["schemas"],
            record["source"],
            record["files"],
        )
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, (
            logging.WARNING,
            f"{day}: cache record {path.relative_to(lake)} unreadable "
            f"({_first_line(exc)}); recomputing the day from the lake",
        )
    if version != TR.REDUCTION_VERSION or written_for != schemas:
        return None, (logging.INFO, f"{day}: cache written by another version of the reductions; recomputing")
    if written_from != source:
        return None, (logging.INFO, f"{day}: re-archived since its cache was written; recomputing")
    out: dict[str, list[str]] = {}
    root = lakefs.reduced_dir(lake)
    try:
        for kind in KINDS:
            out[kind] = []
            for rel, size, digest in files[kind]:
                f = root / rel
                if Path(rel).parent != Path(kind) / lakefs.day_partition(day):
                    raise ValueError(f"{rel} is not a file of this day")
                if f.stat().st_size != size or _sha256(f) != digest:
                    raise ValueError(f"{rel} does not match its recorded size and SHA-256")
                out[kind].append(rel)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, (logging.WARNING, f"{day}: corrupt cache ({_first_line(exc)}); recomputing the day from the lake")
    return out, None


def plan(
    lake: Path, scanned: Scanned, *, current_week: date, schemas: dict[str, str], enabled: bool = True
) -> DaySources:
    """Decide, per day of ``scanned``, whether it is read from the cache or the lake, and which fresh days to cache.
    ``current_week`` is the Monday of the week of ``now`` (its days may still change); ``schemas`` is
    ``schema_record``. Reads records and hashes cached files; no Spark."""
    days = sorted(scanned.days)
    p = DaySources()
    outside = [d for d in days if not scanned.days[d].contained]
    if not enabled or outside:
        p.fresh = days
        if enabled:
            p.notes.append(
                (
                    logging.WARNING,
                    f"{outside[0]}: a file holds rows outside its day (or has no ts "
                    "statistics); the reductions cache is not used for this report",
                )
            )
        return p
    for day in days:
        files = scanned.days[day]
        if not (files.final and day < current_week):
            p.fresh.append(day)
            continue
        source = source_of(lake, files)
        cached, note = check(lake, day, source, schemas)
        if cached is not None:
            p.cached[day] = cached
            continue
        if note is not None:
            p.notes.append(note)
        p.fresh.append(day)
        p.to_cache.append(day)
        p.sources[day] = source
    return p


def read_cached(
    spark: SparkSession, lake: Path, cached: dict[date, dict[str, list[str]]], schemas: dict[str, T.StructType]
) -> TR.Reductions:
    """The cached days' reductions as frames (lazy). ``date`` comes from the directory (Spark's partition column)."""
    spark.conf.set("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")  # see extract.read
    root = lakefs.reduced_dir(lake)
    frames = {}
    for kind in KINDS:
        schema = schemas[kind]
        files = [str(root / rel) for day in sorted(cached) for rel in cached[day][kind]]
        if not files:
            frames[kind] = spark.createDataFrame([], schema)
            continue
        with_date = (
            schema if "date" in schema.names else T.StructType(schema.fields + [T.StructField("date", T.DateType())])
        )
        df = spark.read.schema(with_date).option("basePath", str(kind_dir(lake, kind))).parquet(*files)
        frames[kind] = df.select(*schema.names)
    return TR.Reductions.of(frames)


def _clean_leftovers(root: Path, now: float) -> None:
    for p in root.glob(".staging-*"):
        try:
            if now - p.stat().st_mtime > LEFTOVER_SECONDS:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            pass


def install(
    lake: Path, day: date, staged: dict[str, Path], source: dict, schemas: dict[str, str], *, now: datetime
) -> dict:
    """Move a day's staged reductions (kind -> a ``date=<day>`` directory; absent when the day has no rows of that
    kind) into the cache, then write the day's record. Returns the record."""
    root = lakefs.reduced_dir(lake)
    record_path(lake, day).unlink(missing_ok=True)  # from here the day is not cached until the new record lands
    files: dict[str, list] = {}
    for kind in KINDS:
        final = kind_dir(lake, kind) / lakefs.day_partition(day)
        if final.exists():
            old = final.parent / f".old-{day.isoformat()}-{uuid.uuid4().hex[:8]}"
            os.rename(final, old)
            shutil.rmtree(old, ignore_errors=True)
        src = staged.get(kind)
        if src is not None and src.exists():
            final.parent.mkdir(parents=True, exist_ok=True)
            os.rename(src, final)
        parquet = sorted(final.glob("*.parquet")) if final.exists() else []
        files[kind] = [[str(f.relative_to(root)), f.stat().st_size, _sha256(f)] for f in parquet]
    record = {
        "version": TR.REDUCTION_VERSION,
        "day": day.isoformat(),
        "written_at": now.isoformat(),
        "schemas": schemas,
        "source": source,
        "files": files,
    }
    path = record_path(lake, day)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp-{uuid.uuid4().hex[:8]}")
    tmp.write_text(json.dumps(record, indent=1))
    os.replace(tmp, path)
    return record


def write(
    lake: Path,
    fresh: TR.Reductions,
    days: list[date],
    sources: dict[date, dict],
    schemas: dict[str, str],
    *,
    now: datetime,
) -> list[date]:
    """Write the reductions of ``days`` (rows of ``fresh``, materialized) to the cache: one Spark write per kind into
    a staging directory, partitioned by day, then ``install`` per day. A failure is logged, never raised: the
    report does not depend on its cache. Returns the days written."""
    if not days:
        return []
    root = lakefs.reduced_dir(lake)
    written: list[date] = []
    staging = root / f".staging-{uuid.uuid4().hex[:8]}"
    try:
        root.mkdir(parents=True, exist_ok=True)
        _clean_leftovers(root, time.time())
        for kind, df in fresh.frames().items():
            dated = df if "date" in df.columns else df.withColumn("date", F.to_date("ts"))
            # one file per day and kind: the day's rows in one shuffle partition
            (
                dated.where(F.col("date").isin(days))
                .repartition("date")
                .write.option("compression", "zstd")
                .partitionBy("date")
                .parquet(str(staging / kind))
            )
        for day in days:
            install(
                lake, day, {k: staging / k / lakefs.day_partition(day) for k in KINDS}, sources[day], schemas, now=now
            )
            written.append(day)
    except (OSError, *SparkFailure) as exc:
        log.warning(
            "report cache: writing the reductions of %d day(s) failed after %d (%s); the report goes on",
            len(days),
            len(written),
            _first_line(exc),
        )
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written


LABELS = {
    "key_days": "per-key daily reduction",
    "cluster_minutes": "per-cluster minutes",
    "minute_rows": "per-minute rows",
    "disk_days": "disks per day",
}


def reductions(
    spark: SparkSession,
    lake: Path,
    scanned: Scanned,
    window: ReportWindow,
    p: DaySources,
    *,
    now: datetime,
    keep: Callable[[str, DataFrame], DataFrame] = lambda _name, df: df,
    timed: Callable[[str, Callable[[], object]], object] = lambda _name, fn: fn(),
) -> TR.Reductions:
    """The window's reductions, in canonical order (``transforms.canonical``) and each materialized by ``keep``:
    the union of the cached days' (read from the cache) and the fresh days' (reduced from the lake; those of
    ``p.to_cache`` are materialized first and written to the cache). ``p`` is updated when reading the cache fails
    in Spark: the cached days are then reduced from the lake too (and cached again)."""
    for level, note in p.notes:
        log.log(level, "report cache: %s", note)
    schemas = expected_schemas(spark)
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))

    def from_lake(days: list[date]) -> TR.Reductions:
        parts = TR.reductions(extract(spark, scanned, window, days))
        caching = [d for d in p.to_cache if d in set(days)]
        if not caching:
            return parts  # read once, by the final keep below
        parts = TR.Reductions.of(
            {k: keep(f"{LABELS[k]} ({len(days)} days from the lake)", df) for k, df in parts.frames().items()}
        )
        recorded = {k: v.simpleString() for k, v in schemas.items()}
        written: list[date] = []
        timed(
            f"cache write ({len(caching)} days)",
            lambda: written.extend(write(lake, parts, caching, p.sources, recorded, now=now)),
        )
        p.to_cache = [d for d in p.to_cache if d not in set(caching)] + written
        return parts

    def final(parts: TR.Reductions) -> TR.Reductions:
        where = (
            f"{len(p.cached)} cached + {len(p.fresh)} from the lake"
            if p.cached
            else f"{len(p.fresh)} days from the lake"
        )
        return TR.Reductions.of(
            {k: keep(f"{LABELS[k]} ({where})", df) for k, df in parts.canonical(partitions).frames().items()}
        )

    fresh = from_lake(p.fresh) if p.fresh or not p.cached else None
    if p.cached:
        try:
            cached = read_cached(spark, lake, p.cached, schemas)
            return final(cached if fresh is None else fresh.union(cached))
        except SparkFailure as exc:
            log.warning(
                "report cache: reading the cached reductions failed (%s); reducing those days from the lake",
                _first_line(exc),
            )
            redo = sorted(p.cached)
            p.cached = {}
            p.fresh = sorted(p.fresh + redo)
            p.to_cache = sorted(p.to_cache + redo)
            p.sources.update({d: source_of(lake, scanned.days[d]) for d in redo})
            more = from_lake(redo)
            fresh = more if fresh is None else fresh.union(more)
    return final(fresh)
