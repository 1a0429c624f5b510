"""``LiveTenants``: the one tenant set every component reads (collectors' labels, alert attribution and routing,
webhooks, contract series), following the store within a few seconds, without a restart.

The set is the config file's tenants plus the store's (created through the API or CLI); a name in both is the
file's. Each ``current()`` call older than ``check_seconds`` reads the store's registry version (one small query);
only a new version reloads the tenants, so a deleted tenant stops being attributed and a created one starts within
one cycle of any component. A store that cannot be read keeps the last good set (at first: the file's) and is
logged once per outage, so a database blip never unlabels every series.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from monitor.core.config import Config, TenantConfig
from monitor.core.errors import StoreError
from monitor.core.store import Store
from monitor.core.tenancy import TenantIndex
from monitor.tenants import service

log = logging.getLogger(__name__)


def merged(config_tenants: tuple[TenantConfig, ...], stored: list[TenantConfig]) -> tuple[TenantConfig, ...]:
    """The file's tenants, then the store's that the file does not name, by name."""
    names = {t.name for t in config_tenants}
    return (*config_tenants, *sorted((t for t in stored if t.name not in names), key=lambda t: t.name))


def with_stored_tenants(config: Config, store: Store) -> Config:
    """``config`` whose ``tenants`` are the whole registry (the file's and the store's), read once: what a command
    (report, advice, capacity) works on, so a tenant created through the API has its report and advice too."""
    with store.session() as s:
        stored = service.get_all_configs(db_session=s)
    return config.model_copy(update={"tenants": merged(tuple(config.tenants), stored)})


class LiveTenants:
    def __init__(
        self, config: Config, store: Store, *, check_seconds: float = 2.0, clock: Callable[[], float] = time.monotonic
    ):
        self._config_tenants = tuple(config.tenants)
        self._store, self._check, self._clock = store, check_seconds, clock
        self._lock = threading.Lock()
        self._tenants = self._config_tenants
        self._index = TenantIndex(self._tenants)
        self._version: int | None = None
        self._checked_at: float | None = None
        self._failing = False

    def current(self) -> tuple[TenantConfig, ...]:
        self._refresh()
        return self._tenants

    def index(self) -> TenantIndex:
        self._refresh()
        return self._index

    def _refresh(self) -> None:
        now = self._clock()
        if self._checked_at is not None and now - self._checked_at < self._check:
            return
        with self._lock:
            if self._checked_at is not None and now - self._checked_at < self._check:
                return
            self._checked_at = now
            try:
                with self._store.session() as s:
                    version = service.version(db_session=s)
                    if version == self._version:
                        return
                    stored = service.get_all_configs(db_session=s)
            except StoreError as exc:
                if not self._failing:
                    log.warning(
                        "tenant registry unreadable, keeping the last known %d tenant(s): %s", len(self._tenants), exc
                    )
                self._failing = True
                return
            if self._failing:
                log.info("tenant registry readable again")
            self._failing = False
            tenants = merged(self._config_tenants, stored)
            self._tenants, self._index, self._version = tenants, TenantIndex(tenants), version
            log.debug("tenant registry version %s: %d tenant(s)", version, len(tenants))
