"""A dense watch of the KRaft controller's view of each broker, so a crash is told from a controlled shutdown
whatever the collection and scrape intervals.

What tells them apart (monitor/core/liveness.py) lasts a few seconds: a crashed or hung broker is registered ACTIVE
while its heartbeat age climbs from 2 to 9 s, then fenced; a controlled shutdown passes through CONTROLLED_SHUTDOWN
and is fenced while it still heartbeats. A collector read every 15 s and scraped every 15 s misses most of these
moments, and the engine then falls back to the plain broker-down rule. So, for each controller read through Jolokia
or through its jmx_exporter (one HTTP call: the watched MBeans from Jolokia, the watched names from an exporter,
which still walks every MBean of the JVM; jmxquery would start a JVM each time), a thread reads the per-broker
registration state and heartbeat age every ``jmx.controller_watch_seconds`` (2 s), classifies each broker's
departure as it happens, and the controller's collection round exports the result, which no sampling can miss:

    kafka_cluster_broker_departures_total{broker, controller, cause}            departures seen, by cause
    kafka_cluster_broker_last_departure_timestamp_seconds{broker, controller, cause}   when the latest one began

``cause`` is ``heartbeats_lost`` (crash or hang) or ``controlled_shutdown``. Only the active controller's readings
count (a standby reports the session timeout for every broker).

A controller restarted from a metadata snapshot exports a broker's heartbeat age but not its registration state
until the broker is new to it (KAFKA-20370, Kafka 4.x, open). The age alone cannot tell a crash from a restart (both
climb to the session timeout once the broker is gone), so such a broker is not judged; it is said instead, once in
the log and at every round while it lasts:

    kafka_cluster_broker_state_unexported{broker, controller} 1     the watch is blind to this broker's departures
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable

from collectors.types import Sample
from monitor.core.liveness import BrokerSample, Cause, Thresholds, episodes

log = logging.getLogger(__name__)

DEPARTURES = "kafka_cluster_broker_departures_total"
LAST_DEPARTURE = "kafka_cluster_broker_last_departure_timestamp_seconds"
UNSTATED = "kafka_cluster_broker_state_unexported"


def unstated_message(brokers: tuple[str, ...]) -> str:
    """What the watch says of brokers whose heartbeat age comes without a registration state (KAFKA-20370): in the
    collector's log when the set changes, and in every controller round's message while it lasts."""
    return (
        f"the active controller exports no registration state for broker(s) {', '.join(brokers)}, only their heartbeat "
        "age (KAFKA-20370: a controller restarted from a metadata snapshot): their crashes are not told from restarts "
        "until each registers again"
    )


class DepartureLog:
    """Pure: the active controller's per-broker readings in, each broker's departures out, counted once per episode
    as soon as its cause is known. Keeps ``keep_seconds`` of samples per broker."""

    def __init__(self, thresholds: Thresholds = Thresholds(), keep_seconds: float = 120.0):
        self._t = thresholds
        self._keep = keep_seconds
        self._samples: dict[str, deque[BrokerSample]] = {}
        self._counted: dict[str, float] = {}  # broker -> start of its last counted episode
        self.counts: Counter[tuple[str, str]] = Counter()  # (broker, cause) -> departures
        self.last: dict[tuple[str, str], float] = {}  # (broker, cause) -> when the latest began (unix seconds)
        self.unstated: tuple[str, ...] = ()  # brokers whose age came without a state at the latest reading

    def observe(
        self, t: float, brokers: dict[str, tuple[float | None, float | None]]
    ) -> list[tuple[str, Cause, float]]:
        """``brokers``: broker id -> (registration state, heartbeat age seconds) read at ``t``; a state None is a
        broker the controller exports no state for (``unstated``: its samples tell nothing). Returns the departures
        first known at this reading: (broker, cause, start)."""
        new = []
        self.unstated = tuple(sorted(b for b, (state, _) in brokers.items() if state is None))
        for broker, (state, age) in brokers.items():
            q = self._samples.setdefault(broker, deque())
            q.append(BrokerSample(t, state=state, age=age))
            while q and q[0].time < t - self._keep:
                q.popleft()
            eps = episodes(q, self._t)
            ep = eps[-1] if eps else None
            if ep is None or not ep.seen_leaving or ep.cause is Cause.UNKNOWN or self._counted.get(broker) == ep.start:
                continue
            self._counted[broker] = ep.start
            self.counts[(broker, ep.cause.value)] += 1
            self.last[(broker, ep.cause.value)] = ep.start
            new.append((broker, ep.cause, ep.start))
        return new

    def samples(self, base: tuple[tuple[str, str], ...]) -> list[Sample]:
        """The exported series, ``base`` (cluster, then broker = the controller's node id) relabelled: ``broker`` is
        the broker the departure is about and ``controller`` the node that saw it, as the controller's other
        per-broker series."""
        labels = dict(base)
        controller = labels.get("broker", "")
        out = []
        for (broker, cause), n in sorted(self.counts.items()):
            lab = (
                ("cluster", labels.get("cluster", "")),
                ("broker", broker),
                ("controller", controller),
                ("cause", cause),
            )
            out.append(
                Sample(
                    DEPARTURES,
                    "counter",
                    "Broker departures the active controller saw, by how the broker "
                    "left (heartbeats_lost: crash or hang; controlled_shutdown)",
                    lab,
                    float(n),
                )
            )
            out.append(
                Sample(
                    LAST_DEPARTURE,
                    "gauge",
                    "When the broker's latest departure of that cause began (Unix time)",
                    lab,
                    self.last[(broker, cause)],
                )
            )
        for broker in self.unstated:
            out.append(
                Sample(
                    UNSTATED,
                    "gauge",
                    "1: the active controller exports this broker's heartbeat age without its registration state "
                    "(KAFKA-20370, a controller restarted from a snapshot): its crashes are not told from restarts",
                    (("cluster", labels.get("cluster", "")), ("broker", broker), ("controller", controller)),
                    1.0,
                )
            )
        return out


class ControllerWatch:
    """A thread calling ``read()`` every ``interval`` seconds; ``read`` returns (is the active controller, broker id
    -> (state, age)) or raises. Readings of a standby controller are dropped."""

    def __init__(
        self,
        name: str,
        read: Callable[[], tuple[bool, dict[str, tuple[float | None, float | None]]]],
        interval: float,
        *,
        clock: Callable[[], float] = time.time,
    ):
        self.log = DepartureLog()
        self._read, self._interval, self._clock = read, interval, clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"controller-watch-{name}", daemon=True)
        self._failing = False
        self._unstated: tuple[str, ...] = ()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                active, brokers = self._read()
                if self._failing:
                    log.info("controller watch %s reads again", self._thread.name)
                self._failing = False
                if active and brokers:
                    with self._lock:
                        for broker, cause, start in self.log.observe(self._clock(), brokers):
                            log.info("broker %s left at %.0f: %s", broker, start, cause.value)
                        self._say_unstated(self.log.unstated)
            except Exception as exc:  # noqa: BLE001 - the round's own read reports failures; say it once here
                if not self._failing:
                    log.warning("controller watch %s cannot read: %s", self._thread.name, exc)
                self._failing = True
            self._stop.wait(max(0.0, self._interval - (time.monotonic() - started)))

    def _say_unstated(self, unstated: tuple[str, ...]) -> None:
        """Log when the set of brokers without an exported state changes (KAFKA-20370), not at every reading."""
        if unstated != self._unstated:
            if unstated:
                log.warning("controller watch %s: %s", self._thread.name, unstated_message(unstated))
            else:
                log.info("controller watch %s: every broker's registration state is exported again", self._thread.name)
            self._unstated = unstated

    @property
    def unstated(self) -> tuple[str, ...]:
        with self._lock:
            return self.log.unstated

    def samples(self, base: tuple[tuple[str, str], ...]) -> list[Sample]:
        with self._lock:
            return self.log.samples(base)
