"""The ``kafka-health`` console script: the one place that wires subcommands.

Each domain module exposes ``register(subparsers)``, adding its commands with ``set_defaults(func=...)``; a command
function takes the parsed ``args`` and returns an exit code. Errors of the ``KafkaHealthError`` tree print as one
line (``error: ...``) and exit with the error's code: never a traceback for an expected failure.
"""

from __future__ import annotations

import argparse
import logging
import sys

import alerts.cli
import dashboards.cli
import monitor.advisor.cli
import monitor.api.cli
import monitor.archive.cli
import monitor.check_config
import monitor.demo
import monitor.reports.cli
import monitor.serve
import monitor.stack.cli
import monitor.tenants.cli
from monitor import __version__
from monitor.core.errors import ConfigError, KafkaHealthError
from monitor.core.redact import RedactingFilter

# Modules contributing subcommands, in help order. Each has register(subparsers).
COMMAND_MODULES = [
    monitor.demo,
    monitor.stack.cli,
    monitor.serve,
    monitor.check_config,
    monitor.tenants.cli,
    monitor.api.cli,
    alerts.cli,
    dashboards.cli,
    monitor.archive.cli,
    monitor.reports.cli,
    monitor.advisor.cli,
]


# Libraries that log what they were called with: httpx logs every request URL at INFO (a webhook's path is its
# token), uvicorn every request line, alembic and py4j chatter. They stay at WARNING even with -v: -v is for our code.
LIBRARY_LOGGERS = ("httpx", "httpcore", "urllib3", "uvicorn.access", "alembic", "kafka", "py4j")


def configure_logging(*, verbose: bool) -> None:
    """Our loggers at INFO (DEBUG with -v), libraries at WARNING, every line through ``RedactingFilter``."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter())
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[handler])
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-health", description="Health monitoring for multi-tenant Kafka.")
    parser.add_argument("--version", action="version", version=f"kafka-health {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(verbose=args.verbose)
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
