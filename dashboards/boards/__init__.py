"""The dashboards, one module each. ``ALL`` is what ``kafka-health dashboards build`` renders, in menu order."""

from __future__ import annotations

from dashboards.boards import broker, clients, cluster, service, tenant
from dashboards.model import Dashboard

ALL: tuple[Dashboard, ...] = (cluster.BOARD, broker.BOARD, tenant.BOARD, clients.BOARD, service.BOARD)
