"""``kafka-health check-config [FILE]``: validate a configuration; every error with file:line; exit 2 on error.

Beyond the config's own schema it loads the alert rules the config selects (``rules.files``, ``rules.overrides``) as
``serve`` will, so an override naming no rule, or a parameter its rule lacks, fails here and not at the service's start.

Without FILE it checks the configuration every other command would use (``monitor.config_source.find_config``) and
says which one that is, so an operator can see what a CLI beside a running service reads.
"""

from __future__ import annotations

from pathlib import Path

from alerts.rules import load_rules
from collectors.capabilities import render
from monitor.config_source import add_local_args, find_config, load_choice
from monitor.core.config import Config, key_line, load_config
from monitor.core.errors import ConfigError, ConfigProblem


def register(sub) -> None:
    p = sub.add_parser(
        "check-config",
        help="validate a config file (exit 2 with every error on failure); without "
        "FILE, the one every command would use",
    )
    p.add_argument("file", type=Path, nargs="?", default=None)
    add_local_args(p)
    p.set_defaults(func=_check)


def _check(args) -> int:
    if args.file is not None:
        file, name = args.file, str(args.file)
        cfg = load_config(file)  # ConfigError -> every problem printed, exit 2
    else:
        args.config = None
        choice = find_config(args)
        print(f"using {choice}")
        file, name = choice.file, choice.label
        cfg = load_choice(choice, args)
    _check_rules(cfg, file)
    print(
        f"{name}: ok ({len(cfg.clusters)} cluster(s), "
        f"{sum(len(c.brokers) for c in cfg.clusters)} broker target(s), {len(cfg.tenants)} tenant(s))"
    )
    for cluster in cfg.clusters:  # what each cluster's sources can observe, and what not (kafka-health sources)
        print(render(cluster, names=False))
    return 0


def _check_rules(cfg: Config, file: Path | None) -> None:
    try:
        load_rules(cfg.rules)
    except ConfigError as exc:
        raise ConfigError([_located(p, file) for p in exc.problems]) from None


def _located(problem: ConfigProblem, file: Path | None) -> ConfigProblem:
    """``alerts.rules`` names the config file "config" (it never sees the file): give its name and line instead."""
    if file is None or problem.file != "config":
        return problem
    return ConfigProblem(str(file), key_line(file, tuple(problem.path.split("."))), problem.path, problem.message)
