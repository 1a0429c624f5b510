"""``kafka-health dashboards build [--check] [--out DIR]``."""

from __future__ import annotations

import sys
from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser("dashboards", help="Grafana dashboards as code")
    dsub = p.add_subparsers(dest="dashboards_command", metavar="SUBCOMMAND", required=True)
    b = dsub.add_parser("build", help="regenerate the dashboards' JSON (dashboards/json/)")
    b.add_argument("--check", action="store_true", help="only check the JSON is up to date; exit 1 if not")
    b.add_argument("--out", type=Path, default=None, help="output directory (default: dashboards/json/)")
    b.set_defaults(func=_build)


def _build(args) -> int:
    from dashboards.build import JSON_DIR, render_all, stale, write

    out = args.out or JSON_DIR
    rendered = render_all()
    if args.check:
        problems = stale(out, rendered)
        for problem in problems:
            print(f"stale: {out / problem}", file=sys.stderr)
        if problems:
            print("run `kafka-health dashboards build` and commit dashboards/json/", file=sys.stderr)
            return 1
        print(f"{len(rendered)} dashboards up to date in {out}")
        return 0
    changed = write(out, rendered)
    print(
        f"{len(rendered)} dashboards in {out}; {len(changed)} changed" + (f": {', '.join(changed)}" if changed else "")
    )
    return 0
