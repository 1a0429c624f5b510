"""Persisted alert types, shared with the REST API (tenant health reads firing instances).

Contract for other packages: ``AlertInstance`` rows are one per (rule, label set); an alert that hurts several
tenants is several instances, each with its own ``tenant``. Columns may be added; these are not renamed.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, BigInteger, Float, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from monitor.core.store import Base, UtcDateTime


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
    annotations: Mapped[dict] = mapped_column(JSON, default=dict)  # summary, description, runbook_url, runbook
    evidence: Mapped[dict] = mapped_column(JSON, default=dict)  # the values that made it fire
    value: Mapped[float | None] = mapped_column(Float, nullable=True)
    active_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    fired_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    resolved_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    keep_firing_since: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    last_evaluated_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # Added by the alert engine (issue 4): what was last handed to the outbox, so a restart neither re-pages nor
    # loses a resolve; when the firing state was last refreshed to Alertmanager; why it is muted, if it is.
    notified_state: Mapped[str | None] = mapped_column(String(16), nullable=True)
    last_sent_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    muted_by: Mapped[str | None] = mapped_column(String(128), nullable=True)

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
    evaluated_at: Mapped[datetime] = mapped_column(UtcDateTime())
    data_ok: Mapped[bool] = mapped_column(default=False)  # every core input (broker metrics) had data
    detail: Mapped[str] = mapped_column(String(500), default="")


class Silence(Base):
    """Mutes notifications of alerts matching every matcher, between ``starts_at`` and ``ends_at``.

    ``matchers`` is a list of ``{"name", "value", "is_regex", "is_equal"}`` (Alertmanager's model). A silence created
    by a tenant token always carries a ``tenant=<its tenant>`` matcher and ``tenant`` set, so it can mute nothing else.
    """

    __tablename__ = "alert_silences"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    matchers: Mapped[list] = mapped_column(JSON, default=list)
    starts_at: Mapped[datetime] = mapped_column(UtcDateTime())
    ends_at: Mapped[datetime] = mapped_column(UtcDateTime())
    created_by: Mapped[str] = mapped_column(String(128), default="")
    comment: Mapped[str] = mapped_column(String(1000), default="")
    tenant: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    expired_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class OutboxEntry(Base):
    """One notification (one alert's state) waiting for delivery to one target ("alertmanager" or a webhook URL).

    Rows are delivered oldest first and deleted on success; a failure schedules a retry with exponential backoff;
    after the maximum attempts (or an unrecoverable answer) the row moves to ``alert_dead_letters``.
    """

    __tablename__ = "alert_outbox"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    target: Mapped[str] = mapped_column(String(500))
    fingerprint: Mapped[str] = mapped_column(String(64))
    group_key: Mapped[str] = mapped_column(String(500))
    kind: Mapped[str] = mapped_column(String(16))  # firing | resolved | refresh
    payload: Mapped[dict] = mapped_column(JSON)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UtcDateTime())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)

    __table_args__ = (
        Index("ix_alert_outbox_due", "next_attempt_at"),
        Index("ix_alert_outbox_target_fp", "target", "fingerprint"),
    )


class DeadLetter(Base):
    """A notification that could not be delivered: kept for ``outbox replay``, never dropped silently."""

    __tablename__ = "alert_dead_letters"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    target: Mapped[str] = mapped_column(String(500))
    fingerprint: Mapped[str] = mapped_column(String(64))
    group_key: Mapped[str] = mapped_column(String(500))
    kind: Mapped[str] = mapped_column(String(16))
    payload: Mapped[dict] = mapped_column(JSON)
    attempts: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    dead_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)


class EngineLease(Base):
    """Who evaluates alerts and sends notifications (``alerts.lease``): one row per lease name. ``epoch`` increases at
    every takeover and fences every write of alert state and outbox rows; ``expires_at`` is on the database's clock."""

    __tablename__ = "engine_lease"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(200))
    epoch: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
