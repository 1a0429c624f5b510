"""Durations and sizes as a person reads them in an alert summary: "17.6 h", "73 GiB". Pure, no locale.

Three significant figures at most, trailing zeros dropped, so a figure that moves a little between evaluations reads
the same ("17.6 h", never "63360.8 s"). Sizes are binary (KiB = 1024 B), as ``df -h`` and Kafka's configs count them.
"""

from __future__ import annotations

import math

_DURATION_UNITS = (("d", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0))
_SIZE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def _figure(x: float) -> str:
    """``x`` with three significant figures, at most one decimal above 10 ("17.6", "176", "1.25", "0")."""
    if x == 0:
        return "0"
    text = f"{x:.3g}"
    return f"{x:.0f}" if "e" in text else text  # .3g writes 1000 and up (and 999.5) with an exponent


def humanize_seconds(seconds: float) -> str:
    """A duration in the largest unit it reaches (d, h, min, s): 63360 -> "17.6 h", 90 -> "1.5 min", 0 -> "0 s".
    Days from 2 d up, so "36 h" stays in hours (an ETA is read against a working day). Not finite: "never"."""
    if not math.isfinite(seconds):
        return "never"
    sign, s = ("-" if seconds < 0 else ""), abs(seconds)
    for unit, size in _DURATION_UNITS:
        if s >= size * (2 if unit == "d" else 1):
            return f"{sign}{_figure(s / size)} {unit}"
    return f"{sign}{_figure(s)} s"


def humanize_bytes(n: float) -> str:
    """A size in binary units: 78383153152 -> "73 GiB", 1536 -> "1.5 KiB", 0 -> "0 B". Not finite: "unknown"."""
    if not math.isfinite(n):
        return "unknown"
    sign, x = ("-" if n < 0 else ""), abs(float(n))
    unit = 0
    while x >= 1024 and unit < len(_SIZE_UNITS) - 1:
        x /= 1024
        unit += 1
    return f"{sign}{_figure(x)} {_SIZE_UNITS[unit]}"


def humanize_rate(bytes_per_second: float) -> str:
    """A growth rate: 1258291.2 -> "1.2 MiB/s"."""
    return f"{humanize_bytes(bytes_per_second)}/s"


def humanize_number(x: float) -> str:
    """Prometheus' ``humanize``: four significant figures with an SI prefix, 3 -> "3", 1234 -> "1.234k",
    0.25 -> "250m". For counts in alert summaries ("3 partitions"), so the engine and an exported rule say the same."""
    if not math.isfinite(x):
        return str(x)
    prefix = ""
    if abs(x) >= 1:
        for p in ("k", "M", "G", "T", "P", "E", "Z", "Y"):
            if abs(x) < 1000:
                break
            prefix, x = p, x / 1000
    else:
        for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
            if x == 0 or abs(x) >= 1:
                break
            prefix, x = p, x * 1000
    return f"{x:.4g}{prefix}"


def humanize_share(share: float) -> str:
    """A fraction as a whole percentage: 0.724 -> "72 %"; under 1 % but above 0 -> "<1 %"."""
    if 0 < share < 0.005:
        return "<1 %"
    return f"{share * 100:.0f} %"
