"""alert instances and engine heartbeats (alerts.models as on main; tenant health reads them)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "alert_instances",
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("rule", sa.String(length=128), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("severity", sa.String(length=16), nullable=False),
        sa.Column("cluster", sa.String(length=128), nullable=True),
        sa.Column("broker", sa.String(length=32), nullable=True),
        sa.Column("tenant", sa.String(length=64), nullable=True),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("annotations", sa.JSON(), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("active_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("fired_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("keep_firing_since", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_evaluated_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("fingerprint", name=op.f("pk_alert_instances")),
    )
    op.create_index("ix_alert_instances_cluster_state", "alert_instances", ["cluster", "state"], unique=False)
    op.create_index("ix_alert_instances_tenant_state", "alert_instances", ["tenant", "state"], unique=False)
    op.create_table(
        "engine_heartbeats",
        sa.Column("cluster", sa.String(length=128), nullable=False),
        sa.Column("evaluated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("data_ok", sa.Boolean(), nullable=False),
        sa.Column("detail", sa.String(length=500), nullable=False),
        sa.PrimaryKeyConstraint("cluster", name=op.f("pk_engine_heartbeats")),
    )


def downgrade() -> None:
    op.drop_table("engine_heartbeats")
    op.drop_index("ix_alert_instances_tenant_state", table_name="alert_instances")
    op.drop_index("ix_alert_instances_cluster_state", table_name="alert_instances")
    op.drop_table("alert_instances")
