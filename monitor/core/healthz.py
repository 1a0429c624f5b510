"""Waiting for a kafka-health service to answer ``/healthz``: the one loop the demo (its embedded service) and the
test harness (a ``serve`` child process) both need, so they agree on what "up" means (HTTP 200 on ``/healthz``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import Enum

import httpx


class Wait(Enum):
    """How a wait for ``/healthz`` ended."""

    UP = "up"
    EXITED = "exited"  # the service stopped before it answered
    TIMEOUT = "timeout"


def wait_healthy(
    url: str, *, alive: Callable[[], bool], timeout: float, interval: float = 0.3, request_timeout: float = 2.0
) -> Wait:
    """Poll ``{url}/healthz`` until it answers 200 (UP), ``alive()`` turns false (EXITED) or ``timeout`` seconds
    pass (TIMEOUT). Connection errors while the service starts are expected and retried."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=request_timeout).status_code == 200:
                return Wait.UP
        except httpx.HTTPError:
            pass
        if not alive():
            return Wait.EXITED
        if time.monotonic() > deadline:
            return Wait.TIMEOUT
        time.sleep(interval)
