"""The consumer-lag detector's numbered case table, on what ships: the built-in ``KafkaConsumerGroupLag`` rule
(window 10m, intervals 10, members_gone_for 30s), collection and scrape every 15 s, the engine every 15 s.

Each case simulates one group's truth second by second (producers' high watermark, the consumer's position, its
commits, the members the coordinator lists), a collector that reads it every 15 s, a Prometheus that scrapes the
collector every 15 s a few seconds later (range queries answer the latest sample at or before each step, instant
``max_over_time`` the samples of its range), and evaluates the real detector shell at every engine cycle. Every case
states the figure it must meet; each runs at several phases of collection, scrape and evaluation against the fault.

    no  case                                      must
    1   crash under load (5 s auto-commit)        STOP within 120 s of the crash, decided by members; OK before
    2   crash of an idle group                    OK while nothing waits; STOP within 120 s of the first record
    3   checkpointing committer, 1 min            OK at every evaluation for 2 h, with or without members
    4   checkpointing committer, 5 min            same
    5   checkpointing committer, 11 min           same (the landed detector read ERR, critical, at every one)
    6   checkpointer that dies (11 min)           STOP within 3 cadences + 3 min of its last checkpoint
    7   live consumer stalled on a poison record  never OK from 5 min after the stall, STALL (never STOP) from 6 min
    8   rewind (offsets reset 30 min back)        REWIND within 2 min; never STOP/STALL; never critical once past
                                                  its old offset
    9   sparse traffic (a record every 4-7 min)   OK at every evaluation for 2 h
    10  a group that merely slows (80 % of rate)  never critical; WARN within 15 min
    11  a quick restart (empty for 10 s)          never STOP
    12  a batch consumer, members_gone_for 2h     no STOP by members between runs (the per-group override)

The landed detector (before issue 29) fails cases 1, 2, 5, 6, 7, 8, 10 and 12 of this table (case 1: STOP about
ten minutes after the crash; case 7: WARN then ERR, never STALL; cases 8 and 10: ERR, critical, while behind).
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import pytest

from alerts.attribution import Attributor, redact_evidence
from alerts.detectors import DetectorContext, lag
from alerts.rules import load_rules
from monitor.core.config import parse_config
from monitor.core.metric_names import M
from monitor.core.prom import InstantSample, Series
from monitor.core.tenancy import TenantIndex

pytestmark = pytest.mark.unit

CONFIG = parse_config("""
clusters: [{name: c1, bootstrap_servers: "localhost:9092"}]
tenants:
  - name: shop
    selectors: [{cluster: c1, topic_prefixes: [orders.], group_prefixes: [shop.]}]
""")
RULE = {r.name: r for r in load_rules(CONFIG.rules)}["KafkaConsumerGroupLag"]
KEY = {"cluster": "c1", "group": "shop.billing", "topic": "orders.a"}
T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC).timestamp()  # the fault, unless a case says otherwise
COLLECT = SCRAPE = EVALUATE = 15.0  # the shipped defaults: collection.interval_seconds, scrape_interval, rules'
PHASES = [(0.0, 1.0, 0.0), (7.0, 14.0, 11.0), (13.0, 4.0, 5.0)]  # (collector, scrape delay, engine) offsets


def burst_watermark(t: float) -> float:
    """~100 records/s in bursts (the lag rises and falls); increasing everywhere."""
    return 100 * (t - T0 + 7200) + 300 * math.sin(t / 71) ** 2 + 200 * math.sin(t / 29) ** 2


@dataclass
class Group:
    """One group's truth. Subclasses change what the case changes."""

    commit_every: float = 5.0  # auto-commit
    commit_phase: float = 0.0
    members_always: float | None = 1.0  # None: members follow ``members()``; 0: a group without members (Flink)

    def watermark(self, t: float) -> float:
        return burst_watermark(t)

    def position(self, t: float) -> float:  # the next offset the consumer reads
        return self.watermark(t - 0.5)

    def last_commit_time(self, t: float) -> float | None:
        return math.floor((t - self.commit_phase) / self.commit_every) * self.commit_every + self.commit_phase

    def committed(self, t: float) -> float:
        tc = self.last_commit_time(t)
        return self.position(tc) if tc is not None else 0.0

    def members(self, t: float) -> float:
        return self.members_always if self.members_always is not None else 1.0

    def lag(self, t: float) -> float:
        return max(0.0, self.watermark(t) - self.committed(t))

    def lag_seconds(self, t: float) -> float:
        """Age of the oldest unconsumed record: when the watermark passed the committed offset."""
        c = self.committed(t)
        if c >= self.watermark(t):
            return 0.0
        lo, hi = t - 86400, t
        for _ in range(50):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if self.watermark(mid) <= c else (lo, mid)
        return t - hi


class Simulated:
    """Prometheus over a collector over the group: sample k has timestamp ``off + 15 k`` and holds what the
    collector read at ``off + 15 k - delay``."""

    def __init__(self, group: Group, collector_phase: float, scrape_delay: float):
        self.g, self.delay = group, scrape_delay
        self.off = collector_phase + scrape_delay
        self.queries: list[str] = []

    def _sample_at(self, t: float) -> float | None:  # timestamp of the latest sample at or before t
        return math.floor((t - self.off) / SCRAPE) * SCRAPE + self.off

    def _value(self, name: str, s: float) -> float:
        read = s - self.delay
        return {
            "lag": self.g.lag,
            "committed": self.g.committed,
            "members": self.g.members,
            "lag_seconds": self.g.lag_seconds,
        }[name](read)

    def _name(self, expr: str) -> str | None:
        if M["group_member_lag"] in expr or M["group_member_partitions"] in expr or M["topic_messages_in"] in expr:
            return None
        if M["group_lag_seconds"] in expr:
            return "lag_seconds"
        if M["group_lag"] in expr:
            return "lag"
        if M["group_committed_offset"] in expr:
            return "committed"
        if M["group_members"] in expr:
            return "members"
        raise AssertionError(f"unexpected query {expr}")

    def query_range(self, expr, start, end, step):
        self.queries.append(expr)
        name = self._name(expr)
        if name is None:
            return []
        t0, t1 = start.timestamp(), end.timestamp()
        times = tuple(t0 + i * step for i in range(int((t1 - t0) // step) + 1))
        labels = KEY if name != "members" else {"cluster": "c1", "group": KEY["group"]}
        return [Series(labels, times, tuple(self._value(name, self._sample_at(t)) for t in times))]

    def query(self, expr, at):
        self.queries.append(expr)
        name = self._name(expr)
        if name is None:
            return []
        now = at.timestamp()
        if name == "members":
            over = float(re.search(r"\[(\d+)s\]", expr).group(1))
            last = self._sample_at(now)
            samples = [last - k * SCRAPE for k in range(int(over // SCRAPE) + 1) if last - k * SCRAPE > now - over]
            return (
                [InstantSample({"cluster": "c1", "group": KEY["group"]}, max(self._value(name, s) for s in samples))]
                if samples
                else []
            )
        return [InstantSample(KEY, self._value(name, self._sample_at(now)))]


@dataclass
class Run:
    statuses: list[tuple[float, str, str, str]] = field(default_factory=list)  # (t, status, severity, decided_by)

    def at_or_after(self, t: float) -> list[tuple[float, str, str, str]]:
        return [s for s in self.statuses if s[0] >= t]

    def first(self, status: str, after: float = -math.inf) -> float | None:
        return next((t for t, s, _, _ in self.statuses if s == status and t >= after), None)


def run(group: Group, start: float, end: float, phase: tuple[float, float, float], rule=RULE) -> Run:
    collector, delay, engine = phase
    src = Simulated(group, T0 + collector, delay)
    out = Run()
    t = start + engine
    while t <= end:
        ctx = DetectorContext(
            source=src, now=datetime.fromtimestamp(t, UTC), config=CONFIG, tenants=TenantIndex(CONFIG.tenants)
        )
        obs = lag.detect(rule, ctx)
        assert len(obs) <= 1
        out.statuses.append(
            (t, obs[0].labels["status"], obs[0].severity.value, obs[0].evidence["decided_by"])
            if obs
            else (t, "OK", "", "")
        )
        t += EVALUATE
    return out


# ------------------------------------------------------------------------------------------------ the cases


@dataclass
class Crashed(Group):
    """Commits every 5 s until it crashes at ``crash``; the coordinator drops it a session timeout (45 s) later."""

    crash: float = T0
    session_timeout: float = 45.0

    def last_commit_time(self, t: float) -> float | None:
        return super().last_commit_time(min(t, self.crash))

    def members(self, t: float) -> float:
        return 1.0 if t < self.crash + self.session_timeout else 0.0


@pytest.mark.parametrize("phase", PHASES)
def test_1_crash_under_load_is_stop_within_120_s(phase):
    run_ = run(Crashed(), T0 - 1200, T0 + 600, phase)
    assert {s for t, s, _, _ in run_.statuses if t < T0} == {"OK"}
    stop = run_.first("STOP", T0)
    assert stop is not None and stop - T0 <= 120, stop and stop - T0
    assert {(s, d) for t, s, _, d in run_.at_or_after(stop)} == {("STOP", "members")}


@dataclass
class IdleThenResumed(Crashed):
    """Caught up on an idle topic; crashes 20 min before producers resume at ``resume`` (100 records/s)."""

    resume: float = T0 + 1200

    def watermark(self, t: float) -> float:
        return 5000.0 + max(0.0, t - self.resume) * 100


@pytest.mark.parametrize("phase", PHASES)
def test_2_crash_of_an_idle_group_pages_only_once_records_wait(phase):
    group = IdleThenResumed()
    run_ = run(group, T0 - 600, group.resume + 300, phase)
    assert {s for t, s, _, _ in run_.statuses if t < group.resume} == {"OK"}
    stop = run_.first("STOP", group.resume)
    assert stop is not None and stop - group.resume <= 120, stop and stop - group.resume
    assert {s for _, s, _, _ in run_.at_or_after(stop)} == {"STOP"}


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("members", [0.0, 1.0], ids=["no-members", "member"])
@pytest.mark.parametrize("no,every", [(3, 60), (4, 300), (5, 660)], ids=["1min", "5min", "11min"])
def test_3_to_5_a_checkpointing_committer_that_keeps_up_is_ok(no, every, members, phase):
    """Flink and Spark commit the checkpoint's position (no members: they assign partitions themselves); a plain
    consumer committing manually on the same cadence stays in the group. Keeping up, each is OK for two hours."""
    group = Group(commit_every=every, commit_phase=17.0, members_always=members)
    run_ = run(group, T0, T0 + 7200, phase)
    assert {s for _, s, _, _ in run_.statuses} == {"OK"}, [s for s in run_.statuses if s[1] != "OK"][:3]


@dataclass
class CheckpointerDies(Group):
    dies: float = T0

    def last_commit_time(self, t: float) -> float | None:
        return super().last_commit_time(min(t, self.dies))


@pytest.mark.parametrize("phase", PHASES)
def test_6_a_checkpointer_that_dies_is_stop_within_three_cadences(phase):
    group = CheckpointerDies(commit_every=660, commit_phase=17.0, members_always=0.0)
    last = group.last_commit_time(group.dies)
    run_ = run(group, T0 - 1800, last + 3 * 660 + 600, phase)
    assert {s for t, s, _, _ in run_.statuses if t < last + 660} == {"OK"}  # until its next checkpoint is due
    assert {sev for t, _, sev, _ in run_.statuses if t < last + 2 * 660} <= {"", "warning"}  # overdue: WARN
    stop = run_.first("STOP", T0)
    assert stop is not None and stop - last <= 3 * 660 + 180, stop and stop - last
    assert {(s, d) for _, s, _, d in run_.at_or_after(stop)} == {("STOP", "commits")}


@dataclass
class Poisoned(Group):
    """Stays in the group, but its position stops at ``stuck`` (it retries a record it cannot process)."""

    stuck: float = T0

    def position(self, t: float) -> float:
        return super().position(min(t, self.stuck))


@pytest.mark.parametrize("phase", PHASES)
def test_7_a_live_consumer_stalled_on_a_poison_record_is_stall(phase):
    run_ = run(Poisoned(), T0 - 1200, T0 + 1800, phase)
    assert {s for t, s, _, _ in run_.statuses if t < T0} == {"OK"}
    assert "OK" not in {s for _, s, _, _ in run_.at_or_after(T0 + 300)}
    assert {(s, d) for _, s, _, d in run_.at_or_after(T0 + 360)} == {("STALL", "commits+members")}


@dataclass
class Rewound(Group):
    """At ``at`` its offsets are reset 30 min back; it reads on at 300 records/s until it has caught up."""

    at: float = T0

    def position(self, t: float) -> float:
        if t < self.at:
            return super().position(t)
        return min(self.watermark(self.at - 1800) + 300 * (t - self.at), super().position(t))


@pytest.mark.parametrize("phase", PHASES)
def test_8_a_rewind_is_rewind_then_never_critical_once_past_its_old_offset(phase):
    group = Rewound()
    run_ = run(group, T0 - 1200, T0 + 1800, phase)
    rewind = run_.first("REWIND", T0)
    assert rewind is not None and rewind - T0 <= 120
    assert not {s for _, s, _, _ in run_.statuses} & {"STOP", "STALL"}
    back = T0 + (group.watermark(T0) - group.watermark(T0 - 1800)) / 300  # past the offset it had
    assert {sev for t, _, sev, _ in run_.statuses if t > back + 60} <= {"", "warning"}


@dataclass
class Sparse(Group):
    """A record every 4 to 7 minutes, read within a second; auto-commit every 5 s."""

    arrivals: list[float] = field(
        default_factory=lambda: [T0 - 7200 + 240 * i + 180 * ((i * 7) % 5) / 4 for i in range(120)]
    )

    def watermark(self, t: float) -> float:
        return float(bisect.bisect_right(self.arrivals, t))

    def position(self, t: float) -> float:
        return self.watermark(t - 1)


@pytest.mark.parametrize("phase", PHASES)
def test_9_sparse_traffic_is_ok(phase):
    run_ = run(Sparse(), T0, T0 + 7200, phase)
    assert {s for _, s, _, _ in run_.statuses} == {"OK"}, [s for s in run_.statuses if s[1] != "OK"][:3]


@dataclass
class Slowing(Group):
    """From ``at`` it reads at 80 % of the producers' rate (commits every 5 s, stays in the group)."""

    at: float = T0

    def position(self, t: float) -> float:
        if t < self.at:
            return super().position(t)
        return self.watermark(self.at) + 0.8 * (self.watermark(t) - self.watermark(self.at))


@pytest.mark.parametrize("phase", PHASES)
def test_10_a_group_that_merely_slows_is_warn_never_critical(phase):
    run_ = run(Slowing(), T0 - 600, T0 + 5400, phase)
    assert {sev for _, _, sev, _ in run_.statuses} <= {"", "warning"}
    warn = run_.first("WARN", T0)
    assert warn is not None and warn - T0 <= 900


@dataclass
class Restarted(Group):
    """A single-member group restarts at ``at``: it leaves (graceful close) and is back 10 s later."""

    at: float = T0
    gap: float = 10.0

    def last_commit_time(self, t: float) -> float | None:
        tc = super().last_commit_time(t)
        return min(tc, self.at) if self.at <= tc < self.at + self.gap else tc

    def members(self, t: float) -> float:
        return 0.0 if self.at <= t < self.at + self.gap else 1.0


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("at", [T0, T0 + 3.0, T0 + 8.0])
def test_11_a_quick_restart_is_no_stop(at, phase):
    run_ = run(Restarted(at=at), T0 - 600, T0 + 600, phase)
    assert {s for _, s, _, _ in run_.statuses} == {"OK"}


@dataclass
class Batch(Group):
    """Runs for 5 minutes every 30 minutes, reads everything, commits and leaves; producers never stop."""

    def _running(self, t: float) -> bool:
        return (t - T0) % 1800 < 300

    def position(self, t: float) -> float:
        started = t - (t - T0) % 1800
        return self.watermark(t - 0.5) if self._running(t) else self.watermark(started + 299.5)

    def last_commit_time(self, t: float) -> float | None:
        return super().last_commit_time(t)

    def members(self, t: float) -> float:
        return 1.0 if self._running(t) else 0.0


def test_12_a_batch_consumer_is_told_apart_by_its_override():
    """Between runs it has no members while records wait: the shipped rule calls that STOP (a crash looks the same);
    ``groups: [{group_prefix: shop.billing, members_gone_for: 2h, commit_interval: 30m}]`` says it is expected."""
    group = Batch()
    assert run(group, T0 + 3600, T0 + 7200, PHASES[0]).first("STOP") is not None
    override = replace(
        RULE,
        params={
            **RULE.params,
            "groups": [{"group_prefix": "shop.billing", "members_gone_for": "2h", "commit_interval": "30m"}],
        },
    )
    run_ = run(group, T0 + 3600, T0 + 7200, PHASES[0], rule=override)
    assert {s for _, s, _, _ in run_.statuses} <= {"OK", "WARN", "ERR"}, run_.statuses


def test_12_an_override_matches_by_tenant_too_and_unknown_keys_are_refused():
    tenant_wide = {**RULE.params, "groups": [{"tenant": "shop", "commit_interval": "20m"}]}
    assert lag.policy_for(tenant_wide, group="shop.x", tenant="shop").commit_interval == 1200
    assert lag.policy_for(tenant_wide, group="other", tenant=None).commit_interval is None
    with pytest.raises(ValueError, match="unknown keys"):
        lag.policy_for({"groups": [{"group": "x"}]}, group="x", tenant=None)


def test_the_override_is_a_config_rule_param():
    config = parse_config("""
clusters: [{name: c1, bootstrap_servers: "localhost:9092"}]
rules:
  overrides:
    KafkaConsumerGroupLag: {params: {groups: [{group_prefix: etl., commit_interval: 15m}]}}
""")
    rule = {r.name: r for r in load_rules(config.rules)}["KafkaConsumerGroupLag"]
    assert rule.params["groups"] == [{"group_prefix": "etl.", "commit_interval": "15m"}]
    assert rule.params["window"] == "10m"


def test_stop_evidence_says_what_decided_and_which_member_lags():
    """Case 1's STOP with the collector's per-member series: the member that lags is named in the evidence."""

    class WithMembers(Simulated):
        def query(self, expr, at):
            if M["group_member_lag"] in expr or M["group_member_partitions"] in expr:
                labels = {**KEY, "client_id": "billing-1", "client_host": "10.0.0.7"}
                return [InstantSample(labels, 3.0 if M["group_member_partitions"] in expr else 4200.0)]
            return super().query(expr, at)

    src = WithMembers(Crashed(), T0, 1.0)
    ctx = DetectorContext(
        source=src, now=datetime.fromtimestamp(T0 + 110, UTC), config=CONFIG, tenants=TenantIndex(CONFIG.tenants)
    )
    [obs] = lag.detect(RULE, ctx)
    ev = obs.evidence
    assert obs.labels["status"] == "STOP" and ev["decided_by"] == "members" and obs.severity.value == "critical"
    assert ev["active_members"] == 0 and ev["members_seen_in_lookback"] is True
    assert ev["commit_cadence_seconds"] == 60 and ev["cadence_from"] == "learned"
    assert ev["lagging_members"] == [
        {
            "client_id": "billing-1",
            "client_host": "10.0.0.7",
            "group": "shop.billing",
            "lag_messages": 4200.0,
            "partitions": 3,
        }
    ]
    # the group's tenant sees its member in its copy, though no selector of its names the client id
    owners = Attributor(CONFIG, TenantIndex(CONFIG.tenants)).owners_of("c1", "shop", subject={**KEY, "tenant": "shop"})
    assert redact_evidence(ev, "shop", owners)["lagging_members"] == ev["lagging_members"]


def test_a_wrong_groups_entry_is_a_config_error_at_load():
    from monitor.core.errors import ConfigError

    config = parse_config("""
clusters: [{name: c1, bootstrap_servers: "localhost:9092"}]
rules:
  overrides:
    KafkaConsumerGroupLag: {params: {groups: [{group: etl., commit_interval: soon}]}}
""")
    with pytest.raises(ConfigError) as err:
        load_rules(config.rules)
    text = str(err.value)
    assert "unknown keys ['group']" in text and "not a duration: 'soon'" in text
