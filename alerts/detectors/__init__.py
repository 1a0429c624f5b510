"""Detectors: conditions PromQL cannot express well, in Python.

Each detector module has pure functions on plain arrays (unit-tested on synthetic series) and one thin ``detect``
shell that queries the ``Source`` and turns verdicts into ``Observation``s. A detector must:
- read only through ``ctx.source`` at ``ctx.now`` (never the clock, never collectors);
- return [] when all is well, raise ``QueryError`` when it cannot tell (the engine marks the rule health=err);
- put the values that made it fire into ``evidence`` and label each observation with ``cluster`` (and ``broker``,
  ``topic``, ``group``... where they apply) so tenants can be attributed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from alerts.types import Observation, Rule
from monitor.core.config import Config
from monitor.core.prom import Source
from monitor.core.tenancy import TenantIndex
from monitor.core.times import parse_duration

if TYPE_CHECKING:
    from monitor.advisor.exported import FindingsBoard


@dataclass(frozen=True)
class DetectorContext:
    source: Source
    now: datetime
    config: Config
    tenants: TenantIndex


Detector = Callable[[Rule, DetectorContext], list[Observation]]


def builtin_detectors(*, findings: FindingsBoard | None = None) -> dict[str, Detector]:
    """``findings``: where ``noisy_clients`` publishes every advisor finding it computes (exported by serve)."""
    from alerts.detectors import (
        brokers,
        clients,
        disk,
        lag,
        latency,
        noisy_clients,
        slo,
        storage,
    )

    return {
        "broker_down": brokers.detect_broker_down,
        "under_replicated": brokers.detect_under_replicated,
        "disk_full": disk.detect,
        "tenant_storage": storage.detect,
        "slow_clients": clients.detect_slow_clients,
        "busy_clients": clients.detect_busy_clients,
        "outdated_clients": clients.detect_outdated_clients,
        "latency_regression": latency.detect,
        "consumer_lag": lag.detect,
        "slo_burn": slo.detect,
        "noisy_clients": partial(noisy_clients.detect, board=findings) if findings else noisy_clients.detect,
    }


def window_seconds(rule: Rule, key: str = "window", default: str = "10m") -> float:
    return parse_duration(rule.params.get(key, default))
