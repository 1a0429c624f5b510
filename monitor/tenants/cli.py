"""``kafka-health tenants list|show|create|delete``.

Works on the store named by the config (``--config``, else ``$KAFKA_HEALTH_CONFIG``, else the local stack's), which
``open_registry`` first migrates and syncs with the config file's tenants, exactly as ``serve`` does at start. The
``tokens`` commands (``monitor.api.cli``) open it the same way.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from monitor.core.config import Config
from monitor.core.errors import ConfigError, ConfigProblem, Invalid, NotFound
from monitor.core.store import Store
from monitor.core.times import utc_now
from monitor.stack.cli import add_config_args, config_from_args
from monitor.store import open_store
from monitor.tenants import service
from monitor.tenants.models import TenantCreate, TenantRead


def open_registry(args) -> tuple[Config, Store]:
    """The command's config and its store, migrated and synced with the config file's tenants."""
    config = config_from_args(args)
    store = open_store(config.store)
    with store.session() as s:
        service.sync_config(db_session=s, config=config, now=utc_now())
    return config, store


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
    for flag, key in (("topic_prefix", "topic_prefixes"), ("principal", "principals"),
                      ("client_id_prefix", "client_id_prefixes"), ("group_prefix", "group_prefixes")):
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
    config, store = open_registry(args)
    with store.session() as s:
        row = service.create(db_session=s, tenant_in=tenant_in.to_config(args.name),
                             clusters=[c.name for c in config.clusters], now=utc_now())
        print(TenantRead.of(row).model_dump_json(indent=2))
    return 0


def _tenants_list(args) -> int:
    _, store = open_registry(args)
    with store.session() as s:
        rows = service.get_page(db_session=s, after=None, limit=1_000_000)
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
    _, store = open_registry(args)
    with store.session() as s:
        print(TenantRead.of(_existing(s, args.name)).model_dump_json(indent=2))
    return 0


def _tenants_delete(args) -> int:
    _, store = open_registry(args)
    with store.session() as s:
        service.delete(db_session=s, tenant=_existing(s, args.name))
    print(f"deleted tenant {args.name} and its tokens")
    return 0


def register(sub) -> None:
    t = sub.add_parser("tenants", help="list, show, create and delete tenants")
    tsub = t.add_subparsers(dest="tenants_command", required=True)
    p = tsub.add_parser("list", help="every tenant, with its source (config or api) and clusters")
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
