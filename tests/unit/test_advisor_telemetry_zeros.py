"""librdkafka pushes 0 for a latency average when no such request was made in the push interval (its
``brokers_avg``); the advisor reads those as no measurement, not as requests answered at once. The expressions
``read_telemetry`` sends are evaluated by ``promtool test rules`` on pushes scraped every 15 s.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from monitor.advisor.source import TELEMETRY, TELEMETRY_FIELDS, telemetry_expr
from tests.unit._deploy import promtool_cases

pytestmark = pytest.mark.unit

SEL = 'cluster="local"'
IDLE = "poll_idle_ratio"
FETCH = "fetch_latency_seconds"


def _series(field: str, client: str, instance: str, values: str) -> dict:
    labels = f'cluster="local",broker="1",user="ANONYMOUS",client_id="{client}",client_instance_id="{instance}"'
    return {"series": f"{TELEMETRY}{TELEMETRY_FIELDS[field]}{{{labels}}}", "values": values}


def _expect(tmp_path: Path, field: str, exp: dict[str, float]) -> subprocess.CompletedProcess:
    cases = {
        "evaluation_interval": "15s",
        "tests": [
            {
                "interval": "15s",
                "input_series": [
                    # a consumer with no partition yet: waits in poll(), makes no fetch, pushes 0 every time
                    _series(IDLE, "no-fetches", "a", "0.99x20"),
                    _series(FETCH, "no-fetches", "a", "0x20"),
                    # a consumer whose fetches wait 500 ms, and one push in two without a completed fetch
                    _series(IDLE, "waits", "b", "0.6x20"),
                    _series(FETCH, "waits", "b", "0.5 0 0.5 0 0.5 0 0.5 0 0.5 0 0.5 0 0.5 0 0.5 0 0.5 0 0.5 0 0.5"),
                ],
                "promql_expr_test": [
                    {
                        "expr": telemetry_expr(field, TELEMETRY_FIELDS[field], SEL, "2m"),
                        "eval_time": "4m",
                        "exp_samples": [
                            {"labels": f'{{client_id="{c}",user="ANONYMOUS"}}', "value": v} for c, v in exp.items()
                        ],
                    }
                ],
            }
        ],
    }
    return promtool_cases(tmp_path, cases)


def test_a_latency_pushed_as_zero_is_no_measurement(tmp_path):
    """The consumer that made no fetch has no fetch latency (polling_too_often cannot name it on "0 ms"); the other's
    is its fetches' 500 ms, not 250."""
    res = _expect(tmp_path, FETCH, {"waits": 0.5})
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_ratio_keeps_its_zeros(tmp_path):
    """Only latencies drop zeros: a poll-idle ratio of 0 is a measurement (never waiting in poll())."""
    res = _expect(tmp_path, IDLE, {"no-fetches": 0.99, "waits": 0.6})
    assert res.returncode == 0, res.stdout + res.stderr
