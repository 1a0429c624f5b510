"""Collector transports side by side on the same broker: jmxquery vs jolokia vs the Prometheus JMX exporter.

    .venv/bin/python bench/collectors.py --dir /tmp/kh-bench --port-base 19200 [--levels 100,2000,10000]

Starts (or reuses) the local stack in --dir, restarts broker-1 with io.prometheus.jmx:jmx_prometheus_javaagent 1.0.1
(bench/jmx_exporter_kafka.yml) beside its Jolokia agent, then for each partition level (partitions on broker-1,
created as RF-1 topics pinned to it) runs --repeat interleaved scrapes of each transport and prints medians:

- wall: seconds for one scrape into Python (jmxquery/jolokia: read + catalog conversion, i.e. what the collector
  does; exporter: HTTP GET of /metrics + parsing the text format);
- cpu: CPU seconds of the scrape = this process + its children (jmxquery's JVM) + the broker JVM's CPU delta
  (Jolokia and the exporter work inside the broker; the broker's background work adds the same noise to all);
- client_cpu: this process + children only: what a collector process pays per broker;
- peak_mb: jmxquery: the child JVM's max RSS; others: Python heap peak while parsing (tracemalloc, separate run);
- series: series the scrape yields (ours are aggregated per topic; the exporter's are per partition).

Ratios are against the exporter. The last lines project one collector process on one core for 50 brokers on a 30 s
interval from client_cpu. At the end the bench topics are deleted and broker-1 is restarted without the exporter;
--down stops the stack.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
import tracemalloc
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka.admin import AdminClient
from prometheus_client.parser import text_string_to_metric_families

from collectors.catalog import TenantLookup
from collectors.jmx import JmxCollector
from collectors.transports.jmxquery import JmxQueryTransport
from collectors.transports.jolokia import JolokiaTransport
from collectors.types import TargetStatus
from monitor.core.config import JmxSettings
from monitor.stack import Stack, StackLayout, kafka
from tests.harness.agents import restart_broker
from tests.harness.engine import create_topics, pinned_topics

EXPORTER_JAR = "jmx_prometheus_javaagent.jar"
CONFIG = Path(__file__).with_name("jmx_exporter_kafka.yml")
BROKER = 1
TICKS = os.sysconf("SC_CLK_TCK")


def broker_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def client_cpu() -> float:
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ch.ru_utime + ch.ru_stime


def ensure_partitions(stack: Stack, jolokia: JolokiaTransport, endpoint, target: int, made: list[str]) -> int:
    from collectors.types import MBeanQuery

    def count() -> int:
        rd = jolokia.read(
            endpoint, [MBeanQuery("kafka.server:type=ReplicaManager,name=PartitionCount", ("Value",))], timeout=30
        )
        return int(rd[0].value)

    have = count()
    if have < target:
        topics = pinned_topics(f"bench-{target}", BROKER, target - have)
        create_topics(stack, topics)
        made.extend(t.topic for t in topics)
        deadline = time.monotonic() + 600
        while count() < target and time.monotonic() < deadline:
            time.sleep(2)
    return count()


def measure(fn, broker_pid: int) -> tuple[float, float, float, int]:
    c0, b0, t0 = client_cpu(), broker_cpu(broker_pid), time.perf_counter()
    series = fn()
    t1 = time.perf_counter()
    c1, b1 = client_cpu(), broker_cpu(broker_pid)
    return t1 - t0, (c1 - c0) + (b1 - b0), c1 - c0, series


def peak_mb(fn) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default="/tmp/kafka-health-bench")
    ap.add_argument("--port-base", type=int, default=19200)
    ap.add_argument("--levels", default="100,2000,10000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--broker-heap", default="1g", help="heap of broker-1 during the bench")
    ap.add_argument("--down", action="store_true", help="stop the stack at the end")
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]

    stack = Stack(StackLayout(dir=Path(args.dir), port_base=args.port_base), log=lambda *a: print(*a, file=sys.stderr))
    stack.up()
    L = stack.layout
    exporter_port = args.port_base + 45
    # The exporter builds every sample of a scrape on the broker's heap: with the stack's small one it runs the broker
    # out of memory at a few thousand partitions, so broker-1 gets --broker-heap
    agent = kafka.agents_dir() / EXPORTER_JAR
    if not agent.exists():
        raise SystemExit(f"{agent} missing: run `stack up` once (it resolves deploy/kafka/agents-pom.xml)")
    pid = restart_broker(
        stack, BROKER, [f"-javaagent:{agent}=127.0.0.1:{exporter_port}:{CONFIG}"], heap=args.broker_heap
    )
    cfg = stack.config()
    # A generous per-target timeout: the bench measures how long a scrape takes, it must not cut it short.
    cluster = cfg.clusters[0].model_copy(update={"jmx": JmxSettings(timeout_seconds=300)})
    tenants = TenantLookup(None, cluster.name)
    transports = {"jmxquery": JmxQueryTransport(), "jolokia": JolokiaTransport()}
    collectors = {
        n: JmxCollector(cluster, transport=t, controller_transport=t, tenants=tenants, max_series=10**7)
        for n, t in transports.items()
    }
    targets = {n: next(t for t in c.targets() if t.name == f"broker-{BROKER}") for n, c in collectors.items()}
    endpoint = collectors["jolokia"]._endpoints[targets["jolokia"].key]
    admin = AdminClient({"bootstrap.servers": L.bootstrap_servers})

    def ours(name):
        def run():
            r = collectors[name].collect_target(targets[name], now=time.time())
            if r.status is not TargetStatus.OK:
                raise RuntimeError(f"{name}: {r.status} {r.message}")
            return len(r.samples)

        return run

    def exporter():
        with urllib.request.urlopen(f"http://127.0.0.1:{exporter_port}/metrics", timeout=120) as resp:
            text = resp.read().decode()
        return sum(len(f.samples) for f in text_string_to_metric_families(text))

    scrapers = {"jmxquery": ours("jmxquery"), "jolokia": ours("jolokia"), "jmx_exporter": exporter}
    made: list[str] = []
    rows = []
    try:
        for level in levels:
            have = ensure_partitions(stack, transports["jolokia"], endpoint, level, made)
            for fn in scrapers.values():  # warm-up: JIT, caches, first sensors
                fn()
            runs = {n: [] for n in scrapers}
            for _ in range(args.repeat):
                for name, fn in scrapers.items():  # interleaved, so drift hits all alike
                    runs[name].append(measure(fn, pid))
            for name, fn in scrapers.items():
                wall = statistics.median(r[0] for r in runs[name])
                cpu = statistics.median(r[1] for r in runs[name])
                ccpu = statistics.median(r[2] for r in runs[name])
                series = runs[name][-1][3]
                if name == "jmxquery":
                    mem = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
                else:
                    mem = peak_mb(fn)
                rows.append((level, have, name, wall, cpu, ccpu, mem, series))
                print(
                    f"partitions={have:>6} {name:<12} wall={wall:7.3f}s cpu={cpu:7.3f}s "
                    f"client_cpu={ccpu:7.3f}s peak={mem:7.1f}MB series={series}",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        if made:
            admin.delete_topics(made, request_timeout=120)
        # back to its command line without the exporter, keeping the heap its partitions need
        restart_broker(stack, BROKER, [], heap=args.broker_heap)
        if args.down:
            stack.down()

    print(
        f"\n{'partitions':>10} {'transport':<12} {'wall s':>8} {'cpu s':>8} {'client cpu s':>12} {'peak MB':>8} "
        f"{'series':>8} {'wall/exp':>8} {'cpu/exp':>8}"
    )
    for level in levels:
        group = [r for r in rows if r[0] == level]
        base = next(r for r in group if r[2] == "jmx_exporter")
        for _, have, name, wall, cpu, ccpu, mem, series in group:
            print(
                f"{have:>10} {name:<12} {wall:8.3f} {cpu:8.3f} {ccpu:12.3f} {mem:8.1f} {series:>8} "
                f"{wall / base[3]:8.2f} {cpu / base[4]:8.2f}"
            )
    print("\none collector process, one core, 50 brokers, 30 s interval (from client cpu per broker scrape):")
    for level in levels:
        for r in rows:
            if r[0] == level and r[2] in ("jmxquery", "jolokia"):
                share = 50 * r[5] / 30.0
                print(
                    f"  {r[1]:>6} partitions/broker {r[2]:<9} {share * 100:6.1f}% of a core "
                    f"({'fits' if share < 1 else 'does NOT fit'})"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
