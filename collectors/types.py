"""Types and protocols of the collectors package: read this module first.

    Target ──(Collector.collect_target)──> TargetResult ──(SnapshotStore)──> KafkaHealthExporter.collect() ──> /metrics
                    │
                    └── JmxCollector uses a Transport (jmxquery | jolokia) to read MBeans

- A ``Target`` is one thing scraped on its own schedule slot: a broker's JMX, a controller's JMX, a host, a
  cluster's Admin API. Failures are per target: one broken broker never hides another.
- A ``Collector`` turns one target into a ``TargetResult``: samples on success (possibly none: "no data"), or a
  classified failure ("failed"). It never raises for a target's own trouble; it returns ``TargetStatus.FAILED``.
- A ``Transport`` reads a batch of ``MBeanQuery`` from one JVM in one round trip and returns flat ``Reading``s.
  It raises only ``TargetTimeout``, ``TargetUnreachable`` or ``TransportError`` (monitor.core.errors), translating the
  library's own errors at the boundary, and must honour the timeout it is given.
- ``Sample`` is one exported series. Metric families are rebuilt from samples on every scrape (the
  prometheus_client custom-collector style), so nothing leaks between scrapes.

Everything here is plain data; the modules beside it implement it: ``catalog`` (MBean queries and the pure
readings -> samples conversion), ``transports`` (jmxquery, jolokia), ``jmx``, ``host``, ``admin`` (collectors),
``exporter`` (last results -> Prometheus families), ``service`` (the one place that wires them and schedules).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

MetricKind = Literal["gauge", "counter"]


class TargetStatus(str, enum.Enum):
    """Outcome of one collection of one target. Ordered from best to worst."""

    OK = "ok"  # answered, samples produced
    NO_DATA = "no_data"  # answered, but nothing matched (e.g. a fresh broker without topics): not a failure
    FAILED = "failed"  # did not answer usefully: see TargetResult.reason

    def __str__(self) -> str:
        return self.value


class FailureReason(str, enum.Enum):
    TIMEOUT = "timeout"
    UNREACHABLE = "unreachable"
    MALFORMED = "malformed"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Target:
    """One scrape target. ``key`` is unique across the whole config and stable across restarts (used for sharding)."""

    cluster: str
    collector: str  # "jmx" | "controller" | "host" | "admin"
    name: str  # e.g. "broker-1", "controller-127.0.0.1:9999", "host-localhost", "admin"
    address: str = ""  # host:port, URL or host name; never contains credentials
    broker: str = ""  # broker node id when the target is one broker

    @property
    def key(self) -> str:
        return f"{self.cluster}/{self.collector}/{self.name}"


@dataclass(frozen=True)
class Sample:
    """One exported series. ``labels`` is a tuple of (name, value) pairs, in the family's label order."""

    name: str
    kind: MetricKind
    help: str
    labels: tuple[tuple[str, str], ...]
    value: float


@dataclass(frozen=True)
class TargetResult:
    target: Target
    status: TargetStatus
    samples: tuple[Sample, ...]
    started_at: float  # wall clock (epoch seconds)
    duration_seconds: float
    reason: FailureReason | None = None
    message: str = ""  # safe to show: never a secret
    series_dropped: int = 0  # samples cut by the per-target cap


class Collector(Protocol):
    """Collects one kind of target.

    Implementers must: return within the target's timeout (plus a small margin); contain every failure of the target
    in the returned ``TargetResult`` (status FAILED with a reason) instead of raising; keep state only where a rate
    needs the previous reading (keyed by target). They must not: register anything globally, log secrets, block on
    one target while others wait (the service runs targets in parallel).
    """

    def targets(self) -> Sequence[Target]: ...

    def collect_target(self, target: Target, *, now: float) -> TargetResult: ...


@dataclass(frozen=True)
class MBeanQuery:
    """Read ``attributes`` of every MBean matching the ObjectName pattern ``mbean`` (JMX pattern syntax)."""

    mbean: str
    attributes: tuple[str, ...]


@dataclass(frozen=True)
class Reading:
    """One attribute value read from one MBean. ``key`` is set for an item of a CompositeData attribute.

    ``value`` is a float for numbers (NaN allowed), a str for strings, None for null/unsupported types.
    """

    mbean: str
    attribute: str
    value: float | str | None
    key: str | None = None


@dataclass(frozen=True)
class Endpoint:
    """Where a transport connects. ``jmx`` is host:port; ``jolokia`` is the agent's base URL."""

    jmx: str | None = None
    jolokia: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)


class Transport(Protocol):
    """Reads MBeans from one JVM.

    Implementers must: issue all ``queries`` in one call to the JVM (one subprocess, one HTTP request); return
    ``[]`` only when the JVM answered and nothing matched; raise ``TargetTimeout`` when ``timeout`` elapsed (and
    leave no child process behind), ``TargetUnreachable`` when the JVM could not be reached, ``TransportError``
    when the answer is unusable. They must not put a password on a command line or into a log or error message, and
    must not filter or rename: that is the catalog's job, so every transport yields the same series.
    """

    name: str

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery], *, timeout: float) -> list[Reading]: ...
