"""``kafka-health check-config [FILE]``: validate a configuration; every error with file:line; exit 2 on error.

Without FILE it checks the configuration every other command would use (``monitor.stack.cli.find_config``) and says
which one that is, so an operator can see what a CLI beside a running service reads.
"""

from __future__ import annotations

from pathlib import Path

from monitor.core.config import load_config
from monitor.stack import Stack
from monitor.stack.cli import add_stack_args, find_config, layout_from_args


def register(sub) -> None:
    p = sub.add_parser("check-config", help="validate a config file (exit 2 with every error on failure); without "
                                            "FILE, the one every command would use")
    p.add_argument("file", type=Path, nargs="?", default=None)
    add_stack_args(p)
    p.set_defaults(func=_check)


def _check(args) -> int:
    if args.file is not None:
        cfg, name = load_config(args.file), str(args.file)  # ConfigError -> every problem printed, exit 2
    else:
        args.config = None
        choice = find_config(args)
        print(f"using {choice}")
        cfg = load_config(choice.file) if choice.file else Stack(layout_from_args(args)).config()
        name = choice.label
    print(
        f"{name}: ok ({len(cfg.clusters)} cluster(s), "
        f"{sum(len(c.brokers) for c in cfg.clusters)} broker target(s), {len(cfg.tenants)} tenant(s))"
    )
    return 0
