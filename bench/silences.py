"""What tenants' hostile silences cost the alert engine: the mute step of one cycle (``alerts.engine._mute``: the
``Silencer`` built from the store's active silences, then every instance checked against it and the inhibition
rules), with no silences, with 3 tenants x 100 ordinary silences, and with 3 tenants x 100 hostile ones.

    .venv/bin/python bench/silences.py [--cycles 30] [--tenants 20] [--instances-per-tenant 250]

Hostile: each silence has regex matchers on ``alertname`` and ``topic`` with patterns that take a backtracking
engine exponential time (``(a+)+$``, ``(a|aa)+``, ``(.*a){n}``, each made distinct per silence so no cache shares
them), and the hostile tenants' own alerts carry a 200-character ``topic`` of ``a``s that such patterns do not
match: the worst input for them. Every pattern is first checked to be one the API accepts (``compile_regex``).
Each cycle builds a new ``Silencer`` (as ``AlertService`` does); the first cycle compiles the patterns, the next
find them in the cache. The per-tenant time budget (``MUTE_BUDGET_SECONDS_PER_TENANT``) is in force: a line says
whether any tenant reached it (then the figures are its cap, not the silences' cost). Prints the median and p90 of the
mute step per cycle, the first cycle, and the ratio of the hostile median to the median with no silences.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alerts.engine import _mute
from alerts.mute import (
    DEFAULT_INHIBIT_RULES,
    Matcher,
    Silencer,
    SilenceView,
    _compiled,
    compile_regex,
)
from alerts.types import AlertState, Instance, Severity

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
HOSTILE_TENANTS = ("t00", "t01", "t02")
PER_TENANT = 100
ALERTNAMES = (
    "KafkaRequestHandlerSaturation",
    "KafkaUnderReplicatedPartitions",
    "KafkaConsumerGroupLag",
    "KafkaDiskFullRisk",
    "KafkaLatencyRegression",
)


def _instances(tenants: int, per_tenant: int) -> dict[str, Instance]:
    out = {}
    for t in range(tenants):
        tenant = f"t{t:02}"
        for i in range(per_tenant):
            topic = "a" * 200 if tenant in HOSTILE_TENANTS else f"{tenant}.orders.{i}"
            labels = {
                "alertname": ALERTNAMES[i % len(ALERTNAMES)],
                "cluster": "c1",
                "broker": str(i % 100),
                "topic": topic,
                "severity": "warning",
                "tenant": tenant,
            }
            inst = Instance(
                rule=labels["alertname"],
                labels=labels,
                state=AlertState.FIRING,
                severity=Severity.WARNING,
                active_at=NOW,
                fired_at=NOW,
            )
            out[f"{tenant}-{i}"] = inst
    for i in range(per_tenant * 2):  # operators' own (no tenant)
        labels = {"alertname": "KafkaBrokerUnreachable", "cluster": "c1", "broker": str(i)}
        out[f"op-{i}"] = Instance(
            rule="KafkaBrokerUnreachable",
            labels=labels,
            state=AlertState.FIRING,
            severity=Severity.CRITICAL,
            active_at=NOW,
            fired_at=NOW,
        )
    return out


def _silences(kind: str) -> list[SilenceView]:
    out = []
    for tenant in HOSTILE_TENANTS:
        for i in range(PER_TENANT):
            if kind == "hostile":
                patterns = (f"(a+)+{tenant}{i}$", f"(a|aa)+{i}", f"(.*a){{{10 + i % 10}}}{tenant}")
                matchers = [
                    Matcher("alertname", patterns[i % 3], is_regex=True),
                    Matcher("topic", patterns[(i + 1) % 3], is_regex=True),
                ]
                for m in matchers:
                    compile_regex(m.value)  # accepted by the API: raises otherwise
            else:
                matchers = [Matcher("alertname", ALERTNAMES[i % len(ALERTNAMES)]), Matcher("broker", str(i))]
            matchers.append(Matcher("tenant", tenant))
            out.append(
                SilenceView(
                    f"{tenant}-{kind}-{i}", tuple(matchers), NOW - timedelta(hours=1), NOW + timedelta(hours=1), tenant
                )
            )
    return out


def _run(instances: dict[str, Instance], silences: list[SilenceView], cycles: int) -> tuple[list[float], set[str]]:
    times, capped = [], set()
    for _ in range(cycles):
        t0 = time.perf_counter()
        silencer = Silencer(silences, NOW)
        _mute(instances, silencer, DEFAULT_INHIBIT_RULES)
        times.append(time.perf_counter() - t0)
        capped.update(silencer.over_budget)
    return times, capped


def _p90(xs: list[float]) -> float:
    return sorted(xs)[max(0, round(0.9 * len(xs)) - 1)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=30)
    ap.add_argument("--tenants", type=int, default=20)
    ap.add_argument("--instances-per-tenant", type=int, default=250)
    args = ap.parse_args()
    instances = _instances(args.tenants, args.instances_per_tenant)
    cases = {
        "no silences": [],
        f"{len(HOSTILE_TENANTS)} tenants x {PER_TENANT} ordinary silences": _silences("ordinary"),
        f"{len(HOSTILE_TENANTS)} tenants x {PER_TENANT} hostile silences": _silences("hostile"),
    }
    print(
        f"mute step of one alert cycle: {len(instances)} firing instances ({args.tenants} tenants), "
        f"{args.cycles} cycles"
    )
    medians = {}
    for name, silences in cases.items():
        _compiled.cache_clear()  # the first cycle compiles, as after a start
        times, capped = _run(instances, silences, args.cycles + 1)
        first, rest = times[0], times[1:]
        medians[name] = statistics.median(rest)
        print(
            f"  {name:<40} median {medians[name] * 1e3:8.2f} ms   p90 {_p90(rest) * 1e3:8.2f} ms   "
            f"first cycle {first * 1e3:8.2f} ms   tenants over budget: {', '.join(sorted(capped)) or 'none'}"
        )
    base, hostile = medians["no silences"], list(medians.values())[-1]
    print(f"  ratio hostile / no silences: {hostile / base:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
