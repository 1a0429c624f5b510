"""What the end-to-end probe (collectors/probe.py) costs, and how fast it sees a frozen broker, on the real stack.

    .venv/bin/python bench/probe.py [--dir D] [--port-base 22200] [--window 60] [--windows 3] [--reps 3]

The local stack, secured as the demo's (the probe authenticates with SASL_SSL as the monitoring principal), started
or reused in --dir; the collectors in their own process (`serve --role collector`, 5 s interval) as in production,
scraped by the stack's Prometheus. In one run:

1. cost: the collectors first with the probe off (the baseline), then on (default settings: one record per second per
   broker, 20 s deadline). For --windows windows of --window seconds each, after a 30 s warm-up: the CPU seconds of
   the collector process and its children (the Admin client's process), of the three broker JVMs, and the growth of
   the probe topic's log (kafka_topic_log_size_bytes summed over brokers: every replica). Prints the medians per
   minute, the ratio on / off, the probe's own CPU per probed broker per minute, and the bytes it writes per day.
2. detection: --reps times broker 3 frozen (SIGSTOP; continued and restarted between repetitions): seconds from the
   signal until (a) Prometheus holds an increase of the probe's lost/error count for broker 3, and (b) the plain
   rule `kafka_cluster_broker_up == 0` for 10 s (bench/alerts.py's PromBrokerDown, Strimzi's broker-down) fires in
   the same Prometheus. Medians and their ratio.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PLAIN_RULE = """
groups:
  - name: plain-up
    rules:
      - alert: PromBrokerDown
        expr: kafka_cluster_broker_up == 0
        for: 10s
"""
VICTIM = 3
TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` and its live descendants, from /proc."""
    stats: dict[int, tuple[int, float]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(d.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK)
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += stats.get(p, (0, 0.0))[1]
        todo += [c for c, (ppid, _) in stats.items() if ppid == p]
    return total


def prom(L, expr: str) -> list[dict]:
    import httpx

    return httpx.get(f"{L.prometheus_url}/api/v1/query", params={"query": expr}, timeout=5).json()["data"]["result"]


def reload_rules(L, *, check: bool) -> None:
    """Prometheus re-reads its rule files; ``check``: a failure is the bench's, else (cleaning up) ignored."""
    import httpx

    try:
        httpx.post(f"{L.prometheus_url}/-/reload", timeout=10).raise_for_status()
    except httpx.HTTPError:
        if check:
            raise


def scalar(L, expr: str) -> float | None:
    r = prom(L, expr)
    return float(r[0]["value"][1]) if r else None


def measure(stack, proc: subprocess.Popen, topic: str, window: float, windows: int) -> list[dict]:
    """Per window: CPU seconds per minute of the collectors and of the brokers, probe-topic bytes per day."""
    L = stack.layout
    brokers = [stack.procs.owned_pid(L.node_name(b)) for b in L.broker_ids]
    size = f'sum(kafka_topic_log_size_bytes{{topic="{topic}"}})'
    out = []
    for _ in range(windows):
        c0, b0, s0, t0 = tree_cpu(proc.pid), sum(tree_cpu(p) for p in brokers), scalar(L, size), time.monotonic()
        time.sleep(window)
        c1, b1, s1, t1 = tree_cpu(proc.pid), sum(tree_cpu(p) for p in brokers), scalar(L, size), time.monotonic()
        minutes = (t1 - t0) / 60
        grown = (s1 - s0) if s0 is not None and s1 is not None else None
        out.append(
            {
                "collector": (c1 - c0) / minutes,
                "brokers": (b1 - b0) / minutes,
                "bytes_per_day": grown / (t1 - t0) * 86400 if grown is not None else None,
            }
        )
        w = out[-1]
        print(
            f"    window: collector {w['collector']:.2f} CPU s/min, brokers {w['brokers']:.2f} CPU s/min, "
            f"probe topic {w['bytes_per_day'] or 0:.0f} bytes/day",
            flush=True,
        )
    return out


def detection(stack, reps: int, deadline: float) -> list[tuple[float | None, float | None]]:
    import httpx

    from tests.harness.faults import (
        controlled_restart,
        in_sync,
        preferred_leader_elected,
    )

    L = stack.layout
    failed = f'sum(kafka_probe_messages_total{{broker="{VICTIM}",result=~"lost|error"}})'
    rows = []
    for rep in range(reps):
        while not (
            in_sync(L.bootstrap_servers)
            and scalar(L, "count(kafka_cluster_broker_up == 1)") == 3
            and not [
                a
                for a in httpx.get(f"{L.prometheus_url}/api/v1/alerts", timeout=5).json()["data"]["alerts"]
                if a["labels"]["alertname"] == "PromBrokerDown"
            ]
        ):
            time.sleep(2)
        # The victim leads its probe partition again (the restart below moved it away), as the probe does itself
        # where its principal may elect (Alter on the cluster, which the stack's monitoring principal lacks) and
        # Kafka's leader rebalance does within 5 minutes: a frozen follower only slows the probe down.
        while not preferred_leader_elected(L.bootstrap_servers, "__kafka_health_probe", VICTIM):
            time.sleep(2)
        time.sleep(20)  # records of the last repetition decided, ok flowing again
        before = scalar(L, failed) or 0.0
        t0 = time.monotonic()
        stack.procs.signal(L.node_name(VICTIM), signal.SIGSTOP)
        probe = plain = None
        try:
            while time.monotonic() - t0 < 120 and (probe is None or plain is None):
                now = time.monotonic() - t0
                if probe is None and (scalar(L, failed) or 0.0) > before:
                    probe = now
                if plain is None and [
                    a
                    for a in httpx.get(f"{L.prometheus_url}/api/v1/alerts", timeout=5).json()["data"]["alerts"]
                    if a["labels"]["alertname"] == "PromBrokerDown"
                    and a["labels"].get("broker") == str(VICTIM)
                    and a["state"] == "firing"
                ]:
                    plain = now
                time.sleep(0.5)
        finally:
            controlled_restart(stack, VICTIM)  # SIGCONT first, then a controlled shutdown and a start
        rows.append((probe, plain))
        print(
            f"    SIGSTOP #{rep + 1}: probe {probe and f'{probe:.0f}s'}, plain up rule {plain and f'{plain:.0f}s'} "
            f"(probe deadline {deadline:g}s)",
            flush=True,
        )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", type=Path, default=Path("/tmp/kafka-health-probe-bench"))
    ap.add_argument("--port-base", type=int, default=22200)
    ap.add_argument("--window", type=float, default=60.0)
    ap.add_argument("--windows", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()

    from monitor.core.config import CollectionSettings
    from monitor.stack import Stack, StackLayout
    from tests.integration.alerts_helpers import running_collectors

    stack = Stack(
        StackLayout(dir=args.dir, port_base=args.port_base, secured=True, plaintext_listener=True), log=lambda *_: None
    )
    L = stack.layout
    already_up = all(s.healthy for s in stack.status())
    tmp = Path(tempfile.mkdtemp(prefix="probe-bench-"))
    rules_file = L.prometheus_rules_dir / "plain-up.yml"
    results: dict[str, list[dict]] = {}
    rows: list = []
    try:
        if not already_up:
            print(f"starting the stack in {args.dir} ...", flush=True)
            stack.up(timeout=240)
        rules_file.write_text(PLAIN_RULE)
        reload_rules(L, check=True)
        config = stack.config(store_url=f"sqlite:///{tmp / 'unused.db'}")
        config = config.model_copy(update={"collection": CollectionSettings(interval_seconds=5)})
        cluster = config.clusters[0]
        topic, deadline = cluster.probe.topic, cluster.probe.deadline_seconds
        for name, enabled in (("probe off (baseline)", False), ("probe on", True)):
            probe = cluster.probe.model_copy(update={"enabled": enabled})
            cfg = config.model_copy(update={"clusters": (cluster.model_copy(update={"probe": probe}),)})
            print(f"{name}: collectors for {args.windows} x {args.window:.0f}s ...", flush=True)
            workdir = tmp / ("on" if enabled else "off")
            workdir.mkdir()
            with running_collectors(cfg, workdir) as proc:  # `serve --role collector`, as the e2e tests run it
                time.sleep(30)
                results[name] = measure(stack, proc, topic, args.window, args.windows)
                if enabled:
                    print(f"detection: broker {VICTIM} frozen, {args.reps} times ...", flush=True)
                    rows = detection(stack, args.reps, deadline)
    finally:
        rules_file.unlink(missing_ok=True)
        reload_rules(L, check=False)
        if not already_up:
            stack.down()

    def med(key: str, name: str) -> float | None:
        xs = [w[key] for w in results[name] if w[key] is not None]
        return statistics.median(xs) if xs else None

    off, on = "probe off (baseline)", "probe on"
    brokers = len(L.broker_ids)
    print(
        f"\nprobe cost (median of {args.windows} windows of {args.window:.0f}s; {brokers} brokers, one record per "
        f"second per broker, SASL_SSL)"
    )
    for key, what in (("collector", "collector process (+ Admin child)"), ("brokers", "broker JVMs, all three")):
        a, b = med(key, off), med(key, on)
        print(f"  {what:<36} off {a:6.2f} CPU s/min   on {b:6.2f} CPU s/min   ratio {b / a:5.2f}x")
    a, b = med("collector", off), med("collector", on)
    print(
        f"  the probe's own CPU per probed broker per minute: {(b - a) / brokers:.2f} CPU s "
        f"({(b - a) / brokers / 60 * 100:.2f} % of a core)"
    )
    a, b = med("brokers", off), med("brokers", on)
    print(f"  brokers' extra CPU per broker per minute: {(b - a) / brokers:.2f} CPU s")
    written = med("bytes_per_day", on)
    print(
        f"  bytes written per day (probe topic, all replicas): {written / 1e6:.1f} MB"
        if written is not None
        else "  bytes written per day: not measured (no kafka_topic_log_size_bytes for the probe topic)"
    )
    probe = [p for p, _ in rows if p is not None]
    plain = [q for _, q in rows if q is not None]
    mp = statistics.median(probe) if probe else None
    mq = statistics.median(plain) if plain else None
    print(f"\ndetection of a frozen broker (SIGSTOP), median of {args.reps}, seen in Prometheus (5 s scrapes)")
    print(f"  probe: lost/error counted for its partition     {mp and f'{mp:5.0f}s'} (fired {len(probe)}/{len(rows)})")
    print(f"  plain rule kafka_cluster_broker_up == 0, 10 s    {mq and f'{mq:5.0f}s'} (fired {len(plain)}/{len(rows)})")
    if mp and mq:
        print(f"  ratio probe / plain rule: {mp / mq:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
