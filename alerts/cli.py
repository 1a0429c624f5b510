"""``kafka-health rules export``, ``silences create|list|expire``, ``outbox replay``.

Every command takes ``--config`` (and the stack options) exactly like ``kafka-health serve``.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from monitor.core.errors import KafkaHealthError


def _common(p) -> None:
    from monitor.stack.cli import add_stack_args

    p.add_argument("--config", default=None, help="config YAML (default: $KAFKA_HEALTH_CONFIG, else the local stack)")
    add_stack_args(p)


def register(sub) -> None:
    p = sub.add_parser("rules", help="alert rules")
    rsub = p.add_subparsers(dest="rules_command", required=True)
    e = rsub.add_parser("export", help="write the Prometheus rule file equivalent to the built-in threshold rules")
    e.add_argument("--out", type=Path, default=None, help="file to write (default: stdout)")
    _common(e)
    e.set_defaults(func=_export)

    p = sub.add_parser("silences", help="silence alerts")
    ssub = p.add_subparsers(dest="silences_command", required=True)
    c = ssub.add_parser("create", help="create a silence, e.g. silences create alertname=KafkaDiskFullRisk broker=1")
    c.add_argument("matchers", nargs="+", help="name=value, name!=value, name=~regex, name!~regex")
    c.add_argument("--duration", default="2h", help="how long (30m, 2h, 1d); default 2h")
    c.add_argument("--comment", default="")
    c.add_argument("--author", default="cli")
    _common(c)
    c.set_defaults(func=_create)
    ls = ssub.add_parser("list", help="list silences")
    _common(ls)
    ls.set_defaults(func=_list)
    x = ssub.add_parser("expire", help="expire a silence now")
    x.add_argument("id")
    _common(x)
    x.set_defaults(func=_expire)

    p = sub.add_parser("outbox", help="notification outbox")
    osub = p.add_subparsers(dest="outbox_command", required=True)
    r = osub.add_parser("replay", help="move dead letters back to the outbox for delivery")
    r.add_argument("--target", default=None, help="only this target ('alertmanager' or a webhook URL)")
    _common(r)
    r.set_defaults(func=_replay)


def _config(args):
    from monitor.serve import config_from_args

    return config_from_args(args)


def _store(config):
    from monitor.core.store import Store

    pw = config.store.password.resolve().get_secret_value() if config.store.password else None
    return Store(config.store.url, password=pw)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _export(args) -> int:
    from alerts.rules import export_prometheus, load_rules

    config = _config(args)
    text = export_prometheus(load_rules(config.rules), interval_seconds=config.rules.evaluation_interval_seconds)
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
    from alerts import repo
    from alerts.rules import parse_duration

    try:
        seconds = parse_duration(args.duration)
    except ValueError as exc:
        raise KafkaHealthError(str(exc)) from None
    matchers = [parse_matcher(m) for m in args.matchers]
    store = _store(_config(args))
    now = _now()
    with store.session() as s:
        row = repo.create_silence(matchers, now, now + timedelta(seconds=seconds), created_by=args.author,
                                  comment=args.comment, tenant=None, now=now, session=s)
        print(row.id)
    return 0


def _list(args) -> int:
    from alerts import repo
    from alerts.views import silence_json

    store = _store(_config(args))
    now = _now()
    with store.session() as s:
        rows = [silence_json(r, now) for r in repo.list_silences(session=s, limit=1000)]
    print(f"{'id':<38}{'state':<9}{'ends_at':<27}matchers")
    for r in rows:
        ms = ",".join(f"{m['name']}{_op(m)}{m['value']}" for m in r["matchers"])
        print(f"{r['id']:<38}{r['state']:<9}{r['ends_at']:<27}{ms}")
    return 0


def _op(m: dict) -> str:
    return {(False, True): "=", (False, False): "!=", (True, True): "=~", (True, False): "!~"}[(m["is_regex"], m["is_equal"])]


def _expire(args) -> int:
    from alerts import repo

    store = _store(_config(args))
    with store.session() as s:
        repo.expire_silence(args.id, now=_now(), session=s)
    print(f"expired {args.id}")
    return 0


def _replay(args) -> int:
    from alerts import repo

    store = _store(_config(args))
    with store.session() as s:
        n = repo.replay_dead_letters(now=_now(), session=s, target=args.target)
    print(f"{n} dead letter(s) back in the outbox")
    return 0
