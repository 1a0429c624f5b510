"""What running the Admin client in a child process (collectors.admin_process) costs, against the in-process client.

    .venv/bin/python bench/admin_process.py [--reps 30] [--groups 20] [--dir /tmp/kafka-health-admin-bench]
                                            [--port-base 21400] [--down]

On the local stack, with --groups consumer groups holding committed offsets: the median and p90 wall time of each
Admin call the collector makes in a round (metadata, group listing and descriptions, one group's offsets, high
watermarks) and of a whole ``AdminCollector`` round, in-process (``KafkaAdmin``) and isolated (``IsolatedAdmin``),
calls interleaved so that load on the machine hits both alike; the ratio isolated / in-process; and the time to
start the child (what a round pays after a crash or a replaced client).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.stack import Stack, StackLayout


def _p90(xs: list[float]) -> float:
    return sorted(xs)[max(0, int(round(0.9 * len(xs))) - 1)]


def _groups(servers: str, n: int) -> None:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": servers})
    for f in admin.create_topics([NewTopic("bench.admin", num_partitions=6, replication_factor=3)]).values():
        try:
            f.result(30)
        except Exception as exc:  # there from an earlier run
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise
    for i in range(n):
        c = Consumer({"bootstrap.servers": servers, "group.id": f"bench.admin-{i}", "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition("bench.admin", p, 1) for p in range(6)], asynchronous=False)
        c.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--groups", type=int, default=20)
    ap.add_argument("--dir", default="/tmp/kafka-health-admin-bench")
    ap.add_argument("--port-base", type=int, default=21400)
    ap.add_argument("--down", action="store_true", help="stop the stack at the end")
    args = ap.parse_args()

    from collectors.admin import AdminCollector
    from collectors.admin_client import KafkaAdmin
    from collectors.admin_process import IsolatedAdmin
    from collectors.catalog import TenantLookup

    stack = Stack(StackLayout(dir=Path(args.dir), port_base=args.port_base), log=lambda *a: print(*a, file=sys.stderr))
    stack.up()
    try:
        cluster = stack.config().clusters[0]
        _groups(cluster.bootstrap_servers, args.groups)
        settings, timeout = cluster.client_settings(), 10.0

        starts = []
        for _ in range(5):
            t0 = time.perf_counter()
            IsolatedAdmin(settings, timeout=timeout, client=KafkaAdmin).close()
            starts.append(time.perf_counter() - t0)

        local = KafkaAdmin(settings, timeout=timeout)
        isolated = IsolatedAdmin(settings, timeout=timeout, client=KafkaAdmin)
        calls = {
            "metadata": lambda a: a.cluster(timeout=timeout),
            "groups (list + describe)": lambda a: a.groups(timeout=timeout),
            "one group's offsets": lambda a: a.committed(["bench.admin-0"], timeout=timeout, group_timeout=timeout),
            "high watermarks (6)": lambda a: a.high_watermarks([("bench.admin", p) for p in range(6)], timeout=timeout),
        }
        times = {(name, kind): [] for name in calls for kind in ("in-process", "isolated")}
        for _ in range(args.reps):
            for name, call in calls.items():
                for kind, admin in (("in-process", local), ("isolated", isolated)):
                    t0 = time.perf_counter()
                    call(admin)
                    times[(name, kind)].append(time.perf_counter() - t0)
        isolated.close()

        tenants = TenantLookup(None, cluster.name)
        collectors = {
            "in-process": AdminCollector(
                cluster, tenants=tenants, admin_factory=lambda c: KafkaAdmin(settings, timeout=timeout)
            ),
            "isolated": AdminCollector(cluster, tenants=tenants),
        }
        rounds = {k: [] for k in collectors}
        for ac in collectors.values():
            ac.collect_target(ac.targets()[0], now=time.time())  # creates the client (and the child)
        for _ in range(args.reps):
            for k, ac in collectors.items():
                t0 = time.perf_counter()
                r = ac.collect_target(ac.targets()[0], now=time.time())
                rounds[k].append(time.perf_counter() - t0)
                assert r.status.value == "ok", r.message
        for ac in collectors.values():
            ac.close()

        print(f"load average {os.getloadavg()[0]:.1f}; {args.groups} groups; {args.reps} repetitions")
        print(
            f"child start (spawn, imports, client): median {statistics.median(starts) * 1000:.0f} ms, "
            f"max {max(starts) * 1000:.0f} ms"
        )
        print(f"{'call':28} {'in-process ms':>16} {'isolated ms':>16} {'ratio':>6}")
        rows = [(name, times[(name, "in-process")], times[(name, "isolated")]) for name in calls]
        rows.append(("whole Admin round", rounds["in-process"], rounds["isolated"]))
        for name, a, b in rows:
            ma, mb = statistics.median(a) * 1000, statistics.median(b) * 1000
            print(
                f"{name:28} {ma:8.1f} (p90 {_p90(a) * 1000:5.1f}) {mb:8.1f} (p90 {_p90(b) * 1000:5.1f}) {mb / ma:6.2f}"
            )
    finally:
        if args.down:
            stack.down()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
