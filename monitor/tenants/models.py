"""Tenants: the SQL row and the API's request/response schemas.

A tenant's definition (selectors, contract, receivers) is one JSON ``spec`` column holding exactly the fields of
``monitor.core.config.TenantConfig`` except ``name``: the config file and the API share one schema, so a tenant moves
between the two without translation. ``source`` says who owns the row: ``config`` rows are synced from the config
file at start and are read-only through the API and CLI; ``api`` rows are created through the API or CLI.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import JSON, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from monitor.core.api.schema import UtcDatetime
from monitor.core.config import (
    NAME_RE,
    TenantConfig,
    TenantContract,
    TenantDefinition,
    TenantReceivers,
    TenantSelector,
)
from monitor.core.store import Base, UtcDateTime


class TenantOrigin(str, Enum):
    CONFIG = "config"  # from the config file: read-only through the API
    API = "api"  # created through the API or the CLI


class Tenant(Base):
    __tablename__ = "tenants"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    display_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    source: Mapped[str] = mapped_column(String(16))  # TenantOrigin value
    spec: Mapped[dict] = mapped_column(JSON)  # TenantConfig fields except name and display_name
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())

    def to_config(self) -> TenantConfig:
        """The tenant as the one schema the matcher, the alert engine and the reports understand."""
        return TenantConfig.model_validate({**self.spec, "name": self.name, "display_name": self.display_name})


class RegistryVersion(Base):
    """One row (``id`` 1): a counter bumped in the same transaction as every change that can take access away or
    change what a tenant owns (tenant created, replaced, deleted or synced; token revoked).

    Servers remember tokens and tenant answers while it stands still (``monitor.health.watch``); a new value makes them
    forget. Writers must bump it with ``monitor.tenants.service.bump_version``, never set it.
    """

    __tablename__ = "registry_version"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    version: Mapped[int] = mapped_column(Integer, default=0)


class RegistrySource(Base):
    """One row (``id`` 1): which configuration the config tenants were last synced from, by what, and when a running
    service last said it is alive. ``kafka-health tenants sync`` refuses to sync from another configuration while a
    service that synced from its own is running (``service_seen_at`` recent), so a CLI pointed at the wrong file
    cannot take the service's tenants (and, by cascade, their tokens) away."""

    __tablename__ = "registry_source"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    config_path: Mapped[str] = mapped_column(String(1024))
    config_digest: Mapped[str] = mapped_column(String(64))  # sha256 of the config tenants, as synced
    synced_by: Mapped[str] = mapped_column(String(16))  # "serve" or "cli"
    synced_at: Mapped[datetime] = mapped_column(UtcDateTime())
    service_seen_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


# ---------------------------------------------------------------------------------------------------------------
# API schemas


_OWNS_SOMETHING = {
    "anyOf": [
        {"required": ["whole_clusters"], "properties": {"whole_clusters": {"minItems": 1}}},
        {"required": ["selectors"], "properties": {"selectors": {"minItems": 1}}},
    ]
}


class TenantSpec(TenantDefinition):
    """What a tenant owns and is promised: the fields and rules of a tenant in the config file, without its name."""

    # The "owns something" rule, also in the schema, so clients (and schemathesis) know it.
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_OWNS_SOMETHING)

    def to_config(self, name: str) -> TenantConfig:
        return TenantConfig.model_validate({**self.model_dump(), "name": name})


class TenantCreate(TenantSpec):
    name: str = Field(pattern=NAME_RE, description="lowercase letters, digits, '_', '.', '-'; at most 63")


class TenantRead(BaseModel):
    name: str
    display_name: str | None
    source: TenantOrigin
    whole_clusters: tuple[str, ...]
    selectors: tuple[TenantSelector, ...]
    contract: TenantContract
    receivers: TenantReceivers
    created_at: UtcDatetime
    updated_at: UtcDatetime

    @classmethod
    def of(cls, row: Tenant) -> TenantRead:
        cfg = row.to_config()
        return cls(
            name=row.name,
            display_name=row.display_name,
            source=TenantOrigin(row.source),
            whole_clusters=cfg.whole_clusters,
            selectors=cfg.selectors,
            contract=cfg.contract,
            receivers=cfg.receivers,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )
