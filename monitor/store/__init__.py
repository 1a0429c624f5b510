"""The SQL store's schema migrations (Alembic) and the one way a command or the service opens the store.

The declarative ``Base``, ``Store`` and the column types live in ``monitor.core.store``; each domain owns its models
(``monitor.tenants.models``, ``monitor.api.tokens``, ``alerts.models``, ``monitor.reports.models``); the revision
files under ``migrations/`` create them all. ``monitor.schema`` gathers every model (autogenerate, unit tests).
"""

from __future__ import annotations

from monitor.core.config import StoreSettings
from monitor.core.store import Store
from monitor.store.migrate import upgrade


def open_store(settings: StoreSettings) -> Store:
    """The store of a configuration with its schema at head. Safe at every start, concurrently."""
    store = Store.from_settings(settings)
    upgrade(store)
    return store
