"""Queries on the report index (keyword-only session, Dispatch style). Views translate None into 404."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.reports.models import ReportIndex


def list_reports(*, db_session: Session, tenant: str, limit: int, before_week: str | None = None) -> list[ReportIndex]:
    """Newest week first; ``before_week`` is the last week of the previous page (keyset pagination)."""
    q = select(ReportIndex).where(ReportIndex.tenant == tenant)
    if before_week:
        q = q.where(ReportIndex.week < before_week)
    return list(db_session.scalars(q.order_by(ReportIndex.week.desc()).limit(limit)).all())


def get_report(*, db_session: Session, tenant: str, week: str) -> ReportIndex | None:
    return db_session.scalars(select(ReportIndex).where(ReportIndex.tenant == tenant, ReportIndex.week == week)).first()
