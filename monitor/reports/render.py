"""HTML rendering of the report documents: one self-contained file, charts as inline SVG, no script, no network.

Pure: document dict in, string out. Every value shown is escaped.
"""

from __future__ import annotations

from html import escape
from typing import Any

CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}.problems{background:#fff4e5;border:1px solid #f0b760;padding:.5em 1em}
.status-ok{color:#1a7f37}.status-partial{color:#b35900}.status-no_data{color:#888}
.charts{display:flex;flex-wrap:wrap;gap:1em}figure{margin:0}figcaption{font-size:.9em;color:#555}"""
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")


def human(x: Any, unit: str = "") -> str:
    if x is None:
        return "–"
    if unit == "bytes":
        v = float(x)
        for u in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
            if abs(v) < 1024 or u == "PiB":
                return f"{v:.1f} {u}" if u != "B" else f"{v:.0f} B"
            v /= 1024
    if unit == "%":
        return f"{float(x) * 100:+.1f} %"
    if unit == "ratio":
        return f"{float(x) * 100:.3f} %"
    if unit == "s":
        return f"{float(x) * 1000:.1f} ms"
    if isinstance(x, float):
        return f"{x:,.1f}" if abs(x) < 1e6 else f"{x:,.3g}"
    return escape(str(x))


def line_chart(
    title: str,
    labels: list[str],
    series: dict[str, list[float | None]],
    *,
    unit: str = "",
    limit: float | None = None,
    width: int = 520,
    height: int = 200,
) -> str:
    """An SVG line chart; None values break the line (missing days stay visible as gaps)."""
    left, right, top, bottom = 70, 10, 10, 30
    values = [v for vs in series.values() for v in vs if v is not None] + ([limit] if limit is not None else [])
    if not values or not labels:
        return (
            f'<figure><svg width="{width}" height="40"><text x="5" y="25">no data</text></svg>'
            f"<figcaption>{escape(title)}</figcaption></figure>"
        )
    lo, hi = min(0.0, min(values)), max(values)
    hi = hi if hi > lo else lo + 1
    n = len(labels)

    def x(i: int) -> float:
        return left + (width - left - right) * (i / max(n - 1, 1))

    def y(v: float) -> float:
        return top + (height - top - bottom) * (1 - (v - lo) / (hi - lo))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<line x1="{left}" y1="{y(lo):.1f}" x2="{width - right}" y2="{y(lo):.1f}" stroke="#999"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{y(lo):.1f}" stroke="#999"/>',
        f'<text x="{left - 4}" y="{top + 8}" font-size="10" text-anchor="end">{human(hi, unit)}</text>',
        f'<text x="{left - 4}" y="{y(lo):.1f}" font-size="10" text-anchor="end">{human(lo, unit)}</text>',
    ]
    for i in (0, n // 2, n - 1):
        parts.append(
            f'<text x="{x(i):.1f}" y="{height - 10}" font-size="10" text-anchor="middle">{escape(labels[i])}</text>'
        )
    if limit is not None:
        parts.append(
            f'<line x1="{left}" y1="{y(limit):.1f}" x2="{width - right}" y2="{y(limit):.1f}" '
            f'stroke="#d62728" stroke-dasharray="4 3"/>'
        )
    for k, (name, vs) in enumerate(series.items()):
        colour = COLOURS[k % len(COLOURS)]
        segment: list[str] = []
        for i, v in enumerate(vs + [None]):
            if v is None:
                if len(segment) > 1:
                    parts.append(
                        f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{" ".join(segment)}"/>'
                    )
                elif segment:
                    px, py = segment[0].split(",")
                    parts.append(f'<circle cx="{px}" cy="{py}" r="2" fill="{colour}"/>')
                segment = []
            else:
                segment.append(f"{x(i):.1f},{y(v):.1f}")
        parts.append(
            f'<text x="{left + 8 + 110 * k}" y="{top + 10}" font-size="11" fill="{colour}">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return f"<figure>{''.join(parts)}<figcaption>{escape(title)}</figcaption></figure>"


def _table(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    th = "".join(f'<th class="{"l" if i < left else ""}">{escape(h)}</th>' for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td class="{"l" if i < left else ""}">{c}</td>' for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    return f"<table><tr>{th}</tr>{body}</table>"


def _problems(problems: list[str]) -> str:
    if not problems:
        return ""
    items = "".join(f"<li>{escape(p)}</li>" for p in problems)
    return f'<div class="problems"><strong>Data problems</strong><ul>{items}</ul></div>'


def _page(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{CSS}</style></head><body>{body}</body></html>\n"
    )


def tenant_html(doc: dict) -> str:
    t = escape(doc["tenant"])
    cmp_rows = []
    for section, key, label, unit in (
        ("throughput", "bytes_in", "bytes in", "bytes"),
        ("throughput", "bytes_out", "bytes out", "bytes"),
        ("throughput", "messages_in", "messages in", ""),
        ("throughput", "messages_out", "messages out", ""),
        ("latency", "produce_p99_mean_seconds", "produce p99 (mean)", "s"),
        ("latency", "fetch_p99_mean_seconds", "fetch p99 (mean)", "s"),
        ("throttling", "throttled_minutes", "minutes throttled", ""),
        ("consumer_lag", "lag_mean_messages", "consumer lag (mean)", ""),
        ("consumer_lag", "lag_max_messages", "consumer lag (max)", ""),
    ):
        c = doc[section][key]
        cmp_rows.append(
            [
                escape(label),
                human(c["this_week"], unit),
                human(c["previous_week"], unit),
                human(c["growth_wow"], "%"),
                human(c["previous4_mean"], unit),
                human(c["vs_previous4"], "%"),
            ]
        )
    av = doc["availability"]
    cmp_rows.append(
        [
            "availability",
            human(av["ratio"], "ratio"),
            human(av["comparison"]["previous_week"], "ratio"),
            "",
            human(av["comparison"]["previous4_mean"], "ratio"),
            "",
        ]
    )
    st = doc["storage"]
    disk_rows = [
        [
            escape(d["cluster"]),
            human(d["used_bytes"], "bytes"),
            human(d["size_bytes"], "bytes"),
            human(d["weeks_until_full"]),
        ]
        for d in st["disk"]
    ]
    alert_rows = [
        [
            escape(a["alertname"]),
            escape(a["severity"] or ""),
            str(a["raised"]),
            str(a["firing_minutes"]),
            str(a["resolved"]),
            human(a["mean_minutes_to_resolve"]),
            human(a["max_minutes_to_resolve"]),
        ]
        for a in doc["alerts"]["by_name"]
    ]
    client_rows = [
        [
            str(c["rank"]),
            escape(c["client_id"] or "–"),
            escape(c["user"] or "–"),
            escape(c["cluster"]),
            human(c["produce_bytes"], "bytes"),
            human(c["fetch_bytes"], "bytes"),
            str(c["throttled_minutes"]),
        ]
        for c in doc["noisiest_clients"]
    ]
    finding_rows = [
        [
            escape(f["finding"]),
            escape(f["client_id"] or "–"),
            escape(f["group"] or "–"),
            escape(f["cluster"]),
            str(f["minutes"]),
            escape(f["first_seen"] or "–"),
            escape(f["last_seen"] or "–"),
        ]
        for f in doc.get("client_findings", ())
    ]
    d = doc["daily"]
    labels = [x[5:] for x in d["dates"]]
    charts = "".join(
        [
            line_chart(
                "Bytes per day, in and out (five weeks)",
                labels,
                {"in": d["bytes_in"], "out": d["bytes_out"]},
                unit="bytes",
            ),
            line_chart(
                "Storage used per day (dashed: budget)",
                labels,
                {"stored": d["storage_bytes"]},
                unit="bytes",
                limit=st["budget_bytes"],
            ),
            line_chart(
                "Produce p99 latency, worst minute per day", labels, {"p99": d["produce_p99_seconds"]}, unit="s"
            ),
            line_chart("Consumer lag, daily mean (messages)", labels, {"lag": d["lag_mean_messages"]}),
            line_chart(
                "Bytes in per week",
                [h["week"] for h in doc["history"]],
                {"bytes in": [h["bytes_in"] for h in doc["history"]]},
                unit="bytes",
            ),
        ]
    )
    body = (
        f"<h1>Kafka weekly report: {t} &middot; {escape(doc['week'])}</h1>"
        f"<p>Period {escape(doc['period']['start'])} to {escape(doc['period']['end'])} (UTC). Status: "
        f'<span class="status-{escape(doc["status"])}">{escape(doc["status"])}</span>. '
        f"Generated {escape(doc['generated_at'])}.</p>"
        + _problems(doc["problems"])
        + "<h2>This week against the previous week and the four before</h2>"
        + _table(["figure", "this week", "previous week", "change", "mean of previous 4", "vs previous 4"], cmp_rows)
        + f"<h2>Storage</h2><p>Used {human(st['used_bytes'], 'bytes')} of budget {human(st['budget_bytes'], 'bytes')};"
        f" growing {human(st['growth_bytes_per_week'], 'bytes')} a week (least-squares over "
        f"{st['days_in_trend'] or 0}"
        f" days); budget reached in <strong>{human(st['weeks_until_budget'])}</strong> weeks.</p>"
        + _table(["cluster", "disk used", "disk size", "weeks until full"], disk_rows)
        + f"<h2>Availability</h2><p>{human(av['ratio'], 'ratio')} of {human(av['observed_minutes'])} observed minutes"
        f" had no offline or under-min-ISR partition of this tenant ({human(av['bad_minutes'])} bad minutes:"
        f" {human(av.get('offline_minutes'))} with an offline partition,"
        f" {human(av.get('under_min_isr_minutes'))} under min ISR).</p>"
        + _slo_html(doc.get("slo"))
        + f"<h2>Alerts</h2><p>{doc['alerts']['raised']} raised, {doc['alerts']['firing_minutes']} minutes firing.</p>"
        + _table(
            [
                "alert",
                "severity",
                "raised",
                "minutes firing",
                "resolved",
                "mean minutes to resolve",
                "max minutes to resolve",
            ],
            alert_rows,
        )
        + "<h2>Noisiest clients</h2>"
        + _table(["#", "client id", "user", "cluster", "produced", "fetched", "minutes throttled"], client_rows)
        + "<h2>Client findings this week</h2>"
        + (
            _table(
                ["finding", "client id", "group", "cluster", "minutes observed", "first seen", "last seen"],
                finding_rows,
            )
            if finding_rows
            else "<p>No client-advisor finding held this week.</p>"
        )
        + f'<h2>Charts</h2><div class="charts">{charts}</div>'
    )
    return _page(f"{doc['tenant']} {doc['week']}", body)


def operator_html(doc: dict) -> str:
    rows = [
        [
            escape(t["tenant"]),
            escape(t["status"]),
            human(t["bytes_in"], "bytes"),
            human(t["growth_wow"], "%"),
            human(t["availability_ratio"], "ratio"),
            str(t["alerts_raised"]),
            human(t["throttled_minutes"]),
            human(t["weeks_until_budget"]),
        ]
        for t in doc["tenants"]
    ]
    crow = [
        [
            escape(c["cluster"]),
            human(c["bytes_in"], "bytes"),
            human(c["bytes_out"], "bytes"),
            human(c["produce_p99_max_seconds"], "s"),
            human(c["bad_minutes"]),
            human(c["disk_used_bytes"], "bytes"),
            human(c["disk_weeks_until_full"]),
        ]
        for c in doc["clusters"]
    ]
    att = "".join(f"<li>{escape(a)}</li>" for a in doc["attention"]) or "<li>nothing</li>"
    body = (
        f"<h1>Kafka weekly operator summary &middot; {escape(doc['week'])}</h1>"
        + _problems(doc["problems"])
        + f"<h2>Needs attention</h2><ul>{att}</ul><h2>Clusters</h2>"
        + _table(
            [
                "cluster",
                "bytes in",
                "bytes out",
                "worst produce p99",
                "bad minutes",
                "disk used",
                "weeks until disk full",
            ],
            crow,
        )
        + "<h2>Tenants</h2>"
        + _table(
            [
                "tenant",
                "status",
                "bytes in",
                "change",
                "availability",
                "alerts",
                "minutes throttled",
                "weeks until budget",
            ],
            rows,
            left=2,
        )
    )
    return _page(f"operator summary {doc['week']}", body)


def _slo_html(slo: dict | None) -> str:
    """Availability against the objective and the error budget burned, this week and the weeks before (a document
    written before tenant SLOs has none)."""
    if not slo:
        return ""
    rows = [
        [escape(w["week"]), human(w["availability"], "ratio"), human(w["burn_rate"]), human(w["budget_spent"], "ratio")]
        for w in slo["weeks"]
    ]
    met = {True: "met", False: "missed", None: "unknown"}[slo["met"]]
    return (
        f"<h2>Availability objective</h2><p>{human(slo['availability'], 'ratio')} of"
        f" {human(slo['known_minutes'])} known minutes against an objective of {human(slo['objective'], 'ratio')}"
        f" ({met}): the error budget burned at {human(slo['burn_rate'])}x, this week spent"
        f" {human(slo['budget_spent'], 'ratio')} of the {escape(slo['window'])} budget. Minutes while the probe"
        " was not up are unknown, not bad.</p>" + _table(["week", "availability", "burn rate", "budget spent"], rows)
    )
