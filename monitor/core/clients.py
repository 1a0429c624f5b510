"""Client software versions (KIP-511 ``clientSoftwareName``/``Version``), shared by the outdated-client alert and
the advisor so both judge a client the same way."""

from __future__ import annotations

import re
from collections.abc import Iterable


def parse_version(v: str) -> tuple[int, ...]:
    nums = re.findall(r"\d+", v.split("-")[0])
    return tuple(int(n) for n in nums[:4])


def is_outdated(name: str, version: str, min_versions: dict[str, str]) -> bool:
    minimum = min_versions.get(name)
    if minimum is None or not parse_version(version):
        return False  # unknown software or unparseable version: not our call
    return parse_version(version) < parse_version(minimum)


def principal_owners(keys: Iterable[tuple[str, str]]) -> dict[str, str]:
    """client id -> the one user (principal) whose (user, client id) keys carry it. Kafka tags each quota type's
    sensors with the entity its quota matched: with byte-rate quotas per user (``users/U/clients/<default>``, as
    ``tenants apply-quotas`` sets them) and the request quota per client id, one client's bytes come as (U, C) and its
    request time as ("", C); a user-less key joins the owner given here. A client id under no user, or under several
    (one client id shared by principals), has no owner: it stays apart. Pure."""
    users: dict[str, set[str]] = {}
    for user, cid in keys:
        if user:
            users.setdefault(cid, set()).add(user)
    return {cid: next(iter(us)) for cid, us in users.items() if len(us) == 1}


def replica_fetch_connections_in_cluster(live_brokers: float, fetchers: int = 1) -> float:
    """The connections a cluster's brokers hold from the other brokers' replica fetchers. A follower's replica
    fetchers skip ApiVersions (``discoverBrokerVersions`` is off on the inter-broker client), so Kafka labels their
    connections ``unknown`` like a client that sends no KIP-511 name: each broker holds ``num.replica.fetchers``
    (``fetchers``) of them per other broker (seen on the local stack: 2 per broker of 3, in every listener mode).
    They are no client at all."""
    return max(0.0, live_brokers * (live_brokers - 1) * fetchers)
