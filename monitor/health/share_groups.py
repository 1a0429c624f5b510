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

import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime

from pydantic import BaseModel, Field

from monitor.core.config import Config
from monitor.core.errors import KafkaHealthError
from monitor.core.metric_names import M
from monitor.core.prom import PrometheusSource, prometheus_source
from monitor.health.remembered import Remembered

log = logging.getLogger(__name__)

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


class ShareGroupBoard:
    """Every share group's latest status, asked of Prometheus at most once per ``ttl`` (``Remembered``)."""

    def __init__(
        self,
        source: Callable[[Config], PrometheusSource] | None = None,
        *,
        ttl: float = TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._source = source or (lambda config: prometheus_source(config.prometheus))
        self._memo: Remembered[list[Row]] = Remembered(ttl=ttl, clock=clock)

    def rows(self, config: Config, now: datetime) -> list[Row] | None:
        return self._memo.get(None, lambda: self._ask(config, now))

    def _ask(self, config: Config, now: datetime) -> list[Row] | None:
        source = self._source(config)

        # Instant queries: a status no longer exported is marked stale by Prometheus at the next scrape, so each
        # group has its current status only; a group gone is gone from the answer.
        try:
            statuses = source.query(f"max by (cluster, group, tenant, status) ({M['sharegroup_status']}) > 0", now)
            lag = source.query(f"sum by (cluster, group) ({M['sharegroup_lag']})", now)
            members = source.query(f"max by (cluster, group) ({M['sharegroup_members']})", now)
        except KafkaHealthError as exc:
            log.warning("share groups of the tenant health answers unavailable: %s", exc)
            return None
        finally:
            source.close()

        def key(labels: dict[str, str]) -> tuple[str, str]:
            return labels.get("cluster", ""), labels.get("group", "")

        lag_of = {key(s.labels): int(s.value) for s in lag}
        members_of = {key(s.labels): int(s.value) for s in members}
        seen: dict[tuple[str, str], Row] = {}
        for s in statuses:
            k = key(s.labels)
            seen[k] = (
                s.labels.get("tenant", ""),
                ShareGroupRead(
                    cluster=k[0],
                    group=k[1],
                    status=s.labels.get("status", ""),
                    lag=lag_of.get(k),
                    members=members_of.get(k, 0),
                ),
            )
        return [seen[k] for k in sorted(seen)]


def tenant_share_groups(tenant: str, clusters: Iterable[str], rows: list[Row] | None) -> list[ShareGroupRead] | None:
    """Pure: ``tenant``'s share groups from the board's rows, on its own clusters only; None when unknown."""
    if rows is None:
        return None
    own = set(clusters)
    return [g for name, g in rows if name == tenant and g.cluster in own]
