"""How long the advisor has seen a client (``seen_share``): its rules judge a client only once seen for (nearly) the
whole window (``min_seen_share``), so this one figure decides whether a client can be named at all. The expression
``_read_clients`` sends (``seen_share_expr``) is evaluated by ``promtool test rules`` on quota-sensor series scraped
every second, with the gaps a real scrape leaves.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from monitor.advisor.findings import Thresholds
from monitor.advisor.source import seen_share_expr
from monitor.core.metric_names import M
from tests.unit._deploy import promtool_cases

pytestmark = pytest.mark.unit

SEL = 'cluster="local"'
EVAL = 605  # seconds: the reading's time; the 2-minute window starts at 485, the subquery steps every 12 s


def _series(client: str, values: list[str]) -> dict:
    labels = f'cluster="local",broker="1",user="u",client_id="{client}"'
    return {"series": f"{M['client_request_time']}{{{labels}}}", "values": " ".join(values)}


def _samples(start: int, gaps: dict[int, str] | None = None) -> list[str]:
    """A sample every second from ``start`` to EVAL; ``gaps``: second -> "stale" (a failed scrape's marker) or "_"."""
    gaps = gaps or {}
    return ["_" if t < start else gaps.get(t, "0.1") for t in range(EVAL + 1)]


def _run(tmp_path: Path, expected: dict[str, float]) -> subprocess.CompletedProcess:
    # the window's first subquery step is 492 s: a scrape failing at 490 s leaves the series stale until 505 s
    stale_at_window_start = {490: "stale", **{t: "_" for t in range(491, 505)}}
    cases = {
        "evaluation_interval": "1s",
        "tests": [
            {
                "interval": "1s",
                "input_series": [
                    _series("for-hours", _samples(0, stale_at_window_start)),
                    _series("a-minute", _samples(EVAL - 60)),
                    _series("just-now", _samples(EVAL - 2)),  # newer than the subquery's last step (600 s)
                ],
                "promql_expr_test": [
                    {
                        "expr": seen_share_expr(SEL, "2m"),
                        "eval_time": f"{EVAL}s",
                        "exp_samples": [
                            {"labels": f'{{client_id="{c}",user="u"}}', "value": v} for c, v in expected.items()
                        ],
                    }
                ],
            }
        ],
    }
    return promtool_cases(tmp_path, cases)


def test_a_client_seen_for_hours_stays_seen_across_a_failed_scrape_and_a_new_one_is_not(tmp_path):
    """A client scraped for ten minutes whose series is stale at the window's first subquery steps (one failed scrape)
    is seen for the whole window; before, the earliest step with a sample (516 s) made it 0.74 of the window, under
    ``min_seen_share`` (0.9), and the advisor dropped its verdict at that reading (the demo's advice, once, in CI).
    A client started a minute ago is seen for about half of it (its first sample on the subquery's grid, 552 s); one
    started 2 s ago, after the subquery's last step, is seen for none of it: before, it had no first timestamp and read
    as seen all along, judged on its first seconds."""
    expected = {"for-hours": 1.0, "a-minute": (EVAL - 552) / 120, "just-now": 0.0}
    assert expected["for-hours"] >= Thresholds().min_seen_share > expected["a-minute"]
    res = _run(tmp_path, expected)
    assert res.returncode == 0, res.stdout + res.stderr
