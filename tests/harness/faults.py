"""Faults on the local stack that need more than a signal, shared by the e2e tests and ``bench/alerts.py``:

- a broker's log dir on a small filesystem:

    with small_log_dir(stack, broker_id=3, size_mib=128) as path:
        ...   # broker 3 now writes to a 128 MiB tmpfs mounted on its log dir; fill it, watch the alerts

- a broker on fewer request handler threads (``fewer_io_threads``), and the misbehaving clients that hurt it: a
  flood of tiny produce requests (``tiny_produce_flood``) and a consumer that reads big fetches slowly
  (``SLOW_READER``, run inside a ``slow_link.SlowLink`` namespace behind ``tc``);
- a consumer group whose coordinator is a given broker (``group_coordinated_by``), to kill that broker under it;
- routine work that must page nobody: a controlled restart of one broker (``controlled_restart``: SIGTERM, Kafka's
  controlled shutdown, wait, start) and a rolling restart of all of them (``rolling_restart``: one at a time, the
  next once every partition is back in sync, as operators do it);
- a broker's log dir on a small filesystem from its first start (``tmpfs_log_dir``: mounted before the stack is up,
  unmounted after it is down; no stop, copy and restart), for a module whose own stack has it throughout.

Both tmpfs helpers need root (mount). On exit from ``small_log_dir``, whatever happened inside, the broker is
stopped, what it wrote is copied back to its real log dir, the tmpfs is unmounted (lazily if something still holds
it) and the broker started again, so nothing is left mounted and the cluster keeps its data. Only a process
killed hard (SIGKILL, a crash in a native library) cannot clean up; the next call then refuses to start and says
how to restore by hand.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from monitor.core.errors import StackError
from monitor.stack.kafka import NUM_IO_THREADS, jolokia_port
from monitor.stack.procs import port_open

_FS_NAME = "kafka-health-fault"


def _run(*argv: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise StackError(f"{' '.join(argv)} failed: {proc.stderr.strip()[:300]}")


def _copy(src: Path, dst: Path) -> None:
    # cp keeps sparse files sparse (Kafka preallocates index files) and preserves everything else.
    dst.mkdir(parents=True, exist_ok=True)
    _run("cp", "-a", "--sparse=always", f"{src}/.", str(dst))


def _unmount(path: Path) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _stop_broker(stack, broker_id: int, timeout: float = 30.0) -> None:
    """Stop the broker and wait until its ports are closed: a JVM's main thread can be reaped while its other
    threads still hold the listeners, and the restart would find them taken."""
    L = stack.layout
    stack.procs.stop(L.node_name(broker_id))
    ports = (L.broker_port(broker_id), L.broker_jmx_port(broker_id), jolokia_port(L, broker_id))
    deadline = time.monotonic() + timeout
    while any(port_open(p) for p in ports) and time.monotonic() < deadline:
        time.sleep(0.5)


@contextmanager
def small_log_dir(stack, broker_id: int, size_mib: int = 128, *, timeout: float = 180.0) -> Iterator[Path]:
    """Run a broker with its log dir on a tmpfs of ``size_mib``; yields the log dir. The stack must be up."""
    if os.geteuid() != 0:
        raise StackError("mounting a small filesystem on a broker's log dir needs root")
    layout = stack.layout
    data = layout.log_dir(broker_id)
    saved = data.with_name(data.name + ".before-tmpfs")
    if saved.exists():
        raise StackError(
            f"{saved} exists: an earlier fault run was killed before it could clean up; stop the stack, "
            f"`umount {data}` if it is still mounted, then replace {data} with {saved}"
        )
    _stop_broker(stack, broker_id)  # a clean shutdown trims Kafka's preallocated index files
    data.rename(saved)
    data.mkdir()
    mounted = copied = False
    try:
        _run("mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0755", _FS_NAME, str(data))
        mounted = True
        try:
            _copy(saved, data)
        except StackError as exc:
            raise StackError(f"broker {broker_id}'s data does not fit in a {size_mib} MiB tmpfs: {exc}") from None
        copied = True
        stack.up(timeout=timeout)
        yield data
    finally:
        _stop_broker(stack, broker_id)
        kept = data.with_name(data.name + ".from-tmpfs")
        try:
            if copied:  # only then did the broker run on the tmpfs; a partial copy is not its data
                _copy(data, kept)  # what the broker wrote meanwhile (offsets, other tenants' data)
        except StackError:
            shutil.rmtree(kept, ignore_errors=True)  # fall back to the state before the fault
        finally:
            if mounted:
                _unmount(data)
            data.rmdir()
            (kept if kept.exists() else saved).rename(data)
            shutil.rmtree(saved, ignore_errors=True)
        stack.up(timeout=timeout)


def fill_steadily(producer, topic: str, stop) -> None:
    """Produce about 0.5 MiB/s to ``topic`` (four 64 KiB records every 0.5 s) until the ``threading.Event`` ``stop``
    is set, then flush: the steady writer of a filling log dir (an ETA in hours on a 2 GiB tmpfs)."""
    payload = os.urandom(64 * 1024)
    while not stop.is_set():
        for _ in range(4):
            producer.produce(topic, payload)
        producer.poll(0)
        stop.wait(0.5)
    producer.flush(10)


@contextmanager
def tmpfs_log_dir(layout, broker_id: int, size_mib: int) -> Iterator[Path]:
    """Mount a tmpfs of ``size_mib`` on the broker's log dir of a stack that is not up yet (the storage format then
    writes into it); unmounted on exit, which must come after the stack is down. Yields the log dir."""
    if os.geteuid() != 0:
        raise StackError("mounting a small filesystem on a broker's log dir needs root")
    data = layout.log_dir(broker_id)
    data.mkdir(parents=True, exist_ok=True)
    if any(data.iterdir()):
        raise StackError(f"{data} is not empty: tmpfs_log_dir is for a stack not formatted yet (see small_log_dir)")
    _run("mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0755", _FS_NAME, str(data))
    try:
        yield data
    finally:
        _unmount(data)


@contextmanager
def fewer_io_threads(stack, broker_id: int, threads: int = 1, *, timeout: float = 30.0) -> Iterator[None]:
    """Run a broker on ``threads`` request handler threads (``num.io.threads`` as a dynamic broker config, as
    ``kafka-configs --alter`` sets it); on exit the override is deleted, back to server.properties. On 2 shared
    cores a flood driven from Python cannot outrun 4 handler threads; one is what a busier production broker's pool
    looks like to it. Kafka accepts at most halving (or doubling) the pool per change, so it steps."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
    )

    admin = AdminClient({"bootstrap.servers": stack.layout.bootstrap_servers})

    def current() -> int:
        [f] = admin.describe_configs([ConfigResource("broker", str(broker_id))]).values()
        return int(f.result(timeout)["num.io.threads"].value)

    def apply(value: int | None) -> None:
        op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
        res = ConfigResource(
            "broker",
            str(broker_id),
            incremental_configs=[
                ConfigEntry("num.io.threads", "" if value is None else str(value), incremental_operation=op)
            ],
        )
        for f in admin.incremental_alter_configs([res]).values():
            f.result(timeout)
        # The change reaches the broker through the metadata log; the next step is validated against what the
        # broker has applied, or Kafka refuses it.
        want = NUM_IO_THREADS if value is None else value
        deadline = time.monotonic() + timeout
        while current() != want:
            if time.monotonic() > deadline:
                raise StackError(f"broker {broker_id}: num.io.threads={want} not applied within {timeout:.0f}s")
            time.sleep(0.5)

    def steps(frm: int, to: int) -> list[int]:
        out = []
        while frm != to:
            frm = max(to, (frm + 1) // 2) if to < frm else min(to, frm * 2)
            out.append(frm)
        return out

    for n in steps(NUM_IO_THREADS, threads):
        apply(n)
    try:
        yield
    finally:
        for n in steps(threads, NUM_IO_THREADS):
            apply(n)
        apply(None)  # the override deleted: back to server.properties


# Producers sharing one client id, each request carrying one 16-byte record: no linger, no batching.
# argv: bootstrap servers, topic, client id, number of producers.
TINY_PRODUCE_FLOOD = """
import json, sys
from confluent_kafka import Producer
servers, topic, client_id, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
auth = json.loads(sys.stdin.read() or "{}")  # SASL settings of a principal: a password never goes in argv
ps = [Producer({"bootstrap.servers": servers, **auth, "client.id": client_id, "linger.ms": 0, "acks": 1,
                "batch.num.messages": 1, "queue.buffering.max.messages": 20000}) for _ in range(n)]
while True:
    full = 0
    for p in ps:
        try:
            for _ in range(200):
                p.produce(topic, b"0123456789abcdef")
        except BufferError:
            full += 1
        p.poll(0)
    if full == len(ps):  # every queue full: the broker is the bottleneck, as intended; let it drain a little
        ps[0].poll(0.005)
"""

# A consumer reading everything from the start with big fetches and a small socket receive buffer.
# argv: bootstrap servers, topic, client id, group.
SLOW_READER = """
import sys
from confluent_kafka import Consumer
servers, topic, client_id, group = sys.argv[1:5]
c = Consumer({"bootstrap.servers": servers, "group.id": group, "client.id": client_id,
              "auto.offset.reset": "earliest", "enable.auto.commit": True, "socket.receive.buffer.bytes": 4096,
              "fetch.max.bytes": 4194304, "max.partition.fetch.bytes": 2097152})
c.subscribe([topic])
while True:
    c.poll(1.0)
"""


@contextmanager
def tiny_produce_flood(
    servers: str | dict[str, str], topic: str, client_id: str, *, processes: int = 2, producers: int = 12
) -> Iterator[list[subprocess.Popen]]:
    """``processes`` × ``producers`` tiny-request producers (TINY_PRODUCE_FLOOD) until exit. Several processes:
    on a busy machine one Python process cannot feed a broker fast enough. ``servers``: bootstrap servers, or a
    principal's client settings (a secured cluster), which reach the processes on stdin."""
    auth = {} if isinstance(servers, str) else {k: v for k, v in servers.items() if k != "bootstrap.servers"}
    bootstrap = servers if isinstance(servers, str) else servers["bootstrap.servers"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", TINY_PRODUCE_FLOOD, bootstrap, topic, client_id, str(producers)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for _ in range(processes)
    ]
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(json.dumps(auth).encode())
        p.stdin.close()
    try:
        yield procs
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)


def fill_topic(servers: str, topic: str, count: int, size: int, client_id: str, batch_bytes: int | None = None) -> None:
    """``count`` records of ``size`` bytes (the backlog a slow reader then fetches), in batches of at most
    ``batch_bytes`` when given (librdkafka's batch.size: one record a batch keeps each fetch small); StackError if not
    all are acknowledged within a minute."""
    from confluent_kafka import Producer

    settings = {"bootstrap.servers": servers, "linger.ms": 50, "client.id": client_id}
    p = Producer(settings if batch_bytes is None else {**settings, "batch.size": batch_bytes})
    for i in range(count):
        p.produce(topic, b"x" * size)
        if i % 200 == 0:
            p.poll(0)
    if left := p.flush(60):
        raise StackError(f"{left} of {count} records to {topic} not acknowledged within 60s")


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units; the group ids used here are ASCII)."""
    h = 0
    for ch in s:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def group_coordinated_by(servers: str, broker_id: int, *, prefix: str, topic: str, timeout: float = 60.0) -> str:
    """A consumer group (``prefix`` + a number) with an offset committed on ``topic`` partition 0, whose coordinator
    is ``broker_id``: the leader of __consumer_offsets partition ``abs(hashCode(group)) % partitions`` (Kafka's
    ``Utils.abs`` is ``& 0x7fffffff``). A fresh cluster gets __consumer_offsets from a first commit; a broker that
    leads none of its partitions (after restarts) gets its preferred ones back by a leader election."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    def commit(group: str) -> None:
        # Right after a broker restart its coordinator may still load __consumer_offsets: retried, not failed
        # (seen when the latency bench's crash scenario followed its rolling restart).
        end = time.monotonic() + timeout
        while True:
            c = Consumer({"bootstrap.servers": servers, "group.id": group, "enable.auto.commit": False})
            try:
                c.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
                return
            except Exception as exc:  # librdkafka's KafkaException
                if "LOAD_IN_PROGRESS" not in str(exc) and "NOT_COORDINATOR" not in str(exc) or time.monotonic() > end:
                    raise
            finally:
                c.close()
            time.sleep(2)

    admin = AdminClient({"bootstrap.servers": servers})

    def partitions() -> dict:
        t = admin.list_topics("__consumer_offsets", timeout=10).topics["__consumer_offsets"]
        ok = t.error is None and t.partitions and all(p.leader >= 0 for p in t.partitions.values())
        return t.partitions if ok else {}

    if not partitions():
        commit(f"{prefix}first")
    end = time.monotonic() + timeout
    while not (parts := partitions()):
        if time.monotonic() > end:
            raise StackError(f"__consumer_offsets has no leader for every partition after {timeout:g}s")
        time.sleep(1)
    if not any(p.leader == broker_id for p in parts.values()):
        # After restarts the leaders stay where they moved: give them back to their preferred replicas. A broker back
        # from a restart is eligible only once it is in sync again, so the election is asked again until it is.
        from confluent_kafka import ElectionType, TopicPartition

        errors: dict[int, str] = {}
        while True:
            try:
                result = admin.elect_leaders(
                    ElectionType.PREFERRED, [TopicPartition("__consumer_offsets", p) for p in parts]
                ).result(30)
                errors = {tp.partition: str(err) for tp, err in result.items() if err is not None}
            except Exception as exc:  # noqa: BLE001 - recorded for the error below
                errors = {-1: str(exc)}
            time.sleep(2)
            parts = partitions() or parts
            if any(p.leader == broker_id for p in parts.values()):
                break
            if time.monotonic() > end:
                state = {i: (p.leader, list(p.replicas), list(p.isrs)) for i, p in sorted(parts.items())}
                raise StackError(
                    f"broker {broker_id} leads no __consumer_offsets partition, even after preferred "
                    f"leader elections (partition: leader, replicas, in sync: {state}; election "
                    f"errors: {errors})"
                )
            time.sleep(3)
    group = next(
        g
        for g in (f"{prefix}{i}" for i in range(10000))
        if parts[(java_string_hash(g) & 0x7FFFFFFF) % len(parts)].leader == broker_id
    )
    commit(group)
    return group


def delete_group(servers: str, group: str, *, timeout: float = 90.0) -> bool:
    """Delete a consumer group, with a fresh client per try (right after a restart its coordinator may move back,
    and a client that asked the old one waits out its timeout). False if it is still there after ``timeout``."""
    from confluent_kafka.admin import AdminClient

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        admin = AdminClient({"bootstrap.servers": servers})
        try:
            admin.delete_consumer_groups([group], request_timeout=10)[group].result(12)
            return True
        except Exception as exc:  # noqa: BLE001 - librdkafka's errors; gone already is done
            if "GROUP_ID_NOT_FOUND" in str(exc):
                return True
        time.sleep(2)
    return False


def in_sync(servers: str, *, timeout: float = 10.0) -> bool:
    """Every partition's ISR holds all its replicas (no under-replicated partition), per the cluster metadata."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": servers}).list_topics(timeout=timeout)
    return all(set(p.isrs) >= set(p.replicas) for t in md.topics.values() for p in t.partitions.values())


def controlled_restart(stack, broker_id: int, *, timeout: float = 240.0) -> float:
    """Restart one broker the way an operator does: SIGTERM (the broker asks the controller to shut it down, its
    leadership moves away, it is fenced, it exits), wait until its process and ports are gone, start it again and wait
    until every broker is registered. Returns the seconds it took. A frozen broker (SIGSTOP) is continued first."""
    t0 = time.monotonic()
    _stop_broker(stack, broker_id)
    stack.up(timeout=timeout)  # starts only what is missing: this broker
    return time.monotonic() - t0


def rolling_restart(stack, *, timeout: float = 240.0, in_sync_timeout: float = 180.0) -> list[float]:
    """A controlled restart of every broker in turn; before the next one, every partition is back in sync (else the
    next shutdown would take a partition's last in-sync replica). Returns each restart's seconds."""
    took = []
    for broker_id in stack.layout.broker_ids:
        took.append(controlled_restart(stack, broker_id, timeout=timeout))
        deadline = time.monotonic() + in_sync_timeout
        while not in_sync(stack.layout.bootstrap_servers):
            if time.monotonic() > deadline:
                raise StackError(
                    f"partitions not back in sync {in_sync_timeout:.0f}s after broker {broker_id} restarted"
                )
            time.sleep(1.0)
    return took


def preferred_leader_elected(servers: str, topic: str, broker_id: int) -> bool:
    """True once ``broker_id`` leads every partition of ``topic`` whose preferred leader (first replica) it is; else
    asks for a preferred-leader election of those (as the client of ``servers``, which must be allowed Alter on the
    cluster) and returns False: call again until True. A restart leaves a broker's partitions led by others until
    Kafka's leader rebalance (5 minutes by default); a test that needs the broker to lead them cannot wait that long."""
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": servers})
    parts = admin.list_topics(timeout=10).topics[topic].partitions
    mine = [p for p, v in parts.items() if v.replicas and v.replicas[0] == broker_id]
    if all(parts[p].leader == broker_id for p in mine):
        return True
    try:
        admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, p) for p in mine]).result(15)
    except Exception:  # noqa: BLE001 - e.g. the broker not back in the ISR yet: asked again
        pass
    return False
