"""Consumer groups listed and described through kafka-python, on the Admin child's offsets client (issue 33).

librdkafka 2.16's DescribeConsumerGroups can abort the whole process under load
(``rd_kafka_enq_once_del_source_return``, librdkafka#4605): the Admin child contains the crash
(``collectors.admin_process``), but the round is lost. Listing and describing go instead through the kafka-python
client that already reads the committed offsets and watermarks (``collectors.protocol_client.KafkaOffsets``): one
client, one connection per broker, no third client.

    ConsumerGroups.groups(timeout)
      ListGroups (v5: each group's type and state) ── to every broker at once, within LIST_SHARE of the call
        │  share and streams groups left out (collectors.group_kinds reads them); empty groups not described
        │  (the listing says all a description would: in a shared cluster most groups are idle)
      FindCoordinator v4 (one, naming every group to describe: KafkaOffsets.find_coordinators)
      per coordinator, all at once:  DescribeGroups (classic groups)  ConsumerGroupDescribe (API 69: KIP-848 groups)
        │  groups whose coordinator moved or was loading are asked once more after a fresh lookup
      ──> GroupInfo per listed group, in listing order

Partial-failure policy (``AdminApi.groups``): the call raises only when no broker answered the listing; a broker that
did not answer leaves out the groups it coordinates (said in a warning: their coordinator is probably what died, and
they come back when it moves); a group whose description fails (its coordinator did not answer in time, an error
for that group) is kept with the listing's state and unknown members, so its offsets and lag are still read.

States are written as Kafka names them, lower case without separators (``stable``, ``empty``, ``preparingrebalance``,
``completingrebalance``, ``dead``; KIP-848 groups ``assigning``, ``reconciling``): what docs/metrics.md and the
advisor's rebalance rule (``monitor.advisor.source.REBALANCING_STATES``) read. ``group_state`` maps librdkafka's enum
names (``PREPARING_REBALANCING``) to the same, so the fallback path exports the same labels.

ConsumerGroupDescribe (API 69) is not in kafka-python 3.0.12: its schema (v0), generated from kafka-clients 4.4.0,
ships in ``collectors.kafka_messages``. A cluster that does not offer it (Kafka before 4.0) has no KIP-848 group to
describe: its groups are described with DescribeGroups.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from typing import Any

from collectors.group_kinds import Group, group_messages
from collectors.protocol_client import COORDINATOR_MOVED, KafkaOffsets, api_max, translate
from collectors.types import TP, GroupInfo
from monitor.core.errors import KafkaHealthError

log = logging.getLogger(__name__)

CONSUMER_DESCRIBE_API = 69
# Share of a groups() call the listing may take: a broker that has not answered by then (stopped, or dying) leaves
# out its groups, and the descriptions get the rest of the call.
LIST_SHARE = 0.5
CONSUMER_KINDS = ("classic", "consumer")  # ListGroups' types read here; share and streams: collectors.group_kinds
# librdkafka's ConsumerGroupState names that differ from Kafka's state names, once lower-cased without separators.
_LIBRDKAFKA_STATES = {"preparingrebalancing": "preparingrebalance", "completingrebalancing": "completingrebalance"}


def group_state(name: str) -> str:
    """A group state as the collector writes it: Kafka's name (``PreparingRebalance``) or librdkafka's enum name
    (``PREPARING_REBALANCING``), lower case without separators: ``preparingrebalance``."""
    flat = name.lower().replace("_", "").replace("-", "").replace(" ", "")
    return _LIBRDKAFKA_STATES.get(flat, flat)


def listed_group(row: Any) -> Group:
    """One row of a ListGroups answer: its type (``classic`` below v5) and state ("" below v4)."""
    return Group(
        str(row.group_id),
        str(getattr(row, "group_type", None) or "classic").lower(),
        str(getattr(row, "group_state", None) or ""),
        str(row.protocol_type or ""),
    )


def merge_listings(
    answers: Sequence[tuple[int, Any]], principal: str | None
) -> tuple[list[Group], dict[int, KafkaHealthError]]:
    """Every broker's ListGroups answer (or the exception awaiting it raised) -> the groups, each once, in id order,
    and the brokers that did not answer with why. A group listed by two brokers (its coordinator moving) is kept
    once."""
    import kafka.errors as ke

    groups: dict[str, Group] = {}
    missing: dict[int, KafkaHealthError] = {}
    for broker, answer in answers:
        if isinstance(answer, BaseException):
            missing[broker] = translate("list groups", _exception(answer), principal)
            continue
        if answer.error_code:
            missing[broker] = translate("list groups", ke.for_code(answer.error_code)(), principal)
            continue
        for row in answer.groups:
            g = listed_group(row)
            groups.setdefault(g.id, g)
    return [groups[k] for k in sorted(groups)], missing


def _assigned(blob: bytes | None) -> tuple[TP, ...]:
    """A classic consumer member's assignment (the consumer protocol's bytes): its partitions, none while it joins
    (empty bytes) or where the bytes are not the consumer protocol's."""
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

    if not blob:
        return ()
    try:
        assignment = ConsumerProtocolAssignment.decode(blob)
    except Exception:  # noqa: BLE001 - not the consumer protocol's bytes: no partitions known, the member still is
        return ()
    return tuple(sorted((str(t.topic), int(p)) for t in assignment.assigned_partitions for p in t.partitions))


def classic_group_info(row: Any) -> GroupInfo:
    """A group of a DescribeGroups answer as the collector reads it (as librdkafka's description: simple when its
    protocol type is empty; members' partitions decoded for the consumer protocol only)."""
    consumer = row.protocol_type == "consumer"
    members = list(row.members)
    return GroupInfo(
        str(row.group_id),
        group_state(str(row.group_state)),
        len(members),
        not row.protocol_type,
        tuple((str(m.client_id), str(m.client_host)) for m in members),
        tuple(
            (str(m.client_id), str(m.client_host), _assigned(m.member_assignment) if consumer else ()) for m in members
        ),
    )


def consumer_group_info(row: Any) -> GroupInfo:
    """A group of a ConsumerGroupDescribe answer (KIP-848): each member's current assignment, by topic name."""
    members = list(row.members)
    return GroupInfo(
        str(row.group_id),
        group_state(str(row.group_state)),
        len(members),
        False,
        tuple((str(m.client_id), str(m.client_host)) for m in members),
        tuple(
            (
                str(m.client_id),
                str(m.client_host),
                tuple(sorted((str(t.topic_name), int(p)) for t in m.assignment.topic_partitions for p in t.partitions)),
            )
            for m in members
        ),
    )


def settle_describe(
    asked: Sequence[str], answer: Any, *, consumer: bool, principal: str | None, node: int
) -> tuple[dict[str, GroupInfo], dict[str, str], list[str]]:
    """One coordinator's DescribeGroups or ConsumerGroupDescribe answer (or the exception awaiting it raised) -> the
    groups described, the groups not described with why, and those to ask again (their coordinator moved)."""
    import kafka.errors as ke

    if isinstance(answer, BaseException):
        timed_out = isinstance(answer, (ke.KafkaTimeoutError, ke.RequestTimedOutError, TimeoutError))
        why = (
            f"describe groups: group coordinator {node} did not answer in time"
            if timed_out
            else str(translate(f"describe groups (group coordinator {node})", _exception(answer), principal))
        )
        return {}, dict.fromkeys(asked, why), []
    described: dict[str, GroupInfo] = {}
    failed: dict[str, str] = {}
    again: list[str] = []
    for row in answer.groups:
        gid = str(row.group_id)
        if row.error_code:
            failed[gid] = str(translate("describe groups", ke.for_code(row.error_code)(), principal))
            if row.error_code in COORDINATOR_MOVED:
                again.append(gid)
            continue
        described[gid] = consumer_group_info(row) if consumer else classic_group_info(row)
    for gid in asked:
        if gid not in described and gid not in failed:
            failed[gid] = f"describe groups: group coordinator {node} left group {gid} out of its answer"
    return described, failed, again


def _exception(exc: BaseException) -> Exception:
    return exc if isinstance(exc, Exception) else RuntimeError(repr(exc))


class ConsumerGroups:
    """Every consumer group of one cluster listed and described (``AdminApi.groups``) on ``offsets``' client."""

    def __init__(self, offsets: KafkaOffsets):
        self._offsets = offsets
        self._manager = offsets._admin._manager
        self._principal = offsets._principal

    def _api_max(self, api_key: int) -> int:
        return api_max(self._manager, api_key)

    def groups(self, *, timeout: float, brokers: Iterable[int] = ()) -> list[GroupInfo]:
        """Every classic and KIP-848 consumer group, described where possible (module docstring), listed on
        ``brokers`` (the round's metadata: a broker kafka-python's own metadata does not know yet fails its listing,
        said) and every broker this client knows. Raises a ``KafkaHealthError`` when no broker answered the
        listing."""
        end = time.monotonic() + timeout
        try:
            return list(self._manager.run(self._read, end, tuple(brokers)))
        except KafkaHealthError:
            raise
        except Exception as exc:  # the library's errors, translated at the seam
            raise translate("list groups", exc, self._principal) from exc

    async def _read(self, end: float, brokers: tuple[int, ...] = ()) -> list[GroupInfo]:
        listed = await self._list(time.monotonic() + LIST_SHARE * max(0.0, end - time.monotonic()), brokers)
        out: dict[str, GroupInfo] = {}
        wanted: dict[str, str] = {}
        for g in listed:
            state = group_state(g.state)
            if state == "empty":
                out[g.id] = GroupInfo(g.id, "empty", 0, not g.protocol_type)
            else:
                wanted[g.id] = g.type
        described, failed = await self.describe(wanted, end) if wanted else ({}, {})
        out.update(described)
        if failed:  # one line, not one per group: a dead coordinator fails a third of them
            first = sorted(failed)[:3]
            log.warning(
                "%d groups not described (%s%s): %s; offsets and lag read anyway, members unknown",
                len(failed),
                ", ".join(first),
                ", ..." if len(failed) > 3 else "",
                failed[first[0]],
            )
        for g in listed:
            if g.id not in out:
                out[g.id] = GroupInfo(g.id, group_state(g.state), None, not g.protocol_type)
        return [out[g.id] for g in listed]

    async def _list(self, until: float, brokers: Iterable[int] = ()) -> list[Group]:
        from kafka.protocol.admin import ListGroupsRequest

        nodes = sorted({b.node_id for b in self._manager.cluster.brokers()} | set(brokers))
        answers = await self._offsets.ask_each([(n, ListGroupsRequest()) for n in nodes], until)
        groups, missing = merge_listings(list(zip(nodes, answers, strict=True)), self._principal)
        if missing and len(missing) == len(nodes):
            first = missing[min(missing)]
            raise type(first)(f"{first} (no broker answered)")
        for broker, why in sorted(missing.items()):
            log.warning("groups of broker %d not listed this round (it coordinates them): %s", broker, why)
        return [g for g in groups if g.type in CONSUMER_KINDS]

    async def describe(self, groups: dict[str, str], end: float) -> tuple[dict[str, GroupInfo], dict[str, str]]:
        """``groups`` (id -> its ListGroups type) described: one request per coordinator and kind, all at once,
        groups whose coordinator moved asked once more. The groups described, and those not with why."""
        consumer_api = self._api_max(CONSUMER_DESCRIBE_API) >= 0
        described: dict[str, GroupInfo] = {}
        failed: dict[str, str] = {}
        pending = sorted(groups)
        for _ in range(2):  # a second pass for the groups whose coordinator moved
            if not pending or time.monotonic() >= end:
                break
            try:
                by_node, lookup_failed = await self._offsets.find_coordinators(pending, end)
            except Exception as exc:  # noqa: BLE001 - no lookup answered: these groups stay undescribed
                failed.update(dict.fromkeys(pending, str(translate("describe groups", exc, self._principal))))
                break
            pending = [g for g, (code, _) in lookup_failed.items() if code in COORDINATOR_MOVED]
            for g, (code, message) in lookup_failed.items():
                failed[g] = str(translate("describe groups", _error(code, message), self._principal))
            asked = list(self._requests(by_node, groups, consumer_api))
            answers = await self._offsets.ask_each([(node, request) for node, _, _, request in asked], end)
            for (node, ids, consumer, _), answer in zip(asked, answers, strict=True):
                ok, bad, again = settle_describe(ids, answer, consumer=consumer, principal=self._principal, node=node)
                described.update(ok)
                failed.update(bad)
                pending += again
            for g in described:
                failed.pop(g, None)
        return described, failed

    def _requests(
        self, by_node: dict[int, list[str]], kinds: dict[str, str], consumer_api: bool
    ) -> Iterable[tuple[int, list[str], bool, Any]]:
        """(node, groups, whether KIP-848, request) for each coordinator: DescribeGroups for its classic groups,
        ConsumerGroupDescribe for its KIP-848 ones (DescribeGroups where the cluster does not offer it)."""
        from kafka.protocol.admin import DescribeGroupsRequest

        for node, ids in sorted(by_node.items()):
            modern = [g for g in ids if consumer_api and kinds[g] == "consumer"]
            classic = [g for g in ids if g not in set(modern)]
            if classic:
                yield node, classic, False, DescribeGroupsRequest(groups=classic, include_authorized_operations=False)
            if modern:
                request = group_messages().consumer_describe_req(
                    group_ids=modern, include_authorized_operations=False, max_version=0
                )
                yield node, modern, True, request


def _error(code: int, message: str | None) -> Exception:
    import kafka.errors as ke

    return ke.for_code(code)(message or "")
