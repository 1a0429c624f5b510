"""Tenant contracts as Kafka user quotas (``kafka-health tenants apply-quotas``).

Quotas are how tenants are isolated on a shared cluster, and Kafka sets them per user (principal). A tenant's
contract says ``produce_quota_bytes_per_second`` and ``fetch_quota_bytes_per_second``; every principal its selectors
name on a cluster gets them as ``producer_byte_rate`` and ``consumer_byte_rate`` at
``/config/users/<user>/clients/<default>``: each client id of the principal gets the contract's rate. That level,
not ``/config/users/<user>`` alone, is chosen because Kafka tags its quota sensors with the level that matched: at
the user level every throttle is ``client-id=""``, and an alert could name the tenant's principal but never the
client that exceeds the quota. The cost: a tenant opening N client ids may use N times its rate (the contract series
``kafka_health_tenant_*_quota_bytes_per_second`` let dashboards draw the tenant's total against it). A tenant without
principals on the cluster, or without a produce or fetch figure, gets nothing (its clients fall under the cluster's
default quotas).

``plan`` is pure; ``apply`` runs Kafka's own ConfigCommand (the Admin API's AlterClientQuotas: confluent-kafka has no
client-quota call) in a short JVM, authenticated by a Java client properties file given by path (``--admin-config``;
the local stack writes ``<stack dir>/clients/admin.java.properties``): no secret in argv.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from monitor.core.config import TenantConfig


@dataclass(frozen=True)
class UserQuota:
    cluster: str
    tenant: str
    user: str  # the principal's name, without "User:"
    values: tuple[tuple[str, int], ...]  # (quota key, value), e.g. ("producer_byte_rate", 5000000)

    @property
    def add_config(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.values)


def plan(tenants: Iterable[TenantConfig], cluster: str) -> list[UserQuota]:
    """The user quotas of every tenant principal on ``cluster``, sorted by user."""
    out: dict[str, UserQuota] = {}
    for t in tenants:
        values = tuple(
            (k, v)
            for k, v in (
                ("producer_byte_rate", t.contract.produce_quota_bytes_per_second),
                ("consumer_byte_rate", t.contract.fetch_quota_bytes_per_second),
            )
            if v is not None
        )
        if not values:
            continue
        for s in t.selectors:
            if s.cluster != cluster:
                continue
            for p in s.principals:
                kind, _, name = p.partition(":")
                user = name if name else kind  # "User:payments-app" or "payments-app"
                if name and kind != "User":
                    continue  # quotas exist for users only
                out[user] = UserQuota(cluster, t.name, user, values)
    return [out[u] for u in sorted(out)]


def config_command_args(q: UserQuota) -> list[str]:
    """The ``kafka-configs --alter`` arguments of one user quota (every client id of the user: see the module)."""
    return [
        "--entity-type",
        "users",
        "--entity-name",
        q.user,
        "--entity-type",
        "clients",
        "--entity-default",
        "--add-config",
        q.add_config,
    ]
