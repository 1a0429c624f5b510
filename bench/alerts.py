"""Evaluation cost of one alert-engine cycle for a large cluster, on synthetic data.

    /work/venv/bin/python bench/alerts.py [--brokers 100] [--cycles 30]

Feeds the full catalog (threshold rules + every detector + no-data check + attribution to 20 tenants) from an
in-memory source shaped like Prometheus' answers for N brokers (range queries: 120 points per series), and prints
the median and p90 wall time of ``Engine.evaluate`` per cycle, the queries per cycle, and the same for the threshold
rules alone as the baseline (ratio = what the Python detectors cost on top). Prometheus' own query time is not in
these figures: multiply queries per cycle by your Prometheus' latency.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alerts.detectors import builtin_detectors  # noqa: E402
from alerts.engine import Engine  # noqa: E402
from alerts.inputs import M  # noqa: E402
from alerts.prom import Sample, Series  # noqa: E402
from alerts.rules import load_rules  # noqa: E402
from monitor.config import parse_config  # noqa: E402


class SyntheticSource:
    """Answers by the metric named in the query; values make a few brokers unhealthy so every path runs."""

    def __init__(self, brokers: int, topics: int, groups: int, points: int = 120, seed: int = 7):
        self.brokers = [str(b) for b in range(brokers)]
        self.topics = [f"t{i % 20}.topic{i}" for i in range(topics)]
        self.groups = [f"t{i % 20}.group{i}" for i in range(groups)]
        self.points = points
        self.rng = random.Random(seed)
        self.queries = 0
        self._cache: dict = {}

    def _broker_value(self, expr: str, b: int) -> float:
        bad = b % 17 == 0
        if M["request_handler_idle"] in expr or M["network_processor_idle"] in expr:
            return 0.1 if bad else 0.7
        if M["broker_up"] in expr:
            return 0.0 if b == 3 else 1.0
        if "vector(1)" in expr:
            return 1.0
        return 3.0 if bad else 0.0

    def query(self, expr, at):
        self.queries += 1
        if expr.startswith("count by (__name__, cluster)"):
            return [Sample({"__name__": m, "cluster": "big"}, 100) for m in M.values()]
        if "vector(1)" in expr:
            return [Sample({}, 1.0)]
        if M["topic_size"] in expr and "last_over_time" in expr:
            return [Sample({"cluster": "big", "broker": b, "topic": t}, 1)
                    for i, t in enumerate(self.topics) for b in self.brokers[i % 7::7][:3]]
        if M["topic_size"] in expr:
            return [Sample({"cluster": "big", "topic": t}, 1e9) for t in self.topics]
        if M["group_lag_seconds"] in expr:
            return [Sample({"cluster": "big", "group": g, "topic": self.topics[i % len(self.topics)]}, 30.0)
                    for i, g in enumerate(self.groups)]
        if 'broker="' in expr:  # per-broker client detail
            return [Sample({"user": f"u{i}", "client_id": f"t{i % 20}-client{i}"}, self.rng.random())
                    for i in range(20)]
        if M["client_connections"] in expr:
            return [Sample({"cluster": "big", "broker": b, "client_software_name": "apache-kafka-java",
                            "client_software_version": "2.4.0" if int(b) % 50 == 0 else "3.7.0"}, 5)
                    for b in self.brokers]
        out = []
        for i, b in enumerate(self.brokers):
            v = self._broker_value(expr, i)
            # threshold rules return only violating series, as Prometheus does
            if (" > " in expr and v <= 0) or (" < " in expr and v >= 0.5) or (" == 0" in expr and v != 0):
                continue
            out.append(Sample({"cluster": "big", "broker": b}, v))
        return out

    def query_range(self, expr, start, end, step):
        self.queries += 1
        # Generated once per query and window length, so the figures measure the engine, not this generator.
        key = (expr, end.timestamp() - start.timestamp())
        if key not in self._cache:
            self._cache[key] = self._generate(expr, start, end)
        return self._cache[key]

    def _generate(self, expr, start, end):
        n = self.points
        t0 = start.timestamp()
        dt = (end.timestamp() - t0) / (n - 1)
        times = tuple(t0 + i * dt for i in range(n))

        def series(labels, f):
            return Series(labels, times, tuple(f(i) for i in range(n)))

        if M["group_lag"] in expr:
            return [series({"cluster": "big", "group": g, "topic": self.topics[i % len(self.topics)]},
                           lambda k, i=i: 100 + (k * 10 if i % 9 == 0 else 0)) for i, g in enumerate(self.groups)]
        if M["topic_messages_in"] in expr:
            return [series({"cluster": "big", "topic": t}, lambda k: 10.0) for t in self.topics]
        if M["group_members"] in expr:
            return [series({"cluster": "big", "group": g}, lambda k: 1.0) for g in self.groups]
        if M["group_committed_offset"] in expr:
            return []
        if M["fs_size"] in expr and M["fs_avail"] not in expr:  # filesystem sizes: constant
            return [series({"cluster": "big", "broker": b, "path": "/data"}, lambda k: 2e12) for b in self.brokers]
        if M["fs_size"] in expr:  # used bytes: sawtooth on most, growth on a few
            return [series({"cluster": "big", "broker": b, "path": "/data"},
                           lambda k, i=i: 5e11 + (k * 4e9 if i % 25 == 0 else (k % 30) * 1e9)) for i, b in
                    enumerate(self.brokers)]
        if M["request_latency"] in expr:
            return [series({"cluster": "big", "broker": b, "request": "Produce"},
                           lambda k, i=i: 0.3 if (i == 5 and k > n - 20) else 0.05 + 0.001 * math.sin(k))
                    for i, b in enumerate(self.brokers)]
        if M["response_queue_size"] in expr:
            return [series({"cluster": "big", "broker": b}, lambda k, i=i: 80.0 if i % 33 == 0 else 2.0)
                    for i, b in enumerate(self.brokers)]
        if M["network_processor_idle"] in expr:
            return [series({"cluster": "big", "broker": b}, lambda k: 0.9 - 0.005 * k) for b in self.brokers]
        return []


def config(tenants: int):
    lines = ["clusters:", "  - name: big", "    bootstrap_servers: localhost:9092", "tenants:"]
    for t in range(tenants):
        lines += [f"  - name: tenant{t}", f"    selectors: [{{cluster: big, topic_prefixes: [t{t}.],",
                  f"                 client_id_prefixes: [t{t}-], group_prefixes: [t{t}.]}}]",
                  f"    contract: {{storage_budget_bytes: {int(5e11)}}}"]
    return parse_config("\n".join(lines))


def run(engine: Engine, source: SyntheticSource, cycles: int) -> tuple[list[float], float, int]:
    now = datetime(2026, 11, 22, tzinfo=timezone.utc)
    prev: dict = {}
    times = []
    source.queries = 0
    firing = 0
    for c in range(cycles):
        t0 = time.perf_counter()
        result = engine.evaluate(prev, source, now + timedelta(seconds=15 * c))
        times.append(time.perf_counter() - t0)
        prev = result.instances
        firing = sum(1 for i in prev.values() if i.state.value == "firing")
    return times, source.queries / cycles, firing


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", type=int, default=100)
    ap.add_argument("--topics", type=int, default=2000)
    ap.add_argument("--groups", type=int, default=500)
    ap.add_argument("--cycles", type=int, default=30)
    args = ap.parse_args()
    cfg = config(20)
    rules = load_rules(cfg.rules)
    full = Engine(cfg, rules, builtin_detectors())
    threshold_only = Engine(cfg, [r for r in rules if r.kind != "detector"], builtin_detectors())
    print(f"alert engine, one cycle: {args.brokers} brokers, {args.topics} topics, {args.groups} groups, 20 tenants, "
          f"{len(rules)} rules, {args.cycles} cycles (synthetic in-memory Prometheus)")
    results = {}
    for name, eng in (("threshold rules only (baseline)", threshold_only), ("full catalog", full)):
        src = SyntheticSource(args.brokers, args.topics, args.groups)
        times, qpc, firing = run(eng, src, args.cycles)
        med = statistics.median(times)
        p90 = sorted(times)[int(0.9 * (len(times) - 1))]
        results[name] = med
        print(f"  {name:<34} median {med * 1000:8.1f} ms   p90 {p90 * 1000:8.1f} ms   "
              f"queries/cycle {qpc:6.1f}   firing instances {firing}")
    ratio = results["full catalog"] / results["threshold rules only (baseline)"]
    print(f"  ratio full / baseline: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
