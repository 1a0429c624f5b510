"""docs/dashboards.md names every dashboard and every tenant contract series the service exports."""

from __future__ import annotations

import pytest

from collectors.contract import METRICS
from dashboards.boards import ALL
from tests.harness import REPO_ROOT

pytestmark = pytest.mark.unit


def test_docs_describe_every_dashboard_and_contract_series():
    text = (REPO_ROOT / "docs" / "dashboards.md").read_text()
    missing = [b.uid for b in ALL if f"`{b.uid}`" not in text] + [m for m in METRICS if f"`{m}`" not in text]
    assert not missing, missing
