"""A crashed consumer group on the real stack, on shipped defaults: how long until the engine's built-in
KafkaConsumerGroupLag fires, beside Strimzi's ``kafka_consumergroup_lag > 1000`` and a plain "no members and lag"
rule in the same Prometheus.

    .venv/bin/python bench/lag_crash.py [--reps 3] [--port-base 20500] [--dir D]

Everything as shipped: Prometheus scrapes and evaluates every 15 s (deploy/prometheus/prometheus.yml), the collectors
run every 15 s in their own process, the engine every 15 s with the built-in rule. Per repetition three consumers
(confluent-kafka defaults: classic protocol, auto-commit 5 s, session timeout 45 s), each a process of its own, read a
3-partition topic fed ~40 records/s; once Prometheus has seen the three members for 20 s they are SIGKILLed and the
bench records when each alert first fires for the group (engine: its firing instance; Prometheus: its alerts API,
polled every second). The Prometheus rules have ``for: 10s`` like bench/alerts.py's. The plain rule fires as soon as
the coordinator lists no member under lag, so it also fires for a group that never has members (Flink, Spark) and for
a restart that leaves a group empty for one scrape; the engine waits 30 s (members_gone_for) and skips those.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # before bench/: bench/alerts.py is not the package

import httpx

from alerts.types import AlertState
from bench.lag_stack import shipped_lag_stack, stop_consumers
from tests.harness.faults import delete_group
from tests.harness.producer import SteadyProducer

TOPIC = "bench.crash"
RULES = """
      - alert: PromGroupGone
        expr: >-
          (max by (cluster, group) (kafka_consumergroup_members) == 0)
          and on (cluster, group) (sum by (cluster, group) (kafka_consumergroup_lag) > 0)
        for: 10s"""
CONSUMER = """
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "auto.offset.reset": "latest",
              "client.id": sys.argv[3]})
c.subscribe([sys.argv[4]])
while True:
    c.poll(0.5)
"""


def prom(stack, path: str, **params):
    return httpx.get(f"{stack.layout.prometheus_url}{path}", params=params, timeout=5).json()["data"]


def repetition(stack, svc, servers: str, n: int) -> dict[str, float | None]:
    group = f"bench.crash-{os.getpid()}-{n}"
    feeder = SteadyProducer(servers, TOPIC).start()  # ~40 records/s
    consumers = [
        subprocess.Popen(
            [sys.executable, "-c", CONSUMER, servers, group, f"bench-crash-{i}", TOPIC],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for i in range(3)
    ]
    first: dict[str, float | None] = {
        "KafkaConsumerGroupLag": None,
        "PromConsumerGroupLag": None,
        "PromGroupGone": None,
    }
    try:
        deadline = time.monotonic() + 120
        while not prom(stack, "/api/v1/query", query=f'kafka_consumergroup_members{{group="{group}"}} == 3')["result"]:
            if time.monotonic() > deadline:
                raise SystemExit(f"{group}: three members never reached Prometheus")
            time.sleep(2)
        time.sleep(20)
        for c in consumers:
            os.killpg(c.pid, signal.SIGKILL)
        killed, halt = time.monotonic(), threading.Event()

        def engine():
            while not halt.is_set():
                t = time.monotonic()
                r = svc.run_once()
                for i in r.instances.values() if r else ():
                    if (
                        i.rule == "KafkaConsumerGroupLag"
                        and i.labels.get("group") == group
                        and i.state is AlertState.FIRING
                        and first[i.rule] is None
                    ):
                        first[i.rule] = time.monotonic() - killed
                        print(
                            f"  engine: {i.labels.get('status')} decided by {i.evidence.get('decided_by')}", flush=True
                        )
                halt.wait(max(0.0, svc.config.rules.evaluation_interval_seconds - (time.monotonic() - t)))

        loop = threading.Thread(target=engine, daemon=True)
        loop.start()
        while time.monotonic() - killed < 240 and None in first.values():
            for a in prom(stack, "/api/v1/alerts")["alerts"]:
                name = a["labels"]["alertname"]
                if name in first and a["state"] == "firing" and a["labels"].get("group") == group:
                    first[name] = first[name] or time.monotonic() - killed
            time.sleep(1)
        halt.set()
        loop.join(60)
        print(
            f"  rep {n}: " + ", ".join(f"{k} {v:.0f} s" if v is not None else f"{k} never" for k, v in first.items()),
            flush=True,
        )
        return first
    finally:
        stop_consumers(feeder, consumers)
        delete_group(servers, group)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--port-base", type=int, default=20500)
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    with shipped_lag_stack(
        name="lag-crash", topic=TOPIC, rules=RULES, port_base=args.port_base, stack_dir=args.dir
    ) as (stack, svc):
        time.sleep(30)
        runs = [repetition(stack, svc, stack.layout.bootstrap_servers, n) for n in range(args.reps)]

    def med(name):
        xs = [r[name] for r in runs if r[name] is not None]
        return statistics.median(xs) if xs else None

    engine = med("KafkaConsumerGroupLag")
    print(f"\ncrashed group, SIGKILL -> firing, median of {args.reps} (scrape, collection, engine every 15 s)")
    for name in ("KafkaConsumerGroupLag", "PromConsumerGroupLag", "PromGroupGone"):
        m = med(name)
        ratio = f"{engine / m:.2f}x" if engine is not None and m and name != "KafkaConsumerGroupLag" else ""
        each = ", ".join(f"{r[name]:.0f}" if r[name] is not None else "never" for r in runs)
        print(f"  {name:24} {m if m is None else round(m):>6} s  ({each})  engine/rule {ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
