"""Broker and controller JMX collector: one transport call per target, readings -> samples by the catalog."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from collectors import catalog
from collectors.outcome import failed, succeeded
from collectors.types import Endpoint, Sample, Target, TargetResult, Transport
from monitor.core.config import ClusterConfig
from monitor.core.errors import KafkaHealthError

log = logging.getLogger(__name__)

BROKER_QUERIES = catalog.queries_for(catalog.BROKER_TARGET_RULES)
CONTROLLER_QUERIES = catalog.queries_for(catalog.CONTROLLER_RULES)


class JmxCollector:
    """JMX of every broker and controller of one cluster.

    The transport comes from ``cluster.jmx.transport``: ``auto`` (the default) reads a broker with a Jolokia URL
    through ``transport`` (the bulk one) and a broker with only a JMX host:port through ``controller_transport``
    (jmxquery); ``jmxquery``/``jolokia`` read every broker with ``transport``. Controllers listed as JMX host:port
    are read with ``controller_transport``; controllers listed by Jolokia URL (``controller_jolokia``, the way to
    read a password-protected controller) with ``transport``.
    """

    def __init__(
        self,
        cluster: ClusterConfig,
        *,
        transport: Transport,
        controller_transport: Transport,
        tenants: catalog.TenantLookup,
        max_series: int,
    ):
        self._cluster = cluster
        self._transport = transport
        self._controller_transport = controller_transport
        self._tenants = tenants
        self._max_series = max_series
        self._previous: dict[str, tuple[float, list[Sample]]] = {}
        self._lock = threading.Lock()
        jmx = cluster.jmx
        password = jmx.password.resolve().get_secret_value() if jmx.password else None
        self._endpoints: dict[str, Endpoint] = {}
        targets = []
        self._by_jmxquery: set[str] = set()  # broker targets ``auto`` reads with jmxquery (no Jolokia URL)
        for b in cluster.brokers:
            # A broker missing the address its transport needs is still a target: it fails with a message saying
            # what is missing, instead of silently not being monitored.
            bulk = bool(b.jolokia) if jmx.transport == "auto" else transport.name == "jolokia"
            address = (b.jolokia if bulk else b.jmx) or b.jmx or b.jolokia
            if not address:
                continue
            t = Target(cluster.name, "jmx", f"broker-{b.id}", address=address, broker=str(b.id))
            self._endpoints[t.key] = Endpoint(jmx=b.jmx, jolokia=b.jolokia, username=jmx.username, password=password)
            if jmx.transport == "auto" and not bulk:
                self._by_jmxquery.add(t.key)
            targets.append(t)
        for addr in cluster.controller_jmx:
            t = Target(cluster.name, "controller", f"controller-{addr}", address=addr)
            self._endpoints[t.key] = Endpoint(jmx=addr, username=jmx.username, password=password)
            targets.append(t)
        self._jolokia_controllers: set[str] = set()
        for url in cluster.controller_jolokia:
            t = Target(cluster.name, "controller", f"controller-{_host_port(url)}", address=url)
            self._endpoints[t.key] = Endpoint(jolokia=url, username=jmx.username, password=password)
            self._jolokia_controllers.add(t.key)
            targets.append(t)
        self._targets = tuple(targets)

    def targets(self) -> Sequence[Target]:
        return self._targets

    def collect_target(self, target: Target, *, now: float) -> TargetResult:
        start = time.monotonic()
        is_controller = target.collector == "controller"
        by_jolokia = target.key in self._jolokia_controllers
        if is_controller:
            transport = self._transport if by_jolokia else self._controller_transport
        else:
            transport = self._controller_transport if target.key in self._by_jmxquery else self._transport
        queries = CONTROLLER_QUERIES if is_controller else BROKER_QUERIES
        rules = catalog.CONTROLLER_RULES if is_controller else catalog.BROKER_TARGET_RULES
        try:
            readings = transport.read(self._endpoints[target.key], queries,
                                      timeout=self._cluster.jmx.timeout_seconds)
        except KafkaHealthError as exc:
            log.warning("%s: %s", target.key, exc)
            return failed(target, exc, started_at=now, duration=time.monotonic() - start)
        node = target.broker or _node_id(readings) or target.address
        samples = catalog.convert(readings, rules, base=(("cluster", target.cluster), ("broker", node)),
                                  tenants=self._tenants)
        with self._lock:
            prev = self._previous.get(target.key)
            self._previous[target.key] = (now, samples)
        if prev is not None:
            samples += catalog.derive_rates(samples, prev[1], now - prev[0])
        return succeeded(target, samples, started_at=now, duration=time.monotonic() - start,
                         max_series=self._max_series)


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
