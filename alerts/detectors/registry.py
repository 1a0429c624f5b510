"""The built-in detectors by the name a rule's ``detector:`` gives. It imports every detector module; none of them
imports it (they import ``alerts.detectors.context``), so the registry is a module-level import with no cycle."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from alerts.detectors import brokers, clients, disk, lag, latency, noisy_clients, share, slo, storage
from alerts.detectors.context import Detector

if TYPE_CHECKING:
    from monitor.advisor.exported import FindingsBoard


def builtin_detectors(*, findings: FindingsBoard | None = None) -> dict[str, Detector]:
    """``findings``: where ``noisy_clients`` publishes every advisor finding it computes (exported by serve)."""
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
        "share_lag": share.detect,
        "slo_burn": slo.detect,
        "noisy_clients": partial(noisy_clients.detect, board=findings) if findings else noisy_clients.detect,
    }
