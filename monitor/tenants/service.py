"""Tenant registry: create, read, update, delete, and the sync of config-file tenants into the store.

Two sources, one table. Tenants from the config file are synced into the store at start (``sync_config``) and marked
``source=config``; they are read-only through the API and CLI (edit the file instead). Tenants created through the
API or CLI are ``source=api``. A config tenant wins a name clash with an API tenant (the file is the operator's
declared intent); any overlap of selectors between the two sources is refused with the same check the config file
gets (``monitor.core.tenancy.find_overlaps``), so every resource keeps at most one owner.

Service functions take keyword-only ``db_session``, return None for "not there", raise ``Conflict``/``Invalid`` for
refused writes, and never commit: the caller's unit of work does.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from sqlalchemy import Text, bindparam, cast, column, func, or_, select, table, text
from sqlalchemy import delete as sql_delete
from sqlalchemy import update as sql_update  # `update` is this module's own (PUT)
from sqlalchemy.orm import Session

from monitor.core.config import Config, TenantConfig
from monitor.core.errors import Conflict, Invalid
from monitor.core.tenancy import TenantIndex, find_overlaps
from monitor.tenants.models import RegistrySource, RegistryVersion, Tenant, TenantOrigin

log = logging.getLogger(__name__)


def get(*, db_session: Session, name: str) -> Tenant | None:
    return db_session.get(Tenant, name)


def get_page(*, db_session: Session, after: str | None, limit: int, only: str | None = None) -> list[Tenant]:
    """Tenants ordered by name, after the name ``after``; ``only`` restricts to one name (a tenant's own view)."""
    q = select(Tenant).order_by(Tenant.name).limit(limit)
    if after is not None:
        q = q.where(Tenant.name > after)
    if only is not None:
        q = q.where(Tenant.name == only)
    return list(db_session.scalars(q))


@lru_cache(maxsize=16384)
def _parse(name: str, display_name: str | None, spec_json: str) -> TenantConfig:
    # Keyed by the row's whole content, so an entry can never be out of date; TenantConfig is immutable, so sharing
    # one is safe. Validating a spec costs ~25 us: every create checks overlaps against every tenant, and health
    # reads its tenant on every cache miss, so re-validating unchanged rows was most of their cost.
    return TenantConfig.model_validate({**json.loads(spec_json), "name": name, "display_name": display_name})


# The spec as the database stored it (text): the parse memo's key, and no JSON decoding for rows already seen.
_CONFIG_COLUMNS = (Tenant.name, Tenant.display_name, cast(Tenant.spec, Text))


_CONFIG_OF = select(*_CONFIG_COLUMNS).where(Tenant.name == bindparam("name"))  # built once: compiled once


def get_config(*, db_session: Session, name: str) -> TenantConfig | None:
    """One tenant as ``TenantConfig`` (plain columns on the session's connection, no ORM object), or None."""
    row = db_session.connection().execute(_CONFIG_OF, {"name": name}).first()
    return _parse(*row) if row is not None else None


def get_all_configs(*, db_session: Session) -> list[TenantConfig]:
    return [_parse(*row) for row in db_session.execute(select(*_CONFIG_COLUMNS).order_by(Tenant.name))]


def bump_version(*, db_session: Session) -> None:
    """Tell every server that tenants or tokens changed (``RegistryVersion``). Call in the writing unit of work."""
    bumped = db_session.execute(
        sql_update(RegistryVersion).where(RegistryVersion.id == 1).values(version=RegistryVersion.version + 1)
    ).rowcount
    if not bumped:  # a schema made without the migrations (unit tests' create_all) has no row yet
        db_session.add(RegistryVersion(id=1, version=1))
        db_session.flush()


_VERSION = select(RegistryVersion.version).where(RegistryVersion.id == 1)


def version(*, db_session: Session) -> int:
    return db_session.connection().execute(_VERSION).scalar() or 0


def build_index(*, db_session: Session) -> TenantIndex:
    """The matcher over every tenant, config and API: what collectors and the alert engine should refresh from."""
    return TenantIndex(get_all_configs(db_session=db_session))


def spec_of(cfg: TenantConfig) -> dict:
    """What the store keeps of a tenant's definition (the ``spec`` column)."""
    return _spec(cfg)


def _spec(cfg: TenantConfig) -> dict:
    return cfg.model_dump(mode="json", exclude={"name", "display_name"})


def clusters_of(cfg: TenantConfig) -> set[str]:
    """The clusters a tenant is on: those it owns whole and those its selectors name."""
    return {*cfg.whole_clusters, *(s.cluster for s in cfg.selectors)}


def _check(cfg: TenantConfig, *, others: Iterable[TenantConfig], clusters: Iterable[str]) -> None:
    known = set(clusters)
    for i, c in enumerate(cfg.whole_clusters):
        if c not in known:
            raise Invalid(
                f"unknown cluster {c!r}; known: {', '.join(sorted(known)) or 'none'}", field=f"whole_clusters[{i}]"
            )
    for i, s in enumerate(cfg.selectors):
        if s.cluster not in known:
            raise Invalid(
                f"unknown cluster {s.cluster!r}; known: {', '.join(sorted(known)) or 'none'}",
                field=f"selectors[{i}].cluster",
            )
    # Only tenants on one of its clusters can overlap it: skip the rest before the (whole-registry) check.
    mine = clusters_of(cfg)
    overlaps = [
        o
        for o in find_overlaps([cfg, *(t for t in others if mine & clusters_of(t))])
        if cfg.name in (o.tenant, o.other_tenant)
    ]
    if overlaps:
        raise Conflict("; ".join(str(o) for o in overlaps))


def _serialize_writes(db_session: Session) -> None:
    """Check-then-write must be atomic, or two concurrent creates could each pass the overlap check against a
    registry without the other. Take the database's write lock first; it is held until the unit of work ends."""
    if db_session.get_bind().dialect.name == "postgresql":
        db_session.execute(text("SELECT pg_advisory_xact_lock(7243111)"))
    else:  # SQLite: any write statement takes the database's write lock, even one that changes no row
        db_session.execute(text("DELETE FROM tenants WHERE 1 = 0"))


def _others(db_session: Session, name: str) -> list[TenantConfig]:
    return [t for t in get_all_configs(db_session=db_session) if t.name != name]


def create(*, db_session: Session, tenant_in: TenantConfig, clusters: Iterable[str], now: datetime) -> Tenant:
    """Add an API tenant. Conflict if the name is taken or its selectors overlap another tenant's."""
    _serialize_writes(db_session)
    if get(db_session=db_session, name=tenant_in.name) is not None:
        raise Conflict(f"tenant {tenant_in.name!r} already exists")
    _check(tenant_in, others=_others(db_session, tenant_in.name), clusters=clusters)
    row = Tenant(
        name=tenant_in.name,
        display_name=tenant_in.display_name,
        source=TenantOrigin.API.value,
        spec=_spec(tenant_in),
        created_at=now,
        updated_at=now,
    )
    db_session.add(row)
    bump_version(db_session=db_session)
    db_session.flush()
    return row


def _writable(tenant: Tenant) -> None:
    if tenant.source == TenantOrigin.CONFIG.value:
        raise Conflict(f"tenant {tenant.name!r} is defined in the config file; change it there")


def update(
    *, db_session: Session, tenant: Tenant, tenant_in: TenantConfig, clusters: Iterable[str], now: datetime
) -> Tenant:
    """Replace an API tenant's definition (PUT semantics)."""
    _writable(tenant)
    _serialize_writes(db_session)
    _check(tenant_in, others=_others(db_session, tenant.name), clusters=clusters)
    tenant.display_name = tenant_in.display_name
    tenant.spec = _spec(tenant_in)
    tenant.updated_at = now
    bump_version(db_session=db_session)
    db_session.flush()
    return tenant


# What a tenant's name keys besides its tokens (which go by cascade): purged with the tenant, so a name re-used
# later inherits nothing (its alert instances, silences and report index). By table, not by model, so the registry
# imports none of the packages that own them.
_PURGED_WITH_TENANT = ("alert_instances", "alert_silences", "report_index")


def _purge(db_session: Session, name: str) -> None:
    for table_name in _PURGED_WITH_TENANT:
        t = table(table_name, column("tenant"))
        db_session.execute(sql_delete(t).where(t.c.tenant == name))


def delete(*, db_session: Session, tenant: Tenant) -> None:
    """Delete an API tenant, its tokens (by cascade), its alert instances, silences and report index: a tenant
    created later under the same name starts with nothing of this one's."""
    _writable(tenant)
    _purge(db_session, tenant.name)
    db_session.delete(tenant)
    bump_version(db_session=db_session)
    db_session.flush()


@dataclass(frozen=True)
class SyncResult:
    added: tuple[str, ...]
    updated: tuple[str, ...]
    removed: tuple[str, ...]
    taken_over: tuple[str, ...]  # API tenants now owned by the config file (same name)


@dataclass(frozen=True)
class ConfigOrigin:
    """Which configuration a sync comes from: its file (or what stands for it) and a digest of its tenants."""

    path: str
    digest: str

    @classmethod
    def of(cls, config: Config, path: str) -> ConfigOrigin:
        tenants = sorted((t.model_dump(mode="json") for t in config.tenants), key=lambda t: t["name"])
        return cls(path, hashlib.sha256(json.dumps(tenants, sort_keys=True).encode()).hexdigest())


@dataclass(frozen=True)
class SyncPlan:
    """What ``sync_config`` would change, and what each removed tenant still owns (removing it revokes its tokens
    by cascade and orphans its alert history and reports)."""

    added: tuple[str, ...]
    updated: tuple[str, ...]
    removed: tuple[str, ...]
    taken_over: tuple[str, ...]
    dependents: dict[str, dict[str, int]]  # removed tenant -> {"tokens": n, "alerts": n, "reports": n}, non-zero only

    @property
    def changes(self) -> bool:
        return bool(self.added or self.updated or self.removed)


# What depends on a tenant, counted by table so the registry imports none of its dependents' packages.
_DEPENDENTS = {"tokens": "api_tokens", "alerts": "alert_instances", "reports": "report_index"}


def _dependents(db_session: Session, names: Iterable[str]) -> dict[str, dict[str, int]]:
    names = sorted(names)
    out: dict[str, dict[str, int]] = {}
    if not names:
        return out
    for what, table_name in _DEPENDENTS.items():
        t = table(table_name, column("tenant"))
        q = select(t.c.tenant, func.count()).where(t.c.tenant.in_(names)).group_by(t.c.tenant)
        for tenant, n in db_session.execute(q):
            out.setdefault(tenant, {})[what] = n
    return out


def plan_sync(*, db_session: Session, config: Config) -> SyncPlan:
    """What syncing ``config``'s tenants would do, without doing it. Raises Conflict when a config tenant overlaps an
    API tenant: the operator must resolve it (delete or change the API tenant, or change the file) before the service
    starts, rather than the API silently guessing an owner."""
    rows = {r.name: r for r in db_session.scalars(select(Tenant))}
    wanted = {t.name: t for t in config.tenants}
    api_tenants = [r.to_config() for n, r in rows.items() if r.source == TenantOrigin.API.value and n not in wanted]
    overlaps = find_overlaps([*config.tenants, *api_tenants])
    if overlaps:
        raise Conflict("config tenants overlap tenants created through the API: " + "; ".join(str(o) for o in overlaps))
    added = tuple(n for n in wanted if n not in rows)
    taken = tuple(n for n in wanted if n in rows and rows[n].source != TenantOrigin.CONFIG.value)
    updated = tuple(
        n
        for n, cfg in wanted.items()
        if n in rows
        and (
            rows[n].source != TenantOrigin.CONFIG.value
            or rows[n].spec != _spec(cfg)
            or rows[n].display_name != cfg.display_name
        )
    )
    removed = tuple(n for n, r in rows.items() if r.source == TenantOrigin.CONFIG.value and n not in wanted)
    return SyncPlan(added, updated, removed, taken, _dependents(db_session, removed))


def sync_config(
    *, db_session: Session, config: Config, now: datetime, origin: ConfigOrigin | None = None, by: str = "cli"
) -> SyncResult:
    """Make the store's config tenants equal ``config.tenants`` (see ``plan_sync``) and record where they came from.
    Idempotent. ``serve`` runs it at every start; the CLI only in ``kafka-health tenants sync``."""
    _serialize_writes(db_session)
    plan = plan_sync(db_session=db_session, config=config)
    rows = {r.name: r for r in db_session.scalars(select(Tenant))}
    for name in plan.added:
        cfg = next(t for t in config.tenants if t.name == name)
        db_session.add(
            Tenant(
                name=name,
                display_name=cfg.display_name,
                source=TenantOrigin.CONFIG.value,
                spec=_spec(cfg),
                created_at=now,
                updated_at=now,
            )
        )
    for name in plan.taken_over:
        log.warning("tenant %s was created through the API; the config file now defines it", name)
    for name in plan.updated:
        cfg = next(t for t in config.tenants if t.name == name)
        row = rows[name]
        row.source, row.spec, row.display_name, row.updated_at = (
            TenantOrigin.CONFIG.value,
            _spec(cfg),
            cfg.display_name,
            now,
        )
    for name in plan.removed:
        _purge(db_session, name)
        db_session.delete(rows[name])
    if plan.changes:
        bump_version(db_session=db_session)
    # A CLI sync beside a running service (necessarily from the service's own configuration: see `tenants sync`)
    # keeps the service's record, so another configuration stays refused while the service runs.
    if origin is not None and not (by == "cli" and running_service_source(db_session=db_session, now=now)):
        _record_origin(db_session, origin, by=by, now=now)
    db_session.flush()
    return SyncResult(plan.added, plan.updated, plan.removed, plan.taken_over)


def add_missing_config_tenants(*, db_session: Session, config: Config, now: datetime) -> tuple[str, ...]:
    """Add the config file's tenants that the store does not have yet, and nothing else: no update, no removal.

    What a writing CLI command (``tenants create``, ``tokens create --tenant``) needs before the service has started
    once. Additive only, so a command pointed at another configuration can add, never take away or redefine."""
    present = {r.name for r in db_session.scalars(select(Tenant))}
    missing = [t for t in config.tenants if t.name not in present]
    if not missing:
        return ()
    _serialize_writes(db_session)
    others = get_all_configs(db_session=db_session)
    clusters = [c.name for c in config.clusters]
    for cfg in missing:
        _check(cfg, others=others, clusters=clusters)
        db_session.add(
            Tenant(
                name=cfg.name,
                display_name=cfg.display_name,
                source=TenantOrigin.CONFIG.value,
                spec=_spec(cfg),
                created_at=now,
                updated_at=now,
            )
        )
        others.append(cfg)
    bump_version(db_session=db_session)
    db_session.flush()
    return tuple(t.name for t in missing)


# A running service marks itself alive every SERVICE_MARK_SECONDS; one not seen for SERVICE_ALIVE has stopped.
SERVICE_MARK_SECONDS = 30.0
SERVICE_ALIVE = timedelta(seconds=3 * SERVICE_MARK_SECONDS)


def _record_origin(db_session: Session, origin: ConfigOrigin, *, by: str, now: datetime) -> None:
    row = db_session.get(RegistrySource, 1)
    if row is None:
        row = RegistrySource(id=1)
        db_session.add(row)
    row.config_path, row.config_digest, row.synced_by, row.synced_at = origin.path[:1024], origin.digest, by, now
    row.service_seen_at = now if by == "serve" else None


def mark_service_alive(*, db_session: Session, now: datetime) -> None:
    """A running service's periodic "still here" (only for the source it synced itself). Every API replica marks:
    the mark means "some replica is alive", and it only moves forward, so a replica whose clock is behind never
    makes the service look older than another replica said it was."""
    db_session.execute(
        sql_update(RegistrySource)
        .where(
            RegistrySource.id == 1,
            RegistrySource.synced_by == "serve",
            or_(RegistrySource.service_seen_at.is_(None), RegistrySource.service_seen_at < now),
        )
        .values(service_seen_at=now)
    )


def running_service_source(*, db_session: Session, now: datetime) -> RegistrySource | None:
    """The configuration a running service synced from, or None when no service that synced is alive."""
    row = db_session.get(RegistrySource, 1)
    if row is None or row.synced_by != "serve" or row.service_seen_at is None:
        return None
    return row if now - row.service_seen_at <= SERVICE_ALIVE else None
