"""Admin API collector: one round ends within the target's timeout, whatever the broker does.

A fake KafkaAdmin whose calls "take" time on a fake monotonic clock (nothing sleeps): a call that needs more than
the timeout it is given spends the whole timeout and raises TargetTimeout, as the real one does.
"""

import pytest

import collectors.admin as admin_module
from collectors.admin import AdminCollector
from collectors.catalog import TenantLookup
from collectors.types import (
    ClusterState,
    FailureReason,
    GroupInfo,
    PartitionState,
    TargetStatus,
)
from monitor.core.config import (
    BrokerTarget,
    ClusterConfig,
    JmxSettings,
    TenantConfig,
    TenantSelector,
)
from monitor.core.errors import TargetTimeout
from monitor.core.tenancy import TenantIndex

pytestmark = pytest.mark.unit

BUDGET = 10.0
CLUSTER = ClusterConfig(
    name="c1",
    bootstrap_servers="h:9092",
    jmx=JmxSettings(timeout_seconds=BUDGET),
    brokers=(BrokerTarget(id=1), BrokerTarget(id=2), BrokerTarget(id=3)),
)
TENANTS = TenantLookup(
    TenantIndex(
        [
            TenantConfig(
                name="alpha",
                selectors=(TenantSelector(cluster="c1", topic_prefixes=("alpha.",), group_prefixes=("alpha-",)),),
            )
        ]
    ),
    "c1",
)
GROUPS = [f"alpha-g{i}" for i in range(1, 6)]


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class SlowAdmin:
    """Each call costs ``cost[name]`` seconds of the fake clock, bounded by the timeout it is given. The default
    timeout is the old per-call one, so the old collector (which passed none) runs too and shows its round length."""

    def __init__(self, clock, **cost):
        self.clock = clock
        self.cost = {
            "cluster": 0.1,
            "min_insync_replicas": 0.1,
            "groups": 0.1,
            "committed": 0.1,
            "high_watermarks": 0.1,
            **cost,
        }
        self.fail_watermarks = False
        self.group_cost = {}  # group -> cost of its committed offsets (a dead coordinator: never answers)
        self.calls = []  # (call, started at, timeout given)

    def _take(self, name, timeout, group=None):
        assert timeout >= 0, (name, timeout)
        self.calls.append((name if group is None else f"{name}:{group}", self.clock.t, timeout))
        cost = self.group_cost.get(group, self.cost[name])
        self.clock.t += min(cost, timeout)
        if cost > timeout and name != "high_watermarks":
            raise TargetTimeout(f"Admin API {name}: no answer within {timeout:g}s")

    def cluster(self, *, timeout=BUDGET):
        self._take("cluster", timeout)
        # broker 3 died: its partition is offline, the other is under-replicated
        return ClusterState(
            (1, 2), 1, (PartitionState("alpha.t", 0, -1, (3,), ()), PartitionState("alpha.t", 1, 1, (1, 3), (1,)))
        )

    def min_insync_replicas(self, topics, *, timeout=BUDGET):
        self._take("min_insync_replicas", timeout)
        return {t: 1 for t in topics}

    def handler_threads(self, brokers, *, timeout=BUDGET):
        return {b: 8 for b in brokers}  # free: the rounds' timings above are those of the other calls

    def groups(self, *, timeout=BUDGET):
        self._take("groups", timeout)
        return [GroupInfo(g, "stable", 1) for g in GROUPS]

    def committed(self, groups, *, timeout=BUDGET, group_timeout=BUDGET):
        """All groups asked at once, as the real one: answers come one after the other, ``cost["committed"]`` apart;
        a group of ``group_cost`` (a dead coordinator) waits on its own, failing after ``group_timeout``; a group not
        answered within ``timeout`` is left out."""
        assert timeout >= 0 and group_timeout >= 0, (timeout, group_timeout)
        out, streamed, waited = {}, 0.0, 0.0
        for g in groups:
            self.calls.append((f"committed:{g}", self.clock.t, group_timeout))
            if g in self.group_cost:
                waited = max(waited, min(self.group_cost[g], group_timeout, timeout))
                if self.group_cost[g] > group_timeout and group_timeout <= timeout:
                    out[g] = TargetTimeout(f"Admin API group offsets: no answer within {group_timeout:g}s")
                continue
            if streamed + self.cost["committed"] > timeout:
                waited = timeout
                break
            streamed += self.cost["committed"]
            out[g] = {("alpha.t", 1): 3}
        self.clock.t += max(streamed, waited)
        return out

    def high_watermarks(self, tps, *, timeout=BUDGET):
        self._take("high_watermarks", timeout)
        if self.fail_watermarks:
            raise TargetTimeout("Admin API list offsets: no answer within 1s")
        if self.cost["high_watermarks"] > timeout:
            return {}  # the real client leaves out the partitions not answered in time
        return {tp: 8 for tp in tps}


def collector(admin, clock):
    return AdminCollector(CLUSTER, tenants=TENANTS, admin_factory=lambda c: admin, clock=clock, monotonic=clock)


def values(samples):
    return {(s.name, s.labels): s.value for s in samples}


def lagging_groups(result):
    return sorted(dict(s.labels)["group"] for s in result.samples if s.name == "kafka_consumergroup_lag")


def assert_cluster_state_exported(result):
    got = values(result.samples)
    base = (("cluster", "c1"),)
    assert got[("kafka_cluster_broker_up", base + (("broker", "3"),))] == 0
    assert got[("kafka_topic_offline_partitions", base + (("topic", "alpha.t"), ("tenant", "alpha")))] == 1
    assert got[("kafka_topic_under_replicated_partitions", base + (("topic", "alpha.t"), ("tenant", "alpha")))] == 1


def skipped(result):
    return values(result.samples)[("kafka_health_admin_skipped_groups", (("cluster", "c1"),))]


def test_slow_group_offsets_end_the_round_in_time_with_the_cluster_state_and_the_rest_counted_as_skipped():
    # A loaded coordinator: the groups' offsets answer 1.5 s apart. Waited for in full, the round would take
    # 2 + 1 + 1 + 5 x 1.5 + 0.5 = 12 s, past the target's 10 s.
    clock = FakeClock()
    admin = SlowAdmin(clock, cluster=2.0, min_insync_replicas=1.0, groups=1.0, committed=1.5, high_watermarks=0.5)
    ac = collector(admin, clock)
    r = ac.collect_target(ac.targets()[0], now=100.0)

    assert clock.t <= BUDGET and r.duration_seconds == clock.t
    assert all(start + timeout <= BUDGET + 1e-9 for _, start, timeout in admin.calls)  # each got only what was left
    assert r.status is TargetStatus.OK
    assert_cluster_state_exported(r)
    # Offsets leave a fifth of the budget to the watermarks: two groups answered (t=7), the third would at 8.5 s,
    # past 8 s; the watermarks still read, so the answered groups have their lag.
    assert admin.calls[-1][0] == "high_watermarks"
    assert lagging_groups(r) == ["alpha-g1", "alpha-g2"]
    assert skipped(r) == 3
    assert r.message.startswith(
        "round deadline of 10s reached: offsets of 2 of 5 consumer groups read, 3 groups skipped"
    )


def test_a_slow_metadata_answer_leaves_no_time_for_groups_but_the_cluster_state_is_exported():
    clock = FakeClock()
    admin = SlowAdmin(clock)
    ac = collector(admin, clock)
    ac.collect_target(ac.targets()[0], now=100.0)  # a good round: 5 groups listed
    admin.cost["cluster"] = 9.99
    admin.calls.clear()
    start = clock.t
    r = ac.collect_target(ac.targets()[0], now=115.0)

    assert clock.t - start <= BUDGET and [c for c, _, _ in admin.calls] == ["cluster"]
    assert r.status is TargetStatus.OK
    assert_cluster_state_exported(r)
    assert lagging_groups(r) == [] and skipped(r) == 5  # the groups of the last good listing
    assert "before the consumer groups were listed" in r.message


def test_watermarks_failing_keep_the_cluster_state_and_skip_the_groups_that_have_no_lag():
    clock = FakeClock()
    admin = SlowAdmin(clock)
    admin.fail_watermarks = True
    ac = collector(admin, clock)
    r = ac.collect_target(ac.targets()[0], now=100.0)

    assert r.status is TargetStatus.OK  # not a failed target: the broker-down series are exactly what is needed
    assert_cluster_state_exported(r)
    assert lagging_groups(r) == [] and skipped(r) == 5
    assert "high watermarks not read" in r.message


def test_watermarks_not_answered_in_time_skip_the_groups_and_say_it_as_the_deadline_cut():
    """The real client leaves out the partitions whose watermark did not come within its timeout (26,210 partitions
    took 3.3 s on the local stack, and got less). Their groups have no lag: counted, said and cut, not silent."""
    clock = FakeClock()
    admin = SlowAdmin(clock, high_watermarks=30.0)
    ac = collector(admin, clock)
    r = ac.collect_target(ac.targets()[0], now=100.0)

    assert r.status is TargetStatus.OK and clock.t <= BUDGET
    assert_cluster_state_exported(r)
    assert lagging_groups(r) == [] and skipped(r) == 5
    assert (
        "high watermarks of 1 of 1 partitions not read within the round deadline of 10s: 5 groups whose "
        "offsets were read skipped"
    ) in r.message
    [cut] = r.cuts
    assert str(cut.cause) == "deadline" and cut.groups == 5


def test_an_offsets_call_that_fails_whole_skips_every_group_and_says_it():
    """The Admin client's process died during the offsets (librdkafka aborted: seen with 10,000 groups' requests
    timing out on an overloaded machine): every group is skipped, and the round's message says why."""
    from monitor.core.errors import TransportError

    clock = FakeClock()
    admin = SlowAdmin(clock)

    def died(groups, *, timeout, group_timeout):
        raise TransportError("Admin API group offsets: the Admin client process died (killed by SIGABRT)")

    admin.committed = died
    ac = collector(admin, clock)
    r = ac.collect_target(ac.targets()[0], now=100.0)

    assert r.status is TargetStatus.OK
    assert_cluster_state_exported(r)
    assert lagging_groups(r) == [] and skipped(r) == 5
    assert r.message.startswith(
        "consumer group offsets not read: Admin API group offsets: the Admin client process "
        "died (killed by SIGABRT): 5 groups skipped"
    ), r.message


def test_metadata_hanging_fails_the_target_within_its_timeout():
    clock = FakeClock()
    admin = SlowAdmin(clock, cluster=60.0)
    ac = collector(admin, clock)
    r = ac.collect_target(ac.targets()[0], now=100.0)

    assert r.status is TargetStatus.FAILED and r.reason is FailureReason.TIMEOUT and r.samples == ()
    assert clock.t == BUDGET and r.duration_seconds == BUDGET


def test_a_group_whose_coordinator_is_dead_costs_a_quarter_of_the_round_then_goes_last():
    """Its offsets never come: it gets a quarter of the budget while the other groups are read beside it and have
    their lag, and the next round asks it last, so it cannot starve them."""
    clock = FakeClock()
    admin = SlowAdmin(clock)
    admin.group_cost["alpha-g1"] = 60.0
    ac = collector(admin, clock)
    r = ac.collect_target(ac.targets()[0], now=100.0)

    assert r.status is TargetStatus.OK and clock.t <= BUDGET
    first = next((c, timeout) for c, _, timeout in admin.calls if c == "committed:alpha-g1")
    assert first[1] == pytest.approx(0.25 * BUDGET)
    assert lagging_groups(r) == GROUPS[1:] and skipped(r) == 1
    # said in the round's message, not only logged: it is where a user looks for why a group has no lag
    assert r.message.startswith("1 consumer groups skipped, offsets not read (alpha-g1): "), r.message
    admin.calls.clear()
    r = ac.collect_target(ac.targets()[0], now=115.0)
    order = [c.split(":")[1] for c, _, _ in admin.calls if c.startswith("committed:")]
    assert order == GROUPS[1:] + ["alpha-g1"]
    assert lagging_groups(r) == GROUPS[1:]


def test_the_round_budget_fits_the_collection_interval():
    """A 10 s timeout with a 5 s interval: a 10 s round would be stale on arrival (collectors.exporter), so the round
    gets 0.8 x 5 s."""
    clock = FakeClock()
    admin = SlowAdmin(clock, cluster=60.0)
    ac = AdminCollector(
        CLUSTER, tenants=TENANTS, admin_factory=lambda c: admin, clock=clock, monotonic=clock, interval=5.0
    )
    r = ac.collect_target(ac.targets()[0], now=100.0)
    assert r.status is TargetStatus.FAILED and clock.t == pytest.approx(4.0)


class ManyTopicsAdmin(SlowAdmin):
    """A cluster of ``topics`` more topics, whose configs answer as librdkafka's DescribeConfigs does: all the
    topics of one call or none, ``per_topic`` seconds a topic (1,450 topics took 1.1-2.8 s under load,
    bench/admin_scale.py)."""

    def __init__(self, clock, topics, per_topic):
        super().__init__(clock)
        self.topics = topics
        self.per_topic = per_topic
        self.config_calls = []  # topics asked per call

    def cluster(self, *, timeout=BUDGET):
        state = super().cluster(timeout=timeout)
        more = tuple(PartitionState(t, 0, 1, (1,), (1,)) for t in self.topics)
        return ClusterState(state.brokers, state.controller_id, state.partitions + more)

    def min_insync_replicas(self, topics, *, timeout=BUDGET):
        topics = list(topics)
        self.config_calls.append(len(topics))
        self.cost["min_insync_replicas"] = self.per_topic * len(topics)
        return super().min_insync_replicas(topics, timeout=timeout)


def test_min_insync_replicas_of_many_topics_is_read_in_slices_and_every_round_keeps_every_groups_lag(monkeypatch):
    # Scaled down tenfold to stay fast (the production slice is 500 topics at about 2 ms): 600 topics at 20 ms take
    # 12 s in one call, past the whole round, so the code before read none and skipped every group, in the first
    # round and at every refresh.
    monkeypatch.setattr(admin_module, "MIN_ISR_TOPICS", 50, raising=False)
    clock = FakeClock()
    admin = ManyTopicsAdmin(clock, [f"big.t{i:03d}" for i in range(600)], per_topic=0.02)
    ac = collector(admin, clock)
    under_min_isr = set()
    for _ in range(13):
        r = ac.collect_target(ac.targets()[0], now=clock.t)
        assert lagging_groups(r) == GROUPS and skipped(r) == 0, r.message
        under_min_isr = {dict(s.labels)["topic"] for s in r.samples if s.name == "kafka_topic_under_min_isr_partitions"}
    assert len(under_min_isr) == 601  # every topic's config read, over 13 rounds
    assert max(admin.config_calls) <= 50
    # Five minutes on, a refresh of every topic is due: spread over the rounds again, none of them cut.
    clock.t += 300
    admin.config_calls.clear()
    for _ in range(13):
        r = ac.collect_target(ac.targets()[0], now=clock.t)
        assert lagging_groups(r) == GROUPS and skipped(r) == 0, r.message
    assert sum(admin.config_calls) == 601 and max(admin.config_calls) <= 50
