"""The consumer lag evaluator against Burrow's correctness table, and against sampling cadence.

Part 1 ports every case of ``TestCachingEvaluator_CheckRules`` in LinkedIn Burrow's
core/internal/evaluator/caching_test.go (master of 2025-10, cases 0-15, numbered as there): each rule function and the
final status, on our evaluator (alerts/detectors/lag.py). Burrow stamps commits in milliseconds and ``now`` in seconds;
ours are all seconds, so the commit timestamps are divided by 1000. Burrow's ``-1`` (no rewind) is our ``None``; its
``nil`` lag is our ``None``; its broker offsets are our recent high watermarks.

Part 2 runs the real detector shell on a simulated group whose commits are events at their own cadence and whose
offsets a collector reads at another: the status must follow from the commits and watermarks, not from the cadences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import pytest

from alerts.detectors import DetectorContext, lag
from alerts.detectors.lag import (
    Commit,
    LagStatus,
    burrow_status,
    commits_from_samples,
    lag_always_over,
    lag_not_decreasing,
    offsets_stalled,
    offsets_stopped,
    recently_caught_up,
    rewind_index,
    rewind_recovered,
)
from alerts.rules import load_rules
from monitor.core.config import parse_config
from monitor.core.metric_names import M
from monitor.core.prom import InstantSample, Series
from monitor.core.tenancy import TenantIndex

pytestmark = pytest.mark.unit


@dataclass(frozen=True)
class Case:
    no: int
    why: str
    commits: list[Commit]  # (timestamp s, offset, lag)
    watermarks: list[float]  # Burrow's brokerOffsets
    current_lag: float
    now: float
    allowed_lag: float
    # what each rule says on its own (Burrow asserts these too), then the status
    always_over: bool
    rewind: int | None
    stopped: bool
    stalled: bool
    not_decreasing: bool
    caught_up: bool
    status: LagStatus


def ms(*rows):
    """Burrow's rows (offset, timestamp ms, lag or None) as our commits."""
    return [Commit(t / 1000, o, lag) for o, t, lag in rows]


FIVE_GROWING_FROM_ZERO = ms(
    (1000, 100000, 0), (2000, 200000, 50), (3000, 300000, 100), (4000, 400000, 150), (5000, 500000, 200)
)
FIVE_GROWING = ms(
    (1000, 100000, 50), (2000, 200000, 100), (3000, 300000, 150), (4000, 400000, 200), (5000, 500000, 250)
)
FROZEN_LAG_GROWING = ms(
    (1000, 100000, 100), (1000, 200000, 150), (1000, 300000, 200), (1000, 400000, 250), (1000, 500000, 300)
)
REWOUND_AND_RECOVERED = ms(
    (1000, 100000, 100), (2000, 200000, 150), (3000, 300000, 200), (2000, 400000, 1250), (4000, 500000, 300)
)
CAUGHT_UP_EVERY_SECOND = ms(
    *(
        (792748079 + i, ts, 0)
        for i, ts in enumerate(
            (
                1512224618356,
                1512224619362,
                1512224620366,
                1512224621367,
                1512224622370,
                1512224623373,
                1512224624378,
                1512224625379,
                1512224626383,
                1512224627383,
                1512224628383,
                1512224629388,
                1512224630391,
                1512224631394,
                1512224632397,
            )
        )
    )
)

BURROW = [
    Case(
        0,
        "OK: the lag was zero at some commit",
        FIVE_GROWING_FROM_ZERO,
        [5200],
        200,
        600,
        0,
        False,
        None,
        False,
        False,
        True,
        False,
        LagStatus.OK,
    ),
    Case(
        1,
        "OK: 400 s since the last commit equals the 400 s the commits span, not more",
        FIVE_GROWING_FROM_ZERO,
        [5200],
        200,
        900,
        0,
        False,
        None,
        False,
        False,
        True,
        False,
        LagStatus.OK,
    ),
    Case(
        2,
        "STOP: 500 s since the last commit, though the lag was zero at the start (Burrow #290)",
        FIVE_GROWING_FROM_ZERO,
        [5200],
        200,
        1000,
        0,
        False,
        None,
        True,
        False,
        True,
        False,
        LagStatus.STOP,
    ),
    Case(
        3,
        "STOP with the lag never zero as well",
        FIVE_GROWING,
        [5250],
        250,
        1000,
        0,
        True,
        None,
        True,
        False,
        True,
        False,
        LagStatus.STOP,
    ),
    Case(
        4,
        "OK: the lag was zero once, though the offset never moves",
        ms((1000, 100000, 0), (1000, 200000, 50), (1000, 300000, 100), (1000, 400000, 150), (1000, 500000, 200)),
        [1200],
        200,
        600,
        0,
        False,
        None,
        False,
        True,
        True,
        False,
        LagStatus.OK,
    ),
    Case(
        5,
        "STALL: the offset never moves and the lag is never zero",
        FROZEN_LAG_GROWING,
        [1300],
        300,
        600,
        0,
        True,
        None,
        False,
        True,
        True,
        False,
        LagStatus.STALL,
    ),
    Case(
        6,
        "STALL when the lag stays the same",
        ms((1000, 100000, 100), (1000, 200000, 100), (1000, 300000, 100), (1000, 400000, 100), (1000, 500000, 100)),
        [1100],
        100,
        600,
        0,
        True,
        None,
        False,
        True,
        True,
        False,
        LagStatus.STALL,
    ),
    Case(
        7,
        "OK: the offsets went back, then past where they were (the rewind recovered)",
        REWOUND_AND_RECOVERED,
        [4300],
        300,
        600,
        0,
        True,
        3,
        False,
        False,
        False,
        False,
        LagStatus.OK,
    ),
    Case(
        8,
        "OK: no lag now, though the timestamps say stopped",
        FIVE_GROWING,
        [5250],
        0,
        1000,
        0,
        True,
        None,
        True,
        False,
        True,
        False,
        LagStatus.OK,
    ),
    Case(
        9,
        "STOP: lag now from new messages, the commits stopped 18 s ago and spanned 14 s (Burrow #290)",
        CAUGHT_UP_EVERY_SECOND,
        [792749024, 792749000, 792748800, 792748600, 792748500],
        931,
        1512224650,
        0,
        False,
        None,
        True,
        False,
        True,
        False,
        LagStatus.STOP,
    ),
    Case(
        10,
        "OK: would be STOP, but a recent watermark shows the group had caught up (Burrow #303)",
        CAUGHT_UP_EVERY_SECOND,
        [792748094, 792748093, 792748093, 792748093],
        1,
        1512224650,
        0,
        False,
        None,
        True,
        False,
        True,
        True,
        LagStatus.OK,
    ),
    Case(
        11,
        "OK as case 0, with commits of unknown lag between, which change nothing",
        ms(
            (1000, 100000, 0),
            (1500, 150000, None),
            (2000, 200000, 50),
            (2500, 250000, None),
            (3000, 300000, 100),
            (3500, 350000, None),
            (4000, 400000, 150),
            (4500, 450000, None),
            (5000, 500000, 200),
            (5500, 550000, None),
        ),
        [5700],
        200,
        600,
        0,
        False,
        None,
        False,
        False,
        True,
        False,
        LagStatus.OK,
    ),
    Case(
        12,
        "OK: lag now and stopped by the timestamps, but within the allowed lag",
        ms((1000, 100000, 2), (2000, 200000, 1), (2000, 300000, 1)),
        [2001],
        1,
        550,
        1,
        False,
        None,
        True,
        False,
        False,
        False,
        LagStatus.OK,
    ),
    Case(
        13,
        "STALL as case 5, with an allowed lag under every commit's lag",
        FROZEN_LAG_GROWING,
        [1300],
        300,
        600,
        99,
        True,
        None,
        False,
        True,
        True,
        False,
        LagStatus.STALL,
    ),
    Case(
        14,
        "OK as case 7, with an allowed lag",
        REWOUND_AND_RECOVERED,
        [4300],
        300,
        600,
        99,
        True,
        3,
        False,
        False,
        False,
        False,
        LagStatus.OK,
    ),
    Case(
        15,
        "REWIND: the offsets went back and have not come back to where they were",
        ms((1000, 100000, 100), (2000, 200000, 150), (3000, 300000, 200), (2000, 400000, 1250), (2500, 500000, 300)),
        [4300],
        300,
        600,
        0,
        True,
        3,
        False,
        False,
        False,
        False,
        LagStatus.REWIND,
    ),
]


def test_the_whole_burrow_table_is_ported():
    assert [c.no for c in BURROW] == list(range(16))


@pytest.mark.parametrize("case", BURROW, ids=[f"burrow{c.no}" for c in BURROW])
def test_burrow_rules_one_by_one(case):
    assert lag_always_over(case.commits, case.allowed_lag) is case.always_over
    assert rewind_index(case.commits) == case.rewind
    assert offsets_stopped(case.commits, case.now) is case.stopped
    assert offsets_stalled(case.commits) is case.stalled
    assert lag_not_decreasing(case.commits) is case.not_decreasing
    assert recently_caught_up(case.commits, case.watermarks) is case.caught_up


@pytest.mark.parametrize("case", BURROW, ids=[f"burrow{c.no}" for c in BURROW])
def test_burrow_status(case):
    status = burrow_status(
        case.commits, case.current_lag, case.now, recent_watermarks=case.watermarks, allowed_lag=case.allowed_lag
    )
    assert status is case.status, case.why


def test_rewind_recovered_is_judged_from_the_commit_before_the_rewind():
    assert rewind_recovered(REWOUND_AND_RECOVERED, 3)  # back to 4000 >= 3000
    assert not rewind_recovered(BURROW[15].commits, 3)  # 2500 < 3000


# ------------------------------------------------------------------------------------------------ cadences

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
T_NOW = NOW.timestamp()
CONFIG = parse_config("""
clusters: [{name: c1, bootstrap_servers: "localhost:9092"}]
tenants:
  - name: shop
    selectors: [{cluster: c1, topic_prefixes: [orders.], group_prefixes: [shop.]}]
""")
RULE = {r.name: r for r in load_rules(CONFIG.rules)}["KafkaConsumerGroupLag"]
KEY = {"cluster": "c1", "group": "shop.billing", "topic": "orders.a"}


@dataclass(frozen=True)
class Group:
    """One simulated group: producers write ~10 msg/s in bursts; the group commits every ``commit_every`` s the
    offset it had read ``behind`` s before (so the lag is never zero), until ``dies_at`` (then it leaves the group
    and commits nothing more), or, with ``rewind_at``, commits an offset ``rewind_by`` s back once and reads on.
    A collector reads the committed offset and the watermark every ``collect_every`` s; Prometheus answers a range
    query with the value of the last collection at or before each step."""

    commit_every: float
    collect_every: float
    behind: float = 3
    dies_at: float | None = None
    rewind_at: float | None = None
    rewind_by: float = 1800
    has_members: bool = True  # False: a group that assigns its partitions itself (Spark, Flink) has no members

    def watermark(self, t: float) -> float:
        return 10 * t + 300 * math.sin(t / 71) ** 2 + 200 * math.sin(t / 29) ** 2  # bursts: the lag rises and falls

    def last_commit(self, t: float) -> float:
        end = t if self.dies_at is None else min(t, self.dies_at)
        return math.floor(end / self.commit_every) * self.commit_every

    def committed(self, t: float) -> float:
        tc = self.last_commit(t)
        offset = self.watermark(tc - self.behind)
        if self.rewind_at is not None and self.rewind_at <= tc < self.rewind_at + self.commit_every:
            offset = self.watermark(tc - self.rewind_by)
        return offset

    def collected(self, t: float) -> float:
        return math.floor(t / self.collect_every) * self.collect_every

    def members(self, t: float) -> float:
        if not self.has_members or (self.dies_at is not None and t > self.dies_at + 45):  # session timeout
            return 0.0
        return 1.0


class GroupSource:
    def __init__(self, group: Group):
        self.g = group

    def query_range(self, expr, start, end, step):
        t0, t1 = start.timestamp(), end.timestamp()
        times = [t0 + i * step for i in range(int((t1 - t0) // step) + 1)]
        at = [self.g.collected(t) for t in times]
        if M["group_lag"] in expr:
            return [Series(KEY, tuple(times), tuple(self.g.watermark(c) - self.g.committed(c) for c in at))]
        if M["group_committed_offset"] in expr:
            return [Series(KEY, tuple(times), tuple(self.g.committed(c) for c in at))]
        if M["group_members"] in expr:
            return [
                Series({"cluster": "c1", "group": KEY["group"]}, tuple(times), tuple(self.g.members(c) for c in at))
            ]
        return []

    def query(self, expr, at):
        return [InstantSample(KEY, 5.0)] if M["group_lag_seconds"] in expr else []


def status(group: Group, now: float = T_NOW) -> str:
    ctx = DetectorContext(
        source=GroupSource(group),
        now=datetime.fromtimestamp(now, UTC),
        config=CONFIG,
        tenants=TenantIndex(CONFIG.tenants),
    )
    obs = lag.detect(RULE, ctx)
    return obs[0].labels["status"] if obs else "OK"


PHASES = [T_NOW + s for s in range(0, 600, 37)]  # now at many points of the commit cycle


@pytest.mark.parametrize("commit_every", [5, 20, 60, 180, 300, 360, 900])
@pytest.mark.parametrize("collect_every", [15, 30])
@pytest.mark.parametrize("has_members", [True, False])
def test_a_healthy_group_is_ok_whatever_its_commit_cadence(commit_every, collect_every, has_members):
    """Commits faster than the collector (5 s: every collection shows a new offset) and slower (up to 15 min: most
    collections repeat the same commit), against the 10 min window: OK at every phase. Before commits were looked
    for over more than the window, a group without members committing every 15 min read STOP in 7 of these 17
    phases."""
    group = Group(commit_every=commit_every, collect_every=collect_every, has_members=has_members)
    assert {status(group, now) for now in PHASES} == {"OK"}


@pytest.mark.parametrize("commit_every,died_ago", [(5, 1200), (60, 1200), (300, 2400)])
def test_a_group_that_dies_is_stop_whatever_its_commit_cadence(commit_every, died_ago):
    """A group that had caught up dies: STOP, whether it committed faster or slower than the collector, and not
    held OK by its earlier zero-lag commits. Like Burrow, the silence must outlast the span of its last commits: 20
    minutes for a group that committed every 5 s or every minute, 40 for one that committed every 5 minutes."""
    group = Group(commit_every=commit_every, collect_every=30, behind=0, dies_at=T_NOW - died_ago)
    assert status(group) == "STOP"


def test_a_dead_group_is_stop_by_its_members_at_once_and_by_its_commits_once_silent_for_three_cadences():
    """A minute after it died (members gone 15 s ago, after the 45 s session timeout): STOP, decided by membership.
    The same group without members (one that assigns its partitions itself) is not yet stopped; STOP once its
    silence exceeds three of its learned cadences (60 s: it committed every 5 s, seen once per 60 s step) plus a
    step. Before issue 29 both waited for the span of the last ten commits, nine minutes."""
    group = Group(commit_every=5, collect_every=15, behind=0, dies_at=T_NOW - 60)
    assert status(group) == "STOP"
    memberless = Group(commit_every=5, collect_every=15, behind=0, dies_at=T_NOW - 60, has_members=False)
    assert status(memberless) == "OK"
    assert status(memberless, T_NOW + 300) == "STOP"


def test_a_rewind_is_rewind_until_the_group_is_back_where_it_was_then_ok():
    """The group commits an offset 5 min back once (a reset or a rebalance that re-commits old work), then reads on
    from there at 3x the production rate. REWIND while below its pre-rewind offset, OK once past it (about 150 s
    later), though the rewind is still among the commits judged. Before, the group stayed REWIND until the rewind
    left the window."""

    class Rewinding(Group):
        def committed(self, t: float) -> float:
            tc, rw = self.last_commit(t), self.rewind_at
            if tc < rw:
                return self.watermark(tc - self.behind)
            back = self.watermark(rw - self.rewind_by)  # where it went, then 30 msg/s
            return min(back + 30 * (tc - rw), self.watermark(tc - self.behind))

    group = Rewinding(commit_every=20, collect_every=15, rewind_at=T_NOW - 300, rewind_by=300)
    assert status(group, T_NOW - 240) == "REWIND"  # 60 s after the rewind: 1200 of 3000 messages read again
    assert status(group) == "OK"  # 300 s after: past the old offset


def test_a_short_window_looks_back_over_its_own_span_only():
    """The e2e case: a group that caught up 30 min ago and sat idle (no production) commits once now and leaves
    while production resumes. On a 1 min window (lookback 6 min by default) that single commit is STOP within a
    minute; the 10 min rule, looking back an hour, weighs the commits of 30 min ago as Burrow would and waits."""

    class Resumed(Group):
        def watermark(self, t: float) -> float:
            return 1000.0 if t < T_NOW - 120 else 1000.0 + 40 * (t - (T_NOW - 120))

        def committed(self, t: float) -> float:
            if t < T_NOW - 1800:
                return 500.0
            return 1000.0 if t < T_NOW - 60 else self.watermark(T_NOW - 60)

        def members(self, t: float) -> float:
            return 0.0

    group = Resumed(commit_every=60, collect_every=15)
    short = replace(RULE, params={**RULE.params, "window": "1m"})
    ctx = DetectorContext(source=GroupSource(group), now=NOW, config=CONFIG, tenants=TenantIndex(CONFIG.tenants))
    [obs] = lag.detect(short, ctx)
    assert obs.labels["status"] == "STOP"
    assert status(group) == "OK"


def test_an_offset_already_there_when_the_range_starts_is_no_commit_of_the_window():
    times, offsets, lags = [0, 60, 120, 180], [7, 7, 9, 9], [1, 2, 1, 3]
    assert [c.offset for c in commits_from_samples(times, offsets, lags, since=0)] == [9]
    # nothing committed after it: it is all there is, silent since the range start
    assert [c.timestamp for c in commits_from_samples(times, [7] * 4, lags, since=0)] == [0]
    # a series that starts inside the range starts with the group's first commit
    assert [c.offset for c in commits_from_samples(times, offsets, lags, since=-60)] == [7, 9]
