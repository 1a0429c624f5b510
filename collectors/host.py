"""Host collector: the filesystems under each broker's log dirs (statvfs), and CPU, memory, disk I/O and network
from ``/proc``. Kafka has no JMX metric for log-dir free space, so this is where disk-full risk is seen.

One target per distinct broker ``host`` of a cluster. Only ``localhost`` targets can be read (this process must run
on the broker's machine, e.g. one collector per host with ``--shard`` or a per-host config); a remote host is
reported as failed ("unreachable") with a message saying so, never as silently empty.

The ``/proc`` root, ``statvfs`` and ``stat`` are parameters, so unit tests run on the checked-in fake ``/proc`` under
tests/unit/fixtures/collectors_proc and on made-up filesystems.

A broker's machine may instead be read through its node_exporter (``brokers[].node_exporter``, or the
``discovery.node_exporter`` template for every broker the discovery board holds, one target per distinct URL, asked
every round): CPU, memory, disk I/O and network, and the filesystems of the broker's listed ``log_dirs``. A
discovered broker has no listed log dirs: the log dirs DescribeLogDirs names (collectors.protocol, through the
board) are mapped to the mount holding each path when that mount has the volume size Kafka reports
(``exposition.same_volume``), and exported once the protocol collector has given them up (the board's handshake);
the others keep DescribeLogDirs' figures.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from collectors import discovery
from collectors.outcome import failed, succeeded
from collectors.transports.exposition import node_exporter_samples, scrape_node_exporter
from collectors.types import Sample, Target, TargetResult
from monitor.core.config import DEFAULT_MAX_SERIES_PER_TARGET, ClusterConfig, NodeExporterSource
from monitor.core.errors import KafkaHealthError, TargetUnreachable

LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}
SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's block size
CPU_MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def _g(name: str, help_: str, labels: tuple[tuple[str, str], ...], value: float) -> Sample:
    return Sample(name, "gauge", help_, labels, value)


def _c(name: str, help_: str, labels: tuple[tuple[str, str], ...], value: float) -> Sample:
    return Sample(name, "counter", help_, labels, value)


def parse_stat(text: str, base: tuple, ticks_per_second: float) -> list[Sample]:
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            return [
                _c(
                    "kafka_host_cpu_seconds_total",
                    "CPU time of all cores by mode",
                    base + (("mode", mode),),
                    int(v) / ticks_per_second,
                )
                for mode, v in zip(CPU_MODES, parts[1:])
            ]
    return []


def parse_meminfo(text: str, base: tuple) -> list[Sample]:
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields:
            values[key] = int(fields[0]) * (1024 if len(fields) > 1 and fields[1] == "kB" else 1)
    out = []
    for key, name, help_ in (
        ("MemTotal", "kafka_host_memory_total_bytes", "Physical memory"),
        ("MemAvailable", "kafka_host_memory_available_bytes", "Memory available without swapping"),
    ):
        if key in values:
            out.append(_g(name, help_, base, float(values[key])))
    return out


def parse_diskstats(text: str, base: tuple) -> list[Sample]:
    """Whole disks and partitions, without loop/ram devices (noise on every machine)."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) < 14 or f[2].startswith(("loop", "ram")):
            continue
        labels = base + (("device", f[2]),)
        out += [
            _c("kafka_host_disk_read_bytes_total", "Bytes read from the device", labels, int(f[5]) * SECTOR_BYTES),
            _c("kafka_host_disk_written_bytes_total", "Bytes written to the device", labels, int(f[9]) * SECTOR_BYTES),
            _c("kafka_host_disk_io_time_seconds_total", "Time the device was busy", labels, int(f[12]) / 1000.0),
        ]
    return out


def parse_net_dev(text: str, base: tuple) -> list[Sample]:
    out = []
    for line in text.splitlines()[2:]:
        name, _, rest = line.partition(":")
        f = rest.split()
        if len(f) < 16:
            continue
        labels = base + (("device", name.strip()),)
        out += [
            _c("kafka_host_network_receive_bytes_total", "Bytes received by the interface", labels, float(f[0])),
            _c("kafka_host_network_transmit_bytes_total", "Bytes sent by the interface", labels, float(f[8])),
        ]
    return out


TCP_ESTABLISHED = "01"


def _hex_addr(field: str) -> tuple[str, int]:
    """``0100007F:2328`` (/proc/net/tcp, little-endian words) -> ("127.0.0.1", 9000); IPv4-mapped IPv6 as IPv4."""
    import ipaddress

    addr, _, port = field.partition(":")
    raw = bytes.fromhex(addr)
    packed = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(packed)
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return str(ip), int(port, 16)


def parse_tcp_backlogs(texts: Sequence[str], base: tuple, ports: dict[int, str], *, top: int = 20) -> list[Sample]:
    """Bytes the broker wrote to its clients' sockets that the peer has not acknowledged yet (``tx_queue`` of
    /proc/net/tcp and tcp6), summed per (broker, peer address), for established connections on the brokers'
    listener ports (``ports``: port -> broker id). A client that reads slowly (thin link, small receive buffer,
    a stalled application) keeps this full while the broker's responses wait to be written; Kafka itself has no
    per-client metric for it. Only peers with a non-empty queue, the ``top`` largest per broker (cardinality)."""
    queues: dict[tuple[str, str], int] = {}
    for text in texts:
        for line in text.splitlines()[1:]:
            f = line.split()
            if len(f) < 5 or f[3] != TCP_ESTABLISHED:
                continue
            _, local_port = _hex_addr(f[1])
            broker = ports.get(local_port)
            if broker is None:
                continue
            tx = int(f[4].split(":")[0], 16)
            if tx:
                peer, _ = _hex_addr(f[2])
                queues[(broker, peer)] = queues.get((broker, peer), 0) + tx
    out = []
    for broker in sorted({b for b, _ in queues}):
        ranked = sorted(((q, p) for (b, p), q in queues.items() if b == broker), reverse=True)[:top]
        out += [
            _g(
                "kafka_host_tcp_send_queue_bytes",
                "Bytes sent by the broker to the peer address not yet "
                "acknowledged (socket send queues on its listener ports, summed per peer)",
                base + (("broker", broker), ("peer", peer)),
                float(q),
            )
            for q, peer in ranked
        ]
    return out


def filesystem_device(st: os.stat_result) -> str:
    """The identity of the filesystem holding a file, "major:minor" of its ``st_dev`` (e.g. "8:1"): two log dirs
    with the same one are on one filesystem, whatever their sizes and free space say."""
    return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"


def filesystem_samples(
    log_dirs: Sequence[tuple[str, str]],
    base: tuple,
    statvfs: Callable[[str], os.statvfs_result],
    stat: Callable[[str], os.stat_result] = os.stat,
) -> list[Sample]:
    """Size/free/available bytes of the filesystem holding each (broker, log dir), labelled with the filesystem's
    ``device`` (see ``filesystem_device``) so that consumers count a filesystem shared by several brokers once. A
    missing dir is skipped; a dir whose stat fails after its statvfs succeeded (removed in between) has no
    ``device`` label, and consumers fall back to comparing sizes."""
    out = []
    for broker, path in log_dirs:
        try:
            st = statvfs(path)
        except OSError:
            continue
        labels = base + (("broker", broker), ("path", path))
        try:
            labels += (("device", filesystem_device(stat(path))),)
        except OSError:
            pass
        out += [
            _g(
                "kafka_host_filesystem_size_bytes",
                "Size of the filesystem holding the log dir",
                labels,
                float(st.f_blocks * st.f_frsize),
            ),
            _g(
                "kafka_host_filesystem_free_bytes",
                "Free bytes of the filesystem holding the log dir",
                labels,
                float(st.f_bfree * st.f_frsize),
            ),
            _g(
                "kafka_host_filesystem_avail_bytes",
                "Bytes available to the broker (free minus reserved)",
                labels,
                float(st.f_bavail * st.f_frsize),
            ),
        ]
    return out


class HostCollector:
    def __init__(
        self,
        cluster: ClusterConfig,
        *,
        proc_root: str | os.PathLike = "/proc",
        statvfs: Callable[[str], os.statvfs_result] = os.statvfs,
        stat: Callable[[str], os.stat_result] = os.stat,
        ticks_per_second: float | None = None,
        max_series: int = DEFAULT_MAX_SERIES_PER_TARGET,
        board: discovery.DiscoveryBoard | None = None,
    ):
        self._cluster = cluster
        self._board = board
        self._lock = threading.Lock()
        self._found_node: set[str] = set()  # node_exporters of discovered brokers (no listed log dirs), by key
        self._proc = Path(proc_root)
        self._statvfs = statvfs
        self._stat = stat
        self._ticks = ticks_per_second or float(os.sysconf("SC_CLK_TCK"))
        self._max_series = max_series
        self._dirs: dict[str, list[tuple[str, str]]] = {}
        self._ports: dict[str, dict[int, str]] = {}
        # node_exporter (by ``key``: its URL, or the Prometheus' and the selector) -> the (broker, log dir)s on its
        # machine: read from it instead of this machine's /proc
        self._node: dict[str, list[tuple[str, str]]] = {}
        self._node_sources: dict[str, tuple[NodeExporterSource, str]] = {}  # key -> (source, its machine's host)
        for b in cluster.brokers:
            if b.node_exporter:
                self._node.setdefault(b.node_exporter.key, []).extend((str(b.id), d) for d in b.log_dirs)
                self._node_sources.setdefault(b.node_exporter.key, (b.node_exporter, b.host))
                continue
            if not (b.log_dirs or b.listener_ports):
                continue  # nothing asks for its machine (an exporter-only broker): no /proc read in its name
            self._dirs.setdefault(b.host, []).extend((str(b.id), d) for d in b.log_dirs)
            self._ports.setdefault(b.host, {}).update((p, str(b.id)) for p in b.listener_ports)
        self._targets = tuple(Target(cluster.name, "host", f"host-{h}", address=h) for h in self._dirs) + tuple(
            self._node_target(k) for k in self._node
        )

    def _node_target(self, key: str) -> Target:
        source, _ = self._node_sources[key]
        return Target(self._cluster.name, "host", f"node-exporter-{_node_name(source)}", address=key)

    def targets(self) -> Sequence[Target]:
        """The listed targets, and one per node_exporter (URL, or Prometheus and selector) of the brokers the
        discovery board holds now."""
        if self._board is None:
            return self._targets
        found = {}
        for b in discovery.broker_targets(self._cluster, self._board.brokers()):
            if b.node_exporter and b.node_exporter.key not in self._node:
                found.setdefault(b.node_exporter.key, (b.node_exporter, b.host))
        with self._lock:
            self._found_node.update(found)
            for key, source in found.items():
                self._node_sources.setdefault(key, source)
        return self._targets + tuple(self._node_target(k) for k in sorted(found))

    def collect_target(self, target: Target, *, now: float) -> TargetResult:
        start = time.monotonic()
        with self._lock:
            found = target.address in self._found_node
        if target.address in self._node or found:
            discovered = self._discovered_dirs(target.address)
            with self._lock:
                source, host = self._node_sources[target.address]
            try:
                text = scrape_node_exporter(source, timeout=self._cluster.jmx.timeout_seconds)
                samples = node_exporter_samples(
                    text,
                    (("cluster", target.cluster), ("host", host if source.federate else _host_of(source.url))),
                    [*self._node.get(target.address, []), *discovered],
                    discovered,
                )
            except KafkaHealthError as exc:
                if self._board is not None:
                    self._board.offer_node_disk(target.address, frozenset())  # the protocol's disk again
                return failed(target, exc, started_at=now, duration=time.monotonic() - start)
            if self._board is not None:
                samples = self._hand_over(target.address, samples, discovered)
            return succeeded(
                target, samples, started_at=now, duration=time.monotonic() - start, max_series=self._max_series
            )
        if target.address not in LOCAL_HOSTS:
            exc = TargetUnreachable(f"host {target.address} is remote: run a collector on it (see docs/metrics.md)")
            return failed(target, exc, started_at=now, duration=time.monotonic() - start)
        base = (("cluster", target.cluster), ("host", target.address))
        samples = filesystem_samples(self._dirs[target.address], base, self._statvfs, self._stat)
        for fname, parse in (
            ("stat", lambda t: parse_stat(t, base, self._ticks)),
            ("meminfo", lambda t: parse_meminfo(t, base)),
            ("diskstats", lambda t: parse_diskstats(t, base)),
            ("net/dev", lambda t: parse_net_dev(t, base)),
        ):
            try:
                text = (self._proc / fname).read_text()
            except OSError:
                continue  # e.g. no diskstats in a container: the others still count
            samples += parse(text)
        if self._ports[target.address]:
            texts = []
            for fname in ("net/tcp", "net/tcp6"):
                try:
                    texts.append((self._proc / fname).read_text())
                except OSError:
                    continue  # no IPv6: tcp only
            samples += parse_tcp_backlogs(texts, base, self._ports[target.address])
        return succeeded(
            target, samples, started_at=now, duration=time.monotonic() - start, max_series=self._max_series
        )

    def _discovered_dirs(self, url: str) -> dict[tuple[str, str], float]:
        """(broker, log dir) -> its volume's total bytes, of the discovered brokers (not listed) whose node_exporter
        is ``url``: the log dirs DescribeLogDirs named (the protocol collector's, on the board)."""
        if self._board is None or not self._cluster.discovery.node_exporter:
            return {}
        ids = {
            b.id
            for b in discovery.broker_targets(self._cluster, self._board.brokers())
            if b.node_exporter and b.node_exporter.key == url
        }
        return {(str(b), p): float(total) for (b, p), total in self._board.log_dirs().items() if b in ids}

    def _hand_over(self, url: str, samples: list[Sample], discovered: dict[tuple[str, str], float]) -> list[Sample]:
        """Offer the discovered log dirs this scrape mapped (their mount holds the path and has the volume's size);
        keep their filesystem series only once the protocol collector yielded them (the board's handshake)."""
        assert self._board is not None
        fs = [s for s in samples if s.name.startswith("kafka_host_filesystem_")]
        mapped = {(dict(s.labels)["broker"], dict(s.labels)["path"]) for s in fs} & discovered.keys()
        yielded = self._board.offer_node_disk(url, frozenset((int(b), p) for b, p in mapped))
        waiting = {(b, p) for b, p in mapped if (int(b), p) not in yielded}
        return [s for s in samples if (dict(s.labels).get("broker"), dict(s.labels).get("path")) not in waiting]


def _node_name(source: NodeExporterSource) -> str:
    """What names a node_exporter target: its host (``k1`` of ``http://k1:11002/metrics``), or through a Prometheus
    the label values of its selector (``node,k1:9100`` of ``{job="node",instance="k1:9100"}``: one per machine)."""
    if source.federate is None:
        return _host_of(source.url)
    return ",".join(re.findall(r'"((?:[^"\\]|\\.)*)"', source.federate)) or source.federate


def _host_of(url: str) -> str:
    """``k1`` of ``http://k1:11002/metrics``: the ``host`` label of a machine read through its node_exporter."""
    return url.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]
