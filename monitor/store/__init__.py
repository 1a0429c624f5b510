"""The SQL store (SQLAlchemy 2.x): what Prometheus cannot hold.

``base.py`` holds the one declarative ``Base`` every domain's models derive from, and ``Store`` (engine + session
factory). Domain packages own their models (``monitor.tenants.models``, ``alerts.models``, ``monitor.reports.models``)
and Alembic migrations under ``monitor/store/migrations`` create them all.
"""

from monitor.core.store import Base, Store

__all__ = ["Base", "Store"]
