"""The ``slo`` of a tenant's health answer: its objective, the SLO window, its availability over the window and the
error budget left (the maths and the query are ``alerts.slo``'s, the one definition).

One query answers every (cluster, tenant) at once: ``alerts.slo.availability_query`` over ``slo.window_days``,
from raw series (no rule file needed), remembered for ``ttl`` seconds, so health misses, which come every
evaluation cycle for every tenant, cost Prometheus one query a minute at most. A tenant on several clusters gets the
worst of them. When Prometheus cannot answer, the availability is null (the answer is still given; health does not
depend on it) and the failure is remembered as long as an answer would be, so a dead Prometheus is asked once per
``ttl``, not once per request. The board holds only numbers per (cluster, tenant); ``tenant_slo`` picks the asking
tenant's own.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel, Field

from alerts.slo import TenantSlo, availability_query, objective_for
from monitor.core.config import Config, TenantConfig
from monitor.core.errors import KafkaHealthError
from monitor.health.remembered import Board

log = logging.getLogger(__name__)

TTL_SECONDS = 60.0

Availability = dict[tuple[str, str], float]  # (cluster, tenant) -> availability over the window


class TenantSloRead(BaseModel):
    objective: float = Field(description="share of minutes the tenant's Kafka must be available over the window")
    window: str = Field(description="the SLO window, e.g. 28d")
    availability: float | None = Field(
        description=(
            "good minutes / known minutes over the window (minutes while the probe was not up are unknown, not bad); "
            "the worst of the tenant's clusters; null: no known minute, or Prometheus did not answer"
        )
    )
    error_budget_remaining: float | None = Field(
        description=(
            "share of the window's error budget left: 1 - (1 - availability) / (1 - objective); negative: overspent"
        )
    )


class SloBoard(Board[Availability]):
    """Every tenant's availability over the SLO window, asked of Prometheus at most once per ``ttl``. Thread-safe:
    health misses run on worker threads; one asks, the others wait for its answer."""

    TTL_SECONDS = TTL_SECONDS

    def availability(self, config: Config, now: datetime) -> Availability | None:
        return self._memo.get(config.slo.window_days, lambda: self._ask(config, now))

    def remembered(self, config: Config) -> tuple[bool, Availability | None]:
        """``availability`` if remembered, without asking (``Remembered.peek``)."""
        return self._memo.peek(config.slo.window_days)

    def _ask(self, config: Config, now: datetime) -> Availability | None:
        source = self._source(config)
        try:
            rows = source.query(availability_query(f"{config.slo.window_days}d"), now)
        except KafkaHealthError as exc:
            log.warning("tenant SLO availability unavailable: %s", exc)
            return None
        finally:
            source.close()
        return {(r.labels.get("cluster", ""), r.labels.get("tenant", "")): r.value for r in rows}


def tenant_slo(
    tenant: TenantConfig, clusters: Iterable[str], availability: Availability | None, config: Config
) -> TenantSloRead:
    """Pure: ``tenant``'s SLO from the board's numbers, its own clusters' only."""
    own = set(clusters)
    mine = [v for (cluster, name), v in (availability or {}).items() if name == tenant.name and cluster in own]
    view = TenantSlo.of(
        objective=objective_for(tenant, config.slo),
        window_days=config.slo.window_days,
        avail=min(mine) if mine else None,
    )
    return TenantSloRead(
        objective=view.objective,
        window=view.window,
        availability=view.availability,
        error_budget_remaining=view.error_budget_remaining,
    )
