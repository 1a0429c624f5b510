"""``kafka-health check-config FILE``: validate a config file; every error with file:line; exit 2 on error."""

from __future__ import annotations

from pathlib import Path

from monitor.core.config import load_config


def register(sub) -> None:
    p = sub.add_parser("check-config", help="validate a config file (exit 2 with every error on failure)")
    p.add_argument("file", type=Path)
    p.set_defaults(func=_check)


def _check(args) -> int:
    cfg = load_config(args.file)  # ConfigError -> every problem printed by the CLI, exit 2
    print(
        f"{args.file}: ok ({len(cfg.clusters)} cluster(s), "
        f"{sum(len(c.brokers) for c in cfg.clusters)} broker target(s), {len(cfg.tenants)} tenant(s))"
    )
    return 0
