"""``kafka-health tenants list|show|create|delete`` and ``kafka-health tokens create|list|revoke``.

Both work on the store named by the config (``--config``, else ``$KAFKA_HEALTH_CONFIG``, else the local stack's),
which is first migrated and synced with the config file's tenants, exactly as ``serve`` does at start. A token is
printed once, on stdout alone, so ``TOKEN=$(kafka-health tokens create --tenant t)`` captures just the token.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import yaml
from pydantic import ValidationError

from monitor.core.config import Config
from monitor.core.errors import ConfigError, ConfigProblem, Invalid, NotFound
from monitor.core.store import Store


def _open(args) -> tuple[Config, Store]:
    from monitor.serve import config_from_args
    from monitor.store.migrate import upgrade
    from monitor.tenants import service

    config = config_from_args(args)
    ref = config.store.password
    store = Store(config.store.url, password=ref.resolve().get_secret_value() if ref is not None else None)
    upgrade(store)
    with store.session() as s:
        service.sync_config(db_session=s, config=config, now=_now())
    return config, store


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _common(p: argparse.ArgumentParser) -> None:
    from monitor.stack.cli import add_stack_args

    p.add_argument("--config", default=None, help="config YAML (default: $KAFKA_HEALTH_CONFIG, else the local stack)")
    add_stack_args(p)


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
    from monitor.tenants import service
    from monitor.tenants.models import TenantCreate, TenantRead

    try:
        tenant_in = TenantCreate.model_validate({**_spec_from_args(args), "name": args.name})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'tenant'}: {e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors(include_url=False)
        )
        raise Invalid(problems) from None
    config, store = _open(args)
    with store.session() as s:
        row = service.create(db_session=s, tenant_in=tenant_in.to_config(args.name),
                             clusters=[c.name for c in config.clusters], now=_now())
        print(TenantRead.of(row).model_dump_json(indent=2))
    return 0


def _tenants_list(args) -> int:
    from monitor.tenants import service

    _, store = _open(args)
    with store.session() as s:
        rows = service.get_page(db_session=s, after=None, limit=1_000_000)
        print(f"{'name':<32}{'source':<8}clusters")
        for r in rows:
            cfg = r.to_config()
            clusters = [f"{c} (whole)" for c in cfg.whole_clusters] + sorted({x.cluster for x in cfg.selectors})
            print(f"{r.name:<32}{r.source:<8}{', '.join(clusters)}")
    return 0


def _existing(db_session, name: str):
    from monitor.tenants import service

    row = service.get(db_session=db_session, name=name)
    if row is None:
        raise NotFound(f"no tenant named {name!r}")
    return row


def _tenants_show(args) -> int:
    from monitor.tenants.models import TenantRead

    _, store = _open(args)
    with store.session() as s:
        print(TenantRead.of(_existing(s, args.name)).model_dump_json(indent=2))
    return 0


def _tenants_delete(args) -> int:
    from monitor.tenants import service

    _, store = _open(args)
    with store.session() as s:
        service.delete(db_session=s, tenant=_existing(s, args.name))
    print(f"deleted tenant {args.name} and its tokens")
    return 0


def _tokens_create(args) -> int:
    from monitor.api import tokens

    _, store = _open(args)
    kind = tokens.TokenKind.OPERATOR if args.operator else tokens.TokenKind.TENANT
    with store.session() as s:
        row, token = tokens.create(db_session=s, kind=kind, tenant=args.tenant, name=args.name or "", now=_now())
    who = "operator" if args.operator else f"tenant {args.tenant}"
    print(f"created {who} token {row.id}; it is shown once, store it now:", file=sys.stderr)
    print(token)
    return 0


def _tokens_list(args) -> int:
    from monitor.api import tokens

    _, store = _open(args)
    with store.session() as s:
        rows = tokens.get_all(db_session=s, tenant=args.tenant)
        if args.json:
            print(json.dumps([tokens.TokenRead.of(r).model_dump(mode="json") for r in rows], indent=2))
            return 0
        print(f"{'id':<14}{'kind':<10}{'tenant':<24}{'name':<24}{'created':<22}revoked")
        for r in rows:
            print(f"{r.id:<14}{r.kind:<10}{r.tenant or '-':<24}{r.name or '-':<24}"
                  f"{r.created_at:%Y-%m-%d %H:%M:%S}   {r.revoked_at or '-'}")
    return 0


def _tokens_revoke(args) -> int:
    from monitor.api import tokens

    _, store = _open(args)
    with store.session() as s:
        row = tokens.get(db_session=s, token_id=args.id)
        if row is None:
            raise NotFound(f"no token with id {args.id!r}")
        tokens.revoke(db_session=s, token=row, now=_now())
    print(f"revoked token {args.id}")
    return 0


def register(sub) -> None:
    t = sub.add_parser("tenants", help="list, show, create and delete tenants")
    tsub = t.add_subparsers(dest="tenants_command", required=True)
    p = tsub.add_parser("list", help="every tenant, with its source (config or api) and clusters")
    _common(p)
    p.set_defaults(func=_tenants_list)
    p = tsub.add_parser("show", help="one tenant's definition as JSON")
    p.add_argument("name")
    _common(p)
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
    _common(p)
    p.set_defaults(func=_tenants_create)
    p = tsub.add_parser("delete", help="delete a tenant created through the API or CLI, and its tokens")
    p.add_argument("name")
    _common(p)
    p.set_defaults(func=_tenants_delete)

    k = sub.add_parser("tokens", help="create, list and revoke API tokens")
    ksub = k.add_subparsers(dest="tokens_command", required=True)
    p = ksub.add_parser("create", help="create a token and print it once")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--operator", action="store_true", help="sees and manages everything")
    who.add_argument("--tenant", help="sees only this tenant")
    p.add_argument("--name", help="what the token is for (shown in listings)")
    _common(p)
    p.set_defaults(func=_tokens_create)
    p = ksub.add_parser("list", help="tokens (never their secrets)")
    p.add_argument("--tenant", default=None, help="only this tenant's tokens")
    p.add_argument("--json", action="store_true")
    _common(p)
    p.set_defaults(func=_tokens_list)
    p = ksub.add_parser("revoke", help="revoke a token by id; it stops working at once")
    p.add_argument("id")
    _common(p)
    p.set_defaults(func=_tokens_revoke)
