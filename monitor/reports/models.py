"""The report index: which weekly reports exist, where their files are in the lake, and their status."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from monitor.core.store import Base, UtcDateTime


class ReportIndex(Base):
    """One row per (tenant, week). The operator summary is indexed under tenant ``_operator``.

    Paths are relative to the lake root, so a lake moved or mounted elsewhere keeps working.
    """

    __tablename__ = "report_index"
    __table_args__ = (UniqueConstraint("tenant", "week", name="uq_report_index_tenant_week"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    tenant: Mapped[str] = mapped_column(String(64), index=True)
    week: Mapped[str] = mapped_column(String(8))  # ISO week, e.g. 2026-W47
    status: Mapped[str] = mapped_column(String(16))  # ok | partial | no_data
    problems: Mapped[int] = mapped_column(Integer, default=0)
    json_path: Mapped[str] = mapped_column(String(512))
    html_path: Mapped[str] = mapped_column(String(512))
    generated_at: Mapped[datetime] = mapped_column(UtcDateTime())
