"""Broker and controller JMX collector: one transport call per target, readings -> samples by the catalog."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Sequence

from collectors import catalog, discovery
from collectors.controller_watch import ControllerWatch, unstated_message
from collectors.outcome import failed, succeeded
from collectors.transports.exposition import ExpositionTransport, weak_signal_samples
from collectors.types import Endpoint, Sample, Target, TargetResult, Transport
from monitor.core.config import BrokerTarget, ClusterConfig, ExporterSource
from monitor.core.errors import KafkaHealthError

log = logging.getLogger(__name__)

BROKER_QUERIES = catalog.queries_for(catalog.BROKER_TARGET_RULES)
CONTROLLER_QUERIES = catalog.queries_for(catalog.CONTROLLER_RULES)
# What the controller watch reads every couple of seconds: whether this controller is the active one, and its view of
# each broker (collectors/controller_watch.py).
_WATCHED = (
    "kafka_cluster_active_controllers",
    "kafka_cluster_broker_registration_state",
    "kafka_cluster_broker_heartbeat_age_seconds",
)
WATCH_RULES = tuple(r for r in catalog.CONTROLLER_RULES if r.metric in _WATCHED)
WATCH_QUERIES = catalog.queries_for(WATCH_RULES)
# The exposition names of the watched gauges per exporter dialect (tests/fixtures/exposition/controller_*.prom): the
# watch asks an exporter for these alone (``name[]``, client_java's filter, which Strimzi's metrics reporter serves
# too: 460 bytes instead of 324 KB on the stack's controller). Strimzi's rules and the reporter's Yammer naming agree.
_LOWERCASED_WATCH = (
    "kafka_controller_kafkacontroller_activecontrollercount",
    "kafka_controller_kafkacontroller_brokerregistrationstate",
    "kafka_controller_kafkacontroller_timesincelastheartbeatreceivedms",
)
WATCH_EXPOSITION_NAMES = {
    "vanilla": ("kafka_controller_KafkaController_Value",),
    "strimzi": _LOWERCASED_WATCH,
    "strimzi_reporter": _LOWERCASED_WATCH,
}


class JmxCollector:
    """JMX of every broker and controller of one cluster.

    The transport comes from ``cluster.jmx.transport``: ``auto`` (the default) reads a broker with a Jolokia URL
    through ``transport`` (the bulk one) and a broker with only a JMX host:port through ``controller_transport``
    (jmxquery); ``jmxquery``/``jolokia`` read every broker with ``transport``. Controllers listed as JMX host:port
    are read with ``controller_transport``; controllers listed by Jolokia URL (``controller_jolokia``, the way to
    read a password-protected controller) with ``transport``; controllers listed or found with a jmx_exporter
    (``controller_jmx_exporter``) from its exposition, mapped onto the same controller series.
    """

    def __init__(
        self,
        cluster: ClusterConfig,
        *,
        transport: Transport,
        controller_transport: Transport,
        tenants: catalog.TenantLookup,
        max_series: int,
        board: discovery.DiscoveryBoard | None = None,
    ):
        self._cluster = cluster
        self._transport = transport
        self._controller_transport = controller_transport
        self._tenants = tenants
        self._max_series = max_series
        self._previous: dict[str, tuple[float, list[Sample], list[Sample]]] = {}  # key -> (taken at, samples, rates)
        self._lock = threading.Lock()
        self._board = board
        jmx = cluster.jmx
        self._password = jmx.password.resolve().get_secret_value() if jmx.password else None
        self._endpoints: dict[str, Endpoint] = {}
        self._by_jmxquery: set[str] = set()  # broker targets ``auto`` reads with jmxquery (no Jolokia URL)
        self._jolokia_controllers: set[str] = set()
        self._by_exporter: dict[str, str] = {}  # targets read from their jmx_exporter -> its dialect
        self._exporter = ExpositionTransport()
        self._targets = tuple(
            self._broker_target(b) for b in cluster.brokers if b.jmx or b.jolokia or b.jmx_exporter
        ) + self._controller_targets(
            cluster.controller_jmx, cluster.controller_jolokia, [(e.id, e) for e in cluster.controller_jmx_exporter]
        )
        self._watches: dict[str, ControllerWatch] = {}  # controller target key -> its watch, started on first use

    def _broker_target(self, b: BrokerTarget) -> Target:
        """One broker's target (its endpoint and transport noted). A broker missing the address its transport needs
        is still a target: it fails with a message saying what is missing, instead of silently not being
        monitored."""
        jmx = self._cluster.jmx
        if b.jmx_exporter and not (b.jmx or b.jolokia):  # only an exporter: read its exposition (same catalog)
            t = Target(self._cluster.name, "jmx", f"broker-{b.id}", address=b.jmx_exporter.url, broker=str(b.id))
            with self._lock:
                self._endpoints[t.key] = _exporter_endpoint(b.jmx_exporter)
                self._by_exporter[t.key] = b.jmx_exporter.dialect
            return t
        bulk = bool(b.jolokia) if jmx.transport == "auto" else self._transport.name == "jolokia"
        address = (b.jolokia if bulk else b.jmx) or b.jmx or b.jolokia or ""
        t = Target(self._cluster.name, "jmx", f"broker-{b.id}", address=address, broker=str(b.id))
        with self._lock:
            self._endpoints[t.key] = Endpoint(
                jmx=b.jmx, jolokia=b.jolokia, username=jmx.username, password=self._password
            )
            if jmx.transport == "auto" and not bulk:
                self._by_jmxquery.add(t.key)
        return t

    def _controller_targets(
        self,
        jmx_addrs: Sequence[str],
        jolokia_urls: Sequence[str],
        exporters: Sequence[tuple[int | None, ExporterSource]] = (),
    ) -> tuple[Target, ...]:
        """Targets of the controllers read through JMX, Jolokia and jmx_exporter. An exporter's controller is named
        by its node id (from DescribeQuorum, or listed), else by its host:port (jmx_exporter's dialects drop the id
        of app-info, which names a JMX-read controller)."""
        jmx = self._cluster.jmx
        out = []
        with self._lock:
            for addr in jmx_addrs:
                t = Target(self._cluster.name, "controller", f"controller-{addr}", address=addr)
                self._endpoints[t.key] = Endpoint(jmx=addr, username=jmx.username, password=self._password)
                out.append(t)
            for url in jolokia_urls:
                t = Target(self._cluster.name, "controller", f"controller-{_host_port(url)}", address=url)
                self._endpoints[t.key] = Endpoint(jolokia=url, username=jmx.username, password=self._password)
                self._jolokia_controllers.add(t.key)
                out.append(t)
            for node_id, e in exporters:
                node = _host_port(e.url) if node_id is None else str(node_id)
                # through a Prometheus, one URL serves every controller: each is named by its id (required then)
                name = f"controller-{node}" if e.federate else f"controller-{_host_port(e.url)}"
                t = Target(self._cluster.name, "controller", name, e.url, node)
                self._endpoints[t.key] = _exporter_endpoint(e)
                self._by_exporter[t.key] = e.dialect
                out.append(t)
        return tuple(out)

    def targets(self) -> Sequence[Target]:
        """The listed targets, and those of the brokers and controllers the discovery board holds now (the list
        changes as brokers join and are unregistered: the service asks every round)."""
        if self._board is None:
            return self._targets
        found = discovery.broker_targets(self._cluster, self._board.brokers())
        controllers = self._board.controllers()
        jmx_addrs, jolokia_urls = discovery.controller_addresses(self._cluster, controllers)
        exporters = discovery.controller_exporters(self._cluster, controllers)
        return (
            self._targets
            + tuple(self._broker_target(b) for b in found if b.jmx or b.jolokia or b.jmx_exporter)
            + self._controller_targets(jmx_addrs, jolokia_urls, exporters)
        )

    def collect_target(self, target: Target, *, now: float) -> TargetResult:
        start = time.monotonic()
        is_controller = target.collector == "controller"
        by_jolokia = target.key in self._jolokia_controllers
        if target.key in self._by_exporter:
            transport: Transport = self._exporter
        elif is_controller:
            transport = self._transport if by_jolokia else self._controller_transport
        else:
            transport = self._controller_transport if target.key in self._by_jmxquery else self._transport
        queries = CONTROLLER_QUERIES if is_controller else BROKER_QUERIES
        rules = catalog.CONTROLLER_RULES if is_controller else catalog.BROKER_TARGET_RULES
        endpoint = self._endpoints[target.key]
        scraped_at = now  # when the readings were taken: for a Prometheus' answer, its scrape of the exporter
        try:
            if endpoint.via:
                federated = self._exporter.read_federated(endpoint, timeout=self._cluster.jmx.timeout_seconds)
                readings, scraped_at = federated.readings, federated.scraped_at or now
            else:
                readings = transport.read(endpoint, queries, timeout=self._cluster.jmx.timeout_seconds)
        except KafkaHealthError as exc:
            log.warning("%s: %s", target.key, exc)
            return failed(target, exc, started_at=now, duration=time.monotonic() - start)
        node = target.broker or _node_id(readings) or target.address
        base = (("cluster", target.cluster), ("broker", node))
        samples = catalog.convert(readings, rules, base=base, tenants=self._tenants)
        unstated: tuple[str, ...] = ()
        # (not through a Prometheus: what it serves is a scrape interval old, too late for the watch's 2 s)
        if is_controller and (by_jolokia or target.key in self._by_exporter) and not endpoint.via:
            watch = self._watch(target)
            samples += watch.samples(base)
            unstated = watch.unstated
        if target.key in self._by_exporter and not is_controller:  # the weak signals are brokers' (request handlers)
            samples += weak_signal_samples(self._by_exporter[target.key], base, samples)
        # Rates between two scrapes of the exporter: a Prometheus read twice within one of its scrape intervals gives
        # the same scrape twice, whose rates are those derived at the first
        with self._lock:
            prev = self._previous.get(target.key)
            if prev is not None and prev[0] == scraped_at:
                samples += prev[2]
            else:
                rates = catalog.derive_rates(samples, prev[1], scraped_at - prev[0]) if prev is not None else []
                self._previous[target.key] = (scraped_at, samples, rates)
                samples += rates
        result = succeeded(
            target, samples, started_at=now, duration=time.monotonic() - start, max_series=self._max_series
        )
        if unstated:
            said = unstated_message(unstated)
            result = dataclasses.replace(result, message="; ".join(filter(None, (result.message, said))))
        return result

    def _watch(self, target: Target) -> ControllerWatch:
        with self._lock:
            watch = self._watches.get(target.key)
            if watch is None:
                watch = ControllerWatch(target.key, lambda: self._watch_read(target), self._watch_interval())
                self._watches[target.key] = watch
                if self._watch_interval() > 0:
                    watch.start()
        return watch

    def _watch_interval(self) -> float:
        return self._cluster.jmx.controller_watch_seconds

    def _watch_read(self, target: Target) -> tuple[bool, dict[str, tuple[float | None, float | None]]]:
        timeout = min(self._cluster.jmx.timeout_seconds, max(2 * self._watch_interval(), 1.0))
        # Jolokia reads the watched MBeans alone. An exporter walks every MBean of the controller's JVM at each GET
        # whatever it is asked; ``name[]`` (client_java's filter) spares the rest of the answer: on the stack's
        # rule-less agent, 1.9 KB instead of 565 KB, and 95 ms of the controller's CPU per read instead of 241
        # (bench/controller_watch.py). An exporter without the filter answers in full, read the same way.
        endpoint = self._endpoints[target.key]
        if target.key in self._by_exporter:
            transport: Transport = self._exporter
            names = WATCH_EXPOSITION_NAMES.get(endpoint.dialect or "vanilla")
            if names and endpoint.exporter:
                sep = "&" if "?" in endpoint.exporter else "?"
                query = "&".join(f"name[]={n}" for n in names)
                endpoint = dataclasses.replace(endpoint, exporter=f"{endpoint.exporter}{sep}{query}")
        else:
            transport = self._transport
        readings = transport.read(endpoint, WATCH_QUERIES, timeout=timeout)
        samples = catalog.convert(
            readings, WATCH_RULES, base=(("cluster", target.cluster), ("broker", "")), tenants=self._tenants
        )
        active = any(s.name == "kafka_cluster_active_controllers" and s.value >= 1 for s in samples)
        states: dict[str, float] = {}
        ages: dict[str, float] = {}
        for s in samples:
            broker = dict(s.labels).get("broker", "")
            if s.name == "kafka_cluster_broker_registration_state":
                states[broker] = s.value
            elif s.name == "kafka_cluster_broker_heartbeat_age_seconds":
                ages[broker] = s.value
        # a broker with an age and no state: KAFKA-20370 (the watch says it rather than judge it on the age alone)
        return active, {b: (states.get(b), ages.get(b)) for b in sorted(states.keys() | ages.keys())}

    def close(self) -> None:
        with self._lock:
            watches, self._watches = list(self._watches.values()), {}
        for w in watches:
            w.stop()


def _exporter_endpoint(e: ExporterSource) -> Endpoint:
    """Where an exporter's series are read: its ``/metrics``, or the Prometheus that scrapes it (``federate``)."""
    return Endpoint(exporter=e.url, dialect=e.dialect, via=e if e.federate else None)


def _host_port(url: str) -> str:
    """``127.0.0.1:19140`` of ``http://127.0.0.1:19140/jolokia``: a controller target's name, as for JMX ones."""
    return url.split("://", 1)[-1].split("/", 1)[0]


def _node_id(readings) -> str | None:
    """The node id of a controller, from its ``kafka.server:type=app-info,id=N`` MBean."""
    for r in readings:
        if r.mbean.startswith("kafka.server:") and "app-info" in r.mbean:
            props = dict(catalog.parse_object_name(r.mbean)[1])
            if props.get("type") == "app-info" and "id" in props:
                return props["id"]
    return None
