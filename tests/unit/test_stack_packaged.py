"""monitor.stack.packaged: every deploy/ file the code looks up is package data that is deploy/'s own file (one
copy, through a symlink), so a wheel carries it and no copy drifts. ``.ci/wheel-test`` proves the installed wheel."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from monitor.stack.packaged import (
    dashboards_json_dir,
    deploy_path,
    grafana_provisioning_dir,
)
from tests.harness import REPO_ROOT

pytestmark = pytest.mark.unit

CODE = ("monitor", "collectors", "alerts", "dashboards")


def looked_up() -> set[str]:
    """The RELATIVE of every ``deploy_path("RELATIVE")`` in the code."""
    found = set()
    for package in CODE:
        for source in (REPO_ROOT / package).rglob("*.py"):
            found |= set(re.findall(r'deploy_path\("([^"]+)"\)', source.read_text()))
    return found


def test_the_code_looks_up_the_stack_configs():
    # Guards the scan below: it would pass on finding nothing.
    assert {
        "kafka",
        "prometheus/prometheus.local.yml.tmpl",
        "alertmanager/alertmanager.local.yml",
        "grafana/provisioning",
    } <= looked_up()


@pytest.mark.parametrize("relative", sorted(looked_up()))
def test_each_packaged_file_is_deploys_own(relative: str):
    packaged = deploy_path(relative)
    assert packaged.exists(), f"{packaged}: add a symlink to deploy/{relative} under monitor/stack/deploy/"
    assert packaged.resolve() == (REPO_ROOT / "deploy" / relative).resolve()


def test_demo_paths_are_deploy_and_dashboards_in_a_checkout():
    assert grafana_provisioning_dir() == REPO_ROOT / "deploy" / "grafana" / "provisioning"
    assert dashboards_json_dir() == REPO_ROOT / "dashboards" / "json"
    assert list(Path(dashboards_json_dir()).glob("*.json"))


def test_nothing_in_the_code_reads_through_the_checkout_root():
    # An installed wheel has no checkout: the checkout's root is the harness's (tests.harness.REPO_ROOT), never the
    # product's.
    users = [
        str(p.relative_to(REPO_ROOT))
        for package in CODE
        for p in (REPO_ROOT / package).rglob("*.py")
        if "REPO_ROOT" in p.read_text()
    ]
    assert users == []
