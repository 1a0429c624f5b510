"""``kafka-health tenants list|show|create|delete|sync``.

Works on the store named by the configuration every command finds the same way
(``monitor.config_source.find_config``).
No command here but ``tenants sync`` syncs the config file's tenants into the store (updates and removals): that
happens where the service starts, and when an operator asks for it. A read-only command (``list``, ``show``,
``tokens list``) never changes the registry; a writing one (``create``, ``delete``, ``tokens create``) only adds the
file's tenants the store lacks. So a CLI pointed at another configuration cannot remove or redefine the running
service's tenants, nor (by cascade) revoke their tokens. ``sync`` shows what it would remove that still owns tokens,
alerts or reports and wants ``--yes`` for it, and refuses a configuration other than the one a running service synced
from.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml
from pydantic import ValidationError

from monitor.config_source import add_config_args, config_from_args, find_config
from monitor.core.config import Config
from monitor.core.errors import ConfigError, ConfigProblem, Conflict, Invalid, NotFound
from monitor.core.store import Store
from monitor.core.times import utc_now
from monitor.store import open_store
from monitor.tenants import service
from monitor.tenants.models import Tenant, TenantCreate, TenantOrigin, TenantRead


def open_registry(args, *, writing: bool = False) -> tuple[Config, Store]:
    """The command's config and its store, migrated. A ``writing`` command first adds the config file's tenants the
    store does not have yet (``service.add_missing_config_tenants``: never an update or a removal), so a token for a
    tenant of the file can be made before the service has started once; a reading command writes nothing."""
    config = config_from_args(args)
    store = open_store(config.store)
    if writing:
        with store.session() as s:
            service.add_missing_config_tenants(db_session=s, config=config, now=utc_now())
    return config, store


def _registry_view(db_session, config: Config) -> list[Tenant]:
    """Every tenant, read only: the store's, and the config file's that the store does not have yet (not synced:
    shown as the file says, not written)."""
    rows = {r.name: r for r in service.get_page(db_session=db_session, after=None, limit=1_000_000)}
    now = utc_now()
    for cfg in config.tenants:
        if cfg.name not in rows:
            rows[cfg.name] = Tenant(
                name=cfg.name,
                display_name=cfg.display_name,
                source=TenantOrigin.CONFIG.value,
                spec=service.spec_of(cfg),
                created_at=now,
                updated_at=now,
            )
    return [rows[n] for n in sorted(rows)]


def _tenants_sync(args) -> int:
    choice = find_config(args)
    config, store = open_registry(args)
    origin = service.ConfigOrigin.of(config, choice.label)
    try:
        with store.session() as s:
            now = utc_now()
            running = service.running_service_source(db_session=s, now=now)
            if running is not None and running.config_digest != origin.digest:
                raise Conflict(
                    f"a running service synced its tenants from {running.config_path}; this command uses "
                    f"{choice}. Sync from the service's configuration (--config {running.config_path}), "
                    "or stop the service first"
                )
            plan = service.plan_sync(db_session=s, config=config)
            if plan.dependents and not args.yes:
                for name, owned in sorted(plan.dependents.items()):
                    print(
                        f"would remove tenant {name}, which owns "
                        + ", ".join(f"{n} {what}" for what, n in sorted(owned.items())),
                        file=sys.stderr,
                    )
                raise Invalid(
                    f"{len(plan.dependents)} tenant(s) to remove still own tokens, alerts or reports "
                    "(their tokens would stop working); run again with --yes to remove them",
                    field="--yes",
                )
            result = service.sync_config(db_session=s, config=config, now=now, origin=origin, by="cli")
    finally:
        store.dispose()
    print(
        f"synced the tenants of {choice}: added {list(result.added)}, updated {list(result.updated)}, "
        f"removed {list(result.removed)}"
    )
    return 0


def _pairs(values: list[str], flag: str) -> list[tuple[str, str]]:
    out = []
    for v in values:
        cluster, sep, item = v.partition(":")
        if not sep or not cluster or not item:
            raise Invalid(f"expected CLUSTER:VALUE, got {v!r}", field=flag)
        out.append((cluster, item))
    return out


def _spec_from_args(args) -> dict:
    if args.file:
        try:
            data = yaml.safe_load(Path(args.file).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError([ConfigProblem(args.file, None, "", f"cannot read tenant spec: {exc}")]) from None
        if not isinstance(data, dict):
            raise ConfigError([ConfigProblem(args.file, 1, "", "a tenant spec is a mapping")])
        data.pop("name", None)
    else:
        data = {}
    if args.display_name:
        data["display_name"] = args.display_name
    if args.whole_cluster:
        data["whole_clusters"] = [*data.get("whole_clusters", []), *args.whole_cluster]
    selectors: dict[str, dict[str, list[str]]] = {}
    for flag, key in (
        ("topic_prefix", "topic_prefixes"),
        ("principal", "principals"),
        ("client_id_prefix", "client_id_prefixes"),
        ("group_prefix", "group_prefixes"),
    ):
        for cluster, item in _pairs(getattr(args, flag) or [], "--" + flag.replace("_", "-")):
            selectors.setdefault(cluster, {}).setdefault(key, []).append(item)
    if selectors:
        data["selectors"] = [*data.get("selectors", []), *({"cluster": c, **v} for c, v in selectors.items())]
    return data


def _tenants_create(args) -> int:
    try:
        tenant_in = TenantCreate.model_validate({**_spec_from_args(args), "name": args.name})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'tenant'}: {e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors(include_url=False)
        )
        raise Invalid(problems) from None
    config, store = open_registry(args, writing=True)
    with store.session() as s:
        row = service.create(
            db_session=s,
            tenant_in=tenant_in.to_config(args.name),
            clusters=[c.name for c in config.clusters],
            now=utc_now(),
        )
        print(TenantRead.of(row).model_dump_json(indent=2))
    return 0


def _tenants_list(args) -> int:
    config, store = open_registry(args)
    with store.session() as s:
        rows = _registry_view(s, config)
        if args.json:  # the API's shape (TenantRead), a list
            print(json.dumps([TenantRead.of(r).model_dump(mode="json") for r in rows], indent=2))
            return 0
        print(f"{'name':<32}{'source':<8}clusters")
        for r in rows:
            cfg = r.to_config()
            clusters = [f"{c} (whole)" for c in cfg.whole_clusters] + sorted({x.cluster for x in cfg.selectors})
            print(f"{r.name:<32}{r.source:<8}{', '.join(clusters)}")
    return 0


def _existing(db_session, name: str):
    row = service.get(db_session=db_session, name=name)
    if row is None:
        raise NotFound(f"no tenant named {name!r}")
    return row


def _tenants_show(args) -> int:
    config, store = open_registry(args)
    with store.session() as s:
        row = next((r for r in _registry_view(s, config) if r.name == args.name), None)
        if row is None:
            raise NotFound(f"no tenant named {args.name!r}")
        print(TenantRead.of(row).model_dump_json(indent=2))
    return 0


def _tenants_delete(args) -> int:
    _, store = open_registry(args, writing=True)
    with store.session() as s:
        service.delete(db_session=s, tenant=_existing(s, args.name))
    print(f"deleted tenant {args.name} and its tokens")
    return 0


def register(sub) -> None:
    t = sub.add_parser("tenants", help="list, show, create and delete tenants")
    tsub = t.add_subparsers(dest="tenants_command", required=True)
    p = tsub.add_parser("list", help="every tenant, with its source (config or api) and clusters")
    p.add_argument("--json", action="store_true", help="every tenant's definition, as the API shows it")
    add_config_args(p)
    p.set_defaults(func=_tenants_list)
    p = tsub.add_parser("show", help="one tenant's definition as JSON")
    p.add_argument("name")
    add_config_args(p)
    p.set_defaults(func=_tenants_show)
    p = tsub.add_parser("create", help="create a tenant (selectors as flags, or --file with config-file keys)")
    p.add_argument("name")
    p.add_argument("--file", help="YAML with the keys of a tenant in the config file (selectors, contract, ...)")
    p.add_argument("--display-name")
    p.add_argument("--whole-cluster", action="append", metavar="CLUSTER", help="own a whole cluster (repeatable)")
    p.add_argument("--topic-prefix", action="append", metavar="CLUSTER:PREFIX")
    p.add_argument("--principal", action="append", metavar="CLUSTER:PRINCIPAL")
    p.add_argument("--client-id-prefix", action="append", metavar="CLUSTER:PREFIX")
    p.add_argument("--group-prefix", action="append", metavar="CLUSTER:PREFIX")
    add_config_args(p)
    p.set_defaults(func=_tenants_create)
    p = tsub.add_parser("delete", help="delete a tenant created through the API or CLI, and its tokens")
    p.add_argument("name")
    add_config_args(p)
    p.set_defaults(func=_tenants_delete)
    p = tsub.add_parser("sync", help="write the config file's tenants into the store (serve does it at start)")
    p.add_argument(
        "--yes", action="store_true", help="also remove config tenants that still own tokens, alerts or reports"
    )
    add_config_args(p)
    p.set_defaults(func=_tenants_sync)
