"""The ``streams_groups`` of a tenant's health answer: each of its Kafka Streams groups (KIP-1071,
``group.protocol=streams``) with the state, members and lag the collectors last exported. A streams group's lag goes
out as any consumer group's (``kafka_consumergroup_*``, collectors.admin, issue 29); only ``kafka_group_info``
says it is a streams group (its ``type`` label), so the group list comes from there and the members and lag are
asked only for those groups (``and on (cluster, group)``), not for every consumer group.

Three queries answer every streams group of every cluster at once, remembered for ``ttl`` seconds, as the share
groups' board (``monitor.health.share_groups``): null when Prometheus cannot answer, a group gone is gone from the
answer. ``tenant_streams_groups`` picks the asking tenant's own: its tenant label on one of its clusters.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from monitor.core.metric_names import M
from monitor.health.remembered import GroupBoard, GroupKey, tenant_rows

TTL_SECONDS = 15.0
STREAMS = f'{M["group_info"]}{{type="streams"}}'


class StreamsGroupRead(BaseModel):
    cluster: str
    group: str
    state: str = Field(description="the group's state as ListGroups last gave it, lower case (e.g. stable, empty)")
    members: int | None = Field(description="members of the group; null when its StreamsGroupDescribe failed")
    lag: int | None = Field(description="records behind over all its partitions; null where none is computed")


Row = tuple[str, StreamsGroupRead]  # (tenant, the group)


class StreamsGroupBoard(GroupBoard[StreamsGroupRead]):
    """Every streams group's latest state, members and lag, asked of Prometheus at most once per ``ttl``."""

    TTL_SECONDS = TTL_SECONDS
    WHAT = "streams groups"

    def queries(self) -> tuple[str, str, str]:
        only = f"and on (cluster, group) {STREAMS}"  # the lag and members of streams groups only
        return (
            f"max by (cluster, group, tenant, state) ({STREAMS})",
            f"sum by (cluster, group) ({M['group_lag']}) {only}",
            f"max by (cluster, group) ({M['group_members']}) {only}",
        )

    def make(self, labels: dict[str, str], key: GroupKey, lag: int | None, members: int | None) -> StreamsGroupRead:
        state = labels.get("state", "")
        return StreamsGroupRead(cluster=key[0], group=key[1], state=state, members=members, lag=lag)


def tenant_streams_groups(
    tenant: str, clusters: Iterable[str], rows: list[Row] | None
) -> list[StreamsGroupRead] | None:
    """Pure: ``tenant``'s streams groups from the board's rows, on its own clusters only; None when unknown."""
    return tenant_rows(tenant, clusters, rows)
