"""DescribeLogDirs round time on the local stack: what the protocol collector asks (no partitions: each log dir's
total and usable bytes) against the same request for every partition (what tools and the Java Admin ask by
default), for 3 brokers with ``--partitions`` partitions in all, median of ``--runs``.

    .venv/bin/kafka-health stack up --dir /tmp/kh-bench --port-base 20400
    .venv/bin/python bench/log_dirs.py --dir /tmp/kh-bench --port-base 20400 --partitions 10000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's collectors/, not bench/collectors.py

from confluent_kafka.admin import AdminClient, NewTopic

from collectors.protocol_client import KafkaProtocol
from monitor.stack import Stack, StackLayout
from monitor.stack.layout import resolve_kafka_version


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--port-base", type=int, required=True)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    layout = StackLayout(
        dir=args.dir,
        port_base=args.port_base,
        kafka_version=resolve_kafka_version(None),
        secured=True,
        plaintext_listener=True,
    )
    cluster = Stack(layout, log=lambda *_: None).config().clusters[0]
    client = KafkaProtocol(cluster.client_settings(), timeout=60)  # the monitoring principal sees every topic

    def partitions() -> dict[str, list[int]]:
        return {t["name"]: [p["partition_index"] for p in t["partitions"]] for t in client._admin.describe_topics()}

    admin = AdminClient({"bootstrap.servers": layout.bootstrap_servers})
    need, n = max(0, args.partitions - sum(map(len, partitions().values()))), 0
    while need > 0:  # topics of 100 partitions, RF 1, until the cluster holds --partitions
        k = min(100, need)
        name = f"bench.logdirs-{time.time_ns()}-{n}"
        admin.create_topics([NewTopic(name, num_partitions=k, replication_factor=1)])[name].result(120)
        need, n = need - k, n + 1
    time.sleep(2 if n else 0)  # let the new topics reach every broker's metadata
    every = partitions()
    total = sum(map(len, every.values()))
    brokers = list(layout.broker_ids)
    ours, full = [], []
    for _ in range(args.runs):
        t = time.monotonic()
        dirs, missing = client.log_dirs(brokers, timeout=60)
        ours.append(time.monotonic() - t)
        assert len(dirs) == len(brokers) and not missing, (dirs, missing)
        t = time.monotonic()
        client._admin.describe_log_dirs(every, brokers)  # every partition: what tools ask by default
        full.append(time.monotonic() - t)
    client.close()
    mo, mf = statistics.median(ours), statistics.median(full)
    print(f"{len(brokers)} brokers, {total} partitions, median of {args.runs}")
    print(f"  DescribeLogDirs, no partitions (the collector's round): {mo * 1000:.1f} ms")
    print(f"  DescribeLogDirs, every partition (tools' default):       {mf * 1000:.1f} ms  ({mf / mo:.1f}x)")


if __name__ == "__main__":
    main()
