"""Admin API collector: one target per cluster (brokers, controller, partition states, consumer groups and lag).

    AdminCollector.collect_target ── one round, within RoundDeadline ──> TargetResult
        │  AdminApi calls (collectors.types), in this order:
        │    cluster, min_insync_replicas ──> cluster_samples      (collectors.admin_convert)
        │    groups, committed (every group at once), high_watermarks ──> GroupsRead ──> group_samples
        │  then, on a worker thread, waited for no longer than the round's time left:
        │    GroupKinds (collectors.group_kinds, kafka-python): every group with its type, share and streams groups
        │      described ──> ShareGroupSeries (kafka_group_info, kafka_sharegroup_*); the streams groups' members
        │      (streams_group_info) replace the unknown ones of their GroupsRead entries before group_samples
        └─ the AdminApi is a KafkaAdmin (collectors.admin_client) in a child process (collectors.admin_process):
           groups, committed offsets and watermarks through kafka-python there (collectors.consumer_groups,
           collectors.protocol_client.KafkaOffsets), librdkafka only where kafka-python cannot be used

This module decides the round: what is read in which order, with how much of the budget, what a failed call costs,
and when the client is replaced. The seam (``collectors.admin_client``) translates the library's errors into
``TargetTimeout``/``TargetUnreachable``/``TransportError``; the conversions to samples (``collectors.admin_convert``)
are pure.

Partial-failure policy (after DataDog's kafka_consumer): metadata failing fails the target (nothing else can be
trusted); listing the groups failing (ListGroups goes to every broker: one that just died makes it time out) drops
only this round's group series, never the cluster state read before it (the broker-down and offline-partition
series are exactly what is needed then), and counts the groups of the last good listing as skipped; one group
whose offsets cannot be read is skipped and counted in ``kafka_health_admin_skipped_groups``;
a partition without a committed offset has no lag (it is not "zero lag"). Committed offsets are read *before* the
high watermarks, so a lag is never negative (and is clamped at 0 should a truncation happen in between).
Groups with no active members (state Empty) are included: a stopped consumer is exactly when lag matters.
min.insync.replicas not read (failed, or no time left) keeps the values last read; a topic never read has no
under-min-ISR series. At partition scale it is read in slices (``MIN_ISR_TOPICS`` topics within ``MIN_ISR_SHARE`` of
the budget a round, new topics first): a refresh of 10,000 topics is spread over the rounds after it falls due
instead of taking one whole round, and every group's lag with it.
Each broker's ``num.io.threads`` (``kafka_broker_request_handler_threads``: the request-handler capacity the advisor
holds a client's cost against) is read when the broker appears in the metadata and every 5 minutes, within
``HANDLER_THREADS_SHARE`` of the budget, one DescribeConfigs per broker; a broker that does not answer (down, or the
principal lacks DescribeConfigs on the cluster) keeps its last value, or has no series, and is asked again after a
minute; the round's message says which brokers lack it and why (logged once per cause), and the round is not failed.

Round deadline: one round has the target's timeout in all (``jmx.timeout_seconds`` of the cluster), not per call.
A dead or hanging broker would otherwise make each of the sequential calls wait its own timeout, and the cluster
state would go stale (dropped after two intervals) exactly when a broker dies. Every call gets the time left:
metadata and topic configs first, then the group listing, the committed offsets of every group (asked all at once,
each group within its own timeout: 10,000 groups in about 3 s, bench/admin_scale.py), and last the high
watermarks, for which the offsets leave ``WATERMARK_RESERVE`` of the budget (without watermarks no lag can be
computed). When time runs out the round ends with what it has: the cluster state is exported, the groups not
finished (not listed, offsets not read, or no watermarks read for them) are skipped and counted like the failures
above, and the round says so in its result message and a warning, and counts them as the deadline's ``Cut`` (an
offsets call that timed out on less than its share, the deadline's leftover, counts there too): the message names
the setting bounding the budget, ``kafka_health_admin_groups_cut{cause="deadline"}`` and the exporter's cut counter
count it, ``KafkaHealthDataDropped`` fires. The series cap's choice of what to cut is ``collectors.outcome``'s; the
skipped-groups series are built after it (they count the groups it cut whole) and are never cut themselves. A
watermark call failing is handled like the deadline (not counted as its cut): it no longer fails the target, since
the cluster state read before it is still good. Within the round, the group listing and descriptions get
``GROUPS_SHARE`` of the budget and each group's offsets ``OFFSETS_CALL_SHARE`` (all groups' requests are in flight
together, so a dead coordinator's groups fail after that share while the others answer), and groups whose offsets
failed are asked last next round: a group on a dead coordinator cannot take the lag of all the others.

Group kinds (issue 29): the group listing with types (classic, consumer, share, streams) and the share groups'
description come last: they add no lag of consumer groups, so they get only what the round has left. They run on a
worker thread the round waits for until its deadline; a read still running when the next round starts is not
doubled (that round skips them, and says so). A cluster whose brokers do not offer ShareGroupDescribe v1 (Kafka 3.9)
has no share groups: said once at INFO, its groups still listed with their types, never an error. Kafka 4.1 offers
it (measured on 4.1.1) but has no share group unless ``share.version`` is enabled: none listed, none described. A
failed or late read drops only these series for the round, and says why in the round's message. The Admin client's
listing leaves share and streams groups out where it reads their types (kafka-python, ``collectors.consumer_groups``);
librdkafka's fallback listing has share groups too: the share and streams groups of the kinds listing are left out of
the consumer-group reads from the next round on, and their consumer-group series dropped in the round that first
lists them, so a share group is never also a consumer group without members (kafka_exporter #533, KMinion #294).

Streams groups (KIP-1071) are watched as consumer groups: they commit through OffsetCommit and OffsetFetch answers
for them (measured on 4.4.0), so the streams groups of the last kinds listing join the consumer-group reads (their
committed offsets asked with the others') and export the ``kafka_consumergroup_*`` series, judged by the same lag
rule. librdkafka 2.16 neither lists them (ListGroups without them) nor describes them (it answers ``dead``, no
members, for a stable streams group), so their state, members and member partitions come from this round's
StreamsGroupDescribe; when that read fails or is late their members are unknown (no members series), as for a
consumer group that could not be described. A streams group first listed this round has its lag from the next one.

Process: in production the ``KafkaAdmin`` runs in a child process (``collectors.admin_process.IsolatedAdmin``), so a
librdkafka crash fails one round of this target instead of killing the collector; the client is replaced after a
round in which it died, hung, or met a moved or dead group coordinator (``replace_client``).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from collectors.admin_client import MIN_CALL_SECONDS, KafkaAdmin
from collectors.admin_convert import (
    GroupOffsets,
    WatermarkHistory,
    cluster_samples,
    group_samples,
)
from collectors.admin_process import IsolatedAdmin
from collectors.catalog import TenantLookup
from collectors.discovery import DiscoveryBoard
from collectors.group_kinds import (
    Group,
    GroupKinds,
    GroupKindsApi,
    ShareGroup,
    ShareGroupSeries,
    StreamsGroup,
    share_tenant,
    streams_group_info,
    unanswered_note,
)
from collectors.outcome import Capped, failed, succeeded
from collectors.types import TP, AdminApi, ClusterState, Cut, CutCause, GroupInfo, Sample, Target, TargetResult
from monitor.core.config import DEFAULT_MAX_SERIES_PER_TARGET, ClusterConfig
from monitor.core.errors import CollectorError, KafkaHealthError, TargetForbidden, TargetTimeout

log = logging.getLogger(__name__)

MIN_ISR_REFRESH_SECONDS = 300.0
# min.insync.replicas at partition scale: a round asks at most MIN_ISR_TOPICS topics' configs within MIN_ISR_SHARE of
# its budget, new topics first, and a refresh is spread over the rounds after it falls due. librdkafka's
# DescribeConfigs answers all its topics in one request or none, at 1-2 ms a topic under load (1,450 topics
# 1.1-2.8 s, bench/admin_scale.py): 10,000 topics (200,000 partitions) in one call took the whole round, and every
# group's lag with it, every five minutes.
MIN_ISR_TOPICS = 500
MIN_ISR_SHARE = 0.15
# num.io.threads per broker (the advisor's request-handler capacity, kafka_broker_request_handler_threads): a broker
# is asked when first seen in the metadata (so after a restart too) and every HANDLER_THREADS_REFRESH_SECONDS (it is
# a dynamic config, rarely changed), within HANDLER_THREADS_SHARE of the round; one that did not answer (down, slow,
# or an ACL missing) is asked again after HANDLER_THREADS_RETRY_SECONDS, its series absent until then.
HANDLER_THREADS_REFRESH_SECONDS = 300.0
HANDLER_THREADS_RETRY_SECONDS = 60.0
HANDLER_THREADS_SHARE = 0.15
# Share of the round's budget the committed-offset reads leave for the high watermarks.
WATERMARK_RESERVE = 0.2
# Shares of the round budget: listing and describing the groups, and one group's committed offsets. A group whose
# coordinator is dead answers nothing; without these caps it takes the whole round and no group has a lag.
GROUPS_SHARE = 0.4
OFFSETS_CALL_SHARE = 0.25
# The group-kinds read (listing with types, share and streams describes) ends its every request this much before the
# round's deadline: its answers must reach the round that waits for them (a request as long as the round's budget
# lost every broker's answer whenever one broker hung).
KINDS_MARGIN_SECONDS = 0.5
# ... of which the listing may take this share; the describes have the rest (the listing of a healthy cluster takes
# milliseconds; one broker hung holds it to its bound).
KINDS_LISTING_SHARE = 0.5
# The round budget is at most this share of the collection interval: a round longer than the interval is still
# running when the next is due, and its result ages out (collectors.exporter) before the one after arrives.
INTERVAL_SHARE = 0.8


class RoundDeadline:
    """The time left in one collection round, on an injected monotonic clock."""

    def __init__(self, budget: float, monotonic: Callable[[], float]):
        self.budget = budget
        self._clock = monotonic
        self._start = monotonic()
        self._end = self._start + budget

    def elapsed(self) -> float:
        return self._clock() - self._start

    def remaining(self, *, reserve: float = 0.0) -> float:
        """Seconds left before the deadline, keeping ``reserve`` seconds back for a later call; never negative."""
        return max(0.0, self._end - reserve - self._clock())

    def allows(self, *, reserve: float = 0.0) -> bool:
        return self.remaining(reserve=reserve) >= MIN_CALL_SECONDS


@dataclass(frozen=True)
class GroupsRead:
    """What one round read of the consumer groups. Built by ``AdminCollector._read_groups``, which never raises for
    the target's trouble: the cluster state is read already, so a failure here only shrinks this."""

    # Groups finished this round, with their committed offsets: the input of ``group_samples``. A group without a
    # committed offset is kept (its state and members are still exported).
    offsets: tuple[GroupOffsets, ...]
    # High watermarks of the partitions the groups have committed on; empty when they could not be read (then no
    # group with committed offsets is in ``offsets``: without a watermark there is no lag).
    watermarks: dict[TP, int]
    # Groups not finished this round (listing, offsets or watermarks failed or out of time): the skipped-groups gauge.
    skipped: int
    # Why the round deadline cut the group reads short, for the result message and a warning; "" when it did not.
    cut_short: str = ""
    # Of ``skipped``, the groups left unfinished because the round's deadline ran out (not a failed call).
    deadline_skipped: int = 0


@dataclass(frozen=True)
class KindsRead:
    """One read of the group kinds: every group with its type, the share and streams groups described (none where
    the cluster has none: ``share_supported``, ``streams_supported`` False)."""

    groups: tuple[Group, ...]
    shares: tuple[ShareGroup, ...]
    share_supported: bool
    streams: tuple[StreamsGroup, ...] = ()
    unlisted: str = ""  # the listing's note: brokers whose groups were not listed this round (GroupListing.note)


def _group_kinds(cluster: ClusterConfig, timeout: float) -> GroupKindsApi:
    """The production group listing: kafka-python in this process (pure Python: nothing to isolate)."""
    return GroupKinds(cluster.client_settings(), timeout=timeout)


def _isolated_admin(cluster: ClusterConfig) -> IsolatedAdmin:
    """The production client: a KafkaAdmin in a child process (collectors.admin_process), so a librdkafka crash
    fails one round of this target instead of killing the collector."""
    return IsolatedAdmin(cluster.client_settings(), timeout=cluster.jmx.timeout_seconds, client=KafkaAdmin)


class AdminCollector:
    """One target per cluster: the Admin API through the bootstrap servers.

    ``clock`` (wall time) dates the min.insync.replicas refresh; ``monotonic`` times the round against its deadline
    (the cluster's ``jmx.timeout_seconds``). Both are injectable so tests can make calls "take" time.
    """

    def __init__(
        self,
        cluster: ClusterConfig,
        *,
        tenants: TenantLookup,
        max_series: int = DEFAULT_MAX_SERIES_PER_TARGET,
        admin_factory: Callable[[ClusterConfig], AdminApi] | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        interval: float | None = None,
        board: DiscoveryBoard | None = None,
        kinds_factory: Callable[[ClusterConfig, float], GroupKindsApi] | None = None,
    ):
        """``board``: the brokers discovery expects (collectors.discovery), besides the listed ones: a registered
        broker missing from the metadata is ``kafka_cluster_broker_up`` 0, as a listed one is.

        ``kinds_factory(cluster, timeout)``: the group listing with types and share groups (``GroupKinds``). By
        default the real one with the real Admin client, none with a test's ``admin_factory`` (a fake cluster has
        no brokers to list groups on) unless the test gives one."""
        self._cluster = cluster
        self._board = board
        self._tenants = tenants
        self._max_series = max_series
        self._factory = admin_factory or _isolated_admin
        self._admin: AdminApi | None = None
        self._history = WatermarkHistory()
        self._known_groups = 0  # groups of the last good listing: what a failed listing skips
        self._clock = clock
        self._monotonic = monotonic
        self._budget = cluster.jmx.timeout_seconds
        if interval is not None and INTERVAL_SHARE * interval < self._budget:
            self._budget = INTERVAL_SHARE * interval
            log.info(
                "%s: Admin round budget %gs (%g of the %gs collection interval, under jmx.timeout_seconds)",
                cluster.name,
                self._budget,
                INTERVAL_SHARE,
                interval,
            )
        self._slow_groups: set[str] = set()  # groups whose offsets could not be read last round: read last
        # min.insync.replicas per topic changes rarely and costs one request per topic: read it for new topics and
        # every MIN_ISR_REFRESH_SECONDS, not every round.
        self._min_isr: dict[str, int] = {}
        self._min_isr_at = float("-inf")
        self._min_isr_due: set[str] = set()  # topics of the refresh under way, not read again yet
        self._min_isr_unanswered: set[str] = set()  # asked and not answered: asked after the others
        self._threads: dict[int, int] = {}  # broker -> num.io.threads last read (HANDLER_THREADS_*)
        self._threads_due: dict[int, float] = {}  # broker -> when it is asked next (wall clock)
        self._threads_missing: dict[int, str] = {}  # broker -> why it has no threads series
        self._lock = threading.Lock()
        self._target = Target(cluster.name, "admin", "admin", address=cluster.bootstrap_servers)
        self._kinds_factory = kinds_factory or (_group_kinds if admin_factory is None else None)
        self._kinds: GroupKindsApi | None = None
        self._kinds_pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._kinds_pending: concurrent.futures.Future[KindsRead] | None = None
        self._kinds_series = ShareGroupSeries()
        self._share_supported: bool | None = None  # last answer, to say a change once
        self._other_kinds: frozenset[str] = frozenset()  # share and streams groups of the last kinds read
        self._share_ids: frozenset[str] = frozenset()  # share groups of the last kinds read: no consumer series
        self._streams_listed: tuple[Group, ...] = ()  # streams groups of the last kinds read: read as consumer groups

    def targets(self) -> Sequence[Target]:
        return (self._target,)

    def _expected(self) -> list[int]:
        listed = {b.id for b in self._cluster.brokers}
        found = {n.id for n in self._board.brokers()} if self._board is not None else set()
        return sorted(listed | found)

    def _with_min_isr(self, admin: AdminApi, state: ClusterState, deadline: RoundDeadline) -> ClusterState:
        topics = {p.topic for p in state.partitions}
        now = self._clock()
        if now - self._min_isr_at >= MIN_ISR_REFRESH_SECONDS:
            self._min_isr_due, self._min_isr_at = set(topics), now  # a refresh falls due: spread over the rounds
        missing = topics - set(self._min_isr)
        self._min_isr_due &= topics
        # New topics first (they have no under-min-ISR series at all), those that did not answer when last asked
        # after the others (a topic whose config is refused must not hold the others back).
        ask = sorted(missing, key=lambda t: (t in self._min_isr_unanswered, t))[:MIN_ISR_TOPICS]
        ask += sorted(self._min_isr_due - missing)[: MIN_ISR_TOPICS - len(ask)]
        if ask and not deadline.allows():
            log.warning(
                "%s: min.insync.replicas not read: round deadline of %gs reached", self._target.key, deadline.budget
            )
        elif ask:
            timeout = min(deadline.remaining(), MIN_ISR_SHARE * deadline.budget)
            try:
                fresh = admin.min_insync_replicas(ask, timeout=timeout)
            except KafkaHealthError as exc:  # the partition states are still good: only this series is missing
                log.warning("%s: min.insync.replicas not read: %s", self._target.key, exc)
            else:
                self._min_isr = {t: v for t, v in {**self._min_isr, **fresh}.items() if t in topics}
                self._min_isr_due -= set(fresh)
                self._min_isr_unanswered = (self._min_isr_unanswered | set(ask)) - set(fresh)
        return replace(state, min_isr={t: v for t, v in self._min_isr.items() if t in topics})

    def _with_handler_threads(self, admin: AdminApi, state: ClusterState, deadline: RoundDeadline) -> ClusterState:
        """The brokers' num.io.threads, read when due (``HANDLER_THREADS_*``); a value last read is kept when a
        refresh fails. Never raises for the target's trouble: a broker without a value has no series, and
        ``_threads_missing`` says why for the round's message."""
        now, present = self._clock(), set(state.brokers)
        for kept in (self._threads, self._threads_due, self._threads_missing):  # gone from the metadata: forgotten,
            for b in set(kept) - present:  # so a broker that restarts is asked again
                del kept[b]
        ask = sorted(b for b in present if self._threads_due.get(b, float("-inf")) <= now)
        if ask and not deadline.allows():
            for b in ask:
                if b not in self._threads:
                    self._threads_missing[b] = f"round deadline of {deadline.budget:g}s reached before it was asked"
        elif ask:
            timeout = min(deadline.remaining(), HANDLER_THREADS_SHARE * deadline.budget)
            try:
                answers = admin.handler_threads(ask, timeout=timeout)
            except KafkaHealthError as exc:  # the whole call (e.g. the client process died): every broker asked
                answers = {b: exc for b in ask}
            for b in ask:
                answer = answers.get(b)
                if isinstance(answer, int):
                    self._threads[b] = answer
                    self._threads_missing.pop(b, None)
                    self._threads_due[b] = now + HANDLER_THREADS_REFRESH_SECONDS
                    continue
                why = str(answer) if answer is not None else f"no answer within {timeout:g}s"
                self._threads_due[b] = now + HANDLER_THREADS_RETRY_SECONDS
                if b in self._threads:  # a refresh failed: the last value stands
                    log.info("%s: num.io.threads of broker %d not refreshed: %s", self._target.key, b, why)
                    continue
                if self._threads_missing.get(b) != why:  # said once per cause, in every round's message after
                    log.warning("%s: num.io.threads of broker %d not read: %s", self._target.key, b, why)
                self._threads_missing[b] = why
        return replace(state, handler_threads={b: v for b, v in self._threads.items() if b in present})

    def _threads_note(self) -> str:
        """Why some brokers have no ``kafka_broker_request_handler_threads`` this round; "" when none lacks it."""
        by_why: dict[str, list[int]] = {}
        for b, why in sorted(self._threads_missing.items()):
            by_why.setdefault(why, []).append(b)
        return "; ".join(
            f"num.io.threads of broker{'s' if len(bs) > 1 else ''} {', '.join(map(str, bs))} not read "
            f"(no request-handler threads series; the advisor assumes Kafka's default): {why}"
            for why, bs in by_why.items()
        )

    def _read_groups(self, admin: AdminApi, deadline: RoundDeadline) -> GroupsRead:
        """Groups with their committed offsets, the high watermarks, the groups skipped and why the round was cut
        short. Never raises a KafkaHealthError: the cluster state is read already."""
        key, budget = self._target.key, deadline.budget
        if not deadline.allows():
            return GroupsRead(
                (),
                {},
                self._known_groups,
                cut_short=(
                    f"round deadline of {budget:g}s reached before the consumer groups were "
                    f"listed: {self._known_groups} groups skipped"
                ),
                deadline_skipped=self._known_groups,
            )
        try:
            listed = admin.groups(timeout=min(deadline.remaining(), GROUPS_SHARE * budget))
            # librdkafka's fallback listing has share groups too: those are not consumer groups (no committed
            # offsets); the group kinds of the last round say which (the first round's are left out after it)
            listed = [g for g in listed if g.group not in self._other_kinds]
            # streams groups (librdkafka lists none): committed offsets like consumer groups, members from
            # StreamsGroupDescribe after the kinds read (unknown until then)
            listed += [GroupInfo(g.id, g.state.lower().replace("_", ""), None) for g in self._streams_listed]
            self._known_groups = len(listed)
        except TargetForbidden as exc:
            return GroupsRead((), {}, self._known_groups, cut_short=f"consumer groups not read: {exc}")
        except KafkaHealthError as exc:  # said in the round's message too: every group's lag is missing
            why = f"consumer groups not listed: {exc}: the {self._known_groups} groups of the last listing skipped"
            return GroupsRead((), {}, self._known_groups, cut_short=why)
        groups: list[GroupOffsets] = []
        skipped, cut, forbidden, out_of_time = 0, "", "", 0
        reserve = WATERMARK_RESERVE * budget
        slow, self._slow_groups = self._slow_groups, set()
        listed = sorted(listed, key=lambda g: g.group in slow)  # stable: last round's slow groups asked last
        answers: dict[str, dict[TP, int] | CollectorError] = {}
        group_timeout, whole = 0.0, ""
        if deadline.allows(reserve=reserve):
            group_timeout = min(deadline.remaining(reserve=reserve), OFFSETS_CALL_SHARE * budget)
            try:  # before the watermarks; every group at once, so a dead coordinator's groups delay no other
                answers = admin.committed(
                    [g.group for g in listed], timeout=deadline.remaining(reserve=reserve), group_timeout=group_timeout
                )
            except KafkaHealthError as exc:  # the whole call: a stale coordinator, a dead client process
                answers = {g.group: exc for g in listed}
                if not isinstance(exc, TargetForbidden):  # said below, once
                    whole = f"consumer group offsets not read: {exc}: {len(listed)} groups skipped"
        failures: dict[str, CollectorError] = {}
        for info in listed:
            answer = answers.get(info.group)
            if answer is None:  # not answered within the round's time: the deadline's cut
                out_of_time += 1
                skipped += 1
                if info.group in slow:
                    self._slow_groups.add(info.group)
            elif isinstance(answer, TargetForbidden):  # a missing ACL: the same for every group, said once
                forbidden = forbidden or str(answer)
                skipped += 1
            elif isinstance(answer, KafkaHealthError):
                failures[info.group] = answer
                self._slow_groups.add(info.group)
                skipped += 1
                if isinstance(answer, TargetTimeout) and group_timeout < OFFSETS_CALL_SHARE * budget:
                    out_of_time += 1  # it had only the round's leftover time: the deadline cut it
            else:
                groups.append(GroupOffsets(info, answer))
        failed = ""
        if failures:  # one line, not one per group: a dead coordinator fails a third of them
            first = sorted(failures)[:3]
            failed = (
                f"{len(failures)} consumer groups skipped, offsets not read ({', '.join(first)}"
                f"{', ...' if len(failures) > 3 else ''}): {failures[first[0]]}"
            )
            log.warning("%s: %s", key, failed)
        if out_of_time:
            cut = (
                f"round deadline of {budget:g}s reached: offsets of {len(groups)} of {len(listed)} consumer "
                f"groups read, {skipped} groups skipped"
            )
        # Groups whose own offsets call failed (a dead coordinator, every one timed out under load) are said too,
        # not only logged: the round's message is where a user looks for why a group has no lag.
        cut = whole or cut or failed
        if forbidden:
            cut = f"{cut}; {forbidden}" if cut else f"consumer group offsets not read: {forbidden}"
        wanted = {tp for g in groups for tp in g.committed}
        if not wanted:
            return GroupsRead(tuple(groups), {}, skipped, cut_short=cut, deadline_skipped=out_of_time)
        why, watermarks = "", {}
        late = not deadline.allows()
        if late:
            why = f"round deadline of {budget:g}s reached before the high watermarks were read"
        else:
            try:
                watermarks = admin.high_watermarks(sorted(wanted), timeout=deadline.remaining())
            except KafkaHealthError as exc:
                why = f"high watermarks not read: {exc}"
            else:
                late = not deadline.allows()  # partitions left out when the call ran out of the round's time
                why = f"high watermarks of {len(wanted) - len(watermarks)} of {len(wanted)} partitions not read" + (
                    f" within the round deadline of {budget:g}s" if late else ""
                )
        # No watermark, no lag: a group with committed offsets none of whose partitions has a watermark is not
        # finished this round (said and counted, never a group that silently has no lag series).
        blind = {id(g) for g in groups if g.committed and not any(tp in watermarks for tp in g.committed)}
        if not blind:
            return GroupsRead(tuple(groups), watermarks, skipped, cut_short=cut, deadline_skipped=out_of_time)
        why = f"{why}: {len(blind)} groups whose offsets were read skipped"
        return GroupsRead(
            tuple(g for g in groups if id(g) not in blind),
            watermarks,
            skipped + len(blind),
            cut_short=f"{cut}; {why}" if cut else why,
            deadline_skipped=out_of_time + (len(blind) if late else 0),
        )

    def _kinds_read(self, within: float) -> KindsRead:
        """On the worker thread: the listing with types, then the share and streams groups described, every request
        ending within ``within`` seconds (the round's time left). Raises KafkaHealthError; the client is dropped after
        a failure (the next read connects afresh)."""
        end = time.monotonic() + within

        def left() -> float:
            return max(MIN_CALL_SECONDS, end - time.monotonic())

        try:
            if self._kinds is None:
                assert self._kinds_factory is not None
                self._kinds = self._kinds_factory(self._cluster, self._budget)
            # the listing gets part of the time: a broker that hangs it must leave the describes of the others theirs
            listing = self._kinds.list_groups(within=left() * KINDS_LISTING_SHARE)
            groups = listing.groups
            supported = self._kinds.share_supported
            shares = (
                self._kinds.describe_share_groups((g.id for g in groups if g.type == "share"), within=left())
                if supported
                else []
            )
            if listing.lost_shares:  # their brokers did not list them: not described, as if their coordinator hung
                shares = [
                    *shares,
                    *(ShareGroup(g, "", (), (), listing.unlisted[0], unanswered=True) for g in listing.lost_shares),
                ]
            streams_ids = [g.id for g in groups if g.type == "streams"]
            streams = (
                self._kinds.describe_streams_groups(streams_ids, within=left())
                if streams_ids and self._kinds.streams_supported
                else []
            )
        except KafkaHealthError:
            kinds, self._kinds = self._kinds, None
            if kinds is not None:
                kinds.close()
            raise
        return KindsRead(tuple(groups), tuple(shares), supported, tuple(streams), listing.note())

    def _read_kinds(
        self, deadline: RoundDeadline, base: tuple[tuple[str, str], ...]
    ) -> tuple[list[Sample], str, dict[str, GroupInfo]]:
        """The group-kind and share-group series of this round, why there are none ("" when read or not
        configured), and the consumer-group view of each streams group described (``streams_group_info``). Never
        raises for the target's trouble and never outlasts the round's deadline."""
        if self._kinds_factory is None:
            return [], "", {}
        key = self._target.key
        if self._kinds_pending is not None and not self._kinds_pending.done():
            return [], "group types and share groups not read: the last round's read is still running", {}
        if not deadline.allows():
            return [], f"round deadline of {deadline.budget:g}s reached before the group types were listed", {}
        if self._kinds_pool is None:
            self._kinds_pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"group-kinds-{key}")
        # Every request of the read ends before the round's deadline, a margin short of it (KINDS_MARGIN_SECONDS), so a
        # hung broker costs its own groups and the answers of the others arrive in time.
        within = max(MIN_CALL_SECONDS, deadline.remaining() - KINDS_MARGIN_SECONDS)
        self._kinds_pending = self._kinds_pool.submit(self._kinds_read, within)
        try:
            read = self._kinds_pending.result(timeout=deadline.remaining())
        except concurrent.futures.TimeoutError:
            return [], f"group types and share groups not read within the round deadline of {deadline.budget:g}s", {}
        except KafkaHealthError as exc:
            return [], f"group types and share groups not read: {exc}", {}
        if read.share_supported != self._share_supported:
            self._share_supported = read.share_supported
            log.info(
                "%s: %s",
                key,
                "its brokers offer ShareGroupDescribe v1: share groups are described (none before Kafka 4.2 unless "
                "share.version is enabled)"
                if read.share_supported
                else "no share groups on this cluster: its brokers do not offer ShareGroupDescribe v1 (Kafka before "
                "4.1); groups are listed with their types, no share group is described",
            )
        # read.shares also holds the share groups of a broker that did not list this round: never consumer groups
        self._share_ids = frozenset(g.id for g in read.groups if g.type == "share") | {g.id for g in read.shares}
        self._other_kinds = frozenset(g.id for g in read.groups if g.type == "streams") | self._share_ids
        self._streams_listed = tuple(g for g in read.groups if g.type == "streams")
        samples = self._kinds_series.samples(
            read.groups,
            read.shares,
            base=base,
            tenant=lambda g: share_tenant(self._tenants, g),
            group_tenant=lambda gid: self._tenants.group(gid) or None,
        )
        note = "; ".join(n for n in (read.unlisted, unanswered_note(read.shares)) if n)
        return samples, note, {g.id: streams_group_info(g) for g in read.streams if not g.error}

    def _drop_admin(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None and hasattr(admin, "close"):
            admin.close()

    def close(self) -> None:
        """Stop the Admin client (its process): after the round in flight, or at once if that round hangs."""
        got = self._lock.acquire(timeout=self._budget + 10)
        try:
            self._drop_admin()
            if self._kinds_pending is not None:  # a read in flight ends within its client's request timeout
                concurrent.futures.wait([self._kinds_pending], timeout=self._budget)
            if self._kinds_pool is not None:
                self._kinds_pool.shutdown(wait=False, cancel_futures=True)
                self._kinds_pool = None
            kinds, self._kinds = self._kinds, None
            if kinds is not None:
                kinds.close()
        finally:
            if got:
                self._lock.release()

    def collect_target(self, target: Target, *, now: float) -> TargetResult:
        deadline = RoundDeadline(self._budget, self._monotonic)
        base = (("cluster", target.cluster),)
        try:
            with self._lock:  # one round at a time per cluster: the history is shared state
                if self._admin is None:
                    self._admin = self._factory(self._cluster)
                admin = self._admin
                # Cluster state first: it is what matters when a broker dies, and what the rest of the round keeps.
                state = admin.cluster(timeout=deadline.remaining())
                state = self._with_min_isr(admin, state, deadline)
                state = self._with_handler_threads(admin, state, deadline)
                threads_note = self._threads_note()
                samples = cluster_samples(state, base=base, configured=self._expected(), tenants=self._tenants)
                read = self._read_groups(admin, deadline)
                for tp, hw in read.watermarks.items():
                    self._history.add(tp, now, hw)
                kinds, kinds_missing, streams = self._read_kinds(deadline, base)
                offsets = [GroupOffsets(streams.get(g.group.group, g.group), g.committed) for g in read.offsets]
                samples += group_samples(
                    offsets, read.watermarks, self._history, now=now, base=base, tenants=self._tenants
                )
                samples = [s for s in samples if not _consumer_series_of(s, self._share_ids)] + kinds
                if kinds_missing:
                    read = replace(
                        read, cut_short=f"{read.cut_short}; {kinds_missing}" if read.cut_short else kinds_missing
                    )
        except KafkaHealthError as exc:
            log.warning("%s: %s", target.key, exc)
            return failed(target, exc, started_at=now, duration=deadline.elapsed())
        finally:
            with self._lock:
                if getattr(self._admin, "broken", False):
                    log.warning("%s: the Admin client process is gone; the next round starts a fresh one", target.key)
                    self._drop_admin()
                elif getattr(self._admin, "replace_client", False):
                    log.info(
                        "%s: a group coordinator moved or does not answer; the next round uses a fresh Admin client",
                        target.key,
                    )
                    self._drop_admin()
        result = succeeded(
            target,
            samples,
            started_at=now,
            duration=deadline.elapsed(),
            max_series=self._max_series,
            exempt=lambda capped: skipped_samples(read, capped, base),
        )
        if read.deadline_skipped:
            result = replace(result, cuts=(self._deadline_cut(read.deadline_skipped), *result.cuts))
        if state.brokers and not state.partitions and self._cluster.security.get("sasl.username"):
            # Metadata hides the topics a principal may not describe, without an error: nothing visible, not even
            # __consumer_offsets, most likely means a missing ACL.
            hint = (
                f"no topic is visible to User:{self._cluster.security['sasl.username']}: it may lack an ACL "
                f"allowing Describe on Topic * (or the cluster has no topics yet)"
            )
            read = replace(read, cut_short=f"{read.cut_short}; {hint}" if read.cut_short else hint)
        if read.cut_short:
            said = "; ".join(
                m
                for m in (
                    read.cut_short,
                    *(c.message for c in result.cuts if c.cause is CutCause.DEADLINE),
                    "cluster state exported",
                )
            )
            log.warning("%s: %s", target.key, said)  # the cap's cut is logged by the service, for every collector
            result = replace(result, message="; ".join(filter(None, (said, result.message))))
        if threads_note:  # not a warning every round: logged when it was asked and failed (_with_handler_threads)
            result = replace(result, message="; ".join(filter(None, (result.message, threads_note))))
        return result

    def _deadline_cut(self, groups: int) -> Cut:
        """The deadline's cut, saying which setting bounds the round's budget."""
        if self._budget < self._cluster.jmx.timeout_seconds:
            raise_what = (
                f"the round budget is {INTERVAL_SHARE:g} of collection.interval_seconds (below "
                f"jmx.timeout_seconds of cluster {self._cluster.name}): raise collection.interval_seconds"
            )
        else:
            raise_what = (
                f"the round budget is jmx.timeout_seconds of cluster {self._cluster.name}: raise it, up to "
                f"{INTERVAL_SHARE:g} of collection.interval_seconds"
            )
        return Cut(
            CutCause.DEADLINE,
            0,
            groups,
            f"{groups} consumer groups' lag not read within the round's {self._budget:g}s; {raise_what}",
        )


def _consumer_series_of(sample: Sample, groups: frozenset[str]) -> bool:
    """A consumer-group series of one of ``groups`` (share groups: each kind shown as what it is; streams groups are
    watched as consumer groups)."""
    return (
        bool(groups) and sample.name.startswith("kafka_consumergroup_") and dict(sample.labels).get("group") in groups
    )


def skipped_samples(read: GroupsRead, capped: Capped, base: tuple[tuple[str, str], ...]) -> list[Sample]:
    """The groups whose lag this round does not export: in all, and per cause of a cut (never cut themselves)."""
    total = read.skipped + len(capped.groups_cut)
    out = [
        Sample(
            "kafka_health_admin_skipped_groups",
            "gauge",
            "Consumer groups whose lag this round does not export: offsets not read, out of time, or cut by "
            "the series cap",
            base,
            float(total),
        )
    ]
    for cause, n in ((CutCause.DEADLINE, read.deadline_skipped), (CutCause.SERIES_CAP, len(capped.groups_cut))):
        out.append(
            Sample(
                "kafka_health_admin_groups_cut",
                "gauge",
                "Consumer groups whose lag this round does not export because a cut left them out, by "
                "cause: deadline (the round ran out of time), series_cap (collection.max_series_per_target)",
                base + (("cause", str(cause)),),
                float(n),
            )
        )
    return out
