"""The archive's pure parts and its day-by-day loop against a scripted query function (Prometheus itself is
exercised in tests/integration/test_archive_prometheus.py)."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pyarrow.parquet as pq
import pytest

from monitor.archive import lake as lakefs
from monitor.archive.archive import archive_range, day_windows, rows_from_result
from monitor.archive.series import SERIES
from monitor.core.errors import QueryError

pytestmark = pytest.mark.unit
UTC = timezone.utc
NOW = datetime(2026, 11, 20, 12, 30, tzinfo=UTC)


def test_day_windows_split_a_range_into_utc_days_and_flag_partial_ones():
    ws = day_windows(datetime(2026, 11, 17, 22, 0, 30, tzinfo=UTC), datetime(2026, 11, 21, tzinfo=UTC), NOW)
    assert [(w.day, w.start.hour, w.complete) for w in ws] == [
        (date(2026, 11, 17), 22, False),
        (date(2026, 11, 18), 0, True),
        (date(2026, 11, 19), 0, True),
        (date(2026, 11, 20), 0, False),
    ]  # the 20th is not over yet at NOW
    assert ws[0].start.second == 0 and ws[-1].end == NOW


def test_rows_from_result_keeps_labels_and_drops_nan():
    result = [
        {
            "metric": {"cluster": "main", "topic": "a", "job": "x"},
            "values": [[1763337600, "1.5"], [1763337660, "NaN"], [1763337720, "+Inf"]],
        },
        {"metric": {"topic": "b"}, "values": [[1763337600, "2"]]},
    ]
    out = rows_from_result(SERIES[0], result)
    assert out["main"]["value"] == [1.5] and out["main"]["topic"] == ["a"]
    assert out["main"]["series"] == [SERIES[0].name]
    assert out[lakefs.NO_CLUSTER]["topic"] == ["b"]


class ScriptedPrometheus:
    """Answers every query with one sample per step for cluster "main"; can fail on the n-th call."""

    def __init__(self, value: float = 1.0, fail_on_call: int | None = None):
        self.value, self.fail_on_call, self.calls = value, fail_on_call, 0

    def __call__(self, promql, start, end, step):
        self.calls += 1
        if self.fail_on_call is not None and self.calls == self.fail_on_call:
            raise QueryError("scripted failure")
        n = int((end - start).total_seconds() // step) + 1
        values = [[(start + timedelta(seconds=i * step)).timestamp(), str(self.value)] for i in range(n)]
        return [{"metric": {"cluster": "main", "topic": "t"}, "values": values}]


def _rows(lake, day):
    return pq.read_table(lakefs.day_dir(lake, day) / "cluster=main" / "part-0.parquet").to_pylist()


def test_interrupted_run_resumes_and_replace_rewrites(tmp_path):
    start, end = datetime(2026, 11, 17, tzinfo=UTC), datetime(2026, 11, 19, tzinfo=UTC)
    first = ScriptedPrometheus(fail_on_call=len(SERIES) + 3)  # dies inside the second day
    with pytest.raises(QueryError):
        archive_range(tmp_path, first, start, end, now=NOW)
    assert lakefs.read_marker(tmp_path, date(2026, 11, 17)).complete
    assert lakefs.read_marker(tmp_path, date(2026, 11, 18)) is None
    assert not lakefs.day_dir(tmp_path, date(2026, 11, 18)).exists()  # nothing half-written is visible

    second = ScriptedPrometheus()
    summary = archive_range(tmp_path, second, start, end, now=NOW)
    assert summary.skipped == [date(2026, 11, 17)] and summary.written == [date(2026, 11, 18)]
    assert second.calls == len(SERIES)  # only the missing day was queried
    rows = _rows(tmp_path, date(2026, 11, 18))
    assert len(rows) == 1440 * len(SERIES)

    again = archive_range(tmp_path, ScriptedPrometheus(value=7.0), start, end, now=NOW, replace=True)
    assert again.written == [date(2026, 11, 17), date(2026, 11, 18)]
    rows = _rows(tmp_path, date(2026, 11, 17))
    assert len(rows) == 1440 * len(SERIES) and {r["value"] for r in rows} == {7.0}  # replaced, not appended
    assert not [p for p in lakefs.metrics_dir(tmp_path).iterdir() if p.name.startswith(".")]


def test_partial_day_is_archived_again_by_the_next_run(tmp_path):
    start = datetime(2026, 11, 20, tzinfo=UTC)
    archive_range(tmp_path, ScriptedPrometheus(), start, NOW + timedelta(hours=1), now=NOW)
    m = lakefs.read_marker(tmp_path, date(2026, 11, 20))
    assert not m.complete and m.rows == 750 * len(SERIES)  # 00:00 .. 12:29
    later = NOW + timedelta(hours=12)
    s = archive_range(tmp_path, ScriptedPrometheus(), start, later, now=later)
    assert s.written[0] == date(2026, 11, 20) and lakefs.read_marker(tmp_path, date(2026, 11, 20)).complete
