"""Fixtures of the end-to-end alert tests."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from alerts.component import AlertService
from monitor.core.store import Store
from monitor.schema import create_all


@pytest.fixture
def engine(watched):
    """A fresh AlertService (empty store) on the requesting module's ``watched`` config: the module defines how its
    stack is watched (collectors, tenants, rule overrides)."""
    from monitor.core.store import Base

    store = Store(watched.store.url)
    Base.metadata.drop_all(store.engine)
    create_all(store)
    yield AlertService(watched, store=store, registry=CollectorRegistry())
    store.dispose()
