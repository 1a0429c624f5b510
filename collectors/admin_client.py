"""The seam around confluent-kafka's AdminClient: ``KafkaAdmin``, the only code that touches the library.

``KafkaAdmin`` implements ``collectors.types.AdminApi``: each call returns plain data (``ClusterState``,
``GroupInfo``, offsets by ``TP``) and finishes within the ``timeout`` it is given. The library's errors are
translated here, in ``KafkaAdmin._call``, and nowhere else:

    confluent_kafka.KafkaException
    ├── *_AUTHORIZATION_FAILED (a missing ACL) ...................... TargetForbidden (names the permission)
    ├── failed while librdkafka reported an authentication or TLS
    │   error (wrong password, expired or untrusted certificate) ... TargetAuthFailed (its words, no secret)
    ├── text says timed out / timeout ............................. TargetTimeout
    ├── text says transport / connect / brokers are down .......... TargetUnreachable
    └── anything else ............................................. TransportError
    concurrent.futures TimeoutError (a future's result(timeout)) .. TargetTimeout

(all three are monitor.core.errors.CollectorError). Partial answers inside one call: a topic whose config cannot be
read is left out of ``min_insync_replicas``, a partition without an answer out of ``high_watermarks``, and a group
that cannot be described stays in ``groups`` with unknown members; the collector decides what a failed call costs
the round (``collectors.admin``).

High watermarks are not read through librdkafka: its ListOffsets time grows quadratically with the partitions of a
call, and at 10,000 groups on 26,000 partitions the round lost every watermark (so every lag). ``high_watermarks``
sends one request per leader broker through ``collectors.protocol_client.KafkaOffsets`` (kafka-python), with the
leaders of this client's last ``cluster`` call; librdkafka's chunked calls remain only for a cluster whose security
settings kafka-python cannot use.

Committed offsets are not read through librdkafka either: confluent-kafka takes one group per call, so 10,000 groups
were 10,000 OffsetFetch requests and 10,000 futures each round (the round's cost at that scale), and waiting on
librdkafka admin futures can abort the process (rd_kafka_enq_once_del_source_return, confluent-kafka-python#1640).
``committed`` asks one batched FindCoordinator and one OffsetFetch v8 per group coordinator, all coordinators in
parallel, through the same kafka-python client (``KafkaOffsets``); librdkafka's per-group calls remain only for a
cluster kafka-python cannot use (its security settings, or Kafka older than 3.0).

Consumer groups are not listed nor described through librdkafka either: its DescribeConsumerGroups can abort the
process under load (rd_kafka_enq_once_del_source_return, librdkafka#4605), which the child contains but which loses
the round. ``groups`` lists on every broker and describes one request per coordinator (DescribeGroups for classic
groups, ConsumerGroupDescribe for KIP-848 ones) on the same kafka-python client (``collectors.consumer_groups``).

The kafka-python client connects in the background from this client's start; a call made while it connects reads
through librdkafka (a new child's first round, as a rule). librdkafka's calls remain only then and for a cluster
kafka-python cannot use (its security settings, or Kafka older than 3.0).

librdkafka 2.16 keeps a dead or moved group coordinator for good, and segfaults on an admin OffsetFetch that answers
NOT_COORDINATOR (librdkafka#5040): a client sets ``stale_coordinator`` (no more offsets are asked of it through
librdkafka; kafka-python looks the coordinators up afresh every round and is not affected) and
``replace_client`` (the collector builds a fresh one after the round) when it meets either. In production this class
runs in a child process (``collectors.admin_process.IsolatedAdmin``), which does not import this module: it is given
the class.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence

from collectors.consumer_groups import ConsumerGroups, group_state
from collectors.protocol_client import KafkaOffsets, protocol_settings
from collectors.types import TP, ClusterState, GroupInfo, PartitionState
from monitor.core.errors import (
    CollectorError,
    KafkaHealthError,
    TargetAuthFailed,
    TargetForbidden,
    TargetTimeout,
    TargetUnreachable,
    TransportError,
)

log = logging.getLogger(__name__)

# A call with less time than this left is not started: librdkafka counts whole milliseconds, and a call that can
# only time out would just add a library error to the log.
MIN_CALL_SECONDS = 0.05
# Partitions per ListOffsets call of librdkafka's high watermarks (``_librdkafka_watermarks``).
WATERMARK_CHUNK = 1000
# Calls about one consumer group: a timeout or lost connection there means its coordinator is probably dead.
GROUP_CALLS = ("describe groups", "describe group", "group offsets")
# What the monitoring principal needs for each call (docs/configuration.md, "Secured clusters"): a call refused with
# *_AUTHORIZATION_FAILED says which ACL is missing.
NEEDS = {
    "metadata": "Describe on the topics (Topic *)",
    "describe configs": "DescribeConfigs on the topics (Topic *)",
    "broker configs": "DescribeConfigs on the cluster",
    "describe cluster": "Describe on the cluster",
    "list groups": "Describe on the groups (Group *)",
    "describe groups": "Describe on the groups (Group *)",
    "describe group": "Describe on the groups (Group *)",
    "group offsets": "Describe on the groups and topics (Group *, Topic *)",
    "watermarks": "Describe on the topics (Topic *)",
    "list offsets": "Describe on the topics (Topic *)",
    "log dirs": "Describe on the cluster",
}
# A failed call within this many seconds of an authentication or TLS error from librdkafka is blamed on it.
AUTH_ERROR_SECONDS = 60.0


def auth_advice(text: str, principal: str | None, bootstrap: str = "") -> str:
    """librdkafka's authentication or TLS error, said first as what to check (results keep 300 characters)."""
    low = text.lower()
    if "certificate verify failed" in low or "could not be verified" in low:
        expired = expired_certificate(bootstrap)
        if expired:
            return f"TLS: {expired}; renew it"
        return f"TLS: the broker's certificate is not trusted: check ssl.ca.location ({text})"
    if "expired" in low:
        return f"TLS: a certificate has expired, the broker's or the client's own; renew it ({text})"
    if "sasl" in low or "credentials" in low:
        who = f" of principal {principal}" if principal else ""
        return f"authentication failed: check sasl.username and sasl.password{who} ({text})"
    return text


def expired_certificate(bootstrap: str, *, timeout: float = 3.0) -> str | None:
    """Which bootstrap server presents an expired certificate (read without verifying it), or None. librdkafka says
    only "certificate verify failed"; an expired certificate is the commonest cause and worth naming."""
    import datetime as dt
    import socket
    import ssl

    from cryptography import x509

    now = dt.datetime.now(dt.timezone.utc)
    for server in filter(None, (s.strip() for s in bootstrap.split(","))):
        host, _, port = server.rpartition(":")
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        try:
            with (
                socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as sock,
                ctx.wrap_socket(sock, server_hostname=host) as tls,
            ):
                der = tls.getpeercert(binary_form=True)
        except (OSError, ValueError):
            continue
        if der:
            cert = x509.load_der_x509_certificate(der)
            if cert.not_valid_after_utc < now:
                return f"the certificate of {server} expired on {cert.not_valid_after_utc:%Y-%m-%d %H:%M} UTC"
    return None


class KafkaAdmin:
    """Plain-data calls on confluent-kafka's AdminClient (``collectors.types.AdminApi``).

    Every call takes ``timeout``: the whole call, all its requests and futures together, returns or raises
    ``TargetTimeout`` within it (the collector passes what is left of its round). The constructor's ``timeout``
    only sets librdkafka's socket timeout.
    """

    _auth_error: tuple[float, str] | None = None  # (monotonic time, librdkafka's text) of the last login/TLS error
    _principal: str | None = None
    _bootstrap = ""
    _offsets: KafkaOffsets | None = None  # kafka-python, for committed offsets and watermarks, once connected
    _offsets_pending: concurrent.futures.Future | None = None  # its connection under way in the background
    _offsets_refused = ""  # why kafka-python cannot reach this cluster: librdkafka reads the offsets
    _groups: ConsumerGroups | None = None  # listing and describing on the offsets client, once connected

    def __init__(self, settings: dict[str, str], *, timeout: float):
        from confluent_kafka.admin import AdminClient

        self._timeout = timeout
        # Set when a call failed with NOT_COORDINATOR: the client's coordinator for some group is stale (librdkafka
        # 2.16 kept sending that group's ConsumerGroupDescribe and OffsetFetch to the old coordinator, round after
        # round, after the __consumer_offsets leaders moved). No offsets are asked of it (see ``committed``).
        self.stale_coordinator = False
        # Set by a stale coordinator, and by a group call that timed out or lost its connection: librdkafka 2.16 keeps
        # a dead coordinator for good (a long-lived client timed out on the group for minutes while a fresh one, 10 s
        # after the kill, found the new coordinator), so the collector builds a fresh client after the round.
        self.replace_client = False
        quiet = logging.getLogger("kafka_health.collectors.librdkafka")
        quiet.propagate = False
        quiet.addHandler(logging.NullHandler())
        # librdkafka reports a refused login or a failed TLS handshake only to error_cb; a call then just fails
        # with "transport failure". Kept to say why (its text names the mechanism, never a secret).
        self._auth_error: tuple[float, str] | None = None
        self._principal = settings.get("sasl.username")
        self._bootstrap = settings.get("bootstrap.servers", "")
        # Each partition's leader, from the last ``cluster`` call: where ``high_watermarks`` sends its requests.
        self._leaders: dict[TP, int] = {}
        self._brokers: tuple[int, ...] = ()  # the brokers of the last ``cluster`` call: where ``groups`` lists
        self._settings = settings
        self._admin = AdminClient(
            {**settings, "logger": quiet, "socket.timeout.ms": int(timeout * 1000), "error_cb": self._on_error}
        )
        self._offsets_client(timeout)  # starts connecting kafka-python while librdkafka reads the metadata

    def _on_error(self, err) -> None:
        from confluent_kafka import KafkaError

        if err.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL):
            self._auth_error = (time.monotonic(), err.str())

    def _recent_auth_error(self) -> str | None:
        poll = getattr(getattr(self, "_admin", None), "poll", None)
        if poll is not None:
            poll(0)  # error_cb runs only from poll(): serve what librdkafka queued during the failed call
        if self._auth_error and time.monotonic() - self._auth_error[0] < AUTH_ERROR_SECONDS:
            return self._auth_error[1]
        return None

    def _call(self, what: str, timeout: float, fn: Callable):
        from confluent_kafka import KafkaException

        try:
            return fn()
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            text = err.str() if hasattr(err, "str") else str(exc)
            if hasattr(err, "name") and err.name() not in text:  # librdkafka's text can be empty ("X: ")
                text = f"{text} [{err.name()}]"
            if hasattr(err, "name") and err.name() in ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"):
                self.stale_coordinator = self.replace_client = True
            if hasattr(err, "name") and err.name().endswith("_AUTHORIZATION_FAILED"):
                raise TargetForbidden(self.forbidden(what, err.name())) from exc
            auth = self._recent_auth_error()
            if auth:
                advice = auth_advice(auth, self._principal, self._bootstrap)
                raise TargetAuthFailed(f"Admin API {what}: {advice}") from exc
            if "timed out" in text.lower() or "timeout" in text.lower():
                self._group_call_failed(what)
                raise TargetTimeout(f"Admin API {what}: {text}") from exc
            if "transport" in text.lower() or "connect" in text.lower() or "brokers are down" in text.lower():
                self._group_call_failed(what)
                raise TargetUnreachable(f"Admin API {what}: {text}") from exc
            raise TransportError(f"Admin API {what}: {text}") from exc
        except TimeoutError as exc:  # concurrent.futures' result(timeout) expired
            self._group_call_failed(what)
            raise TargetTimeout(f"Admin API {what}: no answer within {timeout:g}s") from exc

    def forbidden(self, what: str, code: str) -> str:
        who = f"User:{self._principal}" if self._principal else "the monitoring principal"
        return f"Admin API {what}: not authorized ({code}): {who} needs an ACL allowing {NEEDS.get(what, what)}"

    def _group_call_failed(self, what: str) -> None:
        if what in GROUP_CALLS:
            self.replace_client = True

    def cluster(self, *, timeout: float) -> ClusterState:
        """Brokers, controller and partitions. A metadata request lost with its broker's connection (that broker
        stopped while asked, or had just joined and refused: ``Local: Broker transport failure``) is asked once
        more within the same timeout: librdkafka then takes another broker that is up. Without it the round that
        should report a dying broker failed whole, when the request had gone to that broker (CI, a fourth broker
        stopped and unregistered)."""
        end = time.monotonic() + timeout
        try:
            md = self._call("metadata", timeout, lambda: self._admin.list_topics(timeout=timeout))
        except TargetUnreachable as exc:
            left = end - time.monotonic()
            if left < 0.5:
                raise
            log.info("%s; asking again", exc)
            md = self._call("metadata", left, lambda: self._admin.list_topics(timeout=left))
        parts = tuple(
            PartitionState(t.topic, p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
            for t in md.topics.values()
            if t.error is None
            for p in t.partitions.values()
        )
        self._leaders = {(p.topic, p.partition): p.leader for p in parts}
        self._brokers = tuple(sorted(md.brokers))
        return ClusterState(self._brokers, md.controller_id, parts)

    def min_insync_replicas(self, topics: Iterable[str], *, timeout: float) -> dict[str, int]:
        """Effective ``min.insync.replicas`` per topic (topic override or broker default). Topics whose config cannot
        be read (in time) are left out."""
        from confluent_kafka.admin import ConfigResource

        t, end = timeout, time.monotonic() + timeout
        wanted = [ConfigResource("topic", name) for name in topics]
        if not wanted:
            return {}
        futs = self._call("describe configs", t, lambda: self._admin.describe_configs(wanted, request_timeout=t))
        out = {}
        for res, fut in futs.items():
            try:
                entry = self._call("describe configs", t, lambda: fut.result(_left(end))).get("min.insync.replicas")
            except KafkaHealthError as exc:
                log.debug("topic %s: min.insync.replicas unknown: %s", res.name, exc)
                continue
            if entry is not None and entry.value is not None:
                out[res.name] = int(entry.value)
        return out

    def handler_threads(self, brokers: Iterable[int], *, timeout: float) -> dict[int, int | CollectorError]:
        """Each broker's ``num.io.threads`` (DescribeConfigs on its BROKER resource: the dynamic override where one is
        set, else server.properties), or the error its answer met; a broker not answered within ``timeout`` is left
        out. One call per broker (librdkafka takes one BROKER resource a call), all in flight together: a broker that
        does not answer costs its own figure only."""
        from confluent_kafka.admin import ConfigResource

        t, end = timeout, time.monotonic() + timeout
        futs: dict[int, concurrent.futures.Future] = {}
        for b in brokers:
            res = ConfigResource("broker", str(b))
            asked = self._call(
                "broker configs",
                t,
                lambda r=res: self._admin.describe_configs([r], request_timeout=max(MIN_CALL_SECONDS, _left(end))),
            )
            futs[b] = next(iter(asked.values()))
        concurrent.futures.wait(list(futs.values()), timeout=_left(end))
        out: dict[int, int | CollectorError] = {}
        for b, fut in futs.items():
            if not fut.done():
                continue  # no answer within the call: the caller says so
            try:
                entry = self._call("broker configs", t, lambda f=fut: f.result(0)).get("num.io.threads")
            except CollectorError as exc:
                out[b] = exc
                continue
            if entry is None or entry.value is None:
                out[b] = TransportError(f"Admin API broker configs: broker {b} answered no num.io.threads")
            else:
                out[b] = int(entry.value)
        return out

    def groups(self, *, timeout: float) -> list[GroupInfo]:
        """Every consumer group, described (``collectors.consumer_groups``: ListGroups to every broker, then one
        DescribeGroups and one ConsumerGroupDescribe per coordinator, through kafka-python). Raises if the listing
        fails. librdkafka's listing and describe (which can abort the process: librdkafka#4605) remain only where
        kafka-python cannot reach the cluster or the cluster is older than Kafka 3.0."""
        reader = self._offsets_client(timeout)
        if reader is not None and reader.batches_groups():
            if self._groups is None:
                self._groups = ConsumerGroups(reader)
            return self._groups.groups(timeout=timeout, brokers=self._brokers)
        return self._librdkafka_groups(timeout=timeout)

    def _librdkafka_groups(self, *, timeout: float) -> list[GroupInfo]:
        """Every consumer group through librdkafka, described. Raises if the listing fails. Groups whose description
        fails are asked again in a request of their own; a group that still cannot be described is kept with the
        listing's state and unknown members (0 if the listing says empty), so its offsets and lag are still read.
        (librdkafka 2.16 against Kafka 4.1 answered "ConsumerGroupDescribe: " for some classic groups of a long-lived
        client, round after round; leaving them out made their lag vanish, and the lag alert with it.)"""
        t, end = timeout, time.monotonic() + timeout
        listing = self._call("list groups", t, lambda: self._admin.list_consumer_groups(request_timeout=t).result(t))
        listed = {g.group_id: g for g in listing.valid}
        if not listed:
            return []
        described: dict[str, GroupInfo] = {}
        failed: dict[str, KafkaHealthError] = {}

        def describe(ids: list[str]) -> None:
            futs = self._call(
                "describe groups",
                t,
                lambda: self._admin.describe_consumer_groups(ids, request_timeout=max(MIN_CALL_SECONDS, _left(end))),
            )
            # Waited for together: a group whose coordinator is dead must not use up the time of the others.
            concurrent.futures.wait(list(futs.values()), timeout=_left(end))
            for gid, fut in futs.items():
                try:
                    d = self._call("describe group", t, lambda: fut.result(0))
                except KafkaHealthError as exc:
                    failed[gid] = exc
                    continue
                failed.pop(gid, None)
                described[gid] = GroupInfo(
                    gid,
                    _state(d.state),
                    len(d.members),
                    bool(d.is_simple_consumer_group),
                    tuple((m.client_id, m.host) for m in d.members),
                    tuple((m.client_id, m.host, _assigned(m)) for m in d.members),
                )

        # An empty group has no members to describe: its listing says all the description would (in a shared
        # cluster most groups are idle ones; describing 10,000 groups took 2.7-3.9 s of the 4 s the listing gets).
        for gid, g in listed.items():
            if _state(g.state) == "empty":
                described[gid] = GroupInfo(gid, "empty", 0, bool(getattr(g, "is_simple_consumer_group", False)))
        if len(described) < len(listed):
            describe([gid for gid in listed if gid not in described])
        if failed and _left(end) >= MIN_CALL_SECONDS:
            describe(sorted(failed))  # once more, in a request of their own
        for gid, exc in sorted(failed.items()):
            g = listed[gid]
            state = _state(g.state)
            log.warning("group %s: not described (%s); offsets and lag read anyway, members unknown", gid, exc)
            described[gid] = GroupInfo(
                gid, state, 0 if state == "empty" else None, bool(getattr(g, "is_simple_consumer_group", False))
            )
        return [described[gid] for gid in listed if gid in described]

    def committed(
        self, groups: Sequence[str], *, timeout: float, group_timeout: float
    ) -> dict[str, dict[TP, int] | CollectorError]:
        """Every group's committed offsets: one OffsetFetch v8 request per group coordinator naming all its groups,
        the coordinators asked in parallel after one batched FindCoordinator (``KafkaOffsets.committed``). Each group
        answers within ``group_timeout`` or fails with ``TargetTimeout``: a dead coordinator's groups fail after it
        and cost the other groups nothing. A group not answered within ``timeout`` is left out (the round's deadline
        cut it). librdkafka's one request per group (confluent-kafka takes one group per call) remains only where
        kafka-python cannot reach the cluster or the cluster is older than Kafka 3.0."""
        reader = self._offsets_client(timeout)
        if reader is not None and reader.batches_groups():
            return dict(reader.committed(groups, timeout=timeout, group_timeout=group_timeout))
        return self._librdkafka_committed(groups, timeout=timeout, group_timeout=group_timeout)

    def _librdkafka_committed(
        self, groups: Sequence[str], *, timeout: float, group_timeout: float
    ) -> dict[str, dict[TP, int] | CollectorError]:
        """Committed offsets through librdkafka: one OffsetFetch per group, all in flight together (10,000 groups in
        2.6-3.4 s unloaded, ``bench/admin_scale.py``)."""
        from confluent_kafka import ConsumerGroupTopicPartitions

        if self.stale_coordinator:
            # librdkafka (2.16 still, librdkafka#5040) dereferences a NULL consumer group when an admin OffsetFetch
            # answers NOT_COORDINATOR, and the whole process dies (SIGSEGV, seen on the latency bench): with a stale
            # coordinator known, no offsets are asked of this client; the next round's fresh client reads them.
            raise TransportError(
                "Admin API group offsets: skipped, the client's group coordinator is stale "
                "(NOT_COORDINATOR); read next round with a fresh client"
            )
        end = time.monotonic() + timeout
        futs: dict[str, concurrent.futures.Future] = {}
        for group in groups:  # confluent-kafka 2.16 takes one group per call (its docs: "only a single group")
            if _left(end) < MIN_CALL_SECONDS:
                break  # submitting took the call's time (not seen at 10,000 groups: 1.6 s): the rest is cut
            futs.update(
                self._call(
                    "group offsets",
                    timeout,
                    lambda g=group: self._admin.list_consumer_group_offsets(
                        [ConsumerGroupTopicPartitions(g)],
                        request_timeout=max(MIN_CALL_SECONDS, min(group_timeout, _left(end))),
                    ),
                )
            )
        concurrent.futures.wait(list(futs.values()), timeout=_left(end))
        out: dict[str, dict[TP, int] | CollectorError] = {}
        for group, fut in futs.items():
            if not fut.done():
                continue  # no answer within the call: the deadline's, not the group's
            try:
                res = self._call("group offsets", group_timeout, lambda f=fut: f.result(0))
            except CollectorError as exc:
                out[group] = exc
            else:
                out[group] = {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions if tp.error is None}
        return out

    def high_watermarks(self, tps: Iterable[TP], *, timeout: float) -> dict[TP, int]:
        """Latest offsets: one ListOffsets request per leader broker (``KafkaOffsets``), to the leaders of the last
        ``cluster`` call. A partition it did not name (no leader, or not read yet) has no watermark; a broker that
        does not answer within ``timeout`` costs its own partitions only (logged with why)."""
        wanted = list(tps)
        reader = self._offsets_client(timeout)
        if reader is None:
            return self._librdkafka_watermarks(wanted, timeout=timeout)
        if not self._leaders:
            self.cluster(timeout=timeout)
        out, missing = reader.latest({tp: self._leaders.get(tp, -1) for tp in wanted}, timeout=timeout)
        for broker, why in sorted(missing.items()):
            log.warning("high watermarks of the partitions broker %d leads not read: %s", broker, why)
        return out

    def _offsets_client(self, timeout: float) -> KafkaOffsets | None:
        """The kafka-python client (group listing and describe, committed offsets, watermarks), connected in the
        background from this client's start on: a SASL_SSL bootstrap under load took the first round's whole budget
        when it was made on first use. None while it connects (this call reads through librdkafka, without waiting:
        a bounded wait for it in a new child's first round left a 4 s round without its metadata or its offsets at
        load 40, test_collectors_stack, where librdkafka's path read them), where the cluster's security settings
        are not kafka-python's (said once: librdkafka reads from then on), or where it could not connect (said: this
        call reads through librdkafka, the next one connects again)."""
        if self._offsets is not None or self._offsets_refused:
            return self._offsets
        if self._offsets_pending is None:
            try:
                protocol_settings(self._settings, timeout=timeout)
            except KafkaHealthError as exc:
                self._offsets_refused = str(exc)
                log.warning("offsets read through librdkafka (slower at many groups and partitions): %s", exc)
                return None
            self._offsets_pending = _in_background(lambda: KafkaOffsets(self._settings, timeout=self._timeout))
        pending = self._offsets_pending
        if not pending.done():
            return None
        try:
            self._offsets = pending.result()
        except KafkaHealthError as exc:
            self._offsets_pending = None
            log.warning("offsets read through librdkafka this time: %s", exc)
        return self._offsets

    def _librdkafka_watermarks(self, wanted: list[TP], *, timeout: float) -> dict[TP, int]:
        """Latest offsets through librdkafka, asked in calls of ``WATERMARK_CHUNK`` partitions all in flight together:
        librdkafka 2.16 takes time quadratic in the partitions of one ListOffsets call (26,210 partitions in one call
        17.2 s, in calls of 500-2,000 partitions 3.8-4.3 s, on the local stack under load; bench/admin_scale.py)."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        asked = [TopicPartition(t, p) for t, p in wanted]
        if not asked:
            return {}
        t, end = timeout, time.monotonic() + timeout
        futs: dict = {}
        for i in range(0, len(asked), WATERMARK_CHUNK):
            request = dict.fromkeys(asked[i : i + WATERMARK_CHUNK], OffsetSpec.latest())
            futs.update(
                self._call(
                    "list offsets",
                    t,
                    lambda r=request: self._admin.list_offsets(r, request_timeout=max(MIN_CALL_SECONDS, _left(end))),
                )
            )
        concurrent.futures.wait(list(futs.values()), timeout=_left(end))
        out = {}
        for tp, fut in futs.items():
            if not fut.done():
                continue  # no answer in time: no watermark, no lag for it (the collector says so)
            try:
                out[(tp.topic, tp.partition)] = self._call("list offsets", t, lambda f=fut: f.result(0)).offset
            except KafkaHealthError:
                continue  # e.g. an offline partition: no watermark, no lag for it
        return out


def _in_background(make: Callable[[], KafkaOffsets]) -> concurrent.futures.Future:
    """``make()`` on a daemon thread (a connection that hangs must not hold up the process's exit)."""
    future: concurrent.futures.Future = concurrent.futures.Future()

    def run() -> None:
        try:
            future.set_result(make())
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on the future
            future.set_exception(exc)

    threading.Thread(target=run, name="kafka-health-offsets-connect", daemon=True).start()
    return future


def _left(end: float) -> float:
    """Seconds until ``end`` (time.monotonic): the futures of one call share its timeout instead of each getting it."""
    return max(0.0, end - time.monotonic())


def _assigned(member) -> tuple[TP, ...]:
    """The partitions assigned to a described member (its current assignment; none while it joins)."""
    assignment = getattr(member, "assignment", None)
    return tuple(sorted((tp.topic, tp.partition) for tp in getattr(assignment, "topic_partitions", None) or ()))


def _state(state) -> str:
    """librdkafka's ConsumerGroupState as the collector writes states (``group_state``: as Kafka names them)."""
    return group_state(getattr(state, "name", str(state)))
