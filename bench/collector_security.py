"""What TLS and authentication cost the collectors: per-scrape wall time and collector CPU on a plaintext stack and
on a secured one (SASL_SSL with SCRAM-SHA-512, ACLs, Jolokia with basic auth), in one run.

    .venv/bin/python bench/collector_security.py [--rounds 30] [--port-base 19500]

For each mode in turn (plaintext first: the baseline) it starts a fresh local stack, runs the demo's load (two
tenants, a producer and a consumer each) for 20 s, then times --rounds collection rounds of the JMX collector
(Jolokia, all brokers and the controller) and of the Admin collector (metadata, groups, offsets, watermarks; its
client in a child process, as in production), one after the other, and the first Admin round on its own (a new
client: TCP + TLS handshake + SCRAM exchange). It prints medians and the secured / plaintext ratios. The stacks run
one after the other on the same machine; the load and the cluster are the same.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collectors.component import build_collectors
from monitor.demo.lifecycle import onboard_demo_tenants
from monitor.demo.story import DEMO_LOAD, DEMO_TENANTS
from monitor.loadgen import LoadGenerator
from monitor.stack import Stack, StackLayout
from monitor.stack.procs import port_free


def cpu() -> float:
    """CPU seconds of this process and its finished children (the Admin client process counts once it exits)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def measure(mode: str, work: Path, port_base: int, rounds: int) -> dict[str, list[float]]:
    layout = StackLayout(
        dir=work / mode, port_base=port_base, secured=mode == "sasl_ssl", plaintext_listener=mode != "sasl_ssl"
    )
    deadline = time.monotonic() + 60  # a previous stack's JVMs release their ports a moment after they exit
    while time.monotonic() < deadline and not all(port_free(p) for p in layout.all_ports().values()):
        time.sleep(0.5)
    stack = Stack(layout, log=lambda *_: None)
    stack.up(timeout=300)
    load = LoadGenerator(stack.admin_settings(), DEMO_LOAD, tenant_conns=onboard_demo_tenants(stack))
    out: dict[str, list[float]] = {"jmx_wall": [], "jmx_cpu": [], "admin_wall": [], "admin_first": []}
    try:
        load.start()
        time.sleep(20)
        collectors = build_collectors(stack.config(tenants=DEMO_TENANTS))
        jmx = next(c for c in collectors if type(c).__name__ == "JmxCollector")
        admin = next(c for c in collectors if type(c).__name__ == "AdminCollector")
        (admin_target,) = admin.targets()
        t0 = time.monotonic()
        first = admin.collect_target(admin_target, now=time.time())
        out["admin_first"].append(time.monotonic() - t0)
        assert first.status.value == "ok", first.message
        for _ in range(rounds):
            c0, t0 = cpu(), time.monotonic()
            for target in jmx.targets():
                r = jmx.collect_target(target, now=time.time())
                assert r.status.value == "ok", r.message
            out["jmx_wall"].append(time.monotonic() - t0)
            out["jmx_cpu"].append(cpu() - c0)
            t0 = time.monotonic()
            r = admin.collect_target(admin_target, now=time.time())
            assert r.status.value == "ok", r.message
            out["admin_wall"].append(time.monotonic() - t0)
            time.sleep(1)
        admin.close()
    finally:
        load.stop()
        stack.down()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--port-base", type=int, default=19500)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kh-bench-collector-security-"))
    got = {mode: measure(mode, work, args.port_base, args.rounds) for mode in ("plaintext", "sasl_ssl")}
    print(
        f"collector cost per round, plaintext vs secured stack (medians of {args.rounds} rounds; Kafka 4.1.1, "
        "3 brokers + controller, demo load)"
    )
    labels = {
        "jmx_wall": "JMX (Jolokia) round, wall s",
        "jmx_cpu": "JMX round, collector CPU s",
        "admin_wall": "Admin round, wall s",
        "admin_first": "first Admin round (new client), wall s",
    }
    for key, label in labels.items():
        p, s = statistics.median(got["plaintext"][key]), statistics.median(got["sasl_ssl"][key])
        print(f"  {label:<42} plaintext {p:8.4f}   secured {s:8.4f}   ratio {s / p if p else float('nan'):5.2f}x")


if __name__ == "__main__":
    main()
