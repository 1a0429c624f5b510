"""``kafka-health rules export``, ``silences create|list|expire``, ``outbox replay``.

Every command takes ``--config`` (and the stack options) exactly like ``kafka-health serve``.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path

from alerts import repo
from alerts.rules import export_prometheus, load_rules
from alerts.views import silence_json
from monitor.config_source import add_config_args, config_from_args
from monitor.core.errors import KafkaHealthError
from monitor.core.times import parse_duration, utc_now
from monitor.store import open_store


def register(sub) -> None:
    p = sub.add_parser("rules", help="alert rules")
    rsub = p.add_subparsers(dest="rules_command", required=True)
    e = rsub.add_parser("export", help="write the Prometheus rule file equivalent to the built-in threshold rules")
    e.add_argument("--out", type=Path, default=None, help="file to write (default: stdout)")
    add_config_args(e)
    e.set_defaults(func=_export)

    p = sub.add_parser("silences", help="silence alerts")
    ssub = p.add_subparsers(dest="silences_command", required=True)
    c = ssub.add_parser("create", help="create a silence, e.g. silences create alertname=KafkaDiskFullRisk broker=1")
    c.add_argument("matchers", nargs="+", help="name=value, name!=value, name=~regex, name!~regex")
    c.add_argument("--duration", default="2h", help="how long (30m, 2h, 1d); default 2h")
    c.add_argument("--comment", default="")
    c.add_argument("--author", default="cli")
    add_config_args(c)
    c.set_defaults(func=_create)
    ls = ssub.add_parser("list", help="list silences")
    ls.add_argument("--json", action="store_true", help="as the API shows them")
    add_config_args(ls)
    ls.set_defaults(func=_list)
    x = ssub.add_parser("expire", help="expire a silence now")
    x.add_argument("id")
    add_config_args(x)
    x.set_defaults(func=_expire)

    p = sub.add_parser("outbox", help="notification outbox")
    osub = p.add_subparsers(dest="outbox_command", required=True)
    r = osub.add_parser("replay", help="move dead letters back to the outbox for delivery")
    r.add_argument("--target", default=None, help="only this target ('alertmanager' or a webhook URL)")
    add_config_args(r)
    r.set_defaults(func=_replay)


def _store(args):
    return open_store(config_from_args(args).store)


def _export(args) -> int:
    config = config_from_args(args)
    text = export_prometheus(
        load_rules(config.rules),
        interval_seconds=config.rules.evaluation_interval_seconds,
        slo_objective=config.slo.objective,
    )
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def parse_matcher(text: str) -> dict:
    for op, is_regex, is_equal in (("=~", True, True), ("!~", True, False), ("!=", False, False), ("=", False, True)):
        if op in text:
            name, value = text.split(op, 1)
            if name.strip():
                return {"name": name.strip(), "value": value, "is_regex": is_regex, "is_equal": is_equal}
    raise KafkaHealthError(f"not a matcher: {text!r} (use name=value, name!=value, name=~regex or name!~regex)")


def _create(args) -> int:
    try:
        seconds = parse_duration(args.duration)
    except ValueError as exc:
        raise KafkaHealthError(str(exc)) from None
    matchers = [parse_matcher(m) for m in args.matchers]
    store = _store(args)
    now = utc_now()
    with store.session() as s:
        row = repo.create_silence(
            matchers,
            now,
            now + timedelta(seconds=seconds),
            created_by=args.author,
            comment=args.comment,
            tenant=None,
            now=now,
            session=s,
        )
        print(row.id)
    return 0


def _list(args) -> int:
    store = _store(args)
    now = utc_now()
    with store.session() as s:
        rows = [silence_json(r, now) for r in repo.list_silences(session=s, limit=1000)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'id':<38}{'state':<9}{'ends_at':<27}matchers")
    for r in rows:
        ms = ",".join(f"{m['name']}{_op(m)}{m['value']}" for m in r["matchers"])
        print(f"{r['id']:<38}{r['state']:<9}{r['ends_at']:<27}{ms}")
    return 0


def _op(m: dict) -> str:
    ops = {(False, True): "=", (False, False): "!=", (True, True): "=~", (True, False): "!~"}
    return ops[(m["is_regex"], m["is_equal"])]


def _expire(args) -> int:
    store = _store(args)
    with store.session() as s:
        repo.expire_silence(args.id, now=utc_now(), session=s)
    print(f"expired {args.id}")
    return 0


def _replay(args) -> int:
    store = _store(args)
    with store.session() as s:
        n = repo.replay_dead_letters(now=utc_now(), session=s, target=args.target)
    print(f"{n} dead letter(s) back in the outbox")
    return 0
