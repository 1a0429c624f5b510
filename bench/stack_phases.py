"""Where ``stack up`` spends its time, phase by phase: the secured test stack (SASL_SSL plus the anonymous PLAINTEXT
listener, as tests/conftest.py makes it) started in a new directory and stopped again, --reps times, on one port base.

    .venv/bin/python bench/stack_phases.py [--reps 3] [--port-base 20200] [--security both] [--json FILE]
    .venv/bin/python bench/stack_phases.py --compare BEFORE.json AFTER.json

Each phase is the wall time of one step of ``Stack._up`` (found by name; a step another step calls is counted in
the outer one), "other" is the rest (port checks, state file, starting the processes). Beside it the CPU seconds the
step cost: this process and the tool JVMs it ran and reaped; at the end the CPU the stack's own processes (brokers,
controller, Prometheus, Alertmanager) spent until ready. Wall time on a shared 2-core machine moves with its load, CPU
time much less: compare both. Prints each rep, then the median per phase, with the load average before and after.
``--json`` appends each rep to FILE; ``--compare`` prints the medians of two such files (e.g. HEAD's bench run from a
``git archive`` copy, interleaved rep by rep with the work tree's) and their ratio. Jars and agents must be cached
already (any earlier ``stack up``): the cold path is bench/stack.py's.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from monitor import stack as stack_pkg
from monitor.stack import Stack, StackLayout, kafka, observability, security, telemetry
from monitor.stack.layout import resolve_kafka_version
from monitor.stack.procs import port_free

CLUSTER_SETTINGS = "quota, subscription, offsets"
# (owner, attribute, phase). Missing attributes are skipped, so the same script times older and newer code.
STEPS = [
    (observability, "ensure_installed", "resolve binaries and jars"),
    (kafka, "ensure_jars", "resolve binaries and jars"),
    (kafka, "ensure_agents", "resolve binaries and jars"),
    (telemetry, "ensure_plugin", "resolve binaries and jars"),
    (security.StackSecurity, "ensure", "certificates and secrets"),
    (kafka, "prepare_node", "format storage"),
    (Stack, "_start_kafka", "format storage"),
    (Stack, "wait_ready", "wait for readiness"),
    (Stack, "_bootstrap_principals", "SCRAM users and ACLs"),
    # The default client quota, the telemetry subscription and __consumer_offsets: one after the other before 2026-11
    # (three phases summed into one row), side by side in _configure_cluster since.
    (kafka, "set_default_client_quota", CLUSTER_SETTINGS),
    (Stack, "_ensure_offsets_topic", CLUSTER_SETTINGS),
    (kafka, "run_config_command", CLUSTER_SETTINGS),
    (Stack, "_configure_cluster", CLUSTER_SETTINGS),
]

timeline: dict[str, float] = {}
_depth = [0]


def cpu_seconds() -> float:
    """CPU of this process (its librdkafka threads too) and of the children it has reaped (the tool JVMs)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def process_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def _timed(fn, phase: str):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _depth[0]:
            return fn(*args, **kwargs)
        _depth[0] += 1
        t0, c0 = time.monotonic(), cpu_seconds()
        try:
            return fn(*args, **kwargs)
        finally:
            _depth[0] -= 1
            timeline[phase] = timeline.get(phase, 0.0) + time.monotonic() - t0
            timeline[f"{phase} cpu"] = timeline.get(f"{phase} cpu", 0.0) + cpu_seconds() - c0

    return wrapper


def instrument() -> list[str]:
    phases: list[str] = []
    for owner, attr, phase in STEPS:
        fn = getattr(owner, attr, None)
        if fn is None:
            continue
        setattr(owner, attr, _timed(fn, phase))
        if phase not in phases:
            phases.append(phase)
    # Stack._up calls these through the module objects it imported, so patching the modules is enough.
    assert stack_pkg.kafka is kafka
    return phases


def wait_ports_free(layout: StackLayout, timeout: float = 60.0) -> None:
    """The previous stack's JVMs release their ports a moment after they exit: not part of the next start-up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not all(port_free(p) for p in layout.all_ports().values()):
        time.sleep(0.5)


def one_rep(work: Path, rep: int, port_base: int, security_mode: str) -> dict[str, float]:
    layout = StackLayout(
        dir=work / f"rep-{rep}",
        port_base=port_base,
        kafka_version=resolve_kafka_version(None),
        secured=security_mode != "plaintext",
        plaintext_listener=security_mode != "sasl_ssl",
    )
    wait_ports_free(layout)
    stack = Stack(layout, log=lambda *_: None)
    timeline.clear()
    t0, c0 = time.monotonic(), cpu_seconds()
    try:
        stack.up(timeout=300)
        total, total_cpu = time.monotonic() - t0, cpu_seconds() - c0
        components = sum(process_cpu(s.pid) for s in stack.status() if s.pid)
    finally:
        t1 = time.monotonic()
        stack.down()
        timeline["(stack down)"] = time.monotonic() - t1
    out = dict(timeline)
    out["other"] = total - sum(v for k, v in timeline.items() if not k.endswith(" cpu") and k != "(stack down)")
    out["total up"] = total
    out["total up cpu"] = total_cpu
    out["stack processes cpu until ready"] = components
    out["load1"] = os.getloadavg()[0]
    return out


ROWS_TAIL = ["other", "total up", "stack processes cpu until ready", "(stack down)"]


def print_medians(reps: list[dict[str, float]], phases: list[str]) -> None:
    for phase in [*phases, *ROWS_TAIL]:
        wall = [r.get(phase, 0.0) for r in reps]
        cpu = [r.get(f"{phase} cpu", 0.0) for r in reps]
        if any(wall) or any(cpu):
            c = f"cpu {statistics.median(cpu):5.1f}" if any(cpu) else " " * 9
            print(f"  {phase:<32} {statistics.median(wall):6.1f}  {c}   ({', '.join(f'{v:.1f}' for v in wall)})")


def compare(before_file: str, after_file: str) -> None:
    runs = [
        [json.loads(line) for line in Path(f).read_text().splitlines() if line.strip()]
        for f in (before_file, after_file)
    ]
    phases = list(dict.fromkeys(k for reps in runs for r in reps for k in r if not k.endswith(" cpu")))
    phases = [p for p in phases if p not in ROWS_TAIL and p != "load1"]
    print(
        f"medians, seconds: wall (cpu); load1 during the reps {[round(r['load1'], 1) for reps in runs for r in reps]}"
    )
    print(f"  {'phase':<32} {'before':>14} {'after':>14}")
    for phase in [*phases, *ROWS_TAIL]:
        cells = []
        for reps in runs:
            wall = statistics.median(r.get(phase, 0.0) for r in reps)
            cpu = [r.get(f"{phase} cpu") for r in reps if f"{phase} cpu" in r]
            cells.append(f"{wall:6.1f}" + (f" ({statistics.median(cpu):4.1f})" if cpu else "       "))
        print(f"  {phase:<32} {cells[0]:>14} {cells[1]:>14}")
    for key in ("total up", "total up cpu", "(stack down)"):
        b, a = (statistics.median(r[key] for r in reps) for reps in runs)
        print(f"  {key}: after / before {a / b:.2f}x ({b - a:+.1f} s saved)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--port-base", type=int, default=20200)
    ap.add_argument("--security", default="both", choices=["both", "sasl_ssl", "plaintext"])
    ap.add_argument("--json", help="append each rep as one JSON line to this file")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="medians of two --json files")
    args = ap.parse_args()
    if args.compare:
        compare(*args.compare)
        return
    phases = instrument()
    work = Path(tempfile.mkdtemp(prefix="kh-bench-phases-"))
    load_before = os.getloadavg()
    reps = []
    for rep in range(args.reps):
        r = one_rep(work, rep, args.port_base, args.security)
        reps.append(r)
        print(f"rep {rep + 1}: " + ", ".join(f"{k} {v:.1f}" for k, v in r.items()), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(r) + "\n")
    load_after = os.getloadavg()
    print(
        f"\nstack up --security {args.security} (Kafka {resolve_kafka_version(None)}, new stack dir each rep), "
        f"medians of {args.reps} reps, seconds; load average 1/5/15 min before "
        f"{'/'.join(f'{x:.1f}' for x in load_before)}, after {'/'.join(f'{x:.1f}' for x in load_after)}"
    )
    print_medians(reps, phases)


if __name__ == "__main__":
    main()
