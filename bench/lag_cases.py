"""Figures of the consumer-lag case table (docs/alerts.md, KafkaConsumerGroupLag) on the shipped rule: the simulated
groups of tests/unit/test_lag_cases.py (collection, scrape and evaluation every 15 s) at random phases, the time from
each fault to the status it must reach, median and worst.

    .venv/bin/python bench/lag_cases.py [--phases 12] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.unit import test_lag_cases as cases  # the simulation lives beside the table it proves


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phases", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    phases = [(rnd.uniform(0, 15), rnd.uniform(0, 15), rnd.uniform(0, 15)) for _ in range(args.phases)]
    t0 = cases.T0
    idle = cases.IdleThenResumed()
    ckpt = cases.CheckpointerDies(commit_every=660, commit_phase=17.0, members_always=0.0)
    last = ckpt.last_commit_time(ckpt.dies)
    rows = [
        ("1 crash under load: STOP after the crash", cases.Crashed(), t0 - 1200, t0 + 1500, t0, "STOP"),
        ("2 idle group crashed: STOP after the first record", idle, t0 - 600, idle.resume + 1500, idle.resume, "STOP"),
        ("6 checkpointer (11 min) dies: STOP after its last checkpoint", ckpt, t0 - 1800, last + 4000, last, "STOP"),
        ("7 poison record: WARN after the stall", cases.Poisoned(), t0 - 1200, t0 + 1500, t0, "WARN"),
        ("7 poison record: STALL after the stall", cases.Poisoned(), t0 - 1200, t0 + 1500, t0, "STALL"),
        ("8 rewind: REWIND after the reset", cases.Rewound(), t0 - 1200, t0 + 600, t0, "REWIND"),
        ("10 slowing group: WARN after it slowed", cases.Slowing(), t0 - 600, t0 + 1800, t0, "WARN"),
    ]
    print(f"{'case':62} {'median':>8} {'worst':>8} {'never':>6}")
    for name, group, start, end, ref, status in rows:
        delays = []
        for phase in phases:
            t = cases.run(group, start, end, phase).first(status, ref)
            delays.append(None if t is None else t - ref)
        seen = sorted(d for d in delays if d is not None)
        med = f"{statistics.median(seen):.0f} s" if seen else "-"
        worst = f"{max(seen):.0f} s" if seen else "-"
        print(f"{name:62} {med:>8} {worst:>8} {delays.count(None):>6}", flush=True)


if __name__ == "__main__":
    main()
