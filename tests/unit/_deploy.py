"""Helpers shared by the deploy/ validator tests (not a test module)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"
METRICS_DOC = REPO_ROOT / "docs" / "metrics.md"


def tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if not path:
        pytest.skip(f"{name} not installed: apt-get install {package}")
    return path


def run(argv: list[str], cwd: Path | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, input=input)


def promtool_cases(tmp_path: Path, cases: dict) -> subprocess.CompletedProcess:
    """``promtool test rules`` on ``cases`` (a rule-test file's content, written to ``tmp_path``/cases.yml)."""
    import yaml

    (tmp_path / "cases.yml").write_text(yaml.safe_dump(cases, sort_keys=False))
    return run([tool("promtool", "prometheus"), "test", "rules", "cases.yml"], cwd=tmp_path)


def collectors_catalog() -> Path:
    return METRICS_DOC
