"""Who is asking. Resolved once per request from the bearer token (see ``monitor.api.auth``)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from fastapi import Request


class PrincipalKind(str, Enum):
    OPERATOR = "operator"
    TENANT = "tenant"


@dataclass(frozen=True)
class Principal:
    kind: PrincipalKind
    token_id: str
    tenant: str | None = None  # set for tenant tokens only

    def can_see(self, tenant: str | None) -> bool:
        """Operators see everything; a tenant token sees only its own tenant's resources.

        Resources with no tenant (cluster-wide) are visible to tenants only through their own tenant's view,
        so ``tenant=None`` answers False for a tenant principal.
        """
        if self.kind is PrincipalKind.OPERATOR:
            return True
        return tenant is not None and tenant == self.tenant

    @property
    def is_operator(self) -> bool:
        return self.kind is PrincipalKind.OPERATOR


def current_principal(request: Request) -> Principal:
    """FastAPI dependency for every router: the principal the auth middleware resolved for this request.

    ``monitor.api.auth`` authenticates the bearer token once per request and sets ``request.state.principal``;
    routers declare ``principal: Principal = Depends(current_principal)`` and never read tokens themselves.
    """
    from fastapi import HTTPException

    principal: Principal | None = getattr(request.state, "principal", None)
    if principal is None:
        raise HTTPException(status_code=401, detail="missing or invalid bearer token")
    return principal
