"""The ``share_groups`` of a tenant's health answer: each of its share groups (KIP-932) with the status and records
waiting the collectors last exported (``kafka_sharegroup_status``, ``kafka_sharegroup_lag``,
``kafka_sharegroup_members``; collectors.group_kinds, issue 29).

Three queries answer every share group of every cluster at once, remembered for ``ttl`` seconds (one evaluation
interval by default: the health answer is recomputed after each evaluation, so a share group's status in it is at
most one interval older than the answer). When Prometheus cannot answer, ``share_groups`` is null (the rest of the
answer does not depend on it) and the failure is remembered as long as an answer would be. The board holds every
tenant's rows; ``tenant_share_groups`` picks the asking tenant's own: its tenant label on one of its clusters.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from monitor.core.metric_names import M
from monitor.health.remembered import GroupBoard, GroupKey, tenant_rows

TTL_SECONDS = 15.0


class ShareGroupRead(BaseModel):
    cluster: str
    group: str
    status: str = Field(
        description=(
            "consuming, stalled (members, records waiting, no start offset moved since the collector's last round), "
            "idle (nothing waiting) or no_members (records waiting, no member)"
        )
    )
    lag: int | None = Field(description="records waiting (the broker's lag, KIP-1226); null where not computed")
    members: int


Row = tuple[str, ShareGroupRead]  # (tenant, the group)


class ShareGroupBoard(GroupBoard[ShareGroupRead]):
    """Every share group's latest status, asked of Prometheus at most once per ``ttl`` (``Remembered``)."""

    TTL_SECONDS = TTL_SECONDS
    WHAT = "share groups"

    def queries(self) -> tuple[str, str, str]:
        # Instant queries: a status no longer exported is marked stale by Prometheus at the next scrape, so each
        # group has its current status only; a group gone is gone from the answer.
        return (
            f"max by (cluster, group, tenant, status) ({M['sharegroup_status']}) > 0",
            f"sum by (cluster, group) ({M['sharegroup_lag']})",
            f"max by (cluster, group) ({M['sharegroup_members']})",
        )

    def make(self, labels: dict[str, str], key: GroupKey, lag: int | None, members: int | None) -> ShareGroupRead:
        return ShareGroupRead(
            cluster=key[0], group=key[1], status=labels.get("status", ""), lag=lag, members=members or 0
        )


def tenant_share_groups(tenant: str, clusters: Iterable[str], rows: list[Row] | None) -> list[ShareGroupRead] | None:
    """Pure: ``tenant``'s share groups from the board's rows, on its own clusters only; None when unknown."""
    return tenant_rows(tenant, clusters, rows)
