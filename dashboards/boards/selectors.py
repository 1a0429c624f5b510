"""Label filters and expression pieces shared by the dashboards' queries."""

from __future__ import annotations

C = 'cluster=~"$cluster"'
CB = 'cluster=~"$cluster", broker=~"$broker"'
CT = 'cluster=~"$cluster", tenant=~"$tenant"'
RI = "$__rate_interval"


def rate(metric: str, selector: str, by: str) -> str:
    return f"sum by ({by}) (rate({metric}{{{selector}}}[{RI}]))"


def client_throttle(selector: str, by: str) -> str:
    """The worst throttle time of a client over the three quota types. label_replace keeps the three apart so
    ``or`` drops none of them (they differ only by metric name, which ``or`` ignores)."""
    parts = [
        f'label_replace(kafka_client_{q}_throttle_time_seconds{{{selector}}}, "quota", "{q}", "", "")'
        for q in ("produce", "fetch", "request")
    ]
    return f"max by ({by}) (" + " or ".join(parts) + ")"
