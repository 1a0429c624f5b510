"""Copy the archive series from Prometheus into the lake, one day at a time.

Pure parts (``day_windows``, ``rows_from_result``) decide; ``archive_range`` is the shell: it takes the query
function, the lake root and ``now`` as parameters. Each day is fetched completely in memory (a day of one series is
1,440 points per label set), then written by ``lake.write_day`` atomically with its completion marker; so an
interrupted run loses at most the day in progress, and the next run resumes at the first day without a complete
marker. ``replace=True`` re-archives days that are already complete.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import httpx
import pyarrow as pa

from monitor.archive import lake as lakefs
from monitor.archive.series import LABEL_COLUMNS, SERIES, STEP_SECONDS, ArchiveSeries
from monitor.core.config import PrometheusSettings
from monitor.core.prom import PrometheusSource

log = logging.getLogger(__name__)
DAY = timedelta(days=1)

# query_range(promql, start, end, step_seconds) -> Prometheus "matrix" result list
QueryRange = Callable[[str, datetime, datetime, int], list[dict]]


class PrometheusClient:
    """The archive's seam to Prometheus: the engine's HTTP client (one place translates HTTP and PromQL errors
    into ``QueryError``), answering with the raw matrix the lake stores."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 30.0,
        auth: tuple[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ):
        self._source = PrometheusSource(url, timeout=timeout, auth=auth, transport=transport)

    @classmethod
    def from_settings(cls, settings: PrometheusSettings) -> PrometheusClient:
        """URL, timeout and basic auth from the config (``prometheus`` section)."""
        return cls(settings.url, timeout=settings.timeout_seconds, auth=settings.basic_auth())

    def query_range(self, promql: str, start: datetime, end: datetime, step: int) -> list[dict]:
        return self._source.query_range_raw(promql, start, end, step)

    def close(self) -> None:
        self._source.close()


@dataclass(frozen=True)
class DayWindow:
    day: date
    start: datetime
    end: datetime  # exclusive
    complete: bool  # the window is the whole day and the day is over


def day_windows(start: datetime, end: datetime, now: datetime) -> list[DayWindow]:
    """Split [start, end) into UTC days; start is floored to the minute so steps align with the lake's minutes."""
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError("start and end must be timezone-aware")
    start = start.astimezone(timezone.utc).replace(second=0, microsecond=0)
    end = min(end.astimezone(timezone.utc), now)
    out = []
    day = start.date()
    while True:
        d0 = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
        ws, we = max(d0, start), min(d0 + DAY, end)
        if ws >= we:
            break
        out.append(DayWindow(day, ws, we, complete=(ws == d0 and we == d0 + DAY)))
        day += DAY
    return out


def rows_from_result(series: ArchiveSeries, result: Iterable[dict]) -> dict[str, dict[str, list]]:
    """Prometheus matrix -> columns per cluster (``SCHEMA`` order). NaN/Inf samples are kept as NaN-free: dropped."""
    out: dict[str, dict[str, list]] = {}
    for item in result:
        labels = item.get("metric", {})
        cluster = labels.get("cluster") or lakefs.NO_CLUSTER
        cols = out.setdefault(cluster, {name: [] for name in lakefs.SCHEMA.names})
        for ts, raw in item.get("values", ()):
            try:
                value = float(raw)
            except ValueError:
                continue
            if value != value or value in (float("inf"), float("-inf")):
                continue  # quota averages are NaN when idle: no sample, not zero
            cols["ts"].append(datetime.fromtimestamp(float(ts), tz=timezone.utc))
            cols["series"].append(series.name)
            for c in LABEL_COLUMNS:
                cols[c].append(labels.get(c))
            cols["value"].append(value)
    return out


@dataclass
class ArchiveSummary:
    written: list[date] = field(default_factory=list)
    skipped: list[date] = field(default_factory=list)
    rows: int = 0


def archive_range(
    lake: Path,
    query: QueryRange,
    start: datetime,
    end: datetime,
    *,
    now: datetime,
    replace: bool = False,
    series: tuple[ArchiveSeries, ...] = SERIES,
    progress: Callable[[str], None] = lambda _m: None,
) -> ArchiveSummary:
    """Archive [start, end) day by day. Raises ``QueryError`` if Prometheus fails (days done so far stay done)."""
    for p in lakefs.clean_leftovers(lake):
        log.info("removed leftover %s of an interrupted run", p.name)
    summary = ArchiveSummary()
    windows = day_windows(start, end, now)
    for i, w in enumerate(windows, 1):
        marker = lakefs.read_marker(lake, w.day)
        if marker is not None and marker.complete and not replace:
            summary.skipped.append(w.day)
            progress(f"[{i}/{len(windows)}] {w.day}: already archived ({marker.rows} rows), skipped")
            continue
        last_step = w.end - timedelta(seconds=1)  # [start, end): a step at `end` belongs to the next window
        columns: dict[str, dict[str, list]] = {}
        if last_step >= w.start:
            for s in series:
                for cluster, cols in rows_from_result(s, query(s.promql, w.start, last_step, STEP_SECONDS)).items():
                    acc = columns.setdefault(cluster, {name: [] for name in lakefs.SCHEMA.names})
                    for name, values in cols.items():
                        acc[name].extend(values)
        tables = {c: pa.table(cols, schema=lakefs.SCHEMA) for c, cols in columns.items()}
        m = lakefs.write_day(lake, w.day, tables, start=w.start, end=w.end, complete=w.complete, now=now)
        summary.written.append(w.day)
        summary.rows += m.rows
        progress(
            f"[{i}/{len(windows)}] {w.day}: {m.rows} rows, clusters {', '.join(m.clusters) or '-'}"
            f"{'' if w.complete else ' (partial day: archived again next run)'}"
        )
    return summary
