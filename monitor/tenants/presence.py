"""``ServicePresence``: a running API server's "still here", so ``kafka-health tenants sync`` can tell whether the
configuration the store's tenants came from is the one a live service runs on (``service.running_service_source``).
A service component: a daemon thread that marks every ``SERVICE_MARK_SECONDS``; a failed mark is logged and retried
at the next tick (the store may be down for a while)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime

from monitor.core.errors import StoreError
from monitor.core.store import Store
from monitor.core.times import utc_now
from monitor.tenants import service

log = logging.getLogger(__name__)


class ServicePresence:
    name = "presence"

    def __init__(
        self, store: Store, *, interval: float = service.SERVICE_MARK_SECONDS, clock: Callable[[], datetime] = utc_now
    ):
        self.store, self.interval, self.clock = store, interval, clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def mark(self) -> None:
        try:
            with self.store.session() as s:
                service.mark_service_alive(db_session=s, now=self.clock())
        except StoreError as exc:
            log.warning("could not mark this service alive in the store: %s", exc)

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.mark()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def ready(self) -> bool:
        return True
