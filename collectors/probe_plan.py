"""The end-to-end probe's decisions, pure: which partition measures which broker, and what became of each record.

    plan(brokers, topic) ──> ProbePlacement: the topic to create, the partitions to add, the leaders to elect,
                             and ``owners`` (partition -> the broker whose series it feeds)
    Ledger: sent / delivered / consumed / expire(now) ──> ProbeMeasurement (produce or round-trip latency, a result)

The probe (``collectors.probe``) is the shell: it reads the metadata, applies the plan through the Admin API,
produces and consumes, and turns measurements into ``kafka_probe_*`` series. Time is always passed in.

Placement (after KMinion's end-to-end monitoring): one partition per broker, created with an explicit replica
assignment whose first replica, the preferred leader, is that broker; replication factor min(3, brokers), the other
replicas the next brokers in id order. A broker that joins gets a partition of its own (CreatePartitions with an
assignment); a partition led by another broker than its preferred leader, while the preferred one is alive, is
given back to it by a preferred-leader election. A partition's series carry its *preferred* leader, not the leader
of the moment: while a broker is down its partition is led elsewhere, yet its failures and latencies are the
broker's story, and its series stay the same series across restarts. Partitions are never reassigned (confluent-kafka
2.16 has no AlterPartitionReassignments): a removed broker keeps its partition, whose records then fail, which is
what its series should say until an operator moves or deletes it.

Results, one per record, decided once: ``ok`` when consumed back within the deadline; ``error`` when the produce
failed (the delivery report's error) before that; ``lost`` when neither happened within the deadline (not acked, or
acked and not consumed). Whatever arrives about a record after its result was decided is ignored, so a late
delivery error never counts a record twice.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

MAX_REPLICATION_FACTOR = 3


class Result(str, enum.Enum):
    OK = "ok"
    ERROR = "error"
    LOST = "lost"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class PartitionView:
    """One partition of the probe topic as the metadata shows it. ``leader`` is -1 when it has none."""

    replicas: tuple[int, ...]
    leader: int


@dataclass(frozen=True)
class ProbePlacement:
    create: tuple[tuple[int, ...], ...] = ()  # the topic's replica assignment, partition by partition; () = exists
    add: tuple[tuple[int, ...], ...] = ()  # new partitions' replica lists, appended after the existing ones
    elect: tuple[int, ...] = ()  # partitions whose alive preferred leader does not lead them
    owners: Mapping[int, int] = field(default_factory=dict)  # partition -> the broker its series carry

    @property
    def changes(self) -> bool:
        return bool(self.create or self.add or self.elect)


def replication_factor(brokers: int) -> int:
    return max(1, min(MAX_REPLICATION_FACTOR, brokers))


def replicas_led_by(broker: int, brokers: Iterable[int]) -> tuple[int, ...]:
    """``broker`` first (the preferred leader), then the next brokers in id order, wrapping around."""
    ring = sorted(set(brokers))
    if broker not in ring:
        raise ValueError(f"broker {broker} is not among {ring}")
    start = ring.index(broker)
    return tuple(ring[(start + i) % len(ring)] for i in range(replication_factor(len(ring))))


def plan(brokers: Iterable[int], topic: Mapping[int, PartitionView] | None) -> ProbePlacement:
    """What to do so that every alive broker leads one partition of the probe topic. ``brokers``: the brokers in the
    metadata now; ``topic``: the topic's partitions, None when it does not exist."""
    alive = sorted(set(brokers))
    if not alive:
        owners = {} if topic is None else {p: v.replicas[0] for p, v in topic.items() if v.replicas}
        return ProbePlacement(owners=owners)
    if topic is None:
        create = tuple(replicas_led_by(b, alive) for b in alive)
        return ProbePlacement(create=create, owners={i: b for i, b in enumerate(alive)})
    owners = {p: v.replicas[0] for p, v in sorted(topic.items()) if v.replicas}
    led = set(owners.values())
    missing = [b for b in alive if b not in led]
    add = tuple(replicas_led_by(b, alive) for b in missing)
    first_new = max(topic, default=-1) + 1
    owners.update({first_new + i: b for i, b in enumerate(missing)})
    elect = tuple(
        p for p, v in sorted(topic.items()) if v.replicas and v.replicas[0] in alive and v.leader != v.replicas[0]
    )
    return ProbePlacement(add=add, elect=elect, owners=owners)


@dataclass(frozen=True)
class ProbeMeasurement:
    """One thing learnt about a broker: ``kind`` is "produce" or "roundtrip" (``seconds`` set) or "result"
    (``result`` set)."""

    broker: int
    kind: str
    seconds: float | None = None
    result: Result | None = None


@dataclass
class _Record:
    broker: int
    sent_at: float
    acked: bool = False
    decided: bool = False


class Ledger:
    """Records in flight, by key (unique within one probe run). Not thread-safe: the probe holds a lock around it.

    ``sent`` then any order of ``delivered``, ``consumed`` and ``expire``; each returns what was learnt. A record is
    forgotten once its result is decided and its delivery report came, or ``2 * deadline`` after it was sent (a
    delivery report that never comes, as when the producer is closed)."""

    def __init__(self, deadline: float):
        if deadline <= 0:
            raise ValueError("deadline must be positive")
        self.deadline = deadline
        self._records: dict[int, _Record] = {}

    def __len__(self) -> int:
        return len(self._records)

    def sent(self, key: int, broker: int, now: float) -> None:
        self._records[key] = _Record(broker, now)

    def forget(self, key: int) -> None:
        """Drop a record without a result (refused for the probe's own lack of rights: not the cluster's doing)."""
        self._records.pop(key, None)

    def delivered(self, key: int, now: float, error: str | None = None) -> list[ProbeMeasurement]:
        """The delivery report: acknowledged by all in-sync replicas (``error`` None), or failed."""
        rec = self._records.get(key)
        if rec is None or rec.acked:
            return []
        rec.acked = True
        out: list[ProbeMeasurement] = []
        if not rec.decided:
            if error is None:
                out.append(ProbeMeasurement(rec.broker, "produce", seconds=now - rec.sent_at))
            else:
                out.append(ProbeMeasurement(rec.broker, "result", result=Result.ERROR))
                rec.decided = True
        if rec.decided:
            del self._records[key]
        return out

    def consumed(self, key: int, now: float) -> list[ProbeMeasurement]:
        rec = self._records.get(key)
        if rec is None or rec.decided:
            return []
        rec.decided = True
        if rec.acked:
            del self._records[key]
        return [
            ProbeMeasurement(rec.broker, "roundtrip", seconds=now - rec.sent_at),
            ProbeMeasurement(rec.broker, "result", result=Result.OK),
        ]

    def expire(self, now: float) -> list[ProbeMeasurement]:
        """Records not back within the deadline are lost; decided records whose report never came are forgotten."""
        out: list[ProbeMeasurement] = []
        for key, rec in list(self._records.items()):
            age = now - rec.sent_at
            if not rec.decided and age >= self.deadline:
                rec.decided = True
                out.append(ProbeMeasurement(rec.broker, "result", result=Result.LOST))
            if rec.decided and (rec.acked or age >= 2 * self.deadline):
                del self._records[key]
        return out
