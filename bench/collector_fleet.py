"""One collector process pinned to one core, scraping a fleet of N brokers on a fixed interval: does it keep up?

    .venv/bin/python bench/collector_fleet.py [--brokers 50] [--interval 30] [--rounds 4]
                                              [--transports jolokia,jmxquery] [--dir /tmp/kafka-health-fleet]
                                              [--port-base 19300] [--down]
    .venv/bin/python bench/collector_fleet.py --partitions 10000 --brokers 500 --interval 30 [--baseline 7ec0a17]

**--partitions N** (issue 33, item 5: 500 brokers of 10,000 partitions per collector core): broker-1 gets N
partitions (RF 1, pinned to it; the stack's brokers get ``--broker-heap``), and its real Jolokia answer to the
collector's queries is recorded once. Three brokers cannot answer 500 reads of that size every 30 s on this machine
(each costs a broker about 0.3 CPU s), so a replay server, pinned to the other CPU, answers every target with that
recording: target k gets the topics renamed ``k-...``, so each target's 10,000 MBean names are its own, as across a
real fleet (where no name cache holds them all), and ``Connection: close``, as 500 distinct brokers read every 30 s
would be. What the collector does is measured whole: the HTTP read, parsing, the catalog, the snapshot. What is
not: the brokers' side. With ``--baseline COMMIT`` the same fleet is read by that commit's collectors/ and monitor/
(``git archive``) first, and the ratio printed.

The local stack has three brokers, so the fleet's N broker targets are the three real brokers' endpoints used again
and again (target k is broker 1 + k mod 3, under its own id): every target is a real remote read of a real broker
with its real MBeans, and the collector does for each what it would do for a distinct broker (one transport call,
the catalog conversion, the snapshot). Controllers, host and Admin targets are left out: the issue's figure is
brokers per core.

For each transport a child process runs ``CollectionService`` with the JMX collector over those N targets, pinned
to one CPU (``sched_setaffinity``), the pool size and per-target timeout of the default config, for --rounds rounds
``submit_round`` every --interval seconds as serve's loop does (a target still running is not submitted again).
Printed per transport: the collector's CPU seconds per round (its own and its children's: jmxquery starts a JVM per
call) as a share of the interval on that one core, the median time for a round to finish, targets OK / failed /
skipped per round, and the brokers' CPU per round (Jolokia does its work inside the brokers). The ratio is against
the first transport listed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import wait
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from monitor.core.config import BrokerTarget, JmxSettings
from monitor.stack import Stack, StackLayout

TICKS = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def own_cpu() -> float:
    me, ch = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime


def fleet_config(stack: Stack, brokers: int, transport: str, replay_port: int = 0):
    cfg = stack.config()
    real = cfg.clusters[0].brokers
    fleet = tuple(
        BrokerTarget(
            id=1000 + k,
            jmx=real[k % len(real)].jmx,
            jolokia=f"http://127.0.0.1:{replay_port}/jolokia/{k}/" if replay_port else real[k % len(real)].jolokia,
        )
        for k in range(brokers)
    )
    cluster = cfg.clusters[0].model_copy(
        update={
            "brokers": fleet,
            "controller_jmx": (),
            "jmx": cfg.clusters[0].jmx.model_copy(update={"transport": transport}),
        }
    )
    return cfg.model_copy(update={"clusters": (cluster,)}), cluster


def child(args) -> None:
    """Runs pinned to one CPU: the collection rounds; prints one JSON line."""
    from prometheus_client import CollectorRegistry

    from collectors.catalog import TenantLookup
    from collectors.component import CollectionService
    from collectors.jmx import JmxCollector
    from collectors.transports.jmxquery import JmxQueryTransport
    from collectors.transports.jolokia import JolokiaTransport
    from collectors.types import TargetStatus

    os.sched_setaffinity(0, {args.cpu})
    stack = Stack(StackLayout(dir=Path(args.dir), port_base=args.port_base), log=lambda *a: None)
    cfg, cluster = fleet_config(stack, args.brokers, args.child, replay_port(args) if args.partitions else 0)
    cfg = cfg.model_copy(update={"collection": cfg.collection.model_copy(update={"interval_seconds": args.interval})})
    t = JolokiaTransport() if args.child == "jolokia" else JmxQueryTransport()
    jmx = JmxCollector(
        cluster,
        transport=t,
        controller_transport=t,
        tenants=TenantLookup(None, cluster.name),
        max_series=cfg.collection.max_series_per_target,
    )
    svc = CollectionService(cfg, registry=CollectorRegistry(), collectors=[jmx])
    rounds = []
    reads: list[float] = []  # the CPU used so far, as each read finished (list.append is atomic)
    start_cpu = own_cpu()
    next_at = time.monotonic()
    try:
        for _ in range(args.rounds):
            cpu0, t0 = own_cpu(), time.monotonic()
            futures = svc.submit_round()
            for f in futures:
                f.add_done_callback(lambda f: None if f.cancelled() else reads.append(own_cpu()))
            done, _pending = wait(futures, timeout=max(0.0, next_at + args.interval - time.monotonic()))
            finished = time.monotonic() - t0
            results = [f.result() for f in done]
            next_at += args.interval
            time.sleep(max(0.0, next_at - time.monotonic()))
            rounds.append(
                {
                    "cpu": own_cpu() - cpu0,
                    "finished_s": finished if len(done) == len(futures) else None,
                    "ok": sum(r.status is TargetStatus.OK for r in results),
                    "failed": sum(r.status is TargetStatus.FAILED for r in results),
                    "late": len(futures) - len(done),
                    "skipped": args.brokers - len(futures),
                }
            )
    finally:
        svc.stop()
    # CPU per finished read over the run, from the first read's end to the last's: a saturated pool finishes reads of
    # earlier rounds in later ones, so per-round counts alone would not say what a read costs
    done = sorted(reads)
    per_read = (done[-1] - start_cpu) / len(done) if done else float("nan")
    print(json.dumps({"rounds": rounds, "reads": len(done), "cpu_per_read": per_read}), flush=True)


def round_summary(rounds: list[dict], interval: float) -> tuple[float, str]:
    """The median collector CPU of a round after the first (which pays for imports, JIT and connections), and the
    line that says how the rounds went; the rounds themselves go to stderr."""
    steady = rounds[1:] or rounds
    cpu = statistics.median(r["cpu"] for r in steady)
    finished = [r["finished_s"] for r in steady if r["finished_s"] is not None]
    outcomes = "/".join(
        str(round(statistics.median(r[k] for r in steady))) for k in ("ok", "failed", "late", "skipped")
    )
    print(f"            rounds: {json.dumps(rounds)}", file=sys.stderr)
    return cpu, (
        f"collector CPU {cpu:6.2f} s/round = {cpu / interval:6.1%} of one core   round finished in "
        f"{statistics.median(finished) if finished else float('nan'):6.2f} s (median; {len(steady) - len(finished)} "
        f"of {len(steady)} rounds unfinished at the next tick)   per round ok/failed/late/skipped {outcomes}"
    )


def replay_port(args) -> int:
    return args.port_base + 47


def replay(args) -> None:
    """The replay server (``--partitions``): every POST gets the recording, its topics renamed per target."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    os.sched_setaffinity(0, {1 - args.cpu} & os.sched_getaffinity(0) or os.sched_getaffinity(0))
    recording = Path(args.recording).read_bytes()

    class Answer(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            k = self.path.strip("/").rsplit("/", 1)[-1].encode()
            body = recording.replace(b"topic=", b"topic=" + k + b"-")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", replay_port(args)), Answer)
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


def record_broker(stack: Stack, partitions: int, path: Path) -> int:
    """``partitions`` on broker-1 (RF 1, pinned to it), then its Jolokia answer to the collector's queries, saved."""
    import httpx

    from collectors.jmx import BROKER_QUERIES
    from collectors.transports.jolokia import JolokiaTransport
    from collectors.types import Endpoint, MBeanQuery
    from tests.harness.engine import create_topics, pinned_topics

    broker = stack.config().clusters[0].brokers[0]
    count = MBeanQuery("kafka.server:type=ReplicaManager,name=PartitionCount", ("Value",))

    def have() -> int:
        return int(JolokiaTransport().read(Endpoint(jolokia=broker.jolokia), [count], timeout=30)[0].value)

    missing = partitions - have()
    if missing > 0:
        create_topics(stack, pinned_topics(f"fleet-{partitions}-{int(time.time())}", 1, missing))
        deadline = time.monotonic() + 600
        while have() < partitions and time.monotonic() < deadline:
            time.sleep(2)
    body = JolokiaTransport.body(BROKER_QUERIES)
    answer = httpx.post(broker.jolokia.rstrip("/") + "/", json=body, timeout=120)
    answer.raise_for_status()
    path.write_bytes(answer.content)
    return have()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--brokers", type=int, default=50)
    ap.add_argument("--interval", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--transports", default="jolokia,jmxquery")
    ap.add_argument("--dir", default="/tmp/kafka-health-fleet")
    ap.add_argument("--port-base", type=int, default=19300)
    ap.add_argument("--cpu", type=int, default=0, help="the CPU the collector is pinned to")
    ap.add_argument("--down", action="store_true", help="stop the stack at the end")
    ap.add_argument("--partitions", type=int, default=0, help="broker-1's partitions, answered by a replay server")
    ap.add_argument("--broker-heap", default="1g", help="the brokers' heap with --partitions")
    ap.add_argument("--baseline", help="with --partitions: a commit whose collectors read the same fleet first")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--tree", help=argparse.SUPPRESS)
    ap.add_argument("--recording", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.tree:  # a baseline's child: its collectors and monitor first on the path
        sys.path.insert(0, args.tree)
        for name in [m for m in sys.modules if m.split(".")[0] in ("collectors", "monitor")]:
            del sys.modules[name]
        import monitor.core.config
        import monitor.stack

        globals().update(
            BrokerTarget=monitor.core.config.BrokerTarget,
            JmxSettings=monitor.core.config.JmxSettings,
            Stack=monitor.stack.Stack,
            StackLayout=monitor.stack.StackLayout,
        )
    if args.child == "replay":
        replay(args)
        return 0
    if args.child:
        child(args)
        return 0

    if args.partitions:
        from monitor.stack.kafka import HEAP

        HEAP["broker"] = args.broker_heap  # this run's stack only (bench-only: the tests keep their small heaps)
    stack = Stack(StackLayout(dir=Path(args.dir), port_base=args.port_base), log=lambda *a: print(*a, file=sys.stderr))
    stack.up()
    if args.partitions:
        return replayed_fleet(args, stack)
    timeout = JmxSettings().timeout_seconds
    brokers = {s.name: s.pid for s in stack.status() if s.name.startswith("broker") and s.pid}
    print(
        f"{args.brokers} broker targets on one CPU, every {args.interval:g} s, {args.rounds} rounds "
        f"(pool {8} workers, timeout {timeout:g} s per target); load average {os.getloadavg()[0]:.1f}"
    )
    summary = {}
    try:
        for transport in args.transports.split(","):
            b0 = sum(proc_cpu(p) for p in brokers.values())
            out = subprocess.run(
                [sys.executable, __file__, "--child", transport, *sys.argv[1:]],
                capture_output=True,
                text=True,
                check=True,
            )
            broker_cpu = sum(proc_cpu(p) for p in brokers.values()) - b0
            report = json.loads(out.stdout.strip().splitlines()[-1])
            cpu, how = round_summary(report["rounds"], args.interval)
            summary[transport] = cpu
            print(
                f"  {transport:<9} {how}   brokers' CPU {broker_cpu / len(report['rounds']):6.2f} s/round", flush=True
            )
        first = args.transports.split(",")[0]
        for transport, cpu in summary.items():
            if transport != first and summary[first] > 0:
                print(f"  collector CPU {transport} / {first}: {cpu / summary[first]:.1f}x")
    finally:
        if args.down:
            stack.down()
    return 0


def replayed_fleet(args, stack: Stack) -> int:
    recording = Path(args.dir) / f"jolokia-{args.partitions}.json"
    have = record_broker(stack, args.partitions, recording)
    trees = [("this", None)]
    if args.baseline:
        old = Path(tempfile.mkdtemp(prefix="kh-fleet-baseline-"))
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.baseline, "collectors", "monitor"], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        trees.insert(0, (args.baseline, str(old)))
    own = [a for a in sys.argv[1:] if a != "--down"]
    server = subprocess.Popen(
        [sys.executable, __file__, *own, "--child", "replay", "--recording", str(recording)],
        stdout=subprocess.PIPE,
        text=True,
    )
    print(
        f"{args.brokers} broker targets of {have:,} partitions each (broker-1's recorded Jolokia answer, "
        f"{recording.stat().st_size / 2**20:.1f} MiB, replayed with names of their own) on one CPU, every "
        f"{args.interval:g} s, {args.rounds} rounds; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    cpu_of: dict[str, float] = {}
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        for name, tree in trees:
            out = subprocess.run(
                [sys.executable, __file__, *own, "--child", "jolokia", *(["--tree", tree] if tree else [])],
                capture_output=True,
                text=True,
                check=True,
            )
            report = json.loads(out.stdout.strip().splitlines()[-1])
            per_read = cpu_of[name] = report["cpu_per_read"]
            _, how = round_summary(report["rounds"], args.interval)
            print(
                f"  {name:<9} {per_read * 1000:5.1f} ms of collector CPU a read ({report['reads']} reads): one core "
                f"holds {args.interval / per_read:.0f} such brokers at {args.interval:g} s   {how}",
                flush=True,
            )
        if args.baseline:
            print(f"  collector CPU a read, this / {args.baseline}: {cpu_of['this'] / cpu_of[args.baseline]:.2f}x")
    finally:
        server.kill()
        server.wait(10)
        if args.down:
            stack.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
