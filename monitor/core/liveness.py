"""How a broker left, as the KRaft controller saw it: the pure classification shared by the collector's controller
watch (collectors/controller_watch.py) and the broker-down detector (alerts/detectors/brokers.py, whose docstring
tells the whole story).

The controller (Kafka 4.x) exports, per registered broker, its registration state (30 active, 20 in controlled
shutdown, 10 fenced) and the age of the last heartbeat it received (capped at ``broker.session.timeout.ms``). An
*episode* is a broker's run of samples that are not healthy; its cause, first match: HEARTBEATS_LOST (a sample
ACTIVE with age >= lost_after), CONTROLLED (a sample CONTROLLED_SHUTDOWN, or FENCED with age under the session
timeout), UNKNOWN (nothing tells).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

ACTIVE, CONTROLLED_SHUTDOWN, FENCED = 30, 20, 10  # Kafka's BrokerRegistrationState values


class Cause(str, Enum):
    HEARTBEATS_LOST = "heartbeats_lost"
    CONTROLLED = "controlled_shutdown"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class BrokerSample:
    time: float  # unix seconds
    state: float | None = None  # registration state from the active controller; None: not known at that time
    age: float | None = None  # heartbeat age, seconds
    up: float | None = None  # Admin API: 1 in the metadata, 0 not


@dataclass(frozen=True)
class Episode:
    start: float  # the first sample that was not healthy
    end: float | None  # the first healthy sample after it; None: still going on
    cause: Cause
    seen_leaving: bool  # a healthy sample precedes it (else it began before the range)
    last: BrokerSample  # its latest sample


@dataclass(frozen=True)
class Thresholds:
    lost_after: float = 5.0  # heartbeat age (s) at which an ACTIVE broker counts as silent: 2.5 missed heartbeats
    session_timeout: float = 9.0  # broker.session.timeout.ms: where the controller fences (and caps the age)
    restart_grace: float = 300.0  # how long a controlled shutdown may last before the broker is paged as down
    restart_settle: float = 180.0  # after it is back, how long under-replication is left to catch up


def healthy(s: BrokerSample, t: Thresholds) -> bool | None:
    """True/False, or None when the sample says nothing."""
    if s.state is not None:
        return s.state == ACTIVE and (s.age or 0.0) < t.lost_after
    return None if s.up is None else s.up >= 1


def cause_of(samples: Sequence[BrokerSample], t: Thresholds, *, seen_leaving: bool) -> Cause:
    """Rules 1-3 of the module docstring over one episode's samples."""
    if any(s.state == ACTIVE and (s.age or 0.0) >= t.lost_after for s in samples):
        return Cause.HEARTBEATS_LOST
    if not seen_leaving:
        return Cause.UNKNOWN  # how it left fell before the range; what follows is not about leaving
    first_fenced = next((s for s in samples if s.state in (CONTROLLED_SHUTDOWN, FENCED)), None)
    if first_fenced is not None and (
        first_fenced.state == CONTROLLED_SHUTDOWN or (first_fenced.age or 0.0) < t.session_timeout
    ):
        return Cause.CONTROLLED
    return Cause.UNKNOWN


def episodes(samples: Iterable[BrokerSample], t: Thresholds) -> list[Episode]:
    """The broker's episodes, oldest first. Samples that say nothing are skipped."""
    out: list[Episode] = []
    run: list[BrokerSample] = []
    seen_healthy = False
    seen_leaving = False

    def close(end: float | None) -> None:
        out.append(Episode(run[0].time, end, cause_of(run, t, seen_leaving=seen_leaving), seen_leaving, run[-1]))

    for s in sorted(samples, key=lambda s: s.time):
        ok = healthy(s, t)
        if ok is None:
            continue
        if ok:
            if run:
                close(s.time)
                run = []
            seen_healthy = True
        else:
            if not run:
                seen_leaving = seen_healthy
            run.append(s)
    if run:
        close(None)
    return out
