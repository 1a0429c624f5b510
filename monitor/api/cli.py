"""``kafka-health tokens create|list|revoke``: API tokens, on the store the command's config names.

A token is printed once, on stdout alone, so ``TOKEN=$(kafka-health tokens create --tenant t)`` captures just the
token; the store keeps only its hash.
"""

from __future__ import annotations

import json
import sys

from monitor.api import tokens
from monitor.core.errors import NotFound
from monitor.core.times import utc_now
from monitor.stack.cli import add_config_args
from monitor.tenants.cli import open_registry


def _tokens_create(args) -> int:
    _, store = open_registry(args)
    kind = tokens.TokenKind.OPERATOR if args.operator else tokens.TokenKind.TENANT
    with store.session() as s:
        row, token = tokens.create(db_session=s, kind=kind, tenant=args.tenant, name=args.name or "", now=utc_now())
    who = "operator" if args.operator else f"tenant {args.tenant}"
    print(f"created {who} token {row.id}; it is shown once, store it now:", file=sys.stderr)
    print(token)
    return 0


def _tokens_list(args) -> int:
    _, store = open_registry(args)
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
    _, store = open_registry(args)
    with store.session() as s:
        row = tokens.get(db_session=s, token_id=args.id)
        if row is None:
            raise NotFound(f"no token with id {args.id!r}")
        tokens.revoke(db_session=s, token=row, now=utc_now())
    print(f"revoked token {args.id}")
    return 0


def register(sub) -> None:
    k = sub.add_parser("tokens", help="create, list and revoke API tokens")
    ksub = k.add_subparsers(dest="tokens_command", required=True)
    p = ksub.add_parser("create", help="create a token and print it once")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--operator", action="store_true", help="sees and manages everything")
    who.add_argument("--tenant", help="sees only this tenant")
    p.add_argument("--name", help="what the token is for (shown in listings)")
    add_config_args(p)
    p.set_defaults(func=_tokens_create)
    p = ksub.add_parser("list", help="tokens (never their secrets)")
    p.add_argument("--tenant", default=None, help="only this tenant's tokens")
    p.add_argument("--json", action="store_true")
    add_config_args(p)
    p.set_defaults(func=_tokens_list)
    p = ksub.add_parser("revoke", help="revoke a token by id; it stops working at once")
    p.add_argument("id")
    add_config_args(p)
    p.set_defaults(func=_tokens_revoke)
