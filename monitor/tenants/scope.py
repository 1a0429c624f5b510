"""Which tenant or cluster a request may see, decided once per request: path dependencies and the row lookups behind
them, shared by every router that takes a tenant or cluster in its path (tenants, health, advisor).

A tenant token asking for any other tenant gets the same 404 as for a tenant that does not exist, with a message that
names nothing. Visibility is decided before existence, by ``async`` dependencies that do no I/O; the row is fetched
inside the endpoint (see ``monitor.tenants.views`` for why).

Clusters the same way: the auth middleware read the clusters a tenant token's tenant is on together with the token
(``request.state.visible_clusters``), so a cluster that exists but is not the tenant's is refused by the same
dependency, from memory, as one that does not exist. Before, it was refused only after the tenant's row was read in
the thread pool, and that 404 took twice as long as the other: the timing told a tenant which cluster names exist.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from sqlalchemy.orm import Session

from monitor.core.api.deps import AppConfig, CurrentPrincipal
from monitor.core.api.principal import Principal
from monitor.core.config import TenantConfig
from monitor.core.errors import NotFound
from monitor.tenants import service
from monitor.tenants.models import Tenant

TENANT_NOT_FOUND = "tenant not found"
CLUSTER_NOT_FOUND = "cluster not found"


async def _visible_tenant(
    tenant: Annotated[str, Path(max_length=64, description="tenant name")],
    principal: CurrentPrincipal,
) -> str:
    """The tenant named in the path, if this token may see it; else the same 404 as for a tenant that does not exist.

    Visibility is decided before existence, so "not yours" and "does not exist" are indistinguishable.
    """
    if not principal.can_see(tenant):
        raise NotFound(TENANT_NOT_FOUND)
    return tenant


TenantName = Annotated[str, Depends(_visible_tenant)]


def tenant_row(db_session: Session, name: str) -> Tenant:
    row = service.get(db_session=db_session, name=name)
    if row is None:
        raise NotFound(TENANT_NOT_FOUND)
    return row


def principal_tenant(principal: Principal, db_session: Session) -> TenantConfig | None:
    if principal.is_operator:
        return None
    row = service.get(db_session=db_session, name=principal.tenant or "")
    if row is None:  # the tenant was deleted after the token was checked: it sees nothing
        raise NotFound(CLUSTER_NOT_FOUND)
    return row.to_config()


async def _visible_cluster(
    cluster: Annotated[str, Path(max_length=128, description="cluster name")],
    config: AppConfig,
    request: Request,
) -> str:
    """The cluster named in the path, if it exists and this token may see it; else one 404 for both.

    A tenant token's clusters come with its principal (``monitor.api.auth``); without them (an app mounted without
    that middleware) ``cluster_scope`` still refuses, later.
    """
    visible = getattr(request.state, "visible_clusters", None)
    if cluster not in {c.name for c in config.clusters} or (visible is not None and cluster not in visible):
        raise NotFound(CLUSTER_NOT_FOUND)
    return cluster


ClusterName = Annotated[str, Depends(_visible_cluster)]


def cluster_scope(db_session: Session, principal: Principal, cluster: str) -> TenantConfig | None:
    """The tenant whose slice of ``cluster`` is shown (None: an operator sees everything); 404 if it is not on it
    (checked again here: the tenant may have changed since the token was looked up)."""
    own = principal_tenant(principal, db_session)
    if own is not None and cluster not in service.clusters_of(own):
        raise NotFound(CLUSTER_NOT_FOUND)
    return own
