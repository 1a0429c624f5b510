"""engine_lease: who evaluates alerts and sends notifications (issue 31: active/standby engines on one store)

One row per lease name ("alerts"): its holder, an epoch that increases at every takeover (the fencing token every
write of alert state and outbox rows checks in its own transaction) and when it expires, on the database's clock.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "engine_lease",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("holder", sa.String(length=200), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_engine_lease")),
    )


def downgrade() -> None:
    op.drop_table("engine_lease")
