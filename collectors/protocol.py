"""What the Kafka protocol alone tells, without any agent: the cluster's membership (discovery) and disk.

One target per cluster (``protocol``), through the bootstrap servers with kafka-python (collectors.protocol_client):

    DescribeCluster (fenced brokers too, 4.0+) ┐
    DescribeQuorum  (controllers' endpoints)   ┴─ Membership ──> DiscoveryBoard (collectors.discovery): the JMX
                                                                 targets and the brokers the Admin collector expects
    DescribeLogDirs v4/v5 of every broker ──(log_dir_samples)──> kafka_host_filesystem_size_bytes / _avail_bytes,
                                                                 kafka_broker_log_dir_cordoned,
                                                                 kafka_topic_log_size_bytes (no JMX source)

Disk from the protocol (KIP-827, Kafka 3.3+): each log dir's total and usable bytes are what ``statvfs`` says of the
volume holding it (Kafka's ``FileStore.getTotalSpace`` / ``getUsableSpace``: ``f_blocks`` / ``f_bavail`` times the
fragment size), so they are exported under the host collector's names and labels (``host`` is the broker's
advertised host; no ``device``: log dirs are then grouped by equal size and free space, as for any exporter without
one) and every disk-full rule, dashboard and report reads them unchanged. They are exported only for brokers no host
source gives disk for (``protocol_disk_brokers``), and of a discovered broker only for the log dirs its node_exporter
does not give (the host collector confirms the mount by path and size; the board hands each dir over): one series
per log dir, never two sources summed. Remote (tiered) storage is not in them: Kafka counts the local volume only. A
log dir in error (offline) has no size series.

Log sizes from the protocol: on a broker no JMX source reads (``protocol_size_brokers``: no Jolokia, JMX or
jmx_exporter, listed or templated), DescribeLogDirs is asked for every partition too (topics null), and each
replica's size is exported as ``kafka_topic_log_size_bytes`` with the JMX catalog's labels (``tenant`` from the
topic). So disk-full risk names the tenant whose data fills a disk with no agent at all; where a JMX source reads
``kafka.log:type=Log,name=Size`` it is the one source (never two summed), and the question stays small.

Partial failures: DescribeCluster failing fails the target (the board keeps the last membership: no broker is
dropped because one answer failed); DescribeQuorum failing keeps the brokers only; a broker that does not answer
DescribeLogDirs loses its disk series this round and is named in the round's message.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from collectors.catalog import TenantLookup
from collectors.discovery import DiscoveryBoard, Membership
from collectors.outcome import failed, succeeded
from collectors.protocol_client import KafkaProtocol, LogDir
from collectors.types import Sample, Target, TargetResult
from monitor.core.config import DEFAULT_MAX_SERIES_PER_TARGET, ClusterConfig
from monitor.core.errors import KafkaHealthError

log = logging.getLogger(__name__)


def host_disk_brokers(cluster: ClusterConfig) -> frozenset[int]:
    """Brokers a host source gives disk for: listed with ``log_dirs`` (the host collector's statvfs)."""
    return frozenset(b.id for b in cluster.brokers if b.log_dirs)


def protocol_disk_brokers(cluster: ClusterConfig, brokers: Iterable[int]) -> tuple[int, ...]:
    """The brokers whose disk comes from DescribeLogDirs: all of ``brokers`` that no host source covers, when the
    cluster has ``log_dirs_from_protocol``."""
    if not cluster.log_dirs_from_protocol:
        return ()
    covered = host_disk_brokers(cluster)
    return tuple(sorted(b for b in set(brokers) if b not in covered))


def protocol_size_brokers(cluster: ClusterConfig, brokers: Iterable[int]) -> tuple[int, ...]:
    """The brokers whose log sizes come from DescribeLogDirs: all of ``brokers`` that no JMX source reads (Jolokia,
    remote JMX or a jmx_exporter, listed or through discovery's templates), when the cluster has
    ``log_dirs_from_protocol``."""
    if not cluster.log_dirs_from_protocol:
        return ()
    d = cluster.discovery
    if cluster.discovers and (d.jolokia or d.jmx or d.jmx_exporter):
        return ()
    covered = {b.id for b in cluster.brokers if b.jmx or b.jolokia or b.jmx_exporter}
    return tuple(sorted(b for b in set(brokers) if b not in covered))


def log_dir_samples(
    dirs: Iterable[LogDir],
    *,
    base: tuple[tuple[str, str], ...],
    hosts: dict[int, str],
    disk_of: Iterable[int] | None = None,
    tenants: TenantLookup | None = None,
    elsewhere: frozenset[tuple[int, str]] = frozenset(),
) -> list[Sample]:
    """The host collector's filesystem series for each online log dir that reports its volume (v4+) of the brokers
    in ``disk_of`` (default: all) but not in ``elsewhere`` (the (broker, path)s whose disk the broker's node_exporter
    gives), whether it is cordoned (v5+), and each topic's size on a broker whose partitions were asked
    (``kafka_topic_log_size_bytes``, the JMX catalog's series; ``tenant`` from ``tenants``)."""
    out = []
    disk = None if disk_of is None else set(disk_of)
    # per broker and topic, summed over partitions and log dirs: the JMX catalog's series, label for label (one
    # family's samples must share label names)
    logs: dict[tuple[int, str], float] = {}
    for d in sorted(dirs, key=lambda d: (d.broker, d.path)):
        if d.error:
            continue
        for topic, _partition, size in d.partitions:
            logs[(d.broker, topic)] = logs.get((d.broker, topic), 0.0) + size
        if disk is not None and d.broker not in disk:
            continue
        labels = base + (("host", hosts.get(d.broker, "")), ("broker", str(d.broker)), ("path", d.path))
        if d.total_bytes is not None and d.usable_bytes is not None and (d.broker, d.path) not in elsewhere:
            out += [
                Sample(
                    "kafka_host_filesystem_size_bytes",
                    "gauge",
                    "Size of the filesystem holding the log dir",
                    labels,
                    float(d.total_bytes),
                ),
                Sample(
                    "kafka_host_filesystem_avail_bytes",
                    "gauge",
                    "Bytes available to the broker (free minus reserved)",
                    labels,
                    float(d.usable_bytes),
                ),
            ]
        if d.cordoned is not None:
            out.append(
                Sample(
                    "kafka_broker_log_dir_cordoned",
                    "gauge",
                    "1 if the log dir is cordoned: no new partitions are placed on it (DescribeLogDirs v5)",
                    base + (("broker", str(d.broker)), ("path", d.path)),
                    1.0 if d.cordoned else 0.0,
                )
            )
    out += [
        Sample(
            "kafka_topic_log_size_bytes",
            "gauge",
            "Size of this topic's partition logs on this broker",
            base + (("broker", str(broker)), ("topic", topic), ("tenant", tenants.topic(topic) if tenants else "")),
            size,
        )
        for (broker, topic), size in sorted(logs.items())
    ]
    return out


def membership_samples(m: Membership, expected: Sequence[int], base: tuple[tuple[str, str], ...]) -> list[Sample]:
    fenced = {n.id for n in m.brokers if n.fenced}
    out = [
        Sample(
            "kafka_health_discovered_brokers",
            "gauge",
            "Brokers the collector expects from the cluster's registrations (discovery)",
            base,
            float(len(expected)),
        ),
        Sample(
            "kafka_health_discovered_controllers",
            "gauge",
            "Controllers found by DescribeQuorum with an endpoint (discovery)",
            base,
            float(len(m.controllers)),
        ),
    ]
    if m.fenced_known:
        out += [
            Sample(
                "kafka_cluster_broker_fenced",
                "gauge",
                "1 if the registered broker is fenced (DescribeCluster v2: down or not yet caught up)",
                base + (("broker", str(b)),),
                1.0 if b in fenced else 0.0,
            )
            for b in expected
        ]
    return out


def _protocol_client(cluster: ClusterConfig) -> KafkaProtocol:
    return KafkaProtocol(cluster.client_settings(), timeout=cluster.jmx.timeout_seconds)


class ProtocolCollector:
    """Membership and log-dir disk of one cluster. ``board`` receives the membership when the cluster discovers."""

    def __init__(
        self,
        cluster: ClusterConfig,
        *,
        board: DiscoveryBoard,
        max_series: int = DEFAULT_MAX_SERIES_PER_TARGET,
        client_factory: Callable[[ClusterConfig], KafkaProtocol] | None = None,
        tenants: TenantLookup | None = None,
    ):
        self._cluster = cluster
        self._tenants = tenants
        self._board = board
        self._max_series = max_series
        self._factory = client_factory or _protocol_client
        self._client: KafkaProtocol | None = None
        self._lock = threading.Lock()
        self._target = Target(cluster.name, "protocol", "protocol", address=cluster.bootstrap_servers)
        # False in a collector shard that runs this target for the membership only (another shard exports it):
        # no DescribeLogDirs there (collectors.component).
        self.reads_disk = True

    @staticmethod
    def wanted(cluster: ClusterConfig) -> bool:
        """Whether the cluster needs this collector: it discovers, or may take disk from the protocol."""
        listed = [b.id for b in cluster.brokers]
        return cluster.discovers or bool(
            protocol_disk_brokers(cluster, listed) or protocol_size_brokers(cluster, listed)
        )

    @property
    def discovers(self) -> bool:
        return self._cluster.discovers

    @property
    def board(self) -> DiscoveryBoard:
        return self._board

    def targets(self) -> Sequence[Target]:
        return (self._target,)

    def collect_target(self, target: Target, *, now: float) -> TargetResult:
        start = time.monotonic()
        timeout = self._cluster.jmx.timeout_seconds
        base = (("cluster", target.cluster),)
        with self._lock:
            try:
                if self._client is None:
                    self._client = self._factory(self._cluster)
                client = self._client
                m = client.membership()
            except KafkaHealthError as exc:
                log.warning("%s: %s", target.key, exc)
                self._drop_client()
                return failed(target, exc, started_at=now, duration=time.monotonic() - start)
            if self._cluster.discovers:
                expected = [n.id for n in self._board.publish(m)]
            else:
                expected = sorted({n.id for n in m.brokers} | {b.id for b in self._cluster.brokers})
            samples = membership_samples(m, expected, base) if self._cluster.discovers else []
            answering = [n.id for n in m.brokers if not n.fenced]
            disk = protocol_disk_brokers(self._cluster, answering) if self.reads_disk else ()
            sizes = protocol_size_brokers(self._cluster, answering) if self.reads_disk else ()
            wanted = sorted(set(disk) | set(sizes))
            message = ""
            if wanted:
                left = max(0.5, timeout - (time.monotonic() - start))
                dirs, missing = client.log_dirs(wanted, timeout=left, sizes_of=sizes)
                samples += log_dir_samples(
                    dirs,
                    base=base,
                    hosts={n.id: n.host for n in m.brokers},
                    disk_of=disk,
                    tenants=self._tenants,
                    elsewhere=self._node_disk_handover(dirs, disk),
                )
                if missing:
                    message = "log dirs not read: " + "; ".join(f"broker {b}: {why}" for b, why in missing.items())
                    log.warning("%s: %s", target.key, message)
        result = succeeded(
            target, samples, started_at=now, duration=time.monotonic() - start, max_series=self._max_series
        )
        if message:
            result = replace(result, message=message)
        return result

    def _node_disk_handover(self, dirs: Sequence[LogDir], disk: Sequence[int]) -> frozenset[tuple[int, str]]:
        """The log dirs of discovered brokers whose disk their node_exporter now gives (the board's handshake,
        collectors.discovery): this round's dirs published for the host collector to match against its mounts, and
        those it offered given up. Nothing where the cluster has no ``discovery.node_exporter``."""
        if not (self._cluster.discovers and self._cluster.discovery.node_exporter):
            return frozenset()
        ours = set(disk)
        named = {(d.broker, d.path): d.total_bytes for d in dirs if d.broker in ours and not d.error and d.total_bytes}
        return self._board.hand_over(named)

    def _drop_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def close(self) -> None:
        with self._lock:
            self._drop_client()
