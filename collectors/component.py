"""The one place that wires the collectors, and their schedule.

    CollectionService(config, registry=registry).start()

builds, for every configured cluster, a ``JmxCollector`` (brokers + controllers), a ``HostCollector`` (log-dir
filesystems and /proc of each distinct broker host), an ``AdminCollector`` (Admin API) and, where the cluster
discovers its brokers or takes disk from the protocol, a ``ProtocolCollector`` (collectors.protocol: DescribeCluster,
DescribeQuorum, DescribeLogDirs), whose ``DiscoveryBoard`` the JMX and Admin collectors read their brokers from.
The targets are asked of the collectors every round (discovery adds and removes brokers); it keeps the targets of
this process's shard (``collection.shard`` = ``i/n``), and registers one ``KafkaHealthExporter`` in ``registry``;
and the end-to-end probe of each cluster of its shard (``collectors.probe``), which runs on threads of its own.

Scheduling: a loop thread wakes every ``collection.interval_seconds`` and submits every target that is not still
running from a previous round to a bounded pool (``collection.max_workers``). Each collector enforces its own
per-target timeout, so a hung broker occupies one worker and nothing else; its series age out after two intervals.

Several processes of one shard (``collection.shard_lease``, issue 31 item 4): before each round the process renews or
takes its shard's lease in the store (``monitor.core.lease``, name ``collector-shard-i-of-n``). The holder collects and
probes; a standby collects nothing, runs no probe, exports only that it stands by (``shard_turn`` decides, purely) and
looks again four times per interval, so it takes over at most 1.75 intervals after the holder's last renewal. A store
that does not answer is not a reason to stop watching: the process collects anyway (fail open: a duplicate rather
than a blind spot) and says so, once in its log and in ``kafka_health_collector_shard_lease_unreachable``.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from prometheus_client import CollectorRegistry, Gauge

from collectors import catalog
from collectors.admin import AdminCollector
from collectors.capabilities import CapabilityExporter
from collectors.discovery import DiscoveryBoard
from collectors.exporter import KafkaHealthExporter, SnapshotStore
from collectors.host import HostCollector
from collectors.jmx import JmxCollector
from collectors.outcome import failed
from collectors.probe import Probe, ProbeExporter, build_probes
from collectors.protocol import ProtocolCollector
from collectors.transports import transport_for
from collectors.types import Collector, CutCause, Target, TargetResult, Transport
from monitor.core.config import Config
from monitor.core.errors import KafkaHealthError
from monitor.core.lease import STANDBY_POLLS_PER_INTERVAL, LeaseDecision
from monitor.core.tenancy import FixedTenants, Tenants

log = logging.getLogger(__name__)


def parse_shard(shard: str) -> tuple[int, int]:
    i, _, n = shard.partition("/")
    index, count = int(i), int(n)
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"shard must be i/n with 0 <= i < n, got {shard!r}")
    return index, count


def shard_series(registry: CollectorRegistry, shard: str) -> Gauge:
    """Which shard this process is, and which shards there should be: every shard says all ``n``, so while one
    runs, a dead one is named by its index (KafkaHealthCollectorShardMissing), whatever found the targets (a static
    list keeps a dead target as ``up == 0``; Kubernetes' DNS drops it and leaves nothing to alert on). Returns the
    ``shard_up`` gauge: a standby removes its series, so that only the process collecting the shard counts as it."""
    index, count = parse_shard(shard)
    here = Gauge(
        "kafka_health_collector_shard_up",
        "1: this collector process runs shard `shard` of `shards`",
        ["shard", "shards"],
        registry=registry,
    )
    here.labels(str(index), str(count)).set(1)
    expected = Gauge(
        "kafka_health_collector_shard_expected",
        "1 per shard index this collector process was told exists (collection.shard i/n: 0..n-1)",
        ["shard"],
        registry=registry,
    )
    for i in range(count):
        expected.labels(str(i)).set(1)
    return here


def shard_lease_name(shard: str) -> str:
    """The lease of shard ``i/n`` in the store: ``collector-shard-i-of-n`` (a shard of another ``n`` is another)."""
    index, count = parse_shard(shard)
    return f"collector-shard-{index}-of-{count}"


class ShardRole(StrEnum):
    """What a process of a shard does in a round."""

    ACTIVE = "active"  # holds the shard's lease (or runs without one): collects and probes
    STANDBY = "standby"  # another process holds it: collects nothing, probes nothing, exports that it stands by
    UNREACHABLE = "unreachable"  # the store did not answer: collects and probes anyway (fail open)


class ShardLease(Protocol):
    """``monitor.core.lease.Lease`` as a shard uses it. ``acquire`` renews or takes the lease, or stands by; it raises
    ``KafkaHealthError`` (``StoreError``) when the store does not answer. ``release`` gives it up on a clean stop."""

    def acquire(self) -> LeaseDecision: ...

    def release(self) -> None: ...


@dataclass(frozen=True)
class ShardTurn:
    role: ShardRole
    collect: bool  # run this round's targets and the probes
    forget: bool  # was collecting, stands by now: drop its series and stop its probes at once
    say: str | None = None  # a change of role worth one log line


def shard_turn(previous: ShardRole | None, held: bool | None) -> ShardTurn:
    """This round of a shard process: ``held`` what the lease said (None: the store did not answer), ``previous``
    the role of the last round (None: the first). Pure. Fail open: an unanswered lease collects, since a duplicate
    series is better than a shard nobody watches; the role's change is said once, not every round."""
    role = ShardRole.UNREACHABLE if held is None else ShardRole.ACTIVE if held else ShardRole.STANDBY
    collecting_before = previous in (ShardRole.ACTIVE, ShardRole.UNREACHABLE)
    say = None
    if role is not previous:
        say = {
            ShardRole.ACTIVE: "holds the shard's lease: collecting and probing",
            ShardRole.STANDBY: "another process holds the shard's lease: standing by (no collection, no probe)",
            ShardRole.UNREACHABLE: "the store does not answer: collecting without the lease (a second process of "
            "this shard may be collecting too)",
        }[role]
    return ShardTurn(
        role, collect=role is not ShardRole.STANDBY, forget=collecting_before and role is ShardRole.STANDBY, say=say
    )


class _WhileCollecting:
    """A registry collector that exports ``inner``'s series only while the process collects its shard: a standby's
    exposition holds no measurement, so nothing is counted twice."""

    def __init__(self, inner_collect: Callable[[], Iterable], collecting: Callable[[], bool]):
        self._inner_collect = inner_collect
        self._collecting = collecting

    def collect(self) -> Iterable:
        return self._inner_collect() if self._collecting() else ()


def in_shard(target: Target, shard: str) -> bool:
    """Pure and stable across processes and restarts (crc32 of the target key, not Python's salted hash)."""
    index, count = parse_shard(shard)
    return zlib.crc32(target.key.encode()) % count == index


def build_collectors(
    config: Config,
    *,
    transports: dict[str, Transport] | None = None,
    proc_root: str = "/proc",
    admin_factory: Callable | None = None,
    clock: Callable[[], float] = time.time,
    tenants: Tenants | None = None,
    protocol_factory: Callable | None = None,
) -> list[Collector]:
    """``tenants``: the live tenant set (``monitor.tenants.live.LiveTenants`` in serve); default the config's.
    ``protocol_factory``: builds the kafka-python client of a cluster (collectors.protocol; tests)."""
    transports = dict(transports or {})
    index = tenants or FixedTenants(config.tenants)
    out: list[Collector] = []
    for cluster in config.clusters:
        name = "jolokia" if cluster.jmx.transport == "auto" else cluster.jmx.transport
        transport = transports.setdefault(name, transport_for(name))
        controller_transport = transports.setdefault("jmxquery", transport_for("jmxquery"))
        tenants = catalog.TenantLookup(index, cluster.name)
        # Discovery (collectors.discovery): the protocol collector finds the brokers and controllers, the JMX and
        # Admin collectors read them from the board; the protocol collector also gives disk where no host does.
        board = DiscoveryBoard() if cluster.discovers else None
        max_series = config.collection.max_series_per_target
        if ProtocolCollector.wanted(cluster):
            out.append(
                ProtocolCollector(
                    cluster,
                    board=board or DiscoveryBoard(),
                    max_series=max_series,
                    client_factory=protocol_factory,
                    tenants=tenants,
                )
            )
        out.append(
            JmxCollector(
                cluster,
                transport=transport,
                controller_transport=controller_transport,
                tenants=tenants,
                max_series=max_series,
                board=board,
            )
        )
        out.append(HostCollector(cluster, proc_root=proc_root, max_series=max_series, board=board))
        out.append(
            AdminCollector(
                cluster,
                tenants=tenants,
                max_series=max_series,
                admin_factory=admin_factory,
                clock=clock,
                interval=config.collection.interval_seconds,
                board=board,
            )
        )
    return out


# The garbage collector's youngest generation, raised from CPython's 700 objects in a process that collects: a read
# of a broker with 10,000 partitions makes about 100,000 short-lived objects (readings, parsed names, label tuples),
# so at 700 the collector ran 29 collections a read, 15 % of the read's CPU; at 10,000 it runs 2 (2.7 against 13-16 ms
# a read; bench/collector_fleet.py). Every one of those objects is garbage once the read is converted, so the
# collections found nothing to free: a larger young generation holds at most 10,000 objects more.
GC_YOUNG_THRESHOLD = 10_000


def _raise_gc_young_threshold() -> None:
    young, middle, old = gc.get_threshold()
    if young and young < GC_YOUNG_THRESHOLD:  # 0: collection disabled by whoever embeds us; left so
        gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


class CollectionService:
    name = "collector"

    def __init__(
        self,
        config: Config,
        *,
        registry: CollectorRegistry,
        collectors: Sequence[Collector] | None = None,
        clock: Callable[[], float] = time.time,
        tenants: Tenants | None = None,
        probes: Sequence[Probe] | None = None,
        lease: ShardLease | None = None,
    ):
        """``probes``: the end-to-end probes (collectors.probe); by default one per cluster of this shard whose probe
        is enabled when the collectors are built from the config too, none when ``collectors`` are given. Built
        anew after each standby spell (a probe's ledger must not outlive its run); given ones are reused as they are.
        ``lease``: the shard's lease (``collection.shard_lease``); None collects every round, as one process per
        shard always did."""
        _raise_gc_young_threshold()
        self._config = config
        self._interval = config.collection.interval_seconds
        self._clock = clock
        self._collectors = (
            list(collectors) if collectors is not None else build_collectors(config, clock=clock, tenants=tenants)
        )
        self._shard = config.collection.shard
        self._shard_up = shard_series(registry, self._shard)
        self._lease = lease
        self._role = ShardRole.ACTIVE
        self._lease_series = _lease_series(registry, self._shard) if lease is not None else None
        self._known_keys: set[str] = set()
        for c in self._collectors:
            if isinstance(c, ProtocolCollector):
                c.reads_disk = all(in_shard(t, self._shard) for t in c.targets())
        self.store = SnapshotStore()
        exporters = [
            KafkaHealthExporter(self.store, interval_seconds=self._interval, clock=clock),
            CapabilityExporter(config.clusters),  # what each cluster's sources can observe
        ]
        for exporter in exporters:
            registry.register(_WhileCollecting(exporter.collect, self._collecting))
        if probes is None and collectors is None:
            self._make_probes: Callable[[], list[Probe]] = lambda: build_probes(
                config.clusters, runs_here=lambda c: in_shard(Target(c, "probe", "probe"), self._shard)
            )
        else:
            given = list(probes or [])
            self._make_probes = lambda: given
        self.probes = self._make_probes()
        if self.probes:
            registry.register(_WhileCollecting(lambda: ProbeExporter(self.probes).collect(), self._collecting))
        self._pool = ThreadPoolExecutor(max_workers=config.collection.max_workers, thread_name_prefix="collect")
        self._in_flight: dict[str, Future] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._rounds = 0
        self._turns = 0
        self._probing = False

    # --- one round -------------------------------------------------------------------------------------------------
    def _run(self, collector: Collector, target: Target, now: float) -> TargetResult:
        started = time.monotonic()
        try:
            result = collector.collect_target(target, now=now)
        except Exception as exc:  # a bug must not kill the loop: contain it in the target's result
            log.exception("collecting %s failed unexpectedly", target.key)
            result = failed(target, exc, started_at=now, duration=time.monotonic() - started)
        for cut in result.cuts:
            if cut.cause is CutCause.SERIES_CAP:  # the Admin collector logs its deadline with the round's reads
                log.warning("%s: %s", target.key, cut.message)
        if not self._membership_only(collector, target) and self._collecting():  # another shard, or a standby now
            self.store.put(result)
        return result

    @property
    def role(self) -> ShardRole | None:
        """With a shard lease, what this process is (``/readyz`` shows it: active, standby, unreachable); None
        without one, as before the lease existed."""
        return self._role if self._lease is not None else None

    def _collecting(self) -> bool:
        return self._role is not ShardRole.STANDBY

    @property
    def work(self) -> list[tuple[Collector, Target]]:
        """This shard's targets now: asked of the collectors every round, as discovery adds and removes brokers.
        A discovering cluster's protocol target runs in every shard (each needs the membership to build its share of
        the brokers' targets), but only the shard it belongs to exports its series (``_membership_only``)."""
        return [
            (c, t)
            for c in self._collectors
            for t in c.targets()
            if in_shard(t, self._shard) or self._membership_only(c, t)
        ]

    def _membership_only(self, collector: Collector, target: Target) -> bool:
        return isinstance(collector, ProtocolCollector) and collector.discovers and not in_shard(target, self._shard)

    def _first_discovery(self, now: float) -> dict[str, Future]:
        """Before the first round, the membership of every discovering cluster (a bounded wait: each collector keeps
        its own timeout), so discovered brokers are collected from the first round, not the second."""
        first = [(c, t) for c, t in self.work if isinstance(c, ProtocolCollector) and c.discovers and not c.board.known]
        futures = {t.key: self._pool.submit(self._run, c, t, now) for c, t in first}
        wait(list(futures.values()))
        return futures

    def submit_round(self, now: float | None = None) -> list[Future]:
        """Submit every target not still running; returns the futures submitted. A target that left (a broker
        unregistered) is forgotten: its last result and success series go at once, nothing pages for it."""
        now = self._clock() if now is None else now
        done = self._first_discovery(now) if self._rounds == 0 else {}
        work = [(c, t) for c, t in self.work if t.key not in done]  # read once already this round
        keys = {t.key for _, t in work} | set(done)
        gone = self._known_keys - keys
        if gone:
            log.info("targets no longer expected (unregistered from the cluster): %s", ", ".join(sorted(gone)))
            self.store.forget(gone)
        self._known_keys = keys
        futures = list(done.values())  # the first round's membership reads are part of it
        for collector, target in work:
            running = self._in_flight.get(target.key)
            if running is not None and not running.done():
                continue  # still waiting on its timeout: its old series age out, the others go on
            fut = self._pool.submit(self._run, collector, target, now)
            self._in_flight[target.key] = fut
            futures.append(fut)
        return futures

    def collect_once(self, timeout: float | None = None) -> list[TargetResult]:
        """Run one round and wait for it (tests, bench, the first round)."""
        futures = self.submit_round()
        wait(futures, timeout=timeout)
        self._rounds += 1
        return [f.result() for f in futures if f.done()]

    # --- Component ----------------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="collector-schedule", daemon=True)
        self._thread.start()
        if self._lease is None:  # with a lease, the first turn that collects starts them
            self._start_probes()

    def _start_probes(self) -> None:
        self._probing = True
        for probe in self.probes:  # their own threads: never in a scrape or a collection round
            probe.start()

    def _loop(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            if self.take_turn():
                futures = self.submit_round()
                if self._rounds == 0:
                    self._wait_first_round(futures)
                self._rounds += 1
                next_at += self._interval
            else:  # a standby looks again soon: it takes over at most 1.75 intervals after the last renewal
                next_at = time.monotonic() + self._interval / STANDBY_POLLS_PER_INTERVAL
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def _wait_first_round(self, futures: list[Future]) -> None:
        """The first round is waited for (readiness follows it). With a lease, renewed every half interval meanwhile:
        targets timing out can make a first round outlast the lease (1.5 intervals), and a lapsed lease lets the
        standby in, both collecting until the next look. A turn that stands by stops the wait."""
        pending = futures
        while pending:
            pending = list(wait(pending, timeout=None if self._lease is None else self._interval / 2).not_done)
            if pending and not self.take_turn():
                return

    def take_turn(self) -> bool:
        """Before a round: ask the shard's lease (if any) and act on ``shard_turn``; True when this round collects."""
        if self._lease is None:
            return True
        why = ""
        try:
            held: bool | None = self._lease.acquire().held
        except KafkaHealthError as exc:
            held, why = None, f" ({exc})"
        previous = self._role if self._turns else None
        turn = shard_turn(previous, held)
        self._turns += 1
        if turn.say is not None:
            (log.warning if turn.role is not ShardRole.ACTIVE else log.info)(
                "collector shard %s: %s%s", self._shard, turn.say, why
            )
        if turn.forget:
            self._stand_down()
        self._role = turn.role
        index, count = (str(x) for x in parse_shard(self._shard))
        if turn.collect:
            self._shard_up.labels(index, count).set(1)
            if not self._probing:
                self._start_probes()
        else:
            with contextlib.suppress(KeyError):  # the standby's shard is the holder's to say
                self._shard_up.remove(index, count)
        if self._lease_series is not None:
            standby, unreachable = self._lease_series
            standby.labels(index, count).set(1 if turn.role is ShardRole.STANDBY else 0)
            unreachable.labels(index, count).set(1 if turn.role is ShardRole.UNREACHABLE else 0)
        return turn.collect

    def _stand_down(self) -> None:
        """Was collecting, stands by now: its series go at once and its probes stop (new ones for its next term)."""
        self._role = ShardRole.STANDBY
        self.store.forget(self._known_keys)
        self._known_keys = set()
        for probe in self.probes:
            probe.stop()
        self._probing = False
        self.probes = self._make_probes()

    def stop(self) -> None:
        self._stop.set()
        for probe in self.probes:
            probe.stop()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._lease is not None and self._role is ShardRole.ACTIVE:
            try:  # a clean stop hands the shard over at the standby's next look, not after the lease's expiry
                self._lease.release()
            except KafkaHealthError as exc:
                log.warning("collector shard %s lease not released (it expires by itself): %s", self._shard, exc)
        self._pool.shutdown(wait=False, cancel_futures=True)
        for collector in self._collectors:  # e.g. the Admin client's process
            close = getattr(collector, "close", None)
            if close is not None:
                close()

    def ready(self) -> bool:
        """Ready once the first round completed (failed targets included: they are reported, not a readiness bug);
        a standby is ready too: it takes over by itself."""
        return self._rounds > 0 or self._role is ShardRole.STANDBY


def _lease_series(registry: CollectorRegistry, shard: str) -> tuple[Gauge, Gauge]:
    """With ``collection.shard_lease``: whether this process stands by, and whether it collects without the lease."""
    standby = Gauge(
        "kafka_health_collector_shard_standby",
        "1 while this process stands by for shard `shard` of `shards` (another holds the shard's lease), 0 while it "
        "collects",
        ["shard", "shards"],
        registry=registry,
    )
    unreachable = Gauge(
        "kafka_health_collector_shard_lease_unreachable",
        "1 while this process collects shard `shard` of `shards` without its lease because the store does not answer "
        "(a second process of the shard may be collecting too: duplicates possible)",
        ["shard", "shards"],
        registry=registry,
    )
    return standby, unreachable
