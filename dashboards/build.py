"""``kafka-health dashboards build``: render every dashboard to dashboards/json/, or check the committed files.

The committed JSON is what deploy/grafana provisions; it must always equal what the code renders, so a change to a
board is one commit with both (tests/unit/test_dashboards_build.py runs ``check``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dashboards.model import Dashboard

JSON_DIR = Path(__file__).resolve().parent / "json"


def render_all(boards: Sequence[Dashboard] | None = None) -> dict[str, str]:
    """File name -> JSON text for every dashboard."""
    from dashboards.boards import ALL
    from dashboards.render import to_json

    return {b.filename: to_json(b) for b in (ALL if boards is None else boards)}


def stale(out_dir: Path, rendered: dict[str, str]) -> list[str]:
    """Pure over the directory listing: files missing, different, or left over from a removed dashboard."""
    problems = []
    for name, text in sorted(rendered.items()):
        path = out_dir / name
        if not path.exists():
            problems.append(f"{name}: missing")
        elif path.read_text() != text:
            problems.append(f"{name}: differs from the code")
    if out_dir.is_dir():
        for path in sorted(out_dir.glob("*.json")):
            if path.name not in rendered:
                problems.append(f"{path.name}: no dashboard renders it")
    return problems


def write(out_dir: Path, rendered: dict[str, str]) -> list[str]:
    """Write changed files and remove left-over ones; return the names changed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    changed = []
    for name, text in sorted(rendered.items()):
        path = out_dir / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(name)
    for path in sorted(out_dir.glob("*.json")):
        if path.name not in rendered:
            path.unlink()
            changed.append(path.name)
    return changed
