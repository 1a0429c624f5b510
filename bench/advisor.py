"""Cost of the client advisor's rules per cluster snapshot, by number of clients.

    python bench/advisor.py [--sizes 100,1000,10000] [--repeat 5]

Prints the median wall time of ``advise`` over a synthetic snapshot (every 20th client a poor batcher), and, as the
baseline in the same run, the naive norm (the lower median of the others recomputed per client, O(n^2 log n)) that
``norms_without`` replaces. The snapshot is what ``monitor.advisor.source`` builds from Prometheus; the queries'
cost is Prometheus', not measured here.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

# This directory holds alerts.py (the alert bench): the repository root must come first, or it shadows the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.advisor.findings import Thresholds, advise, norms_without
from monitor.advisor.types import ClientSample, ClusterSample, Snapshot


def snapshot(n: int, rnd: random.Random) -> Snapshot:
    clients = tuple(
        ClientSample(
            cluster="c",
            user="",
            client_id=f"t{i % 50}-app-{i}",
            tenant=f"t{i % 50}",
            produce_bytes_per_second=rnd.uniform(1e4, 1e6),
            request_time_ratio=rnd.uniform(0.001, 0.02) if i % 20 else rnd.uniform(0.1, 0.3),
        )
        for i in range(n)
    )
    return Snapshot(cluster=ClusterSample(cluster="c", window_seconds=600, requests_per_second=1000.0), clients=clients)


def naive_norms(values: dict[str, float], default: float) -> dict[str, float]:
    return {
        k: statistics.median_low([v for j, v in values.items() if j != k]) if len(values) > 1 else default
        for k in values
    }


def median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rnd = random.Random(1)
    print(f"{'clients':>8} {'advise s':>10} {'findings':>9} {'norms s':>9} {'naive norms s':>14} {'naive/ours':>10}")
    for n in (int(x) for x in args.sizes.split(",")):
        snap = snapshot(n, rnd)
        costs = {c.client_id: c.request_time_ratio / (c.produce_bytes_per_second / 1048576) for c in snap.clients}
        found = advise(snap, Thresholds())
        t_advise = median_seconds(lambda: advise(snap, Thresholds()), args.repeat)
        t_norms = median_seconds(lambda: norms_without(costs, 0.02), args.repeat)
        t_naive = median_seconds(lambda: naive_norms(costs, 0.02), 1 if n > 2000 else args.repeat)
        assert naive_norms(costs, 0.02) == norms_without(costs, 0.02)
        print(f"{n:>8} {t_advise:>10.4f} {len(found):>9} {t_norms:>9.5f} {t_naive:>14.4f} {t_naive / t_norms:>10.0f}")


if __name__ == "__main__":
    main()
