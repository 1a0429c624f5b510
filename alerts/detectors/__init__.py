"""Detectors: conditions PromQL cannot express well, in Python.

Each detector module has pure functions on plain arrays (unit-tested on synthetic series) and one thin ``detect``
shell that queries the ``Source`` and turns verdicts into ``Observation``s. A detector must:
- read only through ``ctx.source`` at ``ctx.now`` (never the clock, never collectors);
- return [] when all is well, raise ``QueryError`` when it cannot tell (the engine marks the rule health=err);
- put the values that made it fire into ``evidence`` and label each observation with ``cluster`` (and ``broker``,
  ``topic``, ``group``... where they apply) so tenants can be attributed.

Modules: ``context`` (``DetectorContext``, ``Detector``, ``window_seconds``: what each detector imports), one module
per detector, and ``registry`` (``builtin_detectors``: the name a rule's ``detector:`` gives -> the function), which
imports them all and is imported by none of them.
"""

from alerts.detectors.context import Detector, DetectorContext, window_seconds

__all__ = ["Detector", "DetectorContext", "window_seconds"]
