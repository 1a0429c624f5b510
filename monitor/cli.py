"""The ``kafka-health`` console script: the one place that wires subcommands.

Each domain module exposes ``register(subparsers)``, adding its commands with ``set_defaults(func=...)``; a command
function takes the parsed ``args`` and returns an exit code. Errors of the ``KafkaHealthError`` tree print as one
line (``error: ...``) and exit with the error's code: never a traceback for an expected failure.

The local stack is plugged in here as the last place a command looks for its configuration
(``monitor.config_source``), so the capabilities' commands never import it.
"""

from __future__ import annotations

import argparse
import sys

import alerts.cli
import collectors.cli
import dashboards.cli
import monitor.advisor.cli
import monitor.api.cli
import monitor.archive.cli
import monitor.check_config
import monitor.demo
import monitor.reports.cli
import monitor.serve
import monitor.stack.cli
import monitor.stack.quotas_cli
import monitor.stack.telemetry_cli
import monitor.tenants.cli
from monitor import __version__, config_source
from monitor.core.errors import ConfigError, KafkaHealthError
from monitor.core.logs import FORMATS, LEVELS, configure_logging

# Modules contributing subcommands, in help order. Each has register(subparsers).
COMMAND_MODULES = [
    monitor.demo,
    monitor.stack.cli,
    monitor.serve,
    monitor.check_config,
    collectors.cli,
    monitor.tenants.cli,
    monitor.stack.telemetry_cli,
    monitor.api.cli,
    alerts.cli,
    dashboards.cli,
    monitor.archive.cli,
    monitor.reports.cli,
    monitor.advisor.cli,
]


def add_logging_args(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """``-v``, ``--log-level`` and ``--log-format``. On the top parser with their defaults; on each command without
    (SUPPRESS), so they may follow the command (``kafka-health serve --log-format json``) and, when they do not,
    a command's parser leaves the top parser's values alone."""
    d = (lambda v: v) if defaults else (lambda v: argparse.SUPPRESS)
    group = parser.add_argument_group("logging")
    group.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=d(False),
        help="debug logging of kafka-health's own code (the same as --log-level debug)",
    )
    group.add_argument(
        "--log-level",
        choices=LEVELS,
        default=d("info"),
        type=str.lower,
        help="kafka-health's own log level (libraries stay at warning); default info",
    )
    group.add_argument(
        "--log-format",
        choices=FORMATS,
        default=d("text"),
        help="text lines, or one JSON object per line (time, level, logger, message) for log shippers; default text",
    )


def _subcommands(parser: argparse.ArgumentParser):
    """The subparsers actions of ``parser`` (argparse keeps them only among its actions)."""
    return [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]


def _commands(parser: argparse.ArgumentParser):
    """Every command parser under ``parser``, at any depth (``stack up``, ``tenants list``, ...)."""
    for action in _subcommands(parser):
        for sub in dict.fromkeys(action.choices.values()):  # aliases map to the same parser
            yield sub
            yield from _commands(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-health", description="Health monitoring for multi-tenant Kafka.")
    parser.add_argument("--version", action="version", version=f"kafka-health {__version__}")
    add_logging_args(parser, defaults=True)
    # Before any command's options are made: the local stack's are among them.
    config_source.use_local_stack(monitor.stack.cli.LOCAL_STACK)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    # Runs Kafka's ConfigCommand from the local stack's jars, so it is the stack's, under `tenants`.
    monitor.stack.quotas_cli.register(_subcommands(sub.choices["tenants"])[0])
    for command in _commands(parser):
        add_logging_args(command, defaults=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging("debug" if args.verbose else args.log_level, args.log_format)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return exc.exit_code
    except KafkaHealthError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
