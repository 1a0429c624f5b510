"""The seam around kafka-python's admin client: ``KafkaProtocol``, the only code that touches that library.

Why a second Kafka client: confluent-kafka (librdkafka 2.16) answers neither each log dir's total and usable bytes
(DescribeLogDirs v4, KIP-827; confluent-kafka-python#1179) nor fenced brokers (DescribeCluster v2, KIP-1073) nor the
controllers' endpoints (DescribeQuorum v2, KIP-853). kafka-python 3.0 sends all three and is pure Python, so it runs
in the collector's process (no native crash to isolate, unlike librdkafka: collectors.admin_process).

High watermarks at scale (``LatestOffsets``, issue 33 item 3): librdkafka 2.16 takes time quadratic in the partitions
of one ListOffsets call (26,210 partitions: 17.2 s in one call, 2.9-6.5 s in calls of 1,000), so with 10,000 groups
and 26,000 partitions the Admin round ran out of time before any watermark came back and no group had a lag. Here
the request is built by hand: one ListOffsets request per leader broker, as the round's own metadata names the
leaders (no second metadata request), all leaders' requests in flight together under one deadline, each broker's
answer taken whole or said missing (a slow broker costs its own partitions only), and an error of one partition
(an offline or moved one) costs that partition only. kafka-python encodes and decodes 26,000 partitions in about
0.1 s; the brokers answer in one request each.

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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

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


def translate(what: str, exc: Exception, principal: str | None = None) -> KafkaHealthError:
    """kafka-python's exception -> ours (see the module docstring); never the settings."""
    import kafka.errors as ke

    name = type(exc).__name__
    text = f"{what}: {name}: {exc}"[:300]
    if isinstance(exc, ke.AuthorizationError) or "AuthorizationFailed" in name:
        who = f"User:{principal}" if principal else "the monitoring principal"
        return TargetForbidden(f"{what}: not authorized: {who} needs an ACL allowing {NEEDS.get(what, what)}")
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

    def membership(self) -> Membership:
        """Registered brokers (fenced ones included on Kafka 4.0+) and the controllers with an endpoint (KIP-853,
        3.8+; none where DescribeQuorum is refused or unsupported: discovery then keeps brokers only)."""
        try:
            cluster = self._admin.describe_cluster()
        except Exception as exc:
            raise translate("describe cluster", exc, self._principal) from exc
        brokers = tuple(
            Node(int(b["broker_id"]), str(b["host"]), int(b["port"]), bool(b.get("is_fenced")))
            for b in cluster.get("brokers", ())
        )
        return Membership(brokers, self._controllers(), fenced_known=self._api_max(60) >= 2)

    def _controllers(self) -> tuple[Node, ...]:
        try:
            quorum = self._admin.describe_metadata_quorum()
        except Exception as exc:  # noqa: BLE001 - the brokers are still known: only the controllers are missing
            log.info(
                "controllers not discovered (DescribeQuorum): %s", translate("describe quorum", exc, self._principal)
            )
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

    def log_dirs(self, brokers: Iterable[int], *, timeout: float) -> tuple[list[LogDir], dict[int, str]]:
        """Each log dir of each broker (no partitions asked: the answer stays small at any partition count), and
        the brokers that did not answer within ``timeout`` with why. Requests go to the brokers in parallel."""
        import kafka.errors as ke

        end = time.monotonic() + timeout
        futs = {b: self._pool.submit(self._admin.describe_log_dirs, {}, [b]) for b in brokers}
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
                        )
                    )
        return dirs, missing

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        try:
            self._admin.close()
        except Exception:  # closing a broken client must not fail the collector's shutdown
            log.debug("closing the protocol client failed", exc_info=True)


class LatestOffsets:
    """High watermarks (the latest offsets, read uncommitted) through ListOffsets sent to each partition's leader:
    one request per leader broker, all in flight together (see the module docstring for why not librdkafka)."""

    def __init__(self, settings: dict[str, str], *, timeout: float):
        self._principal = settings.get("sasl.username")
        self._admin = connect(settings, timeout=timeout, client_id="kafka-health-watermarks")

    def read(self, leaders: Mapping[TP, int], *, timeout: float) -> tuple[dict[TP, int], dict[int, str]]:
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
            return self._admin._manager.run(self._ask, by_leader, max(1, int(timeout * 1000)))
        except Exception as exc:
            raise translate("list offsets", exc, self._principal) from exc

    async def _ask(self, by_leader: dict[int, list[TP]], timeout_ms: int) -> tuple[dict[TP, int], dict[int, str]]:
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
            sent[leader] = self._admin._manager.send(request, node_id=leader, request_timeout_ms=timeout_ms)
        out: dict[TP, int] = {}
        missing: dict[int, str] = {}
        for leader, future in sent.items():
            try:
                answer = await future
            except Exception as exc:  # noqa: BLE001 - one broker's failure: the other brokers' partitions still count
                missing[leader] = str(translate("list offsets", exc, self._principal))
                continue
            for t in answer.topics:
                for p in t.partitions:
                    if p.error_code == 0 and p.offset >= 0:
                        out[(t.name, p.partition_index)] = p.offset
        return out, missing

    def close(self) -> None:
        try:
            self._admin.close()
        except Exception:  # closing a broken client must not fail the round
            log.debug("closing the watermarks client failed", exc_info=True)
