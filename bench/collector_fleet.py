"""One collector process pinned to one core, scraping a fleet of N brokers on a fixed interval: does it keep up?

    .venv/bin/python bench/collector_fleet.py [--brokers 50] [--interval 30] [--rounds 4]
                                              [--transports jolokia,jmxquery] [--dir /tmp/kafka-health-fleet]
                                              [--port-base 19300] [--down]

The local stack has three brokers, so the fleet's N broker targets are the three real brokers' endpoints used again
and again (target k is broker 1 + k mod 3, under its own id): every target is a real remote read of a real broker
with its real MBeans, and the collector does for each what it would do for a distinct broker (one transport call,
the catalog conversion, the snapshot). Controllers, host and Admin targets are left out: the issue's figure is
brokers per core.

For each transport a child process runs ``CollectionService`` with the JMX collector over those N targets, pinned
to one CPU (``sched_setaffinity``), the pool size and per-target timeout of the default config, for --rounds rounds
``submit_round`` every --interval seconds as serve's loop does (a target still running is not submitted again).
Printed per transport: the collector's CPU seconds per round (its own and its children's: jmxquery starts a JVM per
call) as a share of the interval on that one core, the median time for a round to finish, targets OK / failed /
skipped per round, and the brokers' CPU per round (Jolokia does its work inside the brokers). The ratio is against
the first transport listed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from concurrent.futures import wait
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.core.config import BrokerTarget, JmxSettings
from monitor.stack import Stack, StackLayout

TICKS = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def own_cpu() -> float:
    me, ch = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime


def fleet_config(stack: Stack, brokers: int, transport: str):
    cfg = stack.config()
    real = cfg.clusters[0].brokers
    fleet = tuple(
        BrokerTarget(id=1000 + k, jmx=real[k % len(real)].jmx, jolokia=real[k % len(real)].jolokia)
        for k in range(brokers)
    )
    cluster = cfg.clusters[0].model_copy(
        update={
            "brokers": fleet,
            "controller_jmx": (),
            "jmx": cfg.clusters[0].jmx.model_copy(update={"transport": transport}),
        }
    )
    return cfg.model_copy(update={"clusters": (cluster,)}), cluster


def child(args) -> None:
    """Runs pinned to one CPU: the collection rounds; prints one JSON line."""
    from prometheus_client import CollectorRegistry

    from collectors.catalog import TenantLookup
    from collectors.component import CollectionService
    from collectors.jmx import JmxCollector
    from collectors.transports.jmxquery import JmxQueryTransport
    from collectors.transports.jolokia import JolokiaTransport
    from collectors.types import TargetStatus

    os.sched_setaffinity(0, {args.cpu})
    stack = Stack(StackLayout(dir=Path(args.dir), port_base=args.port_base), log=lambda *a: None)
    cfg, cluster = fleet_config(stack, args.brokers, args.child)
    cfg = cfg.model_copy(update={"collection": cfg.collection.model_copy(update={"interval_seconds": args.interval})})
    t = JolokiaTransport() if args.child == "jolokia" else JmxQueryTransport()
    jmx = JmxCollector(
        cluster,
        transport=t,
        controller_transport=t,
        tenants=TenantLookup(None, cluster.name),
        max_series=cfg.collection.max_series_per_target,
    )
    svc = CollectionService(cfg, registry=CollectorRegistry(), collectors=[jmx])
    rounds = []
    next_at = time.monotonic()
    try:
        for _ in range(args.rounds):
            cpu0, t0 = own_cpu(), time.monotonic()
            futures = svc.submit_round()
            done, _pending = wait(futures, timeout=max(0.0, next_at + args.interval - time.monotonic()))
            finished = time.monotonic() - t0
            results = [f.result() for f in done]
            next_at += args.interval
            time.sleep(max(0.0, next_at - time.monotonic()))
            rounds.append(
                {
                    "cpu": own_cpu() - cpu0,
                    "finished_s": finished if len(done) == len(futures) else None,
                    "ok": sum(r.status is TargetStatus.OK for r in results),
                    "failed": sum(r.status is TargetStatus.FAILED for r in results),
                    "late": len(futures) - len(done),
                    "skipped": args.brokers - len(futures),
                }
            )
    finally:
        svc.stop()
    print(json.dumps(rounds), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--brokers", type=int, default=50)
    ap.add_argument("--interval", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--transports", default="jolokia,jmxquery")
    ap.add_argument("--dir", default="/tmp/kafka-health-fleet")
    ap.add_argument("--port-base", type=int, default=19300)
    ap.add_argument("--cpu", type=int, default=0, help="the CPU the collector is pinned to")
    ap.add_argument("--down", action="store_true", help="stop the stack at the end")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return 0

    stack = Stack(StackLayout(dir=Path(args.dir), port_base=args.port_base), log=lambda *a: print(*a, file=sys.stderr))
    stack.up()
    timeout = JmxSettings().timeout_seconds
    brokers = {s.name: s.pid for s in stack.status() if s.name.startswith("broker") and s.pid}
    print(
        f"{args.brokers} broker targets on one CPU, every {args.interval:g} s, {args.rounds} rounds "
        f"(pool {8} workers, timeout {timeout:g} s per target); load average {os.getloadavg()[0]:.1f}"
    )
    summary = {}
    try:
        for transport in args.transports.split(","):
            b0 = sum(proc_cpu(p) for p in brokers.values())
            out = subprocess.run(
                [sys.executable, __file__, "--child", transport, *sys.argv[1:]],
                capture_output=True,
                text=True,
                check=True,
            )
            broker_cpu = sum(proc_cpu(p) for p in brokers.values()) - b0
            rounds = json.loads(out.stdout.strip().splitlines()[-1])
            steady = rounds[1:] or rounds  # the first round pays for imports, JIT and connections
            cpu = statistics.median(r["cpu"] for r in steady)
            finished = [r["finished_s"] for r in steady if r["finished_s"] is not None]
            summary[transport] = cpu
            outcomes = "/".join(
                str(round(statistics.median(r[k] for r in steady))) for k in ("ok", "failed", "late", "skipped")
            )
            print(
                f"  {transport:<9} collector CPU {cpu:6.2f} s/round = {cpu / args.interval:6.1%} of one core   "
                f"round finished in {statistics.median(finished) if finished else float('nan'):6.2f} s "
                f"(median; {len(steady) - len(finished)} of {len(steady)} rounds unfinished at the next tick)   "
                f"per round ok/failed/late/skipped "
                f"{outcomes}   "
                f"brokers' CPU {broker_cpu / len(rounds):6.2f} s/round",
                flush=True,
            )
            print(f"            rounds: {json.dumps(rounds)}", file=sys.stderr)
        first = args.transports.split(",")[0]
        for transport, cpu in summary.items():
            if transport != first and summary[first] > 0:
                print(f"  collector CPU {transport} / {first}: {cpu / summary[first]:.1f}x")
    finally:
        if args.down:
            stack.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
