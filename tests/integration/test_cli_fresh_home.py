"""A new user's first commands, on a HOME with no ~/.kafka-health (no demo run, no ``stack up``): the reading
commands answer (an empty list, an empty report) or fail in one ``error:`` line, never with a traceback (issue 16,
point 4). Each runs as its own ``kafka-health`` process with HOME an empty directory and no KAFKA_HEALTH_* variable,
so nothing of this machine's stack or configuration is seen. ``report`` starts a local Spark: integration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def kafka_health(home: Path, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_HEALTH_")}
    env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", *argv], cwd=home, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_tenants_and_tokens_list_answer_empty_on_a_fresh_home(home):
    done = kafka_health(home, "tenants", "list")
    assert (done.returncode, done.stdout.split()) == (0, ["name", "source", "clusters"]), done.stderr
    assert "Traceback" not in done.stderr

    done = kafka_health(home, "tokens", "list", "--json")
    assert (done.returncode, json.loads(done.stdout)) == (0, []), done.stderr

    done = kafka_health(home, "silences", "list", "--json")
    assert (done.returncode, json.loads(done.stdout)) == (0, []), done.stderr

    # What a read needed, and nothing else: the embedded default's directory and its store.
    stack = home / ".kafka-health" / "stack"
    assert (stack / "kafka-health.db").is_file()
    assert sorted(p.name for p in home.iterdir()) == [".kafka-health"]


def test_report_on_a_fresh_home_fails_in_one_line_or_writes_an_empty_report(home):
    # The week as the issue typed it: not an ISO week, so one error line, not a FileNotFoundError on the store.
    done = kafka_health(home, "report", "--week", "2026-47", timeout=300)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "FileNotFoundError" not in done.stderr
    # a usage error at parse time (exit 2), before Spark or the store is touched
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith("error: argument --week: week must look like 2026-W47, not '2026-47'")
    )

    done = kafka_health(home, "report", "--week", "2026-W47", timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "done: 0 tenant report(s) + operator summary for 2026-W47" in done.stderr + done.stdout
    assert (home / ".kafka-health/stack/lake/reports/week=2026-W47/tenant=_operator/report.json").is_file()
