"""What every detector is given and returns: ``DetectorContext`` (the source, the time, the config, the tenants),
the ``Detector`` signature, and the one way to read a rule's window. The detector modules import this module, never
the package's registry (``alerts.detectors.registry``), so no member imports what imports it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from alerts.types import Observation, Rule
from monitor.core.config import Config
from monitor.core.prom import Source
from monitor.core.tenancy import TenantIndex
from monitor.core.times import parse_duration


@dataclass(frozen=True)
class DetectorContext:
    """Implementers read only through ``source`` at ``now``: never the clock, never the collectors."""

    source: Source
    now: datetime
    config: Config
    tenants: TenantIndex


Detector = Callable[[Rule, DetectorContext], list[Observation]]


def window_seconds(rule: Rule, key: str = "window", default: str = "10m") -> float:
    return parse_duration(rule.params.get(key, default))
