"""Per-scrape cost of each metric source for one broker, against the Jolokia transport in the same run (issue 30).

    .venv/bin/python bench/sources.py --dir /tmp/kh30b --port-base 20500 [--partitions 10000] [--repeat 5]

On a running local stack (``kafka-health stack up --dir ... --port-base ... --security plaintext``): puts
--partitions partitions on broker-1 (RF-1 topics pinned to it), then for each jmx_exporter dialect restarts broker-1
with io.prometheus.jmx:jmx_prometheus_javaagent under that dialect's config (deploy/kafka/jmx_exporter/) beside its
Jolokia agent and runs --repeat interleaved scrapes of the same broker through kafka-health's collector: Jolokia
(baseline), the exporter's exposition mapped by the catalog, and the same series read from a Prometheus (started
here, scraping that exporter every --scrape-interval seconds as a platform's would) through its /federate (its CPU
a read in column prom_cpu; the broker's CPU of such a read is only what the Prometheus' own scrape cost, when one
fell in it). Also node_exporter (Debian's prometheus-node-exporter,
started here) against the /proc host collector. Prints medians: wall seconds of one collect_target, client CPU
(this process), broker CPU delta, series; ratios are to Jolokia (host: to /proc). Restores broker-1 at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx
from confluent_kafka.admin import AdminClient

from collectors.catalog import TenantLookup
from collectors.host import HostCollector
from collectors.jmx import JmxCollector
from collectors.transports.jolokia import JolokiaTransport
from collectors.types import TargetStatus
from monitor.core.config import BrokerTarget, ExporterSource, JmxSettings
from monitor.stack import Stack, StackLayout, kafka
from tests.harness.agents import restart_broker
from tests.harness.engine import create_topics, pinned_topics
from tests.harness.prometheus import start_prometheus

CONFIGS = ROOT / "deploy/kafka/jmx_exporter"
DIALECT_CONFIG = {"vanilla": CONFIGS / "vanilla.yml", "strimzi": CONFIGS / "strimzi-kafka-metrics.yml"}
BROKER = 1
TICKS = os.sysconf("SC_CLK_TCK")


def broker_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def collect(collector, target, pid: int | None, prom: int | None = None) -> tuple[float, float, float, float, int]:
    c0, b0, p0 = time.process_time(), broker_cpu(pid) if pid else 0.0, broker_cpu(prom) if prom else 0.0
    t0 = time.perf_counter()
    r = collector.collect_target(target, now=time.time())
    t1 = time.perf_counter()
    if r.status is not TargetStatus.OK:
        raise RuntimeError(f"{target.key}: {r.status} {r.message}")
    bcpu = (broker_cpu(pid) - b0) if pid else 0.0
    return t1 - t0, time.process_time() - c0, bcpu, (broker_cpu(prom) - p0) if prom else 0.0, len(r.samples)


def bench(runs: dict[str, tuple], pid: int | None, repeat: int, base: str) -> None:
    """``runs``: name -> (collector, target[, the pid of a Prometheus it reads])."""
    results: dict[str, list[tuple[float, float, float, float, int]]] = {n: [] for n in runs}
    for c, t, *_ in runs.values():
        c.collect_target(t, now=time.time())  # warm-up
    for _ in range(repeat):
        for name, (c, t, *prom) in runs.items():
            results[name].append(collect(c, t, pid, *prom))
    med = {n: tuple(statistics.median(r[i] for r in rs) for i in range(4)) + (rs[-1][4],) for n, rs in results.items()}
    for name, (wall, ccpu, bcpu, pcpu, series) in med.items():
        print(
            f"{name:<22} wall={wall:7.3f}s client_cpu={ccpu:7.3f}s broker_cpu={bcpu:7.3f}s prom_cpu={pcpu:6.3f}s "
            f"series={series:>6} wall_ratio={wall / med[base][0]:5.2f} "
            f"client_cpu_ratio={ccpu / max(med[base][1], 1e-9):5.2f}",
            flush=True,
        )


def platform_prometheus(L, exporter_port: int, interval: int) -> tuple[subprocess.Popen[bytes], int]:
    """A Prometheus scraping broker-1's exporter every ``interval`` s (as the platform's does), once it has scraped."""
    home = L.dir / "bench-prometheus"
    subprocess.run(["rm", "-rf", str(home)], check=True)
    target = (f"127.0.0.1:{exporter_port}", {"pod": f"my-cluster-kafka-{BROKER}"})
    proc, port = start_prometheus(home, {"kafka": [target]}, interval=f"{interval}s")
    deadline = time.monotonic() + 3 * interval + 60
    while time.monotonic() < deadline:
        r = httpx.get(f"http://127.0.0.1:{port}/api/v1/query", params={"query": "up"}, timeout=5).json()
        if [s for s in r["data"]["result"] if s["value"][1] == "1"]:
            return proc, port
        time.sleep(1)
    proc.terminate()
    raise RuntimeError("the bench's Prometheus never scraped the exporter")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port-base", type=int, required=True)
    ap.add_argument("--partitions", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--broker-heap", default="1g")
    ap.add_argument("--scrape-interval", type=int, default=30, help="the platform Prometheus' (Strimzi's examples)")
    args = ap.parse_args()
    stack = Stack(StackLayout(dir=Path(args.dir), port_base=args.port_base), log=lambda *a: print(*a, file=sys.stderr))
    stack.up()
    L = stack.layout
    admin = AdminClient({"bootstrap.servers": L.bootstrap_servers})
    name = f"bench-sources-{args.partitions}"
    if not any(t.startswith(f"{name}-") for t in admin.list_topics(timeout=30).topics):
        create_topics(stack, pinned_topics(name, BROKER, args.partitions))
    cluster = stack.config().clusters[0]
    cluster = cluster.model_copy(update={"jmx": JmxSettings(timeout_seconds=300)})
    tenants = TenantLookup(None, cluster.name)
    jolokia = JolokiaTransport()
    port = args.port_base + 90
    agent = kafka.agents_dir() / "jmx_prometheus_javaagent.jar"
    print(
        f"broker-1 with {args.partitions} partitions in {name}-* (plus the stack's own); load average "
        f"{os.getloadavg()[0]:.1f}",
        flush=True,
    )
    try:
        for dialect, config in DIALECT_CONFIG.items():
            pid = restart_broker(
                stack, BROKER, [f"-javaagent:{agent}=127.0.0.1:{port}:{config}"], heap=args.broker_heap
            )
            by_jolokia = JmxCollector(
                cluster, transport=jolokia, controller_transport=jolokia, tenants=tenants, max_series=10**7
            )
            exp_cluster = cluster.model_copy(
                update={
                    "brokers": (
                        BrokerTarget(
                            id=BROKER,
                            jmx_exporter=ExporterSource(url=f"http://127.0.0.1:{port}/metrics", dialect=dialect),
                        ),
                    )
                }
            )
            by_exporter = JmxCollector(
                exp_cluster, transport=jolokia, controller_transport=jolokia, tenants=tenants, max_series=10**7
            )
            prom, prom_port = platform_prometheus(L, port, args.scrape_interval)
            federated = ExporterSource(
                url=f"http://127.0.0.1:{prom_port}", dialect=dialect, federate=f'{{pod="my-cluster-kafka-{BROKER}"}}'
            )
            by_prometheus = JmxCollector(
                cluster.model_copy(update={"brokers": (BrokerTarget(id=BROKER, jmx_exporter=federated),)}),
                transport=jolokia,
                controller_transport=jolokia,
                tenants=tenants,
                max_series=10**7,
            )
            t_j = next(t for t in by_jolokia.targets() if t.name == f"broker-{BROKER}")
            t_e = next(t for t in by_exporter.targets() if t.name == f"broker-{BROKER}")
            t_p = next(t for t in by_prometheus.targets() if t.name == f"broker-{BROKER}")
            print(f"-- jmx_exporter dialect {dialect}", flush=True)
            try:
                bench(
                    {
                        "jolokia": (by_jolokia, t_j),
                        f"jmx_exporter/{dialect}": (by_exporter, t_e),
                        f"federate/{dialect}": (by_prometheus, t_p, prom.pid),
                    },
                    pid,
                    args.repeat,
                    "jolokia",
                )
            finally:
                prom.terminate()
                prom.wait(30)
    finally:
        restart_broker(stack, BROKER, [], heap=args.broker_heap)  # the stack's heap is too small for its partitions
    node_port = args.port_base + 92
    proc = subprocess.Popen(
        ["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{node_port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(2)
        log_dirs = (str(L.node_dir(BROKER) / "data"),)
        local = HostCollector(cluster.model_copy(update={"brokers": (BrokerTarget(id=BROKER, log_dirs=log_dirs),)}))
        node = HostCollector(
            cluster.model_copy(
                update={
                    "brokers": (
                        BrokerTarget(
                            id=BROKER, log_dirs=log_dirs, node_exporter=f"http://127.0.0.1:{node_port}/metrics"
                        ),
                    )
                }
            )
        )
        print("-- host", flush=True)
        bench(
            {"proc": (local, local.targets()[0]), "node_exporter": (node, node.targets()[0])}, None, args.repeat, "proc"
        )
    finally:
        proc.terminate()
        proc.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
