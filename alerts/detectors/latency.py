"""Latency regression against the broker's own history and its peers, with absolute guards.

Like Cruise Control's slow-broker finder: a broker is slow when its latency is well above both its own recent
history (baseline = median over ``history``) and the median of its peers now. Absolute guards (``min_seconds``,
``min_delta_seconds``) keep quiet brokers from paging: 2 ms -> 6 ms is a ratio of 3 and nobody's problem.
"""

from __future__ import annotations

from datetime import timedelta
from statistics import median

from alerts.detectors.context import DetectorContext, window_seconds
from alerts.types import Observation, Rule
from monitor.core.metric_names import PHASE_TOTAL, M


def regression(
    current: float,
    history: list[float],
    peers: list[float],
    *,
    own_ratio: float,
    peer_ratio: float,
    min_seconds: float,
    min_delta_seconds: float,
) -> dict | None:
    """Evidence if ``current`` regressed, else None. ``history`` excludes the current window; ``peers`` excludes
    self."""
    if current < min_seconds or not history:
        return None
    baseline = median(history)
    if current - baseline < min_delta_seconds or current < own_ratio * baseline:
        return None
    peer_median = median(peers) if peers else None
    # With peers, a cluster-wide slowdown (every broker slower) is not *this* broker's regression.
    if peer_median is not None and current < peer_ratio * peer_median:
        return None
    return {
        "current_seconds": round(current, 4),
        "baseline_seconds": round(baseline, 4),
        "ratio_to_baseline": round(current / baseline, 2) if baseline else None,
        "peer_median_seconds": None if peer_median is None else round(peer_median, 4),
        "peers": len(peers),
    }


def detect(rule: Rule, ctx: DetectorContext) -> list[Observation]:
    history = window_seconds(rule, "history", "1d")
    window = window_seconds(rule, "window", "10m")
    quantile = str(rule.params.get("quantile", "0.99"))
    out = []
    for request in rule.params.get("requests", ["Produce"]):
        expr = (
            f"max by (cluster, broker, request) ({M['request_latency']}"
            f'{{request="{request}",phase="{PHASE_TOTAL}",quantile="{quantile}"}})'
        )
        step = max(history / 288, 15)
        series = ctx.source.query_range(expr, ctx.now - timedelta(seconds=history), ctx.now, step)
        split = ctx.now.timestamp() - window
        current: dict[tuple, float] = {}
        past: dict[tuple, list[float]] = {}
        for s in series:
            key = (s.labels.get("cluster", ""), s.labels.get("broker", ""))
            recent = [v for t, v in zip(s.times, s.values) if t > split]
            if recent:
                current[key] = median(recent)
                past[key] = [v for t, v in zip(s.times, s.values) if t <= split]
        for key, cur in current.items():
            peers = [v for k, v in current.items() if k[0] == key[0] and k != key]
            verdict = regression(
                cur,
                past[key],
                peers,
                own_ratio=float(rule.params["own_ratio"]),
                peer_ratio=float(rule.params["peer_ratio"]),
                min_seconds=float(rule.params["min_seconds"]),
                min_delta_seconds=float(rule.params["min_delta_seconds"]),
            )
            if verdict:
                out.append(
                    Observation(
                        labels={"cluster": key[0], "broker": key[1], "request": request},
                        value=verdict["current_seconds"],
                        evidence={**verdict, "quantile": quantile},
                    )
                )
    return out
