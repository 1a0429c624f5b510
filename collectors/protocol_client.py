"""The seam around kafka-python's admin client: ``KafkaProtocol``, the only code that touches that library.

Why a second Kafka client: confluent-kafka (librdkafka 2.16) answers neither each log dir's total and usable bytes
(DescribeLogDirs v4, KIP-827; confluent-kafka-python#1179) nor fenced brokers (DescribeCluster v2, KIP-1073) nor the
controllers' endpoints (DescribeQuorum v2, KIP-853). kafka-python 3.0 sends all three and is pure Python, so it runs
in the collector's process (no native crash to isolate, unlike librdkafka: collectors.admin_process).

High watermarks at scale (``KafkaOffsets``, issue 33 item 3): librdkafka 2.16 takes time quadratic in the partitions
of one ListOffsets call (26,210 partitions: 17.2 s in one call, 2.9-6.5 s in calls of 1,000), so with 10,000 groups
and 26,000 partitions the Admin round ran out of time before any watermark came back and no group had a lag. Here
the request is built by hand: one ListOffsets request per leader broker, as the round's own metadata names the
leaders (no second metadata request), all leaders' requests in flight together under one deadline, each broker's
answer taken whole or said missing (a slow broker costs its own partitions only), and an error of one partition
(an offline or moved one) costs that partition only. kafka-python encodes and decodes 26,000 partitions in about
0.1 s; the brokers answer in one request each.

Committed offsets at scale (``KafkaOffsets.committed``, issue 33 item 1): confluent-kafka asks one group per
OffsetFetch, so 10,000 groups were 10,000 requests and futures a round. Here one FindCoordinator v4 names every
group's coordinator (sent to two brokers, the first answer taken), then each coordinator gets one OffsetFetch v8/v9
naming all its groups, all coordinators at once under one deadline; each group's answer or error stays its own, a
coordinator that does not answer costs its own groups only, and groups whose coordinator moved are asked once more.

Every call finishes within the ``timeout`` it is given (requests are bounded by the client's request timeout, and the
per-broker log-dir requests run in parallel under one deadline). The library's errors are translated here:

    kafka.errors.*AuthorizationFailedError ........ TargetForbidden (names the ACL)
    kafka.errors.SaslAuthenticationFailedError .... TargetAuthFailed
    KafkaTimeoutError, RequestTimedOutError ........ TargetTimeout
    KafkaConnectionError, OSError .................. TargetUnreachable
    any other KafkaError ........................... TransportError

Settings are the cluster's confluent-kafka ones (``ClusterConfig.client_settings()``) translated by
``protocol_settings``; a security setting it cannot translate fails the call with its name (never its value) rather
than connecting without it.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

from collectors.discovery import Membership, Node
from collectors.types import TP
from monitor.core.errors import (
    KafkaHealthError,
    TargetAuthFailed,
    TargetForbidden,
    TargetTimeout,
    TargetUnreachable,
    TransportError,
)

log = logging.getLogger(__name__)

# Tries of a cluster-wide request while the broker kafka-python picked refuses the connection (``_on_any_node``):
# three brokers refusing in a row is no longer a broker starting or stopping, and a round's deadline is finite.
NODE_TRIES = 3

# confluent-kafka (librdkafka) setting -> kafka-python KafkaAdminClient argument
_SETTINGS = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "client.id": "client_id",
}
# Where the protocol asks for a permission (docs/configuration.md, "Secured clusters").
NEEDS = {
    "list offsets": "Describe on the topics (Topic *)",
    "describe cluster": "Describe on the cluster",
    "describe quorum": "Describe on the cluster",
    "log dirs": "Describe on the cluster",
    "group offsets": "Describe on the groups and topics (Group *, Topic *)",
    "list groups": "Describe on the groups (Group *)",
    "describe groups": "Describe on the groups (Group *)",
}


def protocol_settings(settings: dict[str, str], *, timeout: float) -> dict[str, Any]:
    """kafka-python arguments for confluent-kafka ``settings``. Raises TransportError naming a security setting
    (``sasl.*``/``ssl.*``) it cannot translate; other librdkafka tuning is not needed for a few admin requests."""
    out: dict[str, Any] = {
        "bootstrap_servers": [s.strip() for s in settings.get("bootstrap.servers", "").split(",") if s.strip()],
        "request_timeout_ms": max(1000, int(timeout * 1000)),
        "bootstrap_timeout_ms": max(1000, int(timeout * 1000)),
        "client_id": "kafka-health-protocol",
    }
    unsupported = []
    for key, value in settings.items():
        if key in _SETTINGS:
            out[_SETTINGS[key]] = (
                value.upper() if key in ("security.protocol", "sasl.mechanism", "sasl.mechanisms") else value
            )
        elif key == "ssl.endpoint.identification.algorithm":
            out["ssl_check_hostname"] = value.lower() == "https"
        elif key.startswith(("sasl.", "ssl.")):
            unsupported.append(key)
    if unsupported:
        raise TransportError(
            f"the protocol client (kafka-python: DescribeCluster, DescribeQuorum, DescribeLogDirs) "
            f"cannot use {', '.join(sorted(unsupported))}; set log_dirs_from_protocol: false and "
            f"list the brokers (discovery.enabled: false) for this cluster"
        )
    return out


@dataclass(frozen=True)
class LogDir:
    """One log dir of one broker as DescribeLogDirs answers it. ``total_bytes``/``usable_bytes`` are None where the
    broker answers below v4 (Kafka < 3.3) or reports -1; ``cordoned`` None below v5 (Kafka < 4.4). Remote (tiered)
    storage is not in these figures: Kafka counts only the local volume."""

    broker: int
    path: str
    error: str  # "" when the dir is online; else Kafka's error name (e.g. KAFKA_STORAGE_ERROR: offline dir)
    total_bytes: int | None
    usable_bytes: int | None
    cordoned: bool | None
    # (topic, partition, bytes) of each replica in the dir, where its partitions were asked (``log_dirs(sizes_of=)``)
    partitions: tuple[tuple[str, int, int], ...] = ()


def translate(what: str, exc: Exception, principal: str | None = None) -> KafkaHealthError:
    """kafka-python's exception -> ours (see the module docstring); never the settings."""
    import kafka.errors as ke

    name = type(exc).__name__
    text = f"{what}: {name}: {exc}"[:300]
    if isinstance(exc, ke.AuthorizationError) or "AuthorizationFailed" in name:
        who = f"User:{principal}" if principal else "the monitoring principal"
        code = getattr(type(exc), "message", "") or name  # Kafka's error name, as the librdkafka path says it
        return TargetForbidden(f"{what}: not authorized ({code}): {who} needs an ACL allowing {NEEDS.get(what, what)}")
    if isinstance(exc, (ke.SaslAuthenticationFailedError, ke.IllegalSaslStateError)):
        return TargetAuthFailed(f"{what}: authentication failed: check sasl.username and sasl.password ({name})")
    if isinstance(exc, (ke.KafkaTimeoutError, ke.RequestTimedOutError, TimeoutError)):
        return TargetTimeout(text)
    # kafka-python 3 has no NoBrokersAvailable (2.x had): naming it raised AttributeError here, on the first broker
    # that refused a connection, and failed the whole round "unexpectedly" (CI, a fourth broker stopped)
    if isinstance(exc, (ke.KafkaConnectionError, ConnectionError, OSError)) or name == "NoBrokersAvailable":
        return TargetUnreachable(text)
    return TransportError(text)


def connect(settings: dict[str, str], *, timeout: float, client_id: str) -> Any:
    """A kafka-python KafkaAdminClient for the cluster's confluent-kafka ``settings``, bootstrapped; its errors
    translated (``translate``). ``client_id`` unless the cluster's settings name one."""
    from kafka.admin import KafkaAdminClient

    args = protocol_settings(settings, timeout=timeout)
    if "client.id" not in settings:
        args["client_id"] = client_id
    try:
        return KafkaAdminClient(**args)
    except Exception as exc:  # the library's errors, translated at the seam
        raise translate("connect", exc, settings.get("sasl.username")) from exc


class KafkaProtocol:
    """DescribeCluster, DescribeQuorum and DescribeLogDirs of one cluster, answered as plain data."""

    def __init__(self, settings: dict[str, str], *, timeout: float):
        self._principal = settings.get("sasl.username")
        self._admin = connect(settings, timeout=timeout, client_id="kafka-health-protocol")
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="log-dirs")

    def _api_max(self, api_key: int) -> int:
        versions = self._admin._manager.broker_version_data.api_versions  # the versions the cluster answered
        return int(versions.get(api_key, (0, -1))[1])

    def _on_any_node(self, what: str, call: Callable[[], Any]) -> Any:
        """A cluster-wide request (any broker answers it), sent again to another broker while the one kafka-python
        chose refuses the connection: it picks a random broker of its metadata, which can name one that has just
        stopped (not yet fenced) or just joined (its listener not yet open); a refused broker is in reconnect
        backoff, so the next try goes elsewhere. CI failed a discovery round this way: a fourth broker, registered
        and unfenced, still refused on its listener (``ECONNREFUSED``) and DescribeCluster failed though three
        brokers answered. At most ``NODE_TRIES`` tries; any other error at once."""
        for attempt in range(NODE_TRIES):
            try:
                return call()
            except Exception as exc:  # the library's errors, translated; only a refused connection tried again
                err = translate(what, exc, self._principal)
                if not isinstance(err, TargetUnreachable) or attempt == NODE_TRIES - 1:
                    raise err from exc
                log.info("%s: %s; asking another broker", what, err)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def membership(self) -> Membership:
        """Registered brokers (fenced ones included on Kafka 4.0+) and the controllers with an endpoint (KIP-853,
        3.8+; none where DescribeQuorum is refused or unsupported: discovery then keeps brokers only)."""
        cluster = self._on_any_node("describe cluster", self._admin.describe_cluster)
        brokers = tuple(
            Node(int(b["broker_id"]), str(b["host"]), int(b["port"]), bool(b.get("is_fenced")))
            for b in cluster.get("brokers", ())
        )
        return Membership(brokers, self._controllers(), fenced_known=self._api_max(60) >= 2)

    def _controllers(self) -> tuple[Node, ...]:
        try:
            quorum = self._on_any_node("describe quorum", self._admin.describe_metadata_quorum)
        except KafkaHealthError as exc:  # the brokers are still known: only the controllers are missing
            log.info("controllers not discovered (DescribeQuorum): %s", exc)
            return ()
        voters = {
            v["replica_id"]
            for t in quorum.get("topics", ())
            for p in t.get("partitions", ())
            for v in p.get("current_voters", ())
        }
        out = []
        for n in quorum.get("nodes") or ():
            listeners = n.get("listeners") or ()
            if n.get("node_id") in voters and listeners:
                out.append(Node(int(n["node_id"]), str(listeners[0]["host"]), int(listeners[0]["port"])))
        return tuple(sorted(out, key=lambda n: n.id))

    def log_dirs(
        self, brokers: Iterable[int], *, timeout: float, sizes_of: Iterable[int] = ()
    ) -> tuple[list[LogDir], dict[int, str]]:
        """Each log dir of each broker, and the brokers that did not answer within ``timeout`` with why. Requests go
        to the brokers in parallel. Partitions are asked (topics null: every replica's size) only of the brokers in
        ``sizes_of``, those no JMX source gives log sizes for; the others' answers stay small at any partition
        count."""
        import kafka.errors as ke

        end = time.monotonic() + timeout
        sized = set(sizes_of)
        admin = self._admin

        def ask(b: int) -> Any:
            if b in sized:  # topics null = every partition (kafka-python's public call would list topics first)
                return admin._manager.run(admin._async_describe_log_dirs, None, [b])
            return admin.describe_log_dirs({}, [b])

        futs = {b: self._pool.submit(ask, b) for b in brokers}
        concurrent.futures.wait(list(futs.values()), timeout=timeout)
        dirs: list[LogDir] = []
        missing: dict[int, str] = {}
        for b, fut in sorted(futs.items()):
            if not fut.done():
                missing[b] = f"no answer within {timeout:g}s"
                continue
            try:
                answer = fut.result(max(0.0, end - time.monotonic()))
            except Exception as exc:  # noqa: BLE001 - one broker's failure is said, the others' dirs still count
                missing[b] = str(translate("log dirs", exc, self._principal))
                continue
            for entry in answer:
                for d in entry["log_dirs"]:
                    err = ke.for_code(d["error_code"])
                    total, usable = d.get("total_bytes"), d.get("usable_bytes")
                    dirs.append(
                        LogDir(
                            broker=int(entry["broker"]),
                            path=str(d["log_dir"]),
                            error="" if err is ke.NoError else err.__name__,
                            total_bytes=int(total) if total is not None and total >= 0 else None,
                            usable_bytes=int(usable) if usable is not None and usable >= 0 else None,
                            cordoned=bool(d["is_cordoned"]) if "is_cordoned" in d and self._api_max(35) >= 5 else None,
                            partitions=tuple(
                                (str(t["name"]), int(p["partition_index"]), int(p["partition_size"]))
                                for t in d.get("topics") or ()
                                for p in t.get("partitions") or ()
                                if not p.get("is_future_key")  # a replica being moved here: not yet the log
                            ),
                        )
                    )
        return dirs, missing

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        try:
            self._admin.close()
        except Exception:  # closing a broken client must not fail the collector's shutdown
            log.debug("closing the protocol client failed", exc_info=True)


class KafkaOffsets:
    """Latest and committed offsets through kafka-python, on one client (see the module docstring for why not
    librdkafka): high watermarks in one ListOffsets request per leader broker, committed offsets of many groups in one
    OffsetFetch request per group coordinator, all of a call's requests in flight together."""

    def __init__(self, settings: dict[str, str], *, timeout: float):
        self._principal = settings.get("sasl.username")
        self._admin = connect(settings, timeout=timeout, client_id="kafka-health-offsets")

    def batches_groups(self) -> bool:
        """Whether the cluster answers FindCoordinator v4 and OffsetFetch v8 (many groups per request; Kafka 3.0+)."""
        versions = self._admin._manager.broker_version_data.api_versions
        return versions.get(10, (0, -1))[1] >= 4 and versions.get(9, (0, -1))[1] >= 8

    def latest(self, leaders: Mapping[TP, int], *, timeout: float) -> tuple[dict[TP, int], dict[int, str]]:
        """The high watermark of each partition of ``leaders`` (partition -> its leader's node id), and the brokers
        whose answer is missing with why. Every request has ``timeout``; a partition the broker answers with an
        error (not its leader any more, offline) is left out."""
        by_leader: dict[int, list[TP]] = {}
        for tp, leader in leaders.items():
            if leader >= 0:  # no leader: offline, no watermark to ask for
                by_leader.setdefault(leader, []).append(tp)
        if not by_leader:
            return {}, {}
        try:
            return self._admin._manager.run(self._ask, by_leader, time.monotonic() + timeout)
        except Exception as exc:
            raise translate("list offsets", exc, self._principal) from exc

    async def _ask(self, by_leader: dict[int, list[TP]], until: float) -> tuple[dict[TP, int], dict[int, str]]:
        from kafka.protocol.consumer.offsets import ListOffsetsRequest, OffsetSpec

        topic_cls = ListOffsetsRequest.ListOffsetsTopic
        part_cls = topic_cls.ListOffsetsPartition
        sent = {}
        for leader, tps in sorted(by_leader.items()):
            topics: dict[str, list[Any]] = {}
            for topic, part in tps:
                topics.setdefault(topic, []).append(part_cls(partition_index=part, timestamp=OffsetSpec.LATEST))
            request = ListOffsetsRequest(
                replica_id=-1,
                isolation_level=0,  # read uncommitted: the log end offset, as librdkafka's OffsetSpec.latest()
                topics=[topic_cls(name=t, partitions=ps) for t, ps in topics.items()],
            )
            # a leader the client's metadata lost fails its own partitions, not the call (send_to_node)
            sent[leader] = send_to_node(
                self._admin._manager, request, node_id=leader, request_timeout_ms=ms_until(until)
            )
        out: dict[TP, int] = {}
        missing: dict[int, str] = {}
        answers = await answers_until(self._admin._manager, list(sent.values()), until)
        for leader, answer in zip(sent, answers, strict=True):
            if isinstance(answer, Exception):  # one broker's failure: the other brokers' partitions still count
                missing[leader] = str(translate("list offsets", answer, self._principal))
                continue
            for t in answer.topics:
                for p in t.partitions:
                    if p.error_code == 0 and p.offset >= 0:
                        out[(t.name, p.partition_index)] = p.offset
        return out, missing

    def committed(
        self, groups: Sequence[str], *, timeout: float, group_timeout: float
    ) -> dict[str, dict[TP, int] | KafkaHealthError]:
        """Each group's committed offsets, or the error its coordinator answered for it (``AdminApi.committed``).
        One FindCoordinator v4 for all groups (to two brokers at once: the first answer counts, so a dead broker
        cannot hold up the lookup), then one OffsetFetch v8+ per coordinator naming all its groups, all in flight
        together. A coordinator that does not answer within ``group_timeout`` fails its own groups with
        ``TargetTimeout`` and costs the others nothing; one cut by ``timeout`` first leaves its groups out (the
        round's deadline cut them). Groups whose coordinator moved are asked once more, after a fresh lookup."""
        if not groups:
            return {}
        start = time.monotonic()
        end, group_end = start + timeout, start + group_timeout
        try:
            return self._admin._manager.run(self._committed, list(groups), group_end, end)
        except Exception as exc:
            raise translate("group offsets", exc, self._principal) from exc

    async def _committed(
        self, groups: list[str], group_end: float, end: float
    ) -> dict[str, dict[TP, int] | KafkaHealthError]:
        out: dict[str, dict[TP, int] | KafkaHealthError] = {}
        pending = groups
        for _ in range(2):  # a second pass for the groups whose coordinator moved
            answered, pending = await self._pass(pending, group_end, end)
            out.update(answered)
            if not pending or time.monotonic() >= min(group_end, end):
                break
        return out

    async def _pass(
        self, groups: list[str], group_end: float, end: float
    ) -> tuple[dict[str, dict[TP, int] | KafkaHealthError], list[str]]:
        from kafka.protocol.consumer import OffsetFetchRequest

        until = min(group_end, end)
        cut_by_round = end < group_end
        try:
            by_node, lookup_failed = await self.find_coordinators(groups, until)
        except Exception as exc:  # noqa: BLE001 - no lookup answered: every group of this pass, said per group
            return settle_coordinator(groups, exc, cut_by_round=cut_by_round, principal=self._principal)
        out: dict[str, dict[TP, int] | KafkaHealthError] = {}
        again: list[str] = []
        for group, (code, message) in lookup_failed.items():
            out[group] = group_error(code, message, self._principal)
            if code in COORDINATOR_MOVED:
                again.append(group)
        group_cls = OffsetFetchRequest.OffsetFetchRequestGroup
        nodes = list(by_node)
        answers = await self.ask_each(
            [
                (
                    node,
                    OffsetFetchRequest(
                        groups=[group_cls(group_id=g, topics=None) for g in by_node[node]],
                        require_stable=False,
                        min_version=OFFSET_FETCH_VERSIONS[0],
                        max_version=OFFSET_FETCH_VERSIONS[1],
                    ),
                )
                for node in nodes
            ],
            until,
        )
        for node, answer in zip(nodes, answers, strict=True):
            answered, moved = settle_coordinator(
                by_node[node], answer, cut_by_round=cut_by_round, principal=self._principal, node=node
            )
            out.update(answered)
            again += moved
        return out, again

    async def find_coordinators(
        self, groups: list[str], until: float
    ) -> tuple[dict[int, list[str]], dict[str, tuple[int, str]]]:
        """One FindCoordinator v4 naming every group of ``groups``, sent to two brokers at once (the first answer
        counts): each coordinator's groups, and the groups whose lookup failed (``coordinator_plan``). Raises what
        the lookup met when neither broker answered before ``until`` (time.monotonic)."""
        from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

        manager = self._admin._manager
        lookup = FindCoordinatorRequest(key_type=0, coordinator_keys=groups, min_version=4)
        sent = [
            send_to_node(manager, lookup, node_id=n, request_timeout_ms=ms_until(until)) for n in self._lookup_nodes()
        ]
        found = await manager.wait_for(_first(sent), ms_until(until))
        return coordinator_plan(found.coordinators)

    async def ask_each(self, requests: Sequence[tuple[int, Any]], until: float) -> list[Any]:
        """Each (node, request) sent at once, then each answer awaited until ``until`` (time.monotonic): the answers
        in the order asked, an exception (the request's own: a timeout, a lost connection, a node the client cannot
        send to) in place of a missing one, so a node that does not answer costs its own request only."""
        manager = self._admin._manager
        sent = [
            send_to_node(manager, request, node_id=node, request_timeout_ms=ms_until(until))
            for node, request in requests
        ]
        return await answers_until(manager, sent, until)

    def _lookup_nodes(self) -> list[int | None]:
        """Where FindCoordinator goes: the least loaded broker and one other (a stopped broker still holds its
        connection open: a lookup sent only to it would cost every group the whole group timeout)."""
        manager = self._admin._manager
        first = manager.least_loaded_node()
        other = next(
            (b.node_id for b in sorted(manager.cluster.brokers(), key=lambda b: b.node_id) if b.node_id != first), None
        )
        nodes = [n for n in (first, other) if n is not None]
        return list(nodes) or [None]

    def close(self) -> None:
        try:
            self._admin.close()
        except Exception:  # closing a broken client must not fail the round
            log.debug("closing the offsets client failed", exc_info=True)


# Kafka's error codes of a group whose coordinator is loading, not elected yet or moved: the group is asked once more
# after a fresh FindCoordinator, as Kafka's Java Admin does (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
# NOT_COORDINATOR).
COORDINATOR_MOVED = frozenset({14, 15, 16})
# OffsetFetch v8 and v9 name each group's topics; v10 (Kafka 4.1+) names them by topic id only.
OFFSET_FETCH_VERSIONS = (8, 9)


def coordinator_plan(coordinators: Iterable[Any]) -> tuple[dict[int, list[str]], dict[str, tuple[int, str]]]:
    """FindCoordinator v4's rows -> the groups of each coordinator node, and the groups whose lookup failed (Kafka's
    error code and message)."""
    by_node: dict[int, list[str]] = {}
    failed: dict[str, tuple[int, str]] = {}
    for row in coordinators:
        if row.error_code or row.node_id < 0:
            failed[row.key] = (row.error_code or 15, row.error_message or "")
        else:
            by_node.setdefault(row.node_id, []).append(row.key)
    return by_node, failed


def group_error(code: int, message: str | None, principal: str | None) -> KafkaHealthError:
    """A group's error code -> ours (GROUP_AUTHORIZATION_FAILED: TargetForbidden naming the ACL)."""
    import kafka.errors as ke

    return translate("group offsets", ke.for_code(code)(message or ""), principal)


def settle_coordinator(
    groups: Sequence[str], answer: Any, *, cut_by_round: bool, principal: str | None, node: int | None = None
) -> tuple[dict[str, dict[TP, int] | KafkaHealthError], list[str]]:
    """One coordinator's OffsetFetch answer (or the exception awaiting it raised) -> each of its ``groups``' offsets
    or error, and the groups to ask again (their coordinator moved). A partition answered with an error is left out
    of its group's offsets; a group missing from the answer fails alone. No answer in time: each group fails with
    ``TargetTimeout``, unless the round's deadline came first (``cut_by_round``): then they are left out."""
    import kafka.errors as ke

    if isinstance(answer, BaseException):
        timed_out = isinstance(answer, (ke.KafkaTimeoutError, ke.RequestTimedOutError, TimeoutError))
        if timed_out and cut_by_round:
            return {}, []
        who = "the coordinator lookup" if node is None else f"group coordinator {node}"
        error: KafkaHealthError = (
            TargetTimeout(f"group offsets: {who} did not answer in time")
            if timed_out
            else translate(f"group offsets ({who})", answer, principal)
        )
        return dict.fromkeys(groups, error), []
    out: dict[str, dict[TP, int] | KafkaHealthError] = {}
    again: list[str] = []
    for g in answer.groups:
        if g.error_code:
            out[g.group_id] = group_error(g.error_code, None, principal)
            if g.error_code in COORDINATOR_MOVED:
                again.append(g.group_id)
            continue
        out[g.group_id] = {
            (t.name, p.partition_index): p.committed_offset for t in g.topics for p in t.partitions if p.error_code == 0
        }
    for group in groups:
        if group not in out:
            out[group] = TransportError(f"group offsets: group coordinator {node} left group {group} out of its answer")
    return out, again


def api_max(manager: Any, api_key: int) -> int:
    """The highest version of ``api_key`` the cluster answered to kafka-python's ``manager`` (-1: not offered)."""
    return int(manager.broker_version_data.api_versions.get(api_key, (0, -1))[1])


@overload
def ms_until(until: float) -> int: ...
@overload
def ms_until(until: None) -> None: ...
def ms_until(until: float | None) -> int | None:
    """Milliseconds from now until ``until`` (time.monotonic), at least 1: a kafka-python request timeout (None: the
    client's own)."""
    return None if until is None else max(1, int((until - time.monotonic()) * 1000))


def send_to_node(manager: Any, request: Any, **kwargs: Any) -> Any:
    """``manager.send(request, **kwargs)``, a kafka-python Future; a failure to send (a node the client's metadata does
    not know: UnknownBrokerIdError is raised, not returned) comes back as a failed Future, for that node's requests
    only. Such a node is a broker the metadata dropped while it was down and the round names again (it came back):
    fresh metadata is asked for at once, not at metadata_max_age (5 min). Without it, after a broker restart every
    round's watermarks failed for minutes ("list offsets: UnknownBrokerIdError: 3") and the groups of its partitions
    had no lag (CI, test_alert_faults: a lag alert that never fired)."""
    from kafka.future import Future

    try:
        return manager.send(request, **kwargs)
    except Exception as exc:  # noqa: BLE001 - one node's requests fail with it, the others are still asked
        if type(exc).__name__ == "UnknownBrokerIdError":
            manager.cluster.request_update()
        return Future().failure(exc)


async def answers_until(manager: Any, sent: Sequence[Any], until: float | None) -> list[Any]:
    """Each of ``sent`` (kafka-python Futures, in flight together) awaited until ``until`` (time.monotonic; None: the
    client's own timeouts), on the client's event loop: its answer, or in its place the exception it failed with (a
    timeout, a lost connection, a node the client cannot send to), so one node that does not answer costs its own
    requests only. The deadline is what ends a wait, not kafka-python's request timeout, which applies once the
    request is on the wire: one queued behind a connection still being set up (a broker that accepts TCP and answers
    nothing, frozen, after its first connection timed out) waited the connection's timeout instead, the client's whole
    request timeout (measured on a frozen broker: 10.0 s for a request given 4.5 s)."""
    out: list[Any] = []
    for future in sent:
        try:
            out.append(await manager.wait_for(future, None if until is None else ms_until(until)))
        except Exception as exc:  # noqa: BLE001 - this request's answer only
            out.append(exc)
    return out


def _first(futures: Sequence[Any]) -> Any:
    """A kafka-python Future that succeeds with the first of ``futures`` to succeed, or fails when all have failed."""
    from kafka.future import Future

    out = Future()
    failures: list[BaseException] = []

    def ok(value: Any) -> None:
        if not out.is_done:
            out.success(value)

    def failed(exc: BaseException) -> None:
        failures.append(exc)
        if len(failures) == len(futures) and not out.is_done:
            out.failure(exc)

    for f in futures:
        f.add_callback(ok)
        f.add_errback(failed)
    return out
