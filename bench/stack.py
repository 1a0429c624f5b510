"""Time from ``stack up`` to ready (cold and warm jar cache) and resident memory of each component.

    .venv/bin/python bench/stack.py [--runs 3] [--port-base 19800] [--skip-cold]

cold: empty kafka-health jar cache AND an empty Maven local repository (everything downloaded from Maven Central).
warm: jars cached, new stack directory (storage formatted anew).
restart: same stack directory, stopped and started again.
Prints medians over --runs (cold runs once) and RSS per component after the cluster settles.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from monitor.stack import Stack, StackLayout  # noqa: E402


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed_up(layout: StackLayout) -> tuple[float, Stack]:
    stack = Stack(layout, log=lambda *_: None)
    t0 = time.monotonic()
    stack.up(timeout=300)
    return time.monotonic() - t0, stack


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--port-base", type=int, default=19800)
    ap.add_argument("--skip-cold", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kh-bench-stack-"))
    results: dict[str, list[float]] = {"cold": [], "warm": [], "restart": []}

    if not args.skip_cold:
        saved = {k: os.environ.get(k) for k in ("KAFKA_HEALTH_CACHE_DIR", "MAVEN_OPTS")}
        os.environ["KAFKA_HEALTH_CACHE_DIR"] = str(work / "cold-cache")
        os.environ["MAVEN_OPTS"] = f"-Dmaven.repo.local={work / 'cold-m2'}"
        secs, stack = timed_up(StackLayout(dir=work / "cold", port_base=args.port_base))
        stack.down()
        results["cold"].append(secs)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    stack = None
    for i in range(args.runs):
        secs, stack = timed_up(StackLayout(dir=work / f"warm-{i}", port_base=args.port_base))
        results["warm"].append(secs)
        if i < args.runs - 1:
            stack.down()
    assert stack is not None
    time.sleep(20)  # let JIT and GC settle before reading memory
    rss = {s.name: rss_mib(s.pid) for s in stack.status() if s.pid}
    for _ in range(args.runs):
        stack.down()
        secs, stack = timed_up(stack.layout)
        results["restart"].append(secs)
    stack.down()

    print(f"stack up -> ready (Kafka {stack.layout.kafka_version}, 1 controller + 3 brokers, Prometheus, Alertmanager)")
    for kind, vals in results.items():
        if vals:
            print(f"  {kind:<8} median {statistics.median(vals):6.1f} s   runs: {', '.join(f'{v:.1f}' for v in vals)}")
    if results["cold"] and results["warm"]:
        print(f"  cold / warm ratio: {statistics.median(results['cold']) / statistics.median(results['warm']):.1f}x")
    print("resident memory after 20 s idle:")
    for name, mib in rss.items():
        print(f"  {name:<14}{mib:7.0f} MiB")
    print(f"  {'total':<14}{sum(rss.values()):7.0f} MiB")


if __name__ == "__main__":
    main()
