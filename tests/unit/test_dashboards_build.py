"""`kafka-health dashboards build`: the committed JSON is exactly what the code renders, and --check says when not."""

from __future__ import annotations

import argparse
import shutil

import pytest

from dashboards import cli
from dashboards.build import JSON_DIR, render_all, stale
from monitor.cli import COMMAND_MODULES

pytestmark = pytest.mark.unit


def test_committed_json_equals_generated():
    assert stale(JSON_DIR, render_all()) == [], "run `kafka-health dashboards build` and commit dashboards/json/"


def test_rendering_is_deterministic():
    assert render_all() == render_all()


def main(argv: list[str]) -> int:
    """`kafka-health dashboards ...` through this module's own parser (monitor/cli.py adds it the same way)."""
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_command_is_wired_into_kafka_health():
    assert cli in COMMAND_MODULES


def test_check_detects_stale_missing_and_leftover_files_and_build_fixes_them(tmp_path, capsys):
    out = tmp_path / "json"
    shutil.copytree(JSON_DIR, out)
    (out / "kafka-health-tenant.json").write_text("{}\n")
    (out / "kafka-health-broker.json").unlink()
    (out / "removed-dashboard.json").write_text("{}\n")

    assert main(["dashboards", "build", "--check", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "kafka-health-tenant.json: differs" in err and "kafka-health-broker.json: missing" in err
    assert "removed-dashboard.json: no dashboard renders it" in err

    assert main(["dashboards", "build", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(render_all())
    assert main(["dashboards", "build", "--check", "--out", str(out)]) == 0
