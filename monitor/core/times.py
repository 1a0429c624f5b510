"""Durations and datetimes, done one way for the whole project.

- ``parse_duration`` / ``format_duration``: ``30s``, ``5m``, ``1h``, ``1d`` (and ``ms``) <-> seconds, the syntax of
  config files, rule files and CLI flags.
- ``as_utc``: every time the project stores or compares is UTC, but SQLite hands back naive datetimes even for
  timezone-aware columns; this is the one place that says "naive means UTC".
- ``iso_utc``: RFC 3339 with its offset, as every API answer writes a time.
- ``iso_week_monday``: ``2026-W47`` -> the Monday that starts it (the weekly report's week).
- ``utc_now``: the wall clock, for the shells that read it once per loop or request and pass it down.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timezone

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d)$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str | float | int) -> float:
    """'30s', '5m', '1h', '1d' -> seconds. Numbers are seconds."""
    if isinstance(text, (int, float)):
        return float(text)
    m = _DURATION.match(text.strip())
    if not m:
        raise ValueError(f"not a duration: {text!r} (use e.g. 30s, 5m, 1h)")
    return float(m.group(1)) * _UNITS[m.group(2)]


def format_duration(seconds: float) -> str:
    for unit in ("d", "h", "m"):
        if seconds and seconds % _UNITS[unit] == 0:
            return f"{int(seconds // _UNITS[unit])}{unit}"
    return f"{int(seconds)}s" if float(seconds).is_integer() else f"{int(seconds * 1000)}ms"


def as_utc(dt: datetime) -> datetime:
    """A naive datetime is UTC (SQLite returns them for timezone-aware columns); an aware one is kept as it is."""
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt


def iso_utc(dt: datetime) -> str:
    """RFC 3339 with offset (``+00:00``)."""
    return as_utc(dt).isoformat()


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")


def iso_week_monday(text: str) -> date:
    """``2026-W47`` -> the Monday that starts ISO week 47 of 2026; ValueError with a message for anything else."""
    m = _WEEK.match(text)
    if not m:
        raise ValueError(f"week must look like 2026-W47, not {text!r}")
    try:
        return date.fromisocalendar(int(m.group(1)), int(m.group(2)), 1)
    except ValueError:
        raise ValueError(f"{text} is not a week of that year") from None
