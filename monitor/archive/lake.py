"""The Parquet lake: layout, schema, and the one way a day is written (atomically) and marked complete.

Layout under ``config.lake.path``::

    metrics/date=2026-11-16/cluster=main/part-0.parquet   one day of every archive series of one cluster
    metrics/_markers/2026-11-16.json                        written last: the day is complete (see DayMarker)
    reports/week=2026-W47/tenant=acme/report.json|.html     weekly reports (monitor.reports.load)
    reports/week=2026-W47/operator.json|.html               the operator summary
    reduced/<kind>/date=2026-11-16/part-*.parquet           derived: the report's cached daily reductions
    reduced/_days/2026-11-16.json                           ... and what they were computed from (monitor.reports.cache)

A day is replaced as a whole: the new day is written to ``metrics/.staging-*``, the old directory is renamed aside,
the staging directory renamed into place, the marker written, the old one deleted. A reader that finds a
``date=`` directory without a marker treats the day as incomplete. Both renames are on one filesystem, so a crash
leaves either the old day, the new day, or no day (and no marker): never a mix.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import asdict, dataclass
from datetime import date, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from monitor.archive.series import LABEL_COLUMNS

# The data columns of every metrics file (partition columns date and cluster live in the path).
SCHEMA = pa.schema(
    [pa.field("ts", pa.timestamp("us", tz="UTC")), pa.field("series", pa.string())]
    + [pa.field(c, pa.string()) for c in LABEL_COLUMNS]
    + [pa.field("value", pa.float64())]
)
NO_CLUSTER = "_none"  # partition value for series without a cluster label
# Rows are written series after series; row groups this small hold one or two series each, so a reader's predicate
# on `series` skips the rest (pyarrow's default of 1 Mi rows mixes many series per group).
ROW_GROUP_ROWS = 128 * 1024


def metrics_dir(lake: Path) -> Path:
    return Path(lake) / "metrics"


def day_partition(day: date) -> str:
    """The directory name of one day in every dated tree of the lake (Spark's partition column ``date``)."""
    return f"date={day.isoformat()}"


def day_dir(lake: Path, day: date) -> Path:
    return metrics_dir(lake) / day_partition(day)


def marker_path(lake: Path, day: date) -> Path:
    return metrics_dir(lake) / "_markers" / f"{day.isoformat()}.json"


def reduced_dir(lake: Path) -> Path:
    """Derived data (the report's cached reductions): may be deleted at any time, it is recomputed."""
    return Path(lake) / "reduced"


@dataclass(frozen=True)
class DayMarker:
    """Proof that a day's directory is complete. ``complete`` is False when only part of the day was archived
    (the range did not cover it, or the day was not over yet): such a day is archived again by the next run."""

    day: str
    start: str  # ISO time range the day's files cover
    end: str
    complete: bool
    rows: int
    clusters: tuple[str, ...]
    written_at: str


def read_marker(lake: Path, day: date) -> DayMarker | None:
    p = marker_path(lake, day)
    try:
        data = json.loads(p.read_text())
        data["clusters"] = tuple(data.get("clusters", ()))
        return DayMarker(**data)
    except FileNotFoundError:
        return None
    except (ValueError, TypeError):
        return None  # a torn marker is no marker: the day is redone


def write_day(
    lake: Path, day: date, tables: dict[str, pa.Table], *, start: datetime, end: datetime, complete: bool, now: datetime
) -> DayMarker:
    """Replace day ``day`` with ``tables`` (cluster -> rows in ``SCHEMA``), then mark it. See module docstring."""
    root = metrics_dir(lake)
    root.mkdir(parents=True, exist_ok=True)
    staging = root / f".staging-{day.isoformat()}-{uuid.uuid4().hex[:8]}"
    rows = 0
    for cluster, table in sorted(tables.items()):
        d = staging / f"cluster={cluster}"
        d.mkdir(parents=True)
        pq.write_table(table.cast(SCHEMA), d / "part-0.parquet", compression="zstd", row_group_size=ROW_GROUP_ROWS)
        rows += table.num_rows
    staging.mkdir(parents=True, exist_ok=True)  # an empty day is still a (complete) day
    final = day_dir(lake, day)
    old = None
    marker = marker_path(lake, day)
    marker.unlink(missing_ok=True)  # from here on the day is incomplete until the new marker lands
    if final.exists():
        old = root / f".old-{day.isoformat()}-{uuid.uuid4().hex[:8]}"
        os.rename(final, old)
    os.rename(staging, final)
    m = DayMarker(
        day=day.isoformat(),
        start=start.isoformat(),
        end=end.isoformat(),
        complete=complete,
        rows=rows,
        clusters=tuple(sorted(tables)),
        written_at=now.isoformat(),
    )
    marker.parent.mkdir(parents=True, exist_ok=True)
    tmp = marker.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(m), indent=1))
    os.replace(tmp, marker)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return m


def clean_leftovers(lake: Path) -> list[Path]:
    """Remove staging/old directories an interrupted run left behind; returns what was removed."""
    root = metrics_dir(lake)
    removed = []
    if root.exists():
        for p in root.iterdir():
            if p.name.startswith((".staging-", ".old-")):
                shutil.rmtree(p, ignore_errors=True)
                removed.append(p)
    return removed
