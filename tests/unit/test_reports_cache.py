"""Which days of a report come from the reductions cache (``cache.plan``) and which are read from the lake and cached:
the decisions only, on a small lake written with the archive's writer (no Spark; the reductions themselves and the
identical documents are proven in tests/integration/test_reports_job.py)."""

from __future__ import annotations

import json
import logging
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from monitor.archive import lake as lakefs
from monitor.reports import cache
from monitor.reports.extract import ReportWindow, scan

pytestmark = pytest.mark.unit
UTC = timezone.utc
NOW = datetime(2026, 11, 20, 6, tzinfo=UTC)  # Friday of 2026-W47: that week's days are not final yet
WEEK = date(2026, 11, 16)
CURRENT = WEEK
SCHEMAS = {k: f"struct<{k}:string>" for k in cache.KINDS}
GOOD, DRIFTED, PARTIAL, THIS_WEEK = date(2026, 11, 12), date(2026, 11, 13), date(2026, 11, 14), date(2026, 11, 17)


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def table(day: date, hours=(0, 12, 23), extra: timedelta | None = None) -> pa.Table:
    ts = [_midnight(day) + timedelta(hours=h) for h in hours] + ([_midnight(day) + extra] if extra else [])
    cols = {name: [None] * len(ts) for name in lakefs.SCHEMA.names}
    cols.update(ts=ts, series=["topic_bytes_in_rate"] * len(ts), topic=["acme.orders"] * len(ts), value=[1.0] * len(ts))
    return pa.table(cols, schema=lakefs.SCHEMA)


def archive(lake: Path, day: date, *, complete: bool = True, now: datetime = NOW, t: pa.Table | None = None) -> None:
    lakefs.write_day(
        lake,
        day,
        {"main": t if t is not None else table(day)},
        start=_midnight(day),
        end=_midnight(day) + timedelta(days=1),
        complete=complete,
        now=now,
    )


@pytest.fixture
def lake(tmp_path) -> Path:
    lake = tmp_path / "lake"
    for day in (GOOD, DRIFTED, PARTIAL, THIS_WEEK):
        archive(lake, day, complete=day != PARTIAL)
    drifted = lakefs.day_dir(lake, DRIFTED) / "cluster=main" / "part-0.parquet"
    pq.write_table(pq.read_table(drifted).drop(["user"]), drifted)
    return lake


def plan(lake: Path, **kw) -> cache.DaySources:
    scanned = scan(lake, ReportWindow.for_week(WEEK), today=NOW.date())
    return cache.plan(lake, scanned, current_week=CURRENT, schemas=kw.pop("schemas", SCHEMAS), **kw)


def fill(lake: Path, day: date, tmp_path: Path) -> Path:
    """Cache ``day`` as the job would: a staged key_days file (no rows of the other kinds), then ``install``."""
    staged = tmp_path / f"staged-{day}" / f"date={day}"
    staged.mkdir(parents=True)
    pq.write_table(pa.table({"topic": ["acme.orders"], "amount": [180.0]}), staged / "part-0.parquet")
    scanned = scan(lake, ReportWindow.for_week(WEEK), today=NOW.date())
    cache.install(lake, day, {"key_days": staged}, cache.source_of(lake, scanned.days[day]), SCHEMAS, now=NOW)
    return cache.kind_dir(lake, "key_days") / f"date={day}" / "part-0.parquet"


def test_only_complete_clean_days_before_the_current_week_are_cached(lake):
    p = plan(lake)
    assert p.cached == {} and p.fresh == [GOOD, DRIFTED, PARTIAL, THIS_WEEK]
    assert p.to_cache == [GOOD]  # drifted file, partial day, this week's day: read, never cached
    assert p.notes == []  # nothing cached yet is not worth a word


def test_a_cached_day_is_served_from_its_files(lake, tmp_path):
    f = fill(lake, GOOD, tmp_path)
    p = plan(lake)
    assert p.cached == {
        GOOD: {
            "key_days": [f"key_days/date={GOOD}/part-0.parquet"],
            "cluster_minutes": [],
            "minute_rows": [],
            "disk_days": [],
        }
    }
    assert GOOD not in p.fresh and p.to_cache == [] and f.exists()
    record = json.loads(cache.record_path(lake, GOOD).read_text())
    assert record["source"]["marker"]["day"] == str(GOOD) and record["version"] == cache.TR.REDUCTION_VERSION
    assert plan(lake, enabled=False).cached == {}  # --no-cache: every day from the lake, nothing written


def test_a_corrupt_cache_file_is_recomputed_not_read(lake, tmp_path):
    f = fill(lake, GOOD, tmp_path)
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, other bytes: only the checksum can tell
    f.write_bytes(bytes(data))
    p = plan(lake)
    assert p.cached == {} and GOOD in p.fresh and p.to_cache == [GOOD]
    assert [(level, "corrupt cache" in text and "SHA-256" in text) for level, text in p.notes] == [
        (logging.WARNING, True)
    ]
    f.unlink()
    assert "corrupt cache" in plan(lake).notes[0][1]  # a missing file too
    cache.record_path(lake, GOOD).write_text("{not json")
    p = plan(lake)
    assert p.to_cache == [GOOD] and "unreadable" in p.notes[0][1] and p.notes[0][0] == logging.WARNING


def test_a_day_archived_again_or_another_code_version_invalidates_its_cache(lake, tmp_path):
    fill(lake, GOOD, tmp_path)
    p = plan(lake, schemas={**SCHEMAS, "key_days": "struct<topic:string,amount:double>"})
    assert p.to_cache == [GOOD] and "another version" in p.notes[0][1]
    archive(lake, GOOD, now=NOW + timedelta(hours=1))  # same rows, new marker: the day was replaced
    p = plan(lake)
    assert p.cached == {} and p.to_cache == [GOOD] and "re-archived" in p.notes[0][1]


def test_a_file_with_rows_outside_its_day_turns_the_cache_off(lake, tmp_path):
    fill(lake, GOOD, tmp_path)
    other = date(2026, 11, 11)
    archive(lake, other, t=table(other, extra=timedelta(days=1, minutes=5)))  # a row of the 12th in the 11th's file
    scanned = scan(lake, ReportWindow.for_week(WEEK), today=NOW.date())
    assert not scanned.days[other].contained and not scanned.days[other].final and scanned.days[GOOD].final
    p = plan(lake)
    assert p.cached == {} and p.to_cache == [] and p.fresh == sorted(scanned.days)
    assert p.notes[0][0] == logging.WARNING and str(other) in p.notes[0][1] and "not used" in p.notes[0][1]
