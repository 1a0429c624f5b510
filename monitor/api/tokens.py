"""API tokens: minting, storage (hashed), authentication, revocation, expiry.

A token reads ``kh_<id>_<secret>``: ``id`` (12 hex digits) is public and names the row; ``secret`` is 256 random
bits. The store keeps only ``sha256(token)``. A slow password hash (bcrypt, argon2) exists to make guessing a
*low-entropy* human password expensive; a 256-bit random secret cannot be guessed however fast the hash is, so one
SHA-256 is enough and keeps authentication cheap on every request. The stored hash is compared with
``hmac.compare_digest`` so the comparison time does not depend on how many leading characters match.

A token may carry ``expires_at``: from that instant on it is refused exactly like an unknown one (``now`` is a
parameter of ``authenticate``; the caller reads the clock once per request). Without it a token lives until revoked.

Service functions take keyword-only ``db_session`` and never commit: the caller's unit of work does.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from pydantic import BaseModel
from sqlalchemy import ForeignKey, String, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from monitor.core.api.principal import Principal, PrincipalKind
from monitor.core.api.schema import UtcDatetime
from monitor.core.errors import Invalid
from monitor.core.store import Base, UtcDateTime
from monitor.core.times import as_utc
from monitor.tenants import models as _tenant_models  # noqa: F401  (api_tokens.tenant references tenants)
from monitor.tenants import service as tenant_service

_TOKEN_RE = re.compile(r"^kh_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")


class TokenKind(str, Enum):
    OPERATOR = "operator"
    TENANT = "tenant"


class ApiToken(Base):
    """A bearer token, stored as the SHA-256 of the whole token. The token itself is shown once, at creation."""

    __tablename__ = "api_tokens"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    kind: Mapped[str] = mapped_column(String(16))  # TokenKind value
    # Deleting a tenant deletes its tokens: a token must never outlive the tenant it speaks for.
    tenant: Mapped[str | None] = mapped_column(
        String(64), ForeignKey("tenants.name", ondelete="CASCADE"), nullable=True, index=True
    )
    secret_sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)  # None: until revoked


class TokenRead(BaseModel):
    id: str
    name: str
    kind: TokenKind
    tenant: str | None
    created_at: UtcDatetime
    revoked_at: UtcDatetime | None
    expires_at: UtcDatetime | None

    @classmethod
    def of(cls, row: ApiToken) -> TokenRead:
        return cls(
            id=row.id,
            name=row.name,
            kind=TokenKind(row.kind),
            tenant=row.tenant,
            created_at=row.created_at,
            revoked_at=row.revoked_at,
            expires_at=row.expires_at,
        )


@dataclass(frozen=True)
class Verified:
    """A token that passed every check, and until when it may be trusted without asking the store again."""

    principal: Principal
    expires_at: datetime | None

    def valid_at(self, now: datetime) -> bool:
        return self.expires_at is None or now < self.expires_at


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create(
    *,
    db_session: Session,
    kind: TokenKind,
    tenant: str | None,
    name: str,
    now: datetime,
    expires_at: datetime | None = None,
) -> tuple[ApiToken, str]:
    """A new token row and the token itself (return it to the user once; it is not recoverable).

    ``tenant`` must be given for tenant tokens and must exist; operator tokens have none. ``expires_at``, when given,
    must be after ``now`` (a token born expired is a mistake worth an error, not a silent 401 later).
    """
    if expires_at is not None:
        expires_at = as_utc(expires_at)
        if expires_at <= now:
            raise Invalid(f"expires_at must be in the future (now is {now.isoformat()})", field="expires_at")
    if kind is TokenKind.TENANT:
        if not tenant:
            raise Invalid("a tenant token needs a tenant", field="tenant")
        if tenant_service.get(db_session=db_session, name=tenant) is None:
            raise Invalid(f"no tenant named {tenant!r}", field="tenant")
    elif tenant:
        raise Invalid("an operator token belongs to no tenant", field="tenant")
    token_id = secrets.token_hex(6)
    token = f"kh_{token_id}_{secrets.token_urlsafe(32)}"
    row = ApiToken(
        id=token_id,
        name=name,
        kind=kind.value,
        tenant=tenant,
        secret_sha256=_digest(token),
        created_at=now,
        revoked_at=None,
        expires_at=expires_at,
    )
    db_session.add(row)
    db_session.flush()
    return row, token


def get(*, db_session: Session, token_id: str) -> ApiToken | None:
    return db_session.get(ApiToken, token_id)


def get_all(*, db_session: Session, tenant: str | None = None) -> list[ApiToken]:
    q = select(ApiToken).order_by(ApiToken.created_at, ApiToken.id)
    if tenant is not None:
        q = q.where(ApiToken.tenant == tenant)
    return list(db_session.scalars(q))


def revoke(*, db_session: Session, token: ApiToken, now: datetime) -> ApiToken:
    """Revoke (idempotent). The row stays, so listings show who had access until when."""
    if token.revoked_at is None:
        token.revoked_at = now
        tenant_service.bump_version(db_session=db_session)  # servers forget the token they remembered
        db_session.flush()
    return token


def verify(*, db_session: Session, presented: str, now: datetime) -> Verified | None:
    """The principal a presented token speaks for and its expiry, or None (malformed, unknown, wrong secret, revoked
    or expired at ``now``).

    Callers must answer every None the same way (401, same message), so a caller learns nothing about which check
    failed; a caller that remembers the answer must stop trusting it at ``expires_at``.
    """
    m = _TOKEN_RE.match(presented)
    if m is None:
        return None
    # Plain columns, not an ORM object: this runs on every request the server does not remember.
    row = db_session.execute(
        select(
            ApiToken.id,
            ApiToken.secret_sha256,
            ApiToken.kind,
            ApiToken.tenant,
            ApiToken.revoked_at,
            ApiToken.expires_at,
        ).where(ApiToken.id == m.group(1))
    ).first()
    digest = _digest(presented)
    if row is None or not hmac.compare_digest(row.secret_sha256, digest) or row.revoked_at is not None:
        return None
    expires_at = as_utc(row.expires_at) if row.expires_at is not None else None
    kind = PrincipalKind.OPERATOR if row.kind == TokenKind.OPERATOR.value else PrincipalKind.TENANT
    verified = Verified(Principal(kind=kind, token_id=row.id, tenant=row.tenant), expires_at)
    return verified if verified.valid_at(now) else None


def authenticate(*, db_session: Session, presented: str, now: datetime) -> Principal | None:
    """``verify`` without the expiry: the principal, or None for every kind of failure."""
    verified = verify(db_session=db_session, presented=presented, now=now)
    return verified.principal if verified is not None else None


def token_id_of(presented: str) -> str | None:
    """The public id of a well-formed token (what failures are counted against), or None for anything else."""
    m = _TOKEN_RE.match(presented)
    return m.group(1) if m else None
