"""Persisted alert types, shared with the REST API (tenant health reads firing instances).

Contract for other packages: ``AlertInstance`` rows are one per (rule, label set); an alert that hurts several
tenants is several instances, each with its own ``tenant``. Columns may be added; these are not renamed.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from sqlalchemy import JSON, DateTime, Float, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from monitor.store.base import Base


class AlertState(str, Enum):
    INACTIVE = "inactive"
    PENDING = "pending"
    FIRING = "firing"
    RESOLVED = "resolved"

    @property
    def order(self) -> int:
        return ["inactive", "pending", "firing", "resolved"].index(self.value)


class Severity(str, Enum):
    WARNING = "warning"
    CRITICAL = "critical"

    @property
    def order(self) -> int:
        return 1 if self is Severity.WARNING else 2


class AlertInstance(Base):
    __tablename__ = "alert_instances"

    fingerprint: Mapped[str] = mapped_column(String(64), primary_key=True)  # hash of rule + sorted labels
    rule: Mapped[str] = mapped_column(String(128))  # the alert name, e.g. KafkaDiskFullRisk
    state: Mapped[str] = mapped_column(String(16))  # AlertState value
    severity: Mapped[str] = mapped_column(String(16))  # Severity value
    cluster: Mapped[str | None] = mapped_column(String(128), nullable=True)
    broker: Mapped[str | None] = mapped_column(String(32), nullable=True)
    tenant: Mapped[str | None] = mapped_column(String(64), nullable=True)
    labels: Mapped[dict] = mapped_column(JSON, default=dict)
    annotations: Mapped[dict] = mapped_column(JSON, default=dict)  # summary, description, runbook
    evidence: Mapped[dict] = mapped_column(JSON, default=dict)  # the values that made it fire
    value: Mapped[float | None] = mapped_column(Float, nullable=True)
    active_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    fired_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    keep_firing_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_evaluated_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    __table_args__ = (
        Index("ix_alert_instances_tenant_state", "tenant", "state"),
        Index("ix_alert_instances_cluster_state", "cluster", "state"),
    )


class EngineHeartbeat(Base):
    """One row per cluster, written by the alert engine each evaluation cycle.

    The REST API reads it to tell ``unknown`` from ``ok``: a tenant is never reported healthy when the engine has
    not evaluated its cluster recently or the rules' inputs had no data.
    """

    __tablename__ = "engine_heartbeats"

    cluster: Mapped[str] = mapped_column(String(128), primary_key=True)
    evaluated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    data_ok: Mapped[bool] = mapped_column(default=False)  # every core input (broker metrics) had data
    detail: Mapped[str] = mapped_column(String(500), default="")
