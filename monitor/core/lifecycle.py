"""Long-running components and how they stop: within a stated bound, whatever they are doing.

``serve`` and ``demo`` run components (the collectors' schedule, the alert engine, the report scheduler, the store
watch), each in threads of its own. On SIGTERM or Ctrl-C every component is asked to stop at once, in parallel, and
the process waits at most ``STOP_BOUND_SECONDS`` in all: a component still busy then (mid-cycle on a Prometheus that
does not answer, a detector that loops, a library that blocks) is abandoned and named, and the process exits anyway.
Components run in daemon threads, so an abandoned one cannot keep the interpreter alive.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Protocol

log = logging.getLogger(__name__)

STOP_BOUND_SECONDS = 10.0


class Component(Protocol):
    """A long-running part of the service.

    Implementers must: return from ``start`` quickly (work runs in their own daemon threads); make ``stop`` ask that
    work to end and wait for it only a bounded time; keep ``ready`` cheap (it answers ``/readyz``).
    """

    name: str

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def ready(self) -> bool: ...


def stop_all(
    components: Iterable[Component],
    *,
    bound_seconds: float = STOP_BOUND_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> list[str]:
    """Ask every component to stop, all at once, and wait at most ``bound_seconds`` in all.

    Returns the names of the components that had not stopped by then (abandoned), after logging them; a component
    whose ``stop`` raises counts as stopped (its error is logged)."""
    pending: dict[str, threading.Thread] = {}
    for c in components:
        t = threading.Thread(target=_stop_one, args=(c,), name=f"stop-{c.name}", daemon=True)
        t.start()
        pending[c.name] = t
    deadline = clock() + bound_seconds
    for t in pending.values():
        t.join(max(0.0, deadline - clock()))
    abandoned = [name for name, t in pending.items() if t.is_alive()]
    if abandoned:
        log.error("stopped within %.0f s except %s, still busy: abandoned", bound_seconds, ", ".join(abandoned))
    return abandoned


def _stop_one(component: Component) -> None:
    try:
        component.stop()
    except Exception:  # one component's failure to stop must not keep the others running
        log.exception("%s failed while stopping", component.name)
