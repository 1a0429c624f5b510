"""Time from ``stack up`` to ready (cold and warm jar cache) and resident memory of each component, for each
supported Kafka version and security mode (plaintext; secured: SASL_SSL, ACLs, JMX passwords) side by side in one run.

    .venv/bin/python bench/stack.py [--runs 3] [--port-base 19800] [--skip-cold] [--modes sasl_ssl]
                                    [--versions 3.9,4.1,4.4]

Variants are every version x mode, measured one after the other; the first is the baseline of the ratios.

cold: empty kafka-health jar cache AND an empty Maven local repository (everything downloaded from Maven Central).
warm: jars cached, new stack directory (storage formatted anew).
restart: same stack directory, stopped and started again.
Prints medians over --runs (cold runs once) and RSS per component after the cluster settles.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from monitor.core.kafka_versions import supported_versions
from monitor.stack import Stack, StackLayout
from monitor.stack.layout import resolve_kafka_version
from monitor.stack.procs import port_free


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def wait_ports_free(layout: StackLayout, timeout: float = 60.0) -> None:
    """The previous stack's JVMs release their ports a moment after they exit: not part of the next start-up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not all(port_free(p) for p in layout.all_ports().values()):
        time.sleep(0.5)


def timed_up(layout: StackLayout) -> tuple[float, Stack]:
    wait_ports_free(layout)
    stack = Stack(layout, log=lambda *_: None)
    t0 = time.monotonic()
    stack.up(timeout=300)
    return time.monotonic() - t0, stack


def mode_layout(directory: Path, port_base: int, mode: str, version: str | None = None) -> StackLayout:
    return StackLayout(
        dir=directory,
        port_base=port_base,
        secured=mode != "plaintext",
        plaintext_listener=mode != "sasl_ssl",
        kafka_version=resolve_kafka_version(version),
    )


def measure_mode(
    work: Path, port_base: int, variant: str, runs: int
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """warm and restart times and idle RSS of one ``version/mode`` variant (same machine, same run)."""
    version, mode = variant.split("/")
    results: dict[str, list[float]] = {"warm": [], "restart": []}
    stack = None
    for i in range(runs):
        secs, stack = timed_up(mode_layout(work / f"{version}-{mode}-warm-{i}", port_base, mode, version))
        results["warm"].append(secs)
        if i < runs - 1:
            stack.down()
    assert stack is not None
    time.sleep(20)  # let JIT and GC settle before reading memory
    rss = {s.name: rss_mib(s.pid) for s in stack.status() if s.pid}
    for _ in range(runs):
        stack.down()
        secs, stack = timed_up(stack.layout)
        results["restart"].append(secs)
    stack.down()
    return results, rss


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--port-base", type=int, default=19800)
    ap.add_argument("--skip-cold", action="store_true")
    ap.add_argument("--modes", default="sasl_ssl", help="security modes to compare (plaintext, sasl_ssl, both)")
    ap.add_argument("--versions", default=",".join(supported_versions()), help="Kafka versions to compare")
    args = ap.parse_args()
    # Each variant is version/mode; the first is the baseline of the ratios.
    modes = [f"{resolve_kafka_version(v)}/{m}" for v in args.versions.split(",") for m in args.modes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="kh-bench-stack-"))
    cold: list[float] = []

    if not args.skip_cold:
        saved = {k: os.environ.get(k) for k in ("KAFKA_HEALTH_CACHE_DIR", "MAVEN_OPTS")}
        os.environ["KAFKA_HEALTH_CACHE_DIR"] = str(work / "cold-cache")
        os.environ["MAVEN_OPTS"] = f"-Dmaven.repo.local={work / 'cold-m2'}"
        version, mode = modes[-1].split("/")
        secs, stack = timed_up(mode_layout(work / "cold", args.port_base, mode, version))
        stack.down()
        cold.append(secs)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    measured = {mode: measure_mode(work, args.port_base, mode, args.runs) for mode in modes}

    print(
        "stack up -> ready (1 controller + 3 brokers, Prometheus, Alertmanager); medians of "
        f"{args.runs} runs per Kafka version/security mode, run one after the other on this machine"
    )
    if cold:
        print(f"  cold ({modes[-1]}, empty jar cache and Maven repository): {cold[0]:.1f} s")
    for kind in ("warm", "restart"):
        line = "  ".join(f"{mode} {statistics.median(measured[mode][0][kind]):5.1f} s" for mode in modes)
        print(
            f"  {kind:<8} {line}   runs: "
            + "; ".join(f"{m}: {', '.join(f'{v:.1f}' for v in measured[m][0][kind])}" for m in modes)
        )
    base = modes[0]
    for mode in modes[1:]:
        for kind in ("warm", "restart"):
            ratio = statistics.median(measured[mode][0][kind]) / statistics.median(measured[base][0][kind])
            print(f"  {kind} {mode} / {base}: {ratio:.2f}x")
    print("resident memory after 20 s idle (MiB):")
    names = list(measured[modes[0]][1])
    print(f"  {'component':<14}" + "".join(f"{m:>16}" for m in modes))
    for name in names:
        print(f"  {name:<14}" + "".join(f"{measured[m][1].get(name, float('nan')):16.0f}" for m in modes))
    totals = {m: sum(measured[m][1].values()) for m in modes}
    print(f"  {'total':<14}" + "".join(f"{totals[m]:16.0f}" for m in modes))
    for mode in modes[1:]:
        print(f"  memory {mode} / {base}: {totals[mode] / totals[base]:.2f}x")


if __name__ == "__main__":
    main()
