"""Consumers that commit only on a checkpoint and keep up, on the real stack and shipped defaults: does anything page?

    .venv/bin/python bench/checkpoint_committer.py [--minutes 15] [--cadences 180] [--port-base 20700] [--dir D]

Issue 29's bar: a consumer that commits every 3 minutes (how Flink and Spark Structured Streaming commit offsets) and
keeps up is never paged in 15 minutes. Everything as shipped: Prometheus scrapes and evaluates every 15 s
(deploy/prometheus/prometheus.yml), the collectors run every 15 s in their own process, the engine every 15 s with
the built-in ``KafkaConsumerGroupLag`` (window 10m; its commit cadence learned per group). Per cadence one
consumer (confluent-kafka, ``enable.auto.commit=false``, a process of its own) reads a 3-partition topic fed ~40
records/s, polls all the time (so it stays in its group) and commits synchronously every ``cadence`` seconds. Beside
the engine, the same Prometheus evaluates Strimzi's ``kafka_consumergroup_lag > 1000`` (``for: 10s``), the rule
most clusters run, which a checkpointing committer trips between its commits.

It prints, per group: the engine's instances of the rule seen at each evaluation (pending and firing, with their
status and what decided them), the Strimzi rule's firing time, the largest committed lag Prometheus saw and the
commits made. Exit status 1 when the engine paged (firing) a checkpointing group.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # before bench/: bench/alerts.py is not the package

import httpx

from alerts.types import AlertState
from bench.lag_stack import shipped_lag_stack, stop_consumers
from tests.harness.producer import SteadyProducer

TOPIC = "bench.ckpt"
CONSUMER = """
import sys, time
from confluent_kafka import Consumer
servers, group, client_id, topic, cadence = sys.argv[1:6]
c = Consumer({"bootstrap.servers": servers, "group.id": group, "auto.offset.reset": "latest",
              "client.id": client_id, "enable.auto.commit": False})
c.subscribe([topic])
last, commits = time.monotonic(), 0
while True:
    c.poll(0.5)
    if time.monotonic() - last >= float(cadence):
        try:
            c.commit(asynchronous=False)
            commits += 1
            print(commits, flush=True)
        except Exception as exc:  # nothing consumed since the last commit: no offsets to commit
            print("commit:", exc, file=sys.stderr, flush=True)
        last = time.monotonic()
"""


def prom(stack, path: str, **params):
    return httpx.get(f"{stack.layout.prometheus_url}{path}", params=params, timeout=5).json()["data"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=15.0)
    ap.add_argument("--cadences", default="180", help="commit cadences in seconds, comma-separated (one group each)")
    ap.add_argument("--port-base", type=int, default=20700)
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    cadences = [int(c) for c in args.cadences.split(",")]
    groups = {c: f"bench.ckpt-{c}s-{os.getpid()}" for c in cadences}
    seen: dict[str, collections.Counter[str]] = {g: collections.Counter() for g in groups.values()}
    strimzi: dict[str, float | None] = dict.fromkeys(groups.values())
    max_lag: dict[str, float] = dict.fromkeys(groups.values(), 0.0)
    consumers: list[subprocess.Popen[str]] = []
    with shipped_lag_stack(name="checkpoint-committer", topic=TOPIC, port_base=args.port_base, stack_dir=args.dir) as (
        stack,
        svc,
    ):
        servers = stack.layout.bootstrap_servers
        feeder = SteadyProducer(servers, TOPIC).start()  # ~40 records/s
        try:
            for cadence, group in groups.items():
                consumers.append(
                    subprocess.Popen(
                        [sys.executable, "-c", CONSUMER, servers, group, group, TOPIC, str(cadence)],
                        stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL,
                        text=True,
                        start_new_session=True,
                    )
                )
            start = time.monotonic()
            print(f"{len(groups)} checkpointing consumers ({args.cadences} s) for {args.minutes:g} min ...", flush=True)
            while time.monotonic() - start < args.minutes * 60:
                t = time.monotonic()
                r = svc.run_once()
                for i in r.instances.values() if r else ():
                    g = i.labels.get("group")
                    if i.rule == "KafkaConsumerGroupLag" and g in seen:
                        seen[g][f"{i.state.value} {i.labels.get('status')} ({i.evidence.get('decided_by')})"] += 1
                        if i.state is AlertState.FIRING:
                            print(f"  {time.monotonic() - start:4.0f} s: {g} paged: {i.labels} {i.evidence}")
                for a in prom(stack, "/api/v1/alerts")["alerts"]:
                    g = a["labels"].get("group")
                    if a["labels"]["alertname"] == "PromConsumerGroupLag" and a["state"] == "firing" and g in strimzi:
                        strimzi[g] = strimzi[g] or time.monotonic() - start
                for s in prom(stack, "/api/v1/query", query="sum by (group) (kafka_consumergroup_lag)")["result"]:
                    g = s["metric"].get("group")
                    if g in max_lag:
                        max_lag[g] = max(max_lag[g], float(s["value"][1]))
                time.sleep(max(0.0, svc.config.rules.evaluation_interval_seconds - (time.monotonic() - t)))
        finally:
            stop_consumers(feeder, consumers)

    paged = False
    print(f"\ncheckpointing consumers keeping up, {args.minutes:g} min on shipped defaults (every 15 s)")
    for (cadence, group), c in zip(groups.items(), consumers, strict=True):
        out = c.stdout.read().split() if c.stdout else []
        commits = out[-1] if out else "0"
        states = dict(seen[group]) or {"none": 0}
        paged |= any(k.startswith("firing") for k in states)
        first = strimzi[group]
        print(f"  every {cadence:>4} s: commits {commits}, largest lag {max_lag[group]:.0f} records")
        print(f"    engine KafkaConsumerGroupLag instances (evaluations): {states}")
        print(f"    Strimzi kafka_consumergroup_lag > 1000: {'never' if first is None else f'firing at {first:.0f} s'}")
    return 1 if paged else 0


if __name__ == "__main__":
    raise SystemExit(main())
