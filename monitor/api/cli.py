"""``kafka-health tokens create|list|revoke``: API tokens, on the store the command's config names.

A token is printed once, on stdout alone, so ``TOKEN=$(kafka-health tokens create --tenant t)`` captures just the
token; the store keeps only its hash. ``--expires-in 30d`` or ``--expires-at 2027-01-31T00:00:00Z`` gives it an end;
without either it lives until revoked.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta

from monitor.api import tokens
from monitor.config_source import add_config_args
from monitor.core.errors import Invalid, NotFound
from monitor.core.times import as_utc, parse_duration, utc_now
from monitor.tenants.cli import open_registry


def expiry(*, expires_in: str | None, expires_at: str | None, now: datetime) -> datetime | None:
    """``--expires-in`` (a duration: 12h, 30d) or ``--expires-at`` (RFC 3339; no offset means UTC) -> the instant."""
    if expires_in is not None:
        try:
            seconds = parse_duration(expires_in)
        except ValueError as exc:
            raise Invalid(str(exc), field="--expires-in") from None
        if seconds <= 0:
            raise Invalid(f"expected a positive duration, got {expires_in!r}", field="--expires-in")
        try:
            return now + timedelta(seconds=seconds)
        except OverflowError:
            raise Invalid(f"{expires_in!r} ends after the year 9999", field="--expires-in") from None
    if expires_at is not None:
        try:
            return as_utc(datetime.fromisoformat(expires_at))
        except ValueError:
            raise Invalid(
                f"expected a time like 2027-01-31T00:00:00Z, got {expires_at!r}", field="--expires-at"
            ) from None
    return None


def _tokens_create(args) -> int:
    _, store = open_registry(args, writing=True)
    kind = tokens.TokenKind.OPERATOR if args.operator else tokens.TokenKind.TENANT
    now = utc_now()
    until = expiry(expires_in=args.expires_in, expires_at=args.expires_at, now=now)
    with store.session() as s:
        row, token = tokens.create(
            db_session=s, kind=kind, tenant=args.tenant, name=args.name or "", now=now, expires_at=until
        )
    who = "operator" if args.operator else f"tenant {args.tenant}"
    ends = f"expires {row.expires_at:%Y-%m-%d %H:%M:%S} UTC" if row.expires_at else "never expires"
    print(f"created {who} token {row.id} ({ends}); it is shown once, store it now:", file=sys.stderr)
    print(token)
    return 0


def _tokens_list(args) -> int:
    _, store = open_registry(args)
    with store.session() as s:
        rows = tokens.get_all(db_session=s, tenant=args.tenant)
        if args.json:
            print(json.dumps([tokens.TokenRead.of(r).model_dump(mode="json") for r in rows], indent=2))
            return 0
        print(f"{'id':<14}{'kind':<10}{'tenant':<24}{'name':<24}{'created':<22}{'expires':<22}revoked")
        for r in rows:
            print(
                f"{r.id:<14}{r.kind:<10}{r.tenant or '-':<24}{r.name or '-':<24}"
                f"{r.created_at:%Y-%m-%d %H:%M:%S}   {_when(r.expires_at):<22}{_when(r.revoked_at)}"
            )
    return 0


def _when(t: datetime | None) -> str:
    return f"{t:%Y-%m-%d %H:%M:%S}" if t is not None else "-"


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
    ends = p.add_mutually_exclusive_group()
    ends.add_argument("--expires-in", metavar="DURATION", help="refused from this long after now (e.g. 12h, 30d)")
    ends.add_argument("--expires-at", metavar="TIME", help="refused from this instant (RFC 3339; no offset: UTC)")
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
