"""Series one Admin round exports at the scale of the largest shared clusters, and what the series cap keeps.

The pure conversions of collectors.admin_convert on synthetic answers (no Kafka): N consumer groups of M active
members, each with committed offsets on 6 partitions of one topic, 20 tenants owning groups and topics by prefix,
and P partitions in T topics. For each: the series produced, and under the old cap (20,000) and the default
(collection.max_series_per_target) the groups that keep their lag, the tenants left without any, and the time the
cap's choice takes (collectors.outcome.cap).

    .venv/bin/python bench/admin_series.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collectors.admin_convert import GroupOffsets, WatermarkHistory, cluster_samples, group_samples
from collectors.catalog import TenantLookup
from collectors.group_kinds import Group, ShareGroupSeries
from collectors.outcome import cap
from collectors.types import ClusterState, GroupInfo, PartitionState, Sample
from monitor.core.config import (
    DEFAULT_MAX_SERIES_PER_TARGET,
    TenantConfig,
    TenantSelector,
)
from monitor.core.tenancy import TenantIndex

OLD_CAP = 20_000
TENANTS = 20
PARTS_PER_GROUP = 6
# (groups, members per group, partitions, topics, skewed): skewed, tenant t0 owns all groups but 50 of each other
# tenant's, and its groups are listed first (the Admin API's listing order is the coordinators', not the tenants')
SCENARIOS = [
    (2_000, 0, 1_200, 200, False),
    (5_000, 0, 1_200, 200, False),
    (10_000, 0, 1_200, 200, False),  # the measured round: empty groups, 6 partitions each, 200 topics
    (10_000, 0, 1_200, 200, True),
    (10_000, 2, 1_200, 200, False),
    (10_000, 3, 1_200, 200, False),
    (0, 0, 50_000, 2_500, False),
    (0, 0, 200_000, 10_000, False),
    (10_000, 2, 200_000, 10_000, False),
    (10_000, 3, 200_000, 10_000, False),
]


def round_samples(groups: int, members: int, partitions: int, topics: int, skewed: bool) -> list[Sample]:
    lookup = TenantLookup(
        TenantIndex(
            [
                TenantConfig(
                    name=f"t{i}",
                    selectors=(TenantSelector(cluster="c1", topic_prefixes=(f"t{i}.",), group_prefixes=(f"t{i}-",)),),
                )
                for i in range(TENANTS)
            ]
        ),
        "c1",
    )
    names = [f"t{i % TENANTS}.topic{i}" for i in range(topics)]
    per_topic = partitions // topics
    state = ClusterState(
        (1, 2, 3),
        1,
        tuple(PartitionState(t, p, p % 3 + 1, (1, 2, 3), (1, 2, 3)) for t in names for p in range(per_topic)),
        {t: 2 for t in names},
    )
    offsets, watermarks = [], {}
    for g in range(groups):
        tps = [(names[g % topics], p % per_topic) for p in range(PARTS_PER_GROUP)]
        assigned = tuple((f"client-{g}-{m}", f"/10.0.{m}.1", tuple(tps[m::members])) for m in range(members))
        big = groups - 50 * (TENANTS - 1)
        tenant = (0 if g < big else 1 + (g - big) // 50) if skewed else g % TENANTS
        info = GroupInfo(
            f"t{tenant}-g{g}",
            "stable" if members else "empty",
            members,
            member_clients=tuple((c, h) for c, h, _ in assigned),
            member_assignments=assigned,
        )
        offsets.append(GroupOffsets(info, {tp: 100 for tp in tps}))
        watermarks.update({tp: 200 for tp in tps})
    base = (("cluster", "c1"),)
    # Every group's kind too (kafka_group_info, one series a group: issue 29's listing in the same round).
    kinds = ShareGroupSeries().samples(
        [Group(o.group.group, "classic", o.group.state) for o in offsets],
        [],
        base=base,
        tenant=lambda g: None,
        group_tenant=lookup.group,
    )
    return (
        cluster_samples(state, base=base, configured=(1, 2, 3), tenants=lookup)
        + group_samples(offsets, watermarks, WatermarkHistory(), now=0.0, base=base, tenants=lookup)
        + kinds
    )


def lag_kept(samples: list[Sample], kept: tuple[Sample, ...] | list[Sample]) -> tuple[int, int]:
    """(groups with a lag series, tenants owning groups of which none has one) in ``kept``."""

    def owners(series: tuple[Sample, ...] | list[Sample]) -> dict[str, str]:
        return {
            dict(x.labels)["group"]: dict(x.labels)["tenant"] for x in series if x.name == "kafka_consumergroup_lag"
        }

    everyone, left = owners(samples), owners(kept)
    return len(left), len(set(everyone.values()) - set(left.values()))


def main() -> None:
    print("* skewed: one tenant owns all groups but 50 of each of the 19 others, listed first")
    default_cap = f"default {DEFAULT_MAX_SERIES_PER_TARGET}"
    print(
        f"{'groups':>7} {'members':>7} {'partitions':>10} {'topics':>6} {'series':>8} | groups with lag (tenants "
        f"without any): {'old code, cap 20k':>17} {'this policy, 20k':>16} {default_cap:>15} | cap ms"
    )
    for groups, members, partitions, topics, skewed in SCENARIOS:
        samples = round_samples(groups, members, partitions, topics, skewed)
        old = lag_kept(samples, samples[:OLD_CAP])  # before: the first series in the round's order
        t0 = time.perf_counter()
        capped = cap(samples, OLD_CAP)
        ms = (time.perf_counter() - t0) * 1000
        new = lag_kept(samples, capped.kept)
        default = lag_kept(samples, cap(samples, DEFAULT_MAX_SERIES_PER_TARGET).kept)
        cols = [f"{g} ({t})" for g, t in (old, new, default)]
        mark = "*" if skewed else " "
        print(
            f"{groups:>6}{mark} {members:>7} {partitions:>10} {topics:>6} {len(samples):>8} | {'':>30}"
            f"{cols[0]:>17} {cols[1]:>16} {cols[2]:>15} | {ms:>6.0f}"
        )


if __name__ == "__main__":
    main()
