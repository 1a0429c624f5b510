"""The series cap's policy (collectors.outcome.cap): what it cuts first, and that a tenant keeps its groups' lag.

A round of 27 series: 3 of the target's own (topics), and 4 groups of 6 series each: 2 of per-member detail, 2 of
per-partition detail, 2 of the group itself (its lag and state). Tenant A owns a1 and a2, tenant B owns b1, no
tenant owns u1. The keep order is a1, b1 (each tenant's first group), a2 (A's second), u1 (no tenant): cut from
its end.
"""

import random

import pytest

from collectors.outcome import cap, cap_message, group_keep_order, succeeded
from collectors.types import CutCause, Sample, Target

pytestmark = pytest.mark.unit

BASE = (("cluster", "c1"),)
GROUPS = (("A", "a1"), ("A", "a2"), ("B", "b1"), ("", "u1"))
MEMBER = ("kafka_consumergroup_member_lag", "kafka_consumergroup_member_partitions")
PARTITION = ("kafka_consumergroup_partition_lag_max", "kafka_consumergroup_partitions")
CORE = ("kafka_consumergroup_lag", "kafka_consumergroup_state")


def own(i: int) -> Sample:
    return Sample("kafka_topic_partitions", "gauge", "h", BASE + (("topic", f"t{i}"), ("tenant", "")), 1.0)


def group_series(tenant: str, group: str) -> list[Sample]:
    labels = BASE + (("group", group), ("topic", "t0"), ("tenant", tenant))
    return [Sample(name, "gauge", "h", labels, 1.0) for name in (*CORE, *PARTITION, *MEMBER)]


ROUND = [own(i) for i in range(3)] + [s for t, g in GROUPS for s in group_series(t, g)]


def what_is_left(kept) -> dict[str, set[str]]:
    """group -> which of its levels are left: member, partition, core."""
    left: dict[str, set[str]] = {}
    for s in kept:
        labels = dict(s.labels)
        if "group" in labels:
            level = "member" if s.name in MEMBER else "partition" if s.name in PARTITION else "core"
            left.setdefault(labels["group"], set()).add(level)
    return left


ALL = {"member", "partition", "core"}
NO_MEMBER = {"partition", "core"}
CORE_ONLY = {"core"}

# (case, max_series, what each group keeps, groups whose lag is cut, tenants left without lag, own series cut)
CASES = [
    (1, 27, {"a1": ALL, "a2": ALL, "b1": ALL, "u1": ALL}, (), (), 0),  # fits: nothing cut
    (2, 26, {"a1": ALL, "a2": ALL, "b1": ALL, "u1": NO_MEMBER}, (), (), 0),  # member detail first, u1's first
    (3, 21, {"a1": ALL, "a2": NO_MEMBER, "b1": NO_MEMBER, "u1": NO_MEMBER}, (), (), 0),  # then A's 2nd, then B's
    (4, 19, {"a1": NO_MEMBER, "a2": NO_MEMBER, "b1": NO_MEMBER, "u1": NO_MEMBER}, (), (), 0),
    (5, 17, {"a1": NO_MEMBER, "a2": NO_MEMBER, "b1": NO_MEMBER, "u1": CORE_ONLY}, (), (), 0),  # then partitions
    (6, 11, {"a1": CORE_ONLY, "a2": CORE_ONLY, "b1": CORE_ONLY, "u1": CORE_ONLY}, (), (), 0),  # every lag kept
    (7, 10, {"a1": CORE_ONLY, "a2": CORE_ONLY, "b1": CORE_ONLY}, (("", "u1"),), (), 0),  # a group goes whole
    (8, 7, {"a1": CORE_ONLY, "b1": CORE_ONLY}, (("A", "a2"), ("", "u1")), (), 0),  # each tenant keeps one group
    (9, 6, {"a1": CORE_ONLY}, (("B", "b1"), ("A", "a2"), ("", "u1")), ("B",), 0),  # one per tenant no longer fits
    (10, 3, {}, (("A", "a1"), ("B", "b1"), ("A", "a2"), ("", "u1")), ("A", "B"), 0),
    (11, 2, {}, (("A", "a1"), ("B", "b1"), ("A", "a2"), ("", "u1")), ("A", "B"), 1),  # own series last, from the end
]


@pytest.mark.parametrize("case,max_series,left,groups_cut,tenants_cut,own_cut", CASES, ids=[str(c[0]) for c in CASES])
def test_cap_cuts_detail_first_then_whole_groups_a_tenants_only_group_last(
    case, max_series, left, groups_cut, tenants_cut, own_cut
):
    got = cap(ROUND, max_series)
    assert len(got.kept) <= max_series
    assert what_is_left(got.kept) == left
    assert got.groups_cut == groups_cut
    assert got.tenants_cut == tenants_cut
    assert got.own_cut == own_cut
    assert got.dropped == len(ROUND) - len(got.kept)
    kept_own = [s for s in got.kept if s.name == "kafka_topic_partitions"]
    assert kept_own == [own(i) for i in range(3 - own_cut)]  # the target's own series: cut from the end only


def test_what_groups_lose_does_not_depend_on_the_order_of_the_series():
    shuffled = list(ROUND)
    random.Random(7).shuffle(shuffled)
    for _, max_series, *_, own_cut in CASES:
        if not own_cut:  # the target's own series are cut from the end, as the collector ordered them
            assert set(cap(shuffled, max_series).kept) == set(cap(ROUND, max_series).kept)


def test_keep_order_is_round_robin_over_tenants_by_name_and_unowned_groups_last():
    groups = [("B", "b2"), ("", "x"), ("A", "a3"), ("B", "b1"), ("A", "a1"), ("A", "a2"), ("C", "c1")]
    assert group_keep_order(groups) == [
        ("A", "a1"),
        ("B", "b1"),
        ("C", "c1"),
        ("A", "a2"),
        ("B", "b2"),
        ("A", "a3"),
        ("", "x"),
    ]


def test_the_message_says_what_was_cut_and_the_figure_to_raise_the_cap_to():
    msg = cap_message(cap(ROUND, 6), 6)
    assert msg == (
        "series cap reached: 27 series, collection.max_series_per_target is 6: 22 dropped (per-member "
        "detail of 4 groups, per-partition detail of 4 groups, all series, lag too, of 3 groups); tenants "
        "left without any group's lag: B; raise collection.max_series_per_target to at least 27"
    )


def test_a_round_the_cap_cuts_carries_its_cut_and_message():
    result = succeeded(Target("c1", "admin", "admin"), ROUND, started_at=0.0, duration=1.0, max_series=10)
    [cut] = result.cuts
    assert cut.cause is CutCause.SERIES_CAP and cut.series == 18 and cut.groups == 1
    assert result.series_dropped == 18 and result.message == cut.message and "at least 27" in cut.message
    untouched = succeeded(Target("c1", "admin", "admin"), ROUND, started_at=0.0, duration=1.0, max_series=27)
    assert untouched.cuts == () and untouched.message == "" and untouched.series_dropped == 0


def test_a_groups_kind_goes_with_the_group_not_with_the_targets_own_series():
    # Each group's kafka_group_info (issue 29's listing) is one of the group's series: a cut that takes a group
    # whole takes it too, and it does not crowd out the lag of other groups as the target's own would.
    def info(tenant: str, group: str) -> Sample:
        labels = BASE + (("group", group), ("type", "classic"), ("state", "stable"), ("tenant", tenant))
        return Sample("kafka_group_info", "gauge", "h", labels, 1.0)

    round_ = ROUND + [info(t, g) for t, g in GROUPS]  # 31 series
    c = cap(round_, 12)  # the 3 own series and 3 groups' lag, state and kind
    assert c.groups_cut == (("", "u1"),)
    assert {dict(s.labels).get("group") for s in c.kept} == {None, "a1", "a2", "b1"}
    assert sum(s.name == "kafka_group_info" for s in c.kept) == 3
