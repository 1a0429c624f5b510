"""Pure parts of the report: week parsing, per-tenant data problems, rounding, HTML rendering."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from monitor.core.errors import ReportError
from monitor.reports import document as D
from monitor.reports.extract import _missing_runs, parse_week, week_name
from monitor.reports.render import human, line_chart, tenant_html

pytestmark = pytest.mark.unit
UTC = timezone.utc
WEEK = date(2026, 11, 16)


def test_iso_weeks_round_trip_and_bad_input_is_a_report_error():
    assert parse_week("2026-W47") == WEEK and week_name(WEEK) == "2026-W47"
    assert parse_week("2026-W01") == date(2025, 12, 29)  # ISO week 1 can start in the previous year
    for bad in ("2026-47", "2026-W54", "W47"):
        with pytest.raises(ReportError):
            parse_week(bad)


def collected(seen: dict | None = None, compare: dict | None = None, problems=()) -> D.Collected:
    c = D.Collected(
        WEEK,
        datetime(2026, 11, 23, tzinfo=UTC),
        datetime(2026, 11, 16, tzinfo=UTC),
        datetime(2026, 11, 23, tzinfo=UTC),
        list(problems),
    )
    for tenant, row in (seen or {}).items():
        c.seen[tenant] = row
    for tenant, metrics in (compare or {}).items():
        c.compare[tenant] = metrics
    return c


@pytest.mark.parametrize(
    "case, seen, prev, expect_status, expect_text",
    [
        (1, None, None, "no_data", "no data for this tenant"),
        (2, (-30, -20), None, "no_data", "no data for this tenant"),  # data only weeks ago
        (3, (-30, 5), 1.0, "ok", None),
        (4, (2.5, 5), None, "ok", "added mid-week"),  # first data on Wednesday noon
        (5, (0, 5), None, "ok", "no data for the previous week"),
    ],
)
def test_tenant_problems_table(case, seen, prev, expect_status, expect_text):
    row = (
        None
        if seen is None
        else {
            "first_seen": datetime(2026, 11, 16, tzinfo=UTC) + timedelta(days=seen[0]),
            "last_seen": datetime(2026, 11, 16, tzinfo=UTC) + timedelta(days=seen[1]),
        }
    )
    c = collected(seen={"t": row} if row else {}, compare={"t": {"bytes_in": {"previous_week": prev}}})
    status, problems = D.tenant_problems(c, "t")
    assert status == expect_status, case
    assert (expect_text is None and problems == []) or any(expect_text in p for p in problems), case


def test_numbers_are_rounded_to_twelve_significant_digits():
    assert D.num(0.10000000000000009) == 0.1
    assert D.num(1.1**4 * 7e12) == 10248700000000.0
    assert D.num(3) == 3 and D.num(None) is None
    assert D._compared({"growth_wow": 8.881784197e-16, "vs_previous4": 0.1000000000000001})["growth_wow"] == 0.0


def test_html_is_self_contained_and_escapes_names():
    c = collected(
        seen={
            "<b>x</b>": {
                "first_seen": datetime(2026, 11, 16, tzinfo=UTC),
                "last_seen": datetime(2026, 11, 22, tzinfo=UTC),
            }
        },
        problems=["2026-11-17: no archived data (missing day)"],
    )
    doc = D.tenant_document(c, "<b>x</b>", budget_bytes=10**9, retention_hours=None)
    html = tenant_html(doc)
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert "missing day" in html and doc["status"] == "partial"
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert html.count("<svg") == 5


def test_line_chart_breaks_lines_at_missing_days():
    svg = line_chart("t", ["a", "b", "c", "d", "e"], {"s": [1.0, 2.0, None, 4.0, 5.0]})
    assert svg.count("<polyline") == 2
    assert "no data" in line_chart("t", ["a"], {"s": [None]})


def test_human_units():
    assert human(1536, "bytes") == "1.5 KiB"
    assert human(0.1, "%") == "+10.0 %"
    assert human(0.0123, "s") == "12.3 ms"
    assert human(None) == "–"


def test_missing_days_are_reported_as_runs():
    days = [date(2026, 10, 19) + timedelta(days=i) for i in range(28)] + [date(2026, 11, 17)]
    assert _missing_runs(days) == [
        "2026-10-19 to 2026-11-15: no archived data (28 missing days); figures for these days are absent",
        "2026-11-17: no archived data (missing day); figures for this day are absent",
    ]
