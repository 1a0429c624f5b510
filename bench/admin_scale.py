"""The Admin collector's round at the scale of the largest shared clusters, this code beside the previous code.

    .venv/bin/python bench/admin_scale.py [--port-base 20700] [--dir /tmp/kafka-health-admin-scale]
        [--groups 2000,5000,10000] [--partitions 25000,50000,200000] [--rounds 3] [--baseline 42091c5] [--down]
        [--without-kinds] [--repeat 2]

On a plaintext local stack (``monitor.stack``, started if it is not running): N consumer groups, each holding committed
offsets on 6 partitions of one of 200 topics (the issue's set-up), made by AlterConsumerGroupOffsets; then P
partitions in topics of 20 (RF 1), on whose every partition one of the groups commits, so the round reads metadata,
min.insync.replicas and watermarks for all of them. At each level, ``--rounds`` production rounds (an
``AdminCollector`` with its Admin client in a child process, 15 s interval, default caps) after one warm-up round, of
this tree and of the ``--baseline`` commit (``git archive`` of its collectors/ and monitor/, run in a subprocess), one
after the other: median round time, groups with a lag series, groups skipped, series dropped by the cap, and the time
of the round's calls measured alone (metadata, min ISR of every topic, watermarks of every partition, describing
every group: the round describes only non-empty ones), and the resident memory of the collector's process (peak) and
of its Admin child. ``--without-kinds`` adds this tree with its group-kinds read off; ``--repeat 2`` measures
every tree twice, the second time in reverse order (the first tree after the set-up was the slowest in every run).
Levels are cumulative: the groups stay when the partitions are added. What the stack cannot hold is said and skipped
(a broker opens a file and maps two indexes per partition; the stack's brokers have 384 MiB of heap, out at about
11,700 partitions each). Besides the rounds: the first round of a new Admin child, and listing plus describing every
group through this tree's path against librdkafka's, interleaved in one process (the round describes only non-empty
groups, and these are all empty).

Measured 2026-11-27 06:50-07:00 UTC (load average 7-22, two other engineers' work on the 2 cores), groups listed and
described through kafka-python (c675569) beside the code before it:

    .venv/bin/python bench/admin_scale.py --port-base 20200 --dir /tmp/kh33/bench --groups 2000,5000,10000 \
        --partitions 25000 --rounds 3 --baseline c675569~1 --down

                 round median (range)     groups with lag  skipped/  list+describe all   first round   child RSS
                 this / before            this / before    dropped   kafka-py/librdkafka this / before  this/before
  2,000 groups   3.18 (2.4-4.1) / 1.82 s   2,000 / 2,000    0 / 0     0.22 / 3.01 s       7.18 / 5.31 s  66 / 63 MiB
  5,000 groups   2.14 (1.8-2.8) / 2.10 s   5,000 / 5,000    0 / 0     0.61 / 3.74 s       5.63 / 4.87 s  72 / 75 MiB
 10,000 groups   1.13 (1.1-1.4) / 1.11 s  10,000 / 10,000   0 / 0     0.28 / 3.69 s       1.47 / 1.47 s  85 / 77 MiB
 +25,000 parts   2.99 (2.7-3.1) / 2.87 s  10,000 / 10,000   0 / 0     0.47 / 4.86 s       3.14 / 2.49 s 104 / 110 MiB
 (26,210 partitions; "before" rounds 2.8-6.1 s; librdkafka's list+describe in the "before" process: 7.87 s)

(Each level measured "this" first, "before" second, without --repeat: the first tree after a set-up was the slowest
in every earlier run, which the 2,000-groups row shows again; at 5,000 and 10,000 the rounds are the same within
noise; with 26,210 partitions too.) 50,000 partitions were not run this time (they need --broker-heap 1g and more
minutes than were left). Listing and describing every group: 6.1-13.7x faster through kafka-python, in one
DescribeGroups request per coordinator instead of a librdkafka future per group (the describe that can abort the
process, librdkafka#4605).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOPICS = 200
PARTS_PER_GROUP = 6
PARTS_PER_TOPIC = 20  # the partition levels' topics
INTERVAL = 15.0
# Partitions one broker of the local stack holds: two of its 384 MiB brokers died of OutOfMemoryError at 11,600-11,800
# partitions each while creating 50,000 partitions (RF 1 over 3 brokers).
HEAP_PARTITIONS = 10_000


def _setup_groups(servers: str, start: int, end: int) -> float:
    """Groups scale.g{start..end-1}, each with offsets committed on 6 partitions of one of 200 topics."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": servers})
    topics = [f"scale.t{i}" for i in range(TOPICS)]
    _create(admin, [NewTopic(t, num_partitions=PARTS_PER_GROUP, replication_factor=1) for t in topics])
    t0 = time.monotonic()
    _commit(
        admin,
        {
            f"scale.g{g}": [TopicPartition(topics[g % TOPICS], p, 1) for p in range(PARTS_PER_GROUP)]
            for g in range(start, end)
        },
        ConsumerGroupTopicPartitions,
    )
    return time.monotonic() - t0


def _setup_partitions(servers: str, have: int, want: int) -> float:
    """Topics scale.p{i} of 20 partitions until ``want`` partitions in all; group scale.g{i} commits on all of
    scale.p{i}'s partitions (the groups stay as many)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": servers, "socket.timeout.ms": 300_000})
    t0 = time.monotonic()
    first, last = have // PARTS_PER_TOPIC, want // PARTS_PER_TOPIC
    for i in range(first, last, 50):  # 1,000 partitions a request: the controller answers within the timeout
        _create(
            admin,
            [
                NewTopic(f"scale.p{j}", num_partitions=PARTS_PER_TOPIC, replication_factor=1)
                for j in range(i, min(last, i + 50))
            ],
        )
    _settle(servers, want)
    _commit(
        admin,
        {
            f"scale.g{i}": [TopicPartition(f"scale.p{i}", p, 1) for p in range(PARTS_PER_TOPIC)]
            for i in range(first, last)
        },
        ConsumerGroupTopicPartitions,
    )
    return time.monotonic() - t0


def _room(stack, partitions: int) -> str:
    """Every reason the stack's brokers cannot hold ``partitions`` more (RF 1 over 3 brokers: a file open and two
    index maps per partition), or ""."""
    from monitor.stack.kafka import HEAP

    per_broker = (partitions + TOPICS * PARTS_PER_GROUP) // 3
    why = []
    if per_broker > HEAP_PARTITIONS * _mib(HEAP["broker"]) / 384:
        why.append(
            f"the brokers have {HEAP['broker']} of heap (384m ran out at about 11,700 partitions a broker: "
            f"OutOfMemoryError; --broker-heap raises it)"
        )
    for name in (n for n in stack.component_names() if n.startswith("broker-")):
        pid = stack.procs.owned_pid(name)
        if pid is None:
            continue
        for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
            if line.startswith("Max open files"):
                limit = int(line.split()[3])
                if per_broker + 2_000 > limit:
                    why.append(f"as many open files, and {name}'s limit is {limit:,}")
                    break
        else:
            continue
        break
    maps = int(Path("/proc/sys/vm/max_map_count").read_text())
    if 2 * per_broker + 10_000 > maps:
        why.append(f"{2 * per_broker:,} index maps, and vm.max_map_count is {maps:,}")
    return f"{per_broker:,} partitions a broker need: " + "; ".join(why) if why else ""


def _mib(heap: str) -> float:
    """MiB of a JVM heap setting (384m, 1g)."""
    return float(heap[:-1]) * (1024 if heap[-1].lower() == "g" else 1)


def _settle(servers: str, want: int, limit: float = 900.0) -> None:
    """Until every broker has created the logs of the partitions and answers their watermarks: the controller
    accepts 50,000 partitions in under 30 s, the brokers create their logs for minutes after (about 200 a second
    each on this machine), and a round before that measures the creation, not the collector."""
    sys.path.insert(0, str(ROOT))
    from collectors.admin_client import KafkaAdmin

    admin, end, have = KafkaAdmin({"bootstrap.servers": servers}, timeout=60.0), time.monotonic() + limit, 0
    while time.monotonic() < end:
        parts = [
            (p.topic, p.partition)
            for p in admin.cluster(timeout=60.0).partitions
            if p.topic.startswith("scale.p") and p.leader >= 0
        ]
        if len(parts) >= want:
            have = len(admin.high_watermarks(parts, timeout=60.0))
            if have >= want:
                return
        time.sleep(10)
    raise TimeoutError(f"{want:,} partitions not all served after {limit:g} s ({have:,} answered their watermark)")


def _create(admin, topics) -> None:
    for f in admin.create_topics(topics, request_timeout=300).values():
        try:
            f.result(300)
        except Exception as exc:  # there from an earlier level or run
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise


def _commit(admin, offsets: dict, ConsumerGroupTopicPartitions) -> None:
    """AlterConsumerGroupOffsets, 500 groups in flight (one group a call in confluent-kafka). A partition's error is
    in the answer, not raised (a topic just created can be unknown to its coordinator for a moment: two groups of
    2,000 had no offsets at all in the run of 16:05 UTC): such groups are asked again, up to 5 times."""
    for _ in range(5):
        window: list = []
        failed: dict = {}
        for gid, tps in offsets.items():
            window.append(
                (
                    gid,
                    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(gid, tps)], request_timeout=120)[
                        gid
                    ],
                )
            )
            if len(window) >= 500:
                failed.update(_failed(window, offsets))
                window = []
        failed.update(_failed(window, offsets))
        if not failed:
            return
        print(f"{len(failed)} groups' offsets not committed, asked again", file=sys.stderr, flush=True)
        offsets = failed
        time.sleep(2)
    raise RuntimeError(f"{len(offsets)} groups' offsets not committed after 5 tries")


def _failed(window: list, offsets: dict) -> dict:
    """The groups of ``window`` whose answer carries a partition error."""
    out = {}
    for gid, f in window:
        if any(tp.error is not None for tp in f.result(120).topic_partitions):
            out[gid] = offsets[gid]
    return out


def measure(servers: str, rounds: int, kinds: bool = True) -> dict:
    """Rounds of the ``AdminCollector`` of whatever tree is first on sys.path (this one or the baseline's); without
    ``kinds`` its group-kinds read (the kafka-python ListGroups thread, issue 29) is off."""
    from collectors.admin import AdminCollector
    from collectors.admin_client import KafkaAdmin
    from collectors.catalog import TenantLookup
    from monitor.core.config import BrokerTarget, ClusterConfig, JmxSettings

    cluster = ClusterConfig(
        name="scale", bootstrap_servers=servers, jmx=JmxSettings(), brokers=tuple(BrokerTarget(id=b) for b in (1, 2, 3))
    )
    ac = AdminCollector(cluster, tenants=TenantLookup(None, "scale"), interval=INTERVAL)
    if not kinds:
        ac._kinds_factory = None  # bench-only: what the round costs without the group-kinds read
    target = ac.targets()[0]
    t0 = time.monotonic()
    first = ac.collect_target(target, now=time.time())  # starts the child process, reads min ISR of every topic
    out: dict = {"round": [], "lag_groups": [], "skipped": [], "dropped": [], "message": []}
    # The first round of a new Admin child (its kafka-python client still connecting when the round starts).
    out["first_round"] = time.monotonic() - t0
    out["first_lag_groups"] = len(
        {dict(s.labels)["group"] for s in first.samples if s.name == "kafka_consumergroup_lag"}
    )
    for _ in range(rounds):
        t0 = time.monotonic()
        r = ac.collect_target(target, now=time.time())
        out["round"].append(time.monotonic() - t0)
        out["lag_groups"].append(
            len({dict(s.labels)["group"] for s in r.samples if s.name == "kafka_consumergroup_lag"})
        )
        out["skipped"].append(sum(s.value for s in r.samples if s.name == "kafka_health_admin_skipped_groups"))
        out["dropped"].append(sum(c.series for c in getattr(r, "cuts", ())))
        out["message"].append(r.message[:400])
    # Memory: the collector's process at its peak (rounds, samples, watermark history) and the Admin client's child.
    child = getattr(ac, "_admin", None)
    status = Path(f"/proc/{child.pid}/status").read_text() if child is not None else ""
    out["child_mib"] = next((int(x.split()[1]) / 1024 for x in status.splitlines() if x.startswith("VmRSS:")), 0.0)
    out["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ac.close()
    # The round's calls alone, in-process.
    admin = KafkaAdmin(cluster.client_settings(), timeout=60.0)
    pending = getattr(admin, "_offsets_pending", None)  # this tree connects kafka-python in the background
    if pending is not None:
        pending.result(60)
    t0 = time.monotonic()
    state = admin.cluster(timeout=60.0)
    out["metadata"] = time.monotonic() - t0
    out["partitions"] = len(state.partitions)
    topics = sorted({p.topic for p in state.partitions})
    t0 = time.monotonic()
    out["min_isr_topics"] = len(admin.min_insync_replicas(topics, timeout=60.0))
    out["min_isr"] = time.monotonic() - t0
    every = [(p.topic, p.partition) for p in state.partitions]
    out["watermarks_read"] = len(admin.high_watermarks(every, timeout=60.0))  # warm: connections made
    # This tree's watermark path against librdkafka's 1,000-partition chunks in the same process, interleaved, so
    # the ratio holds whatever the machine's load (the baseline tree has only the librdkafka path).
    _interleaved(
        out,
        "watermarks",
        (admin.high_watermarks, getattr(admin, "_librdkafka_watermarks", None)),
        lambda path: len(path(every, timeout=60.0)),
    )
    # Every group's committed offsets the same way: this tree's batched path (one OffsetFetch per coordinator,
    # kafka-python) against librdkafka's one request per group (the baseline tree has only the latter, as
    # ``committed``); with the groups answered with offsets, of all listed.
    groups = [g.group for g in admin.groups(timeout=60.0)]
    out["groups_listed"] = len(groups)
    _interleaved(
        out,
        "offsets",
        (admin.committed, getattr(admin, "_librdkafka_committed", None)),
        lambda path: sum(isinstance(a, dict) for a in path(groups, timeout=30.0, group_timeout=30.0).values()),
    )
    # What listing and describing every group costs (the round describes only the non-empty ones; these groups are
    # all empty, so the round lists them only): this tree's path (kafka-python: ListGroups to every broker, one
    # DescribeGroups per coordinator) against librdkafka's (a describe future per group), interleaved in one process.
    import concurrent.futures

    from confluent_kafka.admin import AdminClient

    raw = AdminClient(cluster.client_settings())

    def librdkafka_describe_all() -> int:
        ids = [g.group_id for g in raw.list_consumer_groups(request_timeout=30).result(30).valid]
        futs = raw.describe_consumer_groups(ids, request_timeout=30)
        concurrent.futures.wait(list(futs.values()), timeout=30)
        return sum(f.done() and f.exception() is None for f in futs.values())

    reader = getattr(admin, "_groups", None)  # this tree's ConsumerGroups, made by admin.groups() above

    def describe_all() -> int:
        listed = reader._manager.run(reader._list, time.monotonic() + 30)
        described, _ = reader._manager.run(reader.describe, {g.id: g.type for g in listed}, time.monotonic() + 30)
        return len(described)

    _interleaved(
        out,
        "describe_all",
        (describe_all if reader is not None else librdkafka_describe_all, librdkafka_describe_all if reader else None),
        lambda path: path(),
    )
    return out


def _interleaved(out: dict, key: str, paths: tuple, call) -> None:
    """This tree's path and librdkafka's (``paths``; the second None in a tree without it), 3 times each, interleaved
    in one process so the ratio holds whatever the machine's load: ``out[key]``, ``out[key + "_librdkafka"]`` the
    median seconds, ``out[key + "_read"]`` and its librdkafka twin the median of what ``call(path)`` counted. A call
    that raises counts what it took to fail and nothing read, and is said in ``out["failed"]``: one side measurement
    (librdkafka's ListConsumerGroups timed out at 30 s on 10,000 groups once) must not lose the rounds measured."""
    runs: dict[str, list[float]] = {}
    for _ in range(3):
        for suffix, path in zip(("", "_librdkafka"), paths, strict=True):
            if path is not None:
                t0 = time.monotonic()
                try:
                    n = call(path)
                except Exception as exc:  # noqa: BLE001  # said in the row, the run goes on
                    n = 0
                    out.setdefault("failed", []).append(f"{key}{suffix}: {type(exc).__name__} {str(exc)[:80]}")
                runs.setdefault(key + suffix, []).append(time.monotonic() - t0)
                runs.setdefault(f"{key}_read{suffix}", []).append(n)
    for name in (key, f"{key}_read"):
        out[name] = statistics.median(runs[name])
        out[f"{name}_librdkafka"] = statistics.median(runs.get(f"{name}_librdkafka") or runs[name])


def _run(tree: Path, servers: str, rounds: int, kinds: bool = True) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run(
        [sys.executable, __file__, "--measure", servers, "--rounds", str(rounds), "--tree", str(tree)]
        + ([] if kinds else ["--no-kinds"]),
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        raise SystemExit(f"measuring {tree} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _row(label: str, what: str, m: dict) -> str:
    med = statistics.median
    ratio = m["watermarks_librdkafka"] / max(m["watermarks"], 1e-3)
    return (
        f"{label:>22} {what:>9} {med(m['round']):7.2f} s ({min(m['round']):5.2f}-{max(m['round']):5.2f}) "
        f"{med(m['lag_groups']):>9.0f} {med(m['skipped']):>8.0f} {med(m['dropped']):>8.0f} | "
        f"{m['metadata']:6.2f} {m['min_isr']:6.2f} {m['watermarks']:6.2f} s for {m['watermarks_read']} "
        f"partitions (librdkafka {m['watermarks_librdkafka']:5.2f} s, x{ratio:.1f})"
        f" | {m['describe_all']:5.2f} s, {m.get('describe_all_read', 0):.0f} groups (librdkafka "
        f"{m.get('describe_all_librdkafka', m['describe_all']):5.2f} s)"
        f" | {m.get('rss_mib', 0):4.0f} + {m.get('child_mib', 0):4.0f} MiB"
        f" | offsets {m.get('offsets', 0):5.2f} s, {m.get('offsets_read', 0):.0f} of {m.get('groups_listed', 0)} groups"
        f" (librdkafka {m.get('offsets_librdkafka', 0):5.2f} s, {m.get('offsets_read_librdkafka', 0):.0f})"
        + (f" | FAILED: {'; '.join(m['failed'])}" if m.get("failed") else "")
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port-base", type=int, default=20700)
    ap.add_argument("--dir", default="/tmp/kafka-health-admin-scale")
    ap.add_argument("--groups", default="2000,5000,10000")
    ap.add_argument("--partitions", default="25000,50000,200000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", default="42091c5", help="the previous code: a commit before the batched offsets")
    ap.add_argument("--down", action="store_true", help="stop the stack at the end")
    ap.add_argument(
        "--broker-heap",
        default="",
        help="the brokers' heap when this run starts the stack (e.g. 1g: 50,000 partitions need more than the "
        "stack's 384m); a running stack keeps its own",
    )
    ap.add_argument(
        "--without-kinds",
        action="store_true",
        help="also run this tree with its group-kinds read off (the kafka-python ListGroups thread after the lag read)",
    )
    ap.add_argument(
        "--repeat", type=int, default=1, help="measure every tree this many times, every other time in reverse order"
    )
    ap.add_argument("--no-kinds", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    ap.add_argument("--tree", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        sys.path.insert(0, args.tree)
        print(json.dumps(measure(args.measure, args.rounds, kinds=not args.no_kinds)))
        return 0

    sys.path.insert(0, str(ROOT))
    from monitor.stack import Stack, StackLayout
    from monitor.stack.kafka import HEAP

    if args.broker_heap:
        HEAP["broker"] = args.broker_heap  # this run's stack only (bench-only: the tests keep their small heaps)
    stack = Stack(StackLayout(dir=Path(args.dir), port_base=args.port_base), log=lambda *a: print(*a, file=sys.stderr))
    stack.up(timeout=900.0)  # a stack holding 50,000 partitions reloads them for minutes
    servers = stack.config().clusters[0].bootstrap_servers
    old = Path(tempfile.mkdtemp(prefix="kh-admin-baseline-"))
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", args.baseline, "collectors", "monitor"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    print(
        f"load average {os.getloadavg()[0]:.1f} (2 cores shared); {args.rounds} rounds a level after a warm-up; "
        f"baseline {args.baseline}; groups on 6 partitions of {TOPICS} topics; interval {INTERVAL:g} s",
        flush=True,
    )
    print(
        f"{'level':>22} {'code':>9} {'round median (min-max)':>24} {'lag grps':>9} {'skipped':>8} {'dropped':>8} | "
        f"{'meta':>6} {'minISR':>6} {'watermarks (median of 3)':<60} | list + describe all (median of 3) | "
        "collector + Admin child RSS | "
        "every group's offsets alone (median of 3)",
        flush=True,
    )
    have_groups = have_parts = 0
    levels = [("groups", int(n)) for n in args.groups.split(",") if n] + [
        ("partitions", int(n)) for n in args.partitions.split(",") if n
    ]
    try:
        for kind, n in levels:
            try:
                if kind == "groups":
                    took = _setup_groups(servers, have_groups, n)
                    have_groups = max(have_groups, n)
                    label = f"{n:,} groups"
                else:
                    why = _room(stack, n)
                    if why:
                        print(f"+{n:,} partitions: not set up on this stack: {why}", flush=True)
                        break
                    took = _setup_partitions(servers, have_parts, n)
                    have_parts = max(have_parts, n)
                    label = f"+{n:,} partitions"
            except Exception as exc:  # noqa: BLE001 - the stack cannot hold it: said, and the run goes on
                print(f"{kind} {n:,}: not set up on this stack ({type(exc).__name__}: {str(exc)[:200]})", flush=True)
                break
            print(f"{label}: set up in {took:.0f} s", file=sys.stderr, flush=True)
            runs = [("this", ROOT, True)] + ([("no kinds", ROOT, False)] if args.without_kinds else [])
            runs.append(("previous", old, True))
            # Every --repeat after the first runs the trees in the opposite order: the first after set-up is slower.
            order = [r for i in range(args.repeat) for r in (runs if i % 2 == 0 else runs[::-1])]
            for what, tree, kinds in order:
                m = _run(tree, servers, args.rounds, kinds)
                print(_row(label, what, m), flush=True)
                rounds = ", ".join(f"{t:.2f} s/{n}" for t, n in zip(m["round"], m["lag_groups"], strict=True))
                print(f"{'':>33}rounds (time/groups with lag): {rounds}", flush=True)
                if "first_round" in m:
                    print(
                        f"{'':>33}first round of a new Admin child: {m['first_round']:.2f} s, "
                        f"{m['first_lag_groups']} groups with lag",
                        flush=True,
                    )
                for i, said in enumerate(m["message"], 1):  # every round's, not only the last: a lost round says why
                    if said:
                        print(f"{'':>33}round {i} message: {said}", flush=True)
    finally:
        if args.down:
            stack.down()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
