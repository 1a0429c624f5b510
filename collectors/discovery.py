"""Brokers and controllers found from the cluster, not listed: the pure decisions, and the board that shares them.

    ProtocolCollector (collectors.protocol) ── each round: DescribeCluster (fenced brokers included on Kafka 4.0+),
        │                                       DescribeQuorum (controllers with their endpoints, KIP-853)
        └─ Membership ──(expected_brokers)──> DiscoveryBoard ──> JmxCollector.targets() (broker_targets,
                                                                   controller_addresses, controller_exporters),
                                                                   AdminCollector's
                                                                   expected brokers (kafka_cluster_broker_up)

What a broker that comes or goes does (issue 30, item 1):
1. A broker that joins is in the next DescribeCluster answer: its JMX target exists from the round after that.
2. A broker that dies stays registered (KRaft fences it, it does not forget it): on Kafka 4.0+ DescribeCluster v2
   still lists it, fenced, so it stays expected, its target fails and ``kafka_cluster_broker_up`` is 0: it pages as a
   hand-listed broker does.
3. A broker that Kafka unregisters (``kafka-cluster unregister``, or a new one taking its id after a scale-down) leaves
   the DescribeCluster answer: it stops being expected at the next round, and its series end.
4. Before 4.0 (DescribeCluster without fenced brokers) Kafka cannot say "registered but fenced", so a broker once
   seen stays expected for the life of the collector (``expected_brokers``): a crash must never look like a removal.

Pure: ``expected_brokers``, ``broker_targets``, ``controller_addresses`` and ``controller_exporters`` decide; the
board only holds the last answer under a lock. Hand-listed brokers and controllers keep their entries; discovery adds
the others.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from monitor.core.config import BrokerTarget, ClusterConfig, ExporterSource, expand_template


@dataclass(frozen=True)
class Node:
    """A broker or controller as the cluster describes it: its node id and the host and port it advertises."""

    id: int
    host: str
    port: int
    fenced: bool = False


@dataclass(frozen=True)
class Membership:
    """One answer of the cluster: registered brokers and the controllers (voters) with an endpoint.

    ``fenced_known``: the answer includes fenced brokers (DescribeCluster v2, Kafka 4.0+), so a broker missing from it
    is unregistered, not merely down. ``controllers`` is empty where DescribeQuorum gave no endpoints (before 3.8, or
    not allowed)."""

    brokers: tuple[Node, ...]
    controllers: tuple[Node, ...] = ()
    fenced_known: bool = True


def expected_brokers(previous: Sequence[Node], answer: Membership) -> tuple[Node, ...]:
    """The brokers expected after ``answer``: Kafka's registrations when it says which are fenced (rules 2, 3), else
    every broker seen so far, the newest address of each (rule 4). Sorted by node id."""
    if answer.fenced_known:
        nodes = {n.id: n for n in answer.brokers}
    else:
        nodes = {n.id: n for n in previous} | {n.id: n for n in answer.brokers}
    return tuple(nodes[i] for i in sorted(nodes))


def broker_targets(cluster: ClusterConfig, brokers: Iterable[Node]) -> tuple[BrokerTarget, ...]:
    """What the collectors read of each discovered broker that is not listed by hand: the discovery templates expanded
    with its host and id. A broker no template reaches is still returned (address-less): the JMX collector leaves it
    out, the Admin collector still expects it."""
    if not cluster.discovers:
        return ()
    listed = {b.id for b in cluster.brokers}
    d = cluster.discovery
    out = []
    for n in sorted(brokers, key=lambda n: n.id):
        if n.id in listed:
            continue

        def expand(template: str | None, n: Node = n) -> str | None:
            return expand_template(template, host=n.host, node_id=n.id) if template else None

        exporter = d.jmx_exporter
        out.append(
            BrokerTarget(
                id=n.id,
                host=n.host,
                jolokia=expand(d.jolokia),
                jmx=expand(d.jmx),
                jmx_exporter=exporter.for_node(n.host, n.id) if exporter else None,
                node_exporter=d.node_exporter.for_node(n.host, n.id) if d.node_exporter else None,
            )
        )
    return tuple(out)


def controller_template(cluster: ClusterConfig) -> tuple[str, str | ExporterSource] | None:
    """How the discovered controllers are read: (``jolokia`` | ``jmx`` | ``jmx_exporter``, its template), or None.
    ``controller_jmx_exporter`` is used where no ``controller_jolokia`` or ``controller_jmx`` is given, before the
    brokers' ``jolokia`` and ``jmx`` templates (the controllers' default for those two; an exporter template never
    defaults to the brokers': MSK's brokers have one, its controllers are not reachable). Otherwise Jolokia wins where
    both a Jolokia and a JMX template apply, as ``jmx.transport: auto`` does for brokers (``jmxquery``: no Jolokia)."""
    if not cluster.discovers:
        return None
    d = cluster.discovery
    by_jolokia = cluster.jmx.transport != "jmxquery"
    if d.controller_jmx_exporter and not ((d.controller_jolokia and by_jolokia) or d.controller_jmx):
        return "jmx_exporter", d.controller_jmx_exporter
    jolokia = (d.controller_jolokia or d.jolokia) if by_jolokia else None
    if jolokia:
        return "jolokia", jolokia
    jmx = d.controller_jmx or d.jmx
    return ("jmx", jmx) if jmx else None


def controller_addresses(
    cluster: ClusterConfig, controllers: Iterable[Node]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(JMX host:ports, Jolokia URLs) of the discovered controllers read through JMX or Jolokia
    (``controller_template``), leaving out any already listed by hand."""
    chosen = controller_template(cluster)
    if chosen is None or chosen[0] == "jmx_exporter":
        return (), ()
    kind, template = chosen
    assert isinstance(template, str)
    listed = cluster.controller_jolokia if kind == "jolokia" else cluster.controller_jmx
    addresses = (expand_template(template, host=n.host, node_id=n.id) for n in sorted(controllers, key=lambda n: n.id))
    found = tuple(a for a in addresses if a not in listed)
    return (found, ()) if kind == "jmx" else ((), found)


def controller_exporters(cluster: ClusterConfig, controllers: Iterable[Node]) -> tuple[tuple[int, ExporterSource], ...]:
    """(node id, its jmx_exporter) of the discovered controllers read through ``discovery.controller_jmx_exporter``
    (``controller_template``), leaving out any whose URL is listed by hand in ``controller_jmx_exporter``."""
    chosen = controller_template(cluster)
    if chosen is None or chosen[0] != "jmx_exporter":
        return ()
    template = chosen[1]
    assert isinstance(template, ExporterSource)
    listed = {e.key for e in cluster.controller_jmx_exporter}
    out = []
    for n in sorted(controllers, key=lambda n: n.id):
        source = template.for_node(n.host, n.id)
        if source.key not in listed:
            out.append((n.id, source))
    return tuple(out)


class DiscoveryBoard:
    """The last membership of one cluster, written by the protocol collector and read by the others' ``targets()``
    (from the collection loop's thread). Empty and ``known`` False until the first answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._brokers: tuple[Node, ...] = ()
        self._controllers: tuple[Node, ...] = ()
        self._known = False
        # Disk of discovered brokers through their node_exporter (``node_disk_handover``): the log dirs DescribeLogDirs
        # named, with each volume's size; the dirs each node_exporter URL's mounts confirmed; those the protocol
        # collector stopped exporting (so the host collector exports them: one source at a time, never two).
        self._log_dirs: dict[tuple[int, str], int] = {}
        self._offered: dict[str, frozenset[tuple[int, str]]] = {}
        self._yielded: frozenset[tuple[int, str]] = frozenset()

    def publish(self, answer: Membership) -> tuple[Node, ...]:
        """Take one answer; returns the brokers now expected."""
        with self._lock:
            self._brokers = expected_brokers(self._brokers, answer)
            if answer.controllers or not self._known:
                self._controllers = answer.controllers  # an answer without endpoints keeps the last ones
            self._known = True
            return self._brokers

    @property
    def known(self) -> bool:
        with self._lock:
            return self._known

    def brokers(self) -> tuple[Node, ...]:
        with self._lock:
            return self._brokers

    def controllers(self) -> tuple[Node, ...]:
        with self._lock:
            return self._controllers

    # --- node_exporter's filesystem for discovered brokers (collectors.host, collectors.protocol) -----------------
    # A handshake over rounds, so a log dir's disk is exported by one source at a time: the protocol collector
    # publishes the log dirs DescribeLogDirs named and stops exporting those already offered (``hand_over``); the host
    # collector offers those whose node_exporter mount it confirmed (per URL, replaced each round: a failed scrape
    # offers none) and exports only those the protocol collector gave up (``offer_node_disk``). Each side's step is
    # one step under the lock, so whichever runs first, the other sees it: a dir changing hands may miss a round,
    # none is ever exported by both.

    def hand_over(self, dirs: dict[tuple[int, str], int]) -> frozenset[tuple[int, str]]:
        """The protocol collector's step: ``dirs`` ((broker, path) -> total bytes of its volume) are the log dirs of
        the brokers whose disk it reads; returns those it must leave to their node_exporter (offered)."""
        with self._lock:
            self._log_dirs = dict(dirs)
            offered = frozenset[tuple[int, str]]().union(*self._offered.values())
            self._yielded = offered & dirs.keys()
            return self._yielded

    def log_dirs(self) -> dict[tuple[int, str], int]:
        with self._lock:
            return dict(self._log_dirs)

    def offer_node_disk(self, url: str, dirs: frozenset[tuple[int, str]]) -> frozenset[tuple[int, str]]:
        """The host collector's step for node_exporter ``url``: ``dirs`` are the log dirs its mounts confirmed;
        returns those the protocol collector has given up (the ones to export now)."""
        with self._lock:
            self._offered[url] = dirs
            return self._yielded & dirs
