"""What the controller watch costs (collectors/controller_watch.py): one read of the KRaft controller's view of each
broker every ``jmx.controller_watch_seconds`` (2 s), through Jolokia (two MBeans) or through the controller's
jmx_exporter (its whole exposition, one GET), on a local stack of the profile given.

    .venv/bin/python bench/controller_watch.py [--profile msk] [--reads 30] [--dir /tmp/kafka-health-ctlwatch]
                                               [--port-base 20700] [--down]

Per transport the stack's controller offers (Jolokia is on every profile's controller; the exporter on strimzi and
msk): the watch's own read (``JmxCollector._watch_read``: the HTTP call, parsing, the catalog) ``--reads`` times back
to back, and printed: its median wall time, the collector's CPU per read, and the controller JVM's CPU per read
against the same wall time of the controller left alone, measured just before in the same run (the baseline): what
one read every 2 s adds to the controller. The ratio is against Jolokia.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.collector_fleet import proc_cpu
from collectors import catalog
from collectors.jmx import JmxCollector
from collectors.transports.jolokia import JolokiaTransport
from monitor.core.config import ClusterConfig
from monitor.stack import Stack, StackLayout
from monitor.stack.layout import CONTROLLER_ID


def measure(collector: JmxCollector, controller_pid: int, reads: int) -> dict[str, float]:
    (target,) = collector.targets()
    collector._watch_read(target)  # connections and the catalog's caches warm
    walls, cpu0, ctl0 = [], time.process_time(), proc_cpu(controller_pid)
    started = time.monotonic()
    for _ in range(reads):
        t = time.monotonic()
        active, brokers = collector._watch_read(target)
        walls.append(time.monotonic() - t)
        assert active, "not the active controller"
        seen = len(brokers)
    elapsed = time.monotonic() - started
    cpu, ctl = time.process_time() - cpu0, proc_cpu(controller_pid) - ctl0
    # the baseline: the controller alone for the same wall time
    idle0 = proc_cpu(controller_pid)
    time.sleep(elapsed)
    idle = proc_cpu(controller_pid) - idle0
    return {
        "brokers": seen,
        "wall_ms": statistics.median(walls) * 1000,
        "collector_ms": cpu / reads * 1000,
        "controller_ms": max(0.0, ctl - idle) / reads * 1000,
        "idle_ms": idle / reads * 1000,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="msk", choices=("msk", "strimzi"))
    ap.add_argument("--reads", type=int, default=30)
    ap.add_argument("--dir", default="/tmp/kafka-health-ctlwatch")
    ap.add_argument("--port-base", type=int, default=20700)
    ap.add_argument("--down", action="store_true", help="stop the stack afterwards")
    args = ap.parse_args()
    # secured: the stack's controller runs Jolokia (with a password) only then, beside the profile's exporter
    layout = StackLayout(dir=Path(args.dir), port_base=args.port_base, secured=True, profile=args.profile)
    stack = Stack(layout, log=lambda *_: None)
    stack.up(timeout=300)
    try:
        L = stack.layout
        pid = stack.procs.owned_pid(L.node_name(CONTROLLER_ID))
        exporter_url = f"http://127.0.0.1:{L.controller_exporter_port}/metrics"
        jmx = stack.config().clusters[0].jmx  # the stack's JMX and Jolokia credentials
        sources = {
            "jolokia": {"controller_jolokia": (f"http://127.0.0.1:{L.controller_jolokia_port}/jolokia",), "jmx": jmx},
            "jmx_exporter": {
                "controller_jmx_exporter": (
                    {
                        "url": exporter_url,
                        "id": CONTROLLER_ID,
                        "dialect": "strimzi" if args.profile == "strimzi" else "vanilla",
                    },
                )
            },
        }
        print(
            f"controller watch reads, Kafka {L.kafka_version} controller of a 3-broker {args.profile} stack, "
            f"{args.reads} reads back to back per transport (the watch reads every 2 s)"
        )
        rows = {}
        for name, source in sources.items():
            cluster = ClusterConfig(name="local", bootstrap_servers=L.bootstrap_servers, **source)
            c = JmxCollector(
                cluster,
                transport=JolokiaTransport(),
                controller_transport=JolokiaTransport(),
                tenants=catalog.TenantLookup(None, "local"),
                max_series=100_000,
            )
            try:
                rows[name] = measure(c, pid, args.reads)
            finally:
                c.close()
            r = rows[name]
            print(
                f"  {name:13s} median read {r['wall_ms']:6.1f} ms   collector CPU {r['collector_ms']:5.1f} ms/read   "
                f"controller CPU {r['controller_ms']:5.1f} ms/read over its idle {r['idle_ms']:4.1f} ms "
                f"(at one read per 2 s: {r['controller_ms'] / 2000 * 100:.2f} % of a core); brokers with a "
                f"registration state: {r['brokers']}"
            )
        j, e = rows["jolokia"], rows["jmx_exporter"]
        print(
            f"  exporter / Jolokia: read {e['wall_ms'] / j['wall_ms']:.1f}x, collector CPU "
            f"{e['collector_ms'] / max(j['collector_ms'], 0.01):.1f}x, controller CPU "
            f"{e['controller_ms'] / max(j['controller_ms'], 0.01):.1f}x"
        )
    finally:
        if args.down:
            stack.down()


if __name__ == "__main__":
    main()
