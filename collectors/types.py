"""Types and protocols of the collectors package: read this module first.

    Target ──(Collector.collect_target)──> TargetResult ──(SnapshotStore)──> KafkaHealthExporter.collect() ──> /metrics
                    │
                    ├── JmxCollector uses a Transport (jmxquery | jolokia) to read MBeans
                    └── AdminCollector uses an AdminApi (KafkaAdmin, in a child process: IsolatedAdmin) to read
                        ClusterState, GroupInfo, committed offsets and high watermarks

- A ``Target`` is one thing scraped on its own schedule slot: a broker's JMX, a controller's JMX, a host, a
  cluster's Admin API. Failures are per target: one broken broker never hides another.
- A ``Collector`` turns one target into a ``TargetResult``: samples on success (possibly none: "no data"), or a
  classified failure ("failed"). It never raises for a target's own trouble; it returns ``TargetStatus.FAILED``.
- A ``Transport`` reads a batch of ``MBeanQuery`` from one JVM in one round trip and returns flat ``Reading``s.
  It raises only ``TargetTimeout``, ``TargetUnreachable`` or ``TransportError`` (monitor.core.errors), translating the
  library's own errors at the boundary, and must honour the timeout it is given.
- An ``AdminApi`` makes the Admin API calls of one cluster and answers with plain data (``ClusterState``,
  ``GroupInfo``, offsets by ``TP``), which crosses a process boundary as is. Like a transport it raises only
  ``TargetTimeout``, ``TargetUnreachable`` or ``TransportError`` and honours the timeout it is given.
- ``Sample`` is one exported series. Metric families are rebuilt from samples on every scrape (the
  prometheus_client custom-collector style), so nothing leaks between scrapes.

Everything here is plain data; the modules beside it implement it: ``catalog`` (MBean queries and the pure
readings -> samples conversion), ``transports`` (jmxquery, jolokia), ``jmx``, ``host``, ``admin`` (collectors),
``admin_convert`` (the pure Admin answers -> samples conversion), ``admin_client`` (``KafkaAdmin``, the seam around
confluent-kafka) and ``admin_process`` (``IsolatedAdmin``: the same calls answered by a child process), ``exporter``
(last results -> Prometheus families), ``service`` (the one place that wires them and schedules).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

from monitor.core.errors import CollectorError

if TYPE_CHECKING:  # the config's model, named in Endpoint's annotation only
    from monitor.core.config import ScrapedSource

# "summary": a quantile series (label ``quantile``) of a summary family, which Prometheus' conventions reserve the
# label for (promtool check metrics rejects a gauge with it); the family carries quantiles only, no _sum or _count.
MetricKind = Literal["gauge", "counter", "summary"]


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
    AUTHENTICATION = "authentication"  # wrong password, expired or untrusted certificate
    AUTHORIZATION = "authorization"  # a missing ACL
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


class CutCause(str, enum.Enum):
    """Why a round that succeeded still left data out (``TargetResult.cuts``). Ordered as a round meets them."""

    DEADLINE = "deadline"  # the round's time ran out (Admin: consumer groups whose lag was not read)
    SERIES_CAP = "series_cap"  # more series than ``collection.max_series_per_target`` (collectors.outcome)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Cut:
    """What one cause left out of one round: ``series`` not exported, ``groups`` whose lag is not exported (groups
    that only lost detail series are not counted), and ``message``: what was cut and which setting to raise."""

    cause: CutCause
    series: int
    groups: int
    message: str


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
    cuts: tuple[Cut, ...] = ()  # what a cap or the round's deadline left out, one per cause that cut something


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


class Reading(NamedTuple):
    """One attribute value read from one MBean. ``key`` is set for an item of a CompositeData attribute.

    ``value`` is a float for numbers (NaN allowed), a str for strings, None for null/unsupported types.

    A named tuple, not a frozen dataclass: a broker of 10,000 partitions gives that many readings a read, and a
    tuple is made in less than half the time (1.3 against 2.9 us on the development machine, bench/collector_fleet.py).
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
    exporter: str | None = None  # a jmx_exporter's /metrics URL (collectors/transports/exposition.py)
    dialect: str | None = None  # its naming: vanilla | strimzi | strimzi_reporter
    # or the exporter's series as the Prometheus that scrapes it serves them: that Prometheus, the selector naming
    # this node's exporter and its login (monitor.core.config.ScrapedSource, with ``federate``)
    via: ScrapedSource | None = None


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


# ---------------------------------------------------------------------------------------------------------------
# The Admin API: what an AdminApi answers. Plain frozen data: it is pickled from the Admin client's child process.

TP = tuple[str, int]  # (topic, partition)


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int  # -1 when offline
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class ClusterState:
    brokers: tuple[int, ...]
    controller_id: int
    partitions: tuple[PartitionState, ...]
    # topic -> its effective min.insync.replicas; a topic missing here has no under-min-ISR series (unknown, not 0)
    min_isr: dict[str, int] = field(default_factory=dict)
    # broker -> its request-handler threads (num.io.threads); a broker missing here has no series (unknown, not 8)
    handler_threads: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupInfo:
    group: str
    state: str  # lower case: stable, empty, preparingrebalance, dead, unknown, ...
    members: int | None  # None: the group could not be described (its offsets and lag are still read)
    simple: bool = False
    # (client id, client host) of each active member: the host is the address the coordinator sees, which is how
    # a slow peer found by the host collector's socket backlogs is tied to a client id.
    member_clients: tuple[tuple[str, str], ...] = ()
    # (client id, client host, the partitions assigned to it) of each active member, from the same description:
    # which member lags (its share of the group's lag) is read from it.
    member_assignments: tuple[tuple[str, str, tuple[TP, ...]], ...] = ()


class AdminApi(Protocol):
    """The Admin API calls the ``AdminCollector`` makes on one cluster, answered as plain data.

    Implemented by ``collectors.admin_client.KafkaAdmin`` (the seam around confluent-kafka) and by
    ``collectors.admin_process.IsolatedAdmin`` (the same calls, answered by a ``KafkaAdmin`` in a child process).

    Implementers must: finish every call, all its requests together, within the ``timeout`` it is given (the
    collector passes what is left of its round) and raise ``TargetTimeout`` otherwise; translate the library's errors
    at the boundary into ``TargetTimeout``, ``TargetUnreachable`` or ``TransportError``; leave out what one part of a
    call could not read (a topic's config, a partition's watermark: unknown, never 0) rather than fail the call; set
    ``stale_coordinator`` when a group call answered NOT_COORDINATOR and ``replace_client`` when this client should
    not serve another round (a dead or moved group coordinator: librdkafka keeps it for good). A client with a
    process of its own also has ``broken`` (it died or hung) and ``close()``; the collector replaces a broken client.
    They must not: keep a group out of ``groups`` because its description failed (kept with unknown members, so
    its lag is still read), or put a secret of the client settings into an error message or a log.
    """

    stale_coordinator: bool
    replace_client: bool

    def cluster(self, *, timeout: float) -> ClusterState:
        """Brokers, controller and partition states (``min_isr`` empty: see ``min_insync_replicas``)."""
        ...

    def min_insync_replicas(self, topics: Iterable[str], *, timeout: float) -> dict[str, int]:
        """Effective ``min.insync.replicas`` per topic; a topic whose config cannot be read is left out."""
        ...

    def handler_threads(self, brokers: Iterable[int], *, timeout: float) -> dict[int, int | CollectorError]:
        """Each broker's request-handler threads (its ``num.io.threads``, dynamic override included), or the error
        its answer met (a missing ACL: ``TargetForbidden``); a broker not answered within ``timeout`` is left out."""
        ...

    def groups(self, *, timeout: float) -> list[GroupInfo]:
        """Every consumer group, described where possible. Raises if the listing fails."""
        ...

    def committed(
        self, groups: Sequence[str], *, timeout: float, group_timeout: float
    ) -> dict[str, dict[TP, int] | CollectorError]:
        """Each group's committed offsets (negative: no commit on that partition), or the error that group met.
        All groups are asked together, not one after the other; a group gets ``group_timeout`` to answer (then its
        entry is a ``TargetTimeout``), and one not answered within ``timeout`` is left out (the deadline cut it)."""
        ...

    def high_watermarks(self, tps: Iterable[TP], *, timeout: float) -> dict[TP, int]:
        """Latest offset per partition; a partition without an answer is left out."""
        ...
