"""Cost of KIP-714 client telemetry: the broker plugin per push and per 1,000 clients held, and the collector's scrape
of the clients' MBeans, each against a baseline measured in the same run.

    .venv/bin/python bench/telemetry.py [--levels 1000,2000] [--rounds 20] [--scrapes 15] [--port 23990]

For each level N the plugin runs in a JVM of its own (bench/TelemetryBench.java, Kafka 4.1.1's jars, broker-sized
heap flags), with the Jolokia agent the stack's brokers carry, and is fed N client instances x --rounds pushes of a
Java producer's push under kafka-health's subscription (7 metrics, 9 data points, ~700 bytes of OTLP):

- broker CPU per push: thread CPU time of the plugin's ``exportMetrics``, against a receiver that only parses the
  same payloads with the OTLP classes Kafka ships shaded in kafka-clients (the baseline: the least any receiver
  reading the payload pays); medians of 5 interleaved repeats. The share of a core for N clients pushing once a
  minute follows;
- broker memory per 1,000 clients: heap retained after GC with N instances held, minus the same JVM's heap with the
  plugin holding none;
- collector per scrape: one Jolokia read of every broker query + catalog conversion (what the JMX collector does per
  broker), wall and CPU (this process + the JVM's CPU while it answers), medians of --scrapes; the baseline is the
  same scrape of the same kind of JVM holding no clients (N = 0, only the JVM's own MBeans).

Numbers are from one machine with other work running: compare the ratios, not the absolute values.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collectors import catalog
from collectors.transports.jolokia import JolokiaTransport
from collectors.types import Endpoint
from monitor.stack import kafka, telemetry
from monitor.stack.layout import StackLayout

DRIVER = Path(__file__).resolve().parent / "TelemetryBench.java"
P = "org.apache.kafka."


# --- a minimal OTLP (protobuf) encoder: the payload a Java producer pushes under kafka-health's subscription


def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _len(field: int, body: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(body)) + body


def _point(value: float, node: int | None) -> bytes:
    attrs = b"" if node is None else _len(7, _len(1, b"node.id") + _len(2, _varint(3 << 3) + _varint(node)))
    return (
        attrs + _varint(3 << 3 | 1) + struct.pack("<Q", time.time_ns()) + _varint(4 << 3 | 1) + struct.pack("<d", value)
    )


def _metric(name: str, *points: bytes) -> bytes:
    return _len(1, name.encode()) + _len(3, b"ms") + _len(5, b"".join(_len(1, p) for p in points))


def java_producer_push() -> bytes:
    metrics = [
        _metric(P + "producer.batch.size.avg", _point(16384.0, None)),
        _metric(P + "producer.records.per.request.avg", _point(120.0, None)),
        _metric(P + "producer.record.queue.time.avg", _point(12.5, None)),
        _metric(P + "producer.request.rate", _point(40.0, None)),
        _metric(P + "producer.request.latency.avg", _point(3.2, None)),
        _metric(P + "producer.node.request.latency.avg", *(_point(3.0 + n, n) for n in (1, 2, 3))),
        _metric(P + "producer.produce.throttle.time.avg", _point(0.0, None)),
    ]
    resource = _len(1, _len(1, _len(1, b"client_id") + _len(2, _len(1, b"bench"))))
    scope = _len(1, _len(1, b"org.apache.kafka")) + b"".join(_len(2, m) for m in metrics)
    return _len(1, resource + _len(2, scope))


# --- the JVM side


def jvm_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_driver(jars: Path, plugin: Path, jolokia: Path, payload: Path, clients: int, rounds: int, port: int):
    argv = [
        "java",
        f"-javaagent:{jolokia}=host=127.0.0.1,port={port},discoveryEnabled=false",
        "-Xms384m",
        "-Xmx384m",
        "-XX:+UseG1GC",
        "-XX:ParallelGCThreads=1",
        "-XX:ConcGCThreads=1",
        "-cp",
        f"{jars}/*:{plugin}",
        str(DRIVER),
        str(payload),
        str(clients),
        str(rounds),
    ]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:  # the Jolokia agent prints its own lines first
        if line.startswith("{"):
            return proc, json.loads(line)
    proc.kill()
    raise SystemExit(f"the bench JVM exited ({proc.wait()}) before reporting")


def scrape_costs(port: int, pid: int, scrapes: int) -> dict:
    transport = JolokiaTransport()
    endpoint = Endpoint(jolokia=f"http://127.0.0.1:{port}/jolokia")
    queries = catalog.queries_for(catalog.BROKER_TARGET_RULES)
    tenants = catalog.TenantLookup(None, "bench")
    walls, cpus, series = [], [], 0
    for i in range(scrapes + 2):
        jvm0, cpu0, t0 = jvm_cpu_seconds(pid), time.process_time(), time.perf_counter()
        readings = transport.read(endpoint, queries, timeout=30)
        samples = catalog.convert(
            readings, catalog.BROKER_TARGET_RULES, base=(("cluster", "bench"), ("broker", "1")), tenants=tenants
        )
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0 + jvm_cpu_seconds(pid) - jvm0
        if i >= 2:  # the first two warm up Jolokia and the catalog's caches
            walls.append(wall)
            cpus.append(cpu)
        series = sum(1 for s in samples if s.name.startswith("kafka_client_telemetry_") and "plugin" not in s.name)
    return {"wall": statistics.median(walls), "cpu": statistics.median(cpus), "series": series}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1000,2000", help="client instances held, comma-separated")
    ap.add_argument("--rounds", type=int, default=20, help="pushes per client instance per measured repeat")
    ap.add_argument("--scrapes", type=int, default=15)
    ap.add_argument("--port", type=int, default=23990, help="the bench JVM's Jolokia port (loopback)")
    args = ap.parse_args()
    levels = [int(n) for n in args.levels.split(",")]

    with tempfile.TemporaryDirectory(prefix="kh-bench-telemetry-") as tmp:
        return run(args, levels, Path(tmp))


def run(args, levels: list[int], work: Path) -> int:
    log = work / "setup.log"
    jars = kafka.ensure_jars(StackLayout(dir=work / "stack", port_base=args.port), log)
    jolokia = kafka.ensure_agents(log) / kafka.JOLOKIA_JAR
    plugin = telemetry.ensure_plugin(log)
    payload = work / "push.bin"
    payload.write_bytes(java_producer_push())
    print(f"payload: a Java producer's push under the kafka-health subscription, {payload.stat().st_size} bytes")

    results = {}
    for n in [0, *levels]:
        proc, report = start_driver(jars, plugin, jolokia, payload, n, args.rounds if n else 0, args.port)
        try:
            report["scrape"] = scrape_costs(args.port, proc.pid, args.scrapes)
        finally:
            proc.stdin.close()
            proc.wait(30)
        results[n] = report

    base = results[0]["scrape"]
    print(f"\ncollector, one broker scrape (Jolokia read + catalog), medians of {args.scrapes}:")
    print(f"{'clients':>8} {'series':>7} {'wall ms':>8} {'cpu ms':>7} {'x base cpu':>10}")
    for n, r in results.items():
        s = r["scrape"]
        print(f"{n:>8} {s['series']:>7} {s['wall'] * 1e3:>8.1f} {s['cpu'] * 1e3:>7.1f} {s['cpu'] / base['cpu']:>10.1f}")
    print(
        "\nbroker plugin (medians of 5 interleaved repeats; "
        "baseline: parsing the same pushes with Kafka's OTLP classes):"
    )
    print(
        f"{'clients':>8} {'us/push':>8} {'parse us':>8} {'ratio':>6} {'cpu % at 60 s push':>19} "
        f"{'heap MiB':>9} {'KiB/1000 clients':>17} {'failures':>8}"
    )
    for n in levels:
        r = results[n]
        plugin_us = statistics.median(r["plugin_ns_per_push"]) / 1e3
        parse_us = statistics.median(r["parse_ns_per_push"]) / 1e3
        share = n / 60 * plugin_us / 1e6 * 100  # of one core, N clients pushing once a minute
        held = r["heap_full_bytes"] - r["heap_empty_bytes"]
        print(
            f"{n:>8} {plugin_us:>8.1f} {parse_us:>8.1f} {plugin_us / parse_us:>6.2f} {share:>18.4f}% "
            f"{held / 2**20:>9.1f} {held / n * 1000 / 1024:>17.0f} {r['failures']:>8}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
