"""Load: write the report documents into the lake and index them in the store.

Each file is written to a temporary name and renamed, so a reader (the API) sees the old report or the new one.
The index row is upserted per (tenant, week): re-running a week's report replaces it.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

from sqlalchemy import select

from monitor.core.store import Store
from monitor.reports.models import ReportIndex


def report_paths(week: str, tenant: str) -> tuple[str, str]:
    """(json, html) paths relative to the lake root."""
    base = f"reports/week={week}/tenant={tenant}"
    return f"{base}/report.json", f"{base}/report.html"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_report(lake: Path, doc: dict, html: str, *, tenant: str) -> tuple[str, str]:
    rel_json, rel_html = report_paths(doc["week"], tenant)
    _write(Path(lake) / rel_json, json.dumps(doc, indent=1, sort_keys=True, default=str))
    _write(Path(lake) / rel_html, html)
    return rel_json, rel_html


def index_report(
    store: Store,
    *,
    tenant: str,
    week: str,
    status: str,
    problems: int,
    json_path: str,
    html_path: str,
    generated_at: datetime,
) -> None:
    with store.session() as s:
        row = s.scalars(select(ReportIndex).where(ReportIndex.tenant == tenant, ReportIndex.week == week)).first()
        if row is None:
            row = ReportIndex(tenant=tenant, week=week)
            s.add(row)
        row.status, row.problems, row.generated_at = status, problems, generated_at
        row.json_path, row.html_path = json_path, html_path
