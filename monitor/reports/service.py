"""Queries on the report index (keyword-only session, Dispatch style). Views translate None into 404."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.reports.models import ReportIndex


def list_reports(*, db_session: Session, tenant: str, limit: int, offset: int) -> tuple[list[ReportIndex], int]:
    """Newest week first."""
    total = db_session.scalar(select(func.count()).select_from(ReportIndex).where(ReportIndex.tenant == tenant))
    rows = db_session.scalars(select(ReportIndex).where(ReportIndex.tenant == tenant)
                              .order_by(ReportIndex.week.desc()).limit(limit).offset(offset)).all()
    return list(rows), int(total or 0)


def get_report(*, db_session: Session, tenant: str, week: str) -> ReportIndex | None:
    return db_session.scalars(select(ReportIndex).where(ReportIndex.tenant == tenant,
                                                        ReportIndex.week == week)).first()
