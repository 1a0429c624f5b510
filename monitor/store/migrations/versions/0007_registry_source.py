"""tenants: registry source (which configuration the config tenants were synced from, by what, and whether a
service that synced them is still running)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "registry_source",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("config_path", sa.String(length=1024), nullable=False),
        sa.Column("config_digest", sa.String(length=64), nullable=False),
        sa.Column("synced_by", sa.String(length=16), nullable=False),
        sa.Column("synced_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("service_seen_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_registry_source")),
    )


def downgrade() -> None:
    op.drop_table("registry_source")
