"""``kafka-health stack up|down|status``, and the options every command uses to find its configuration.

Every command that reads a configuration takes ``add_config_args`` and calls ``config_from_args``, which finds it
in one order (``find_config``): ``--config``, else ``$KAFKA_HEALTH_CONFIG``, else the file the demo wrote in the
local stack's directory (``<dir>/kafka-health.yaml``, so a CLI beside a running demo works on the demo's tenants and
store), else the local stack's embedded default (its ``--dir``, ``--port-base``, ``--kafka-version``). ``-v`` and
``check-config`` say which one was used. It lives here because the fallbacks are the local stack's; capabilities
import it instead of the service wiring (``monitor.serve``), which sits above them.
"""

from __future__ import annotations

import argparse
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from monitor.core.config import Config, load_config
from monitor.stack import Stack
from monitor.stack.layout import (
    DEFAULT_PORT_BASE,
    StackLayout,
    default_stack_dir,
    resolve_kafka_version,
)

log = logging.getLogger(__name__)


def add_stack_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dir", type=Path, default=None, help="stack state directory (default ~/.kafka-health/stack)")
    p.add_argument("--kafka-version", default=None, help="4.1.1 (default) or 3.9")
    p.add_argument("--port-base", type=int, default=DEFAULT_PORT_BASE, help="first of the stack's ports")


def add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default=None, help="config YAML (default: $KAFKA_HEALTH_CONFIG, else the local stack)")
    add_stack_args(p)


@dataclass(frozen=True)
class ConfigChoice:
    """Which configuration a command uses: a file, or (``file`` None) the local stack's embedded default."""

    file: Path | None
    how: str  # why this one, in the user's words
    label: str  # what it is called in messages and in the store's record of a sync

    def __str__(self) -> str:
        return f"{self.label} ({self.how})"


def find_config(args: argparse.Namespace) -> ConfigChoice:
    if args.config:
        return ConfigChoice(Path(args.config).resolve(), "--config", str(Path(args.config).resolve()))
    env = os.environ.get("KAFKA_HEALTH_CONFIG")
    if env:
        return ConfigChoice(Path(env).resolve(), "$KAFKA_HEALTH_CONFIG", str(Path(env).resolve()))
    layout = layout_from_args(args)
    if layout.config_file.is_file():
        return ConfigChoice(layout.config_file, f"written by the demo in {layout.dir}", str(layout.config_file))
    return ConfigChoice(None, "no file given, none written in the stack directory",
                        f"the embedded default of the local stack in {layout.dir}")


def config_from_args(args: argparse.Namespace) -> Config:
    choice = find_config(args)
    log.debug("configuration: %s", choice)
    if choice.file is not None:
        return load_config(choice.file)
    return Stack(layout_from_args(args)).config()


def config_args(args: argparse.Namespace) -> list[str]:
    """The arguments that make a child ``kafka-health`` command load the same config as this one."""
    if args.config:
        return ["--config", str(Path(args.config).resolve())]
    if os.environ.get("KAFKA_HEALTH_CONFIG"):
        return []  # inherited through the environment
    out = ["--port-base", str(args.port_base)]
    if args.dir is not None:
        out += ["--dir", str(Path(args.dir).resolve())]
    if args.kafka_version:
        out += ["--kafka-version", args.kafka_version]
    return out


def layout_from_args(args: argparse.Namespace) -> StackLayout:
    try:
        version = resolve_kafka_version(args.kafka_version)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}")
    if not 1024 <= args.port_base <= 65000:
        raise SystemExit("error: --port-base must be between 1024 and 65000")
    return StackLayout(dir=(args.dir or default_stack_dir()).resolve(), port_base=args.port_base, kafka_version=version)


def register(sub) -> None:
    p = sub.add_parser("stack", help="the local real stack (Kafka, Prometheus, Alertmanager)")
    ssub = p.add_subparsers(dest="stack_command", required=True)
    for name, func, help_ in (
        ("up", _up, "start the stack (idempotent) and wait until ready"),
        ("down", _down, "stop what this stack started"),
        ("status", _status, "each component, its pid, ports and health"),
    ):
        sp = ssub.add_parser(name, help=help_)
        add_stack_args(sp)
        if name == "up":
            sp.add_argument("--timeout", type=float, default=180.0)
        sp.set_defaults(func=func)


def _up(args) -> int:
    stack = Stack(layout_from_args(args))
    stack.up(timeout=args.timeout)
    _print_status(stack)
    return 0


def _down(args) -> int:
    stack = Stack(layout_from_args(args))
    stopped = stack.down()
    print(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")
    return 0


def _status(args) -> int:
    stack = Stack(layout_from_args(args))
    return 0 if _print_status(stack) else 3


def _print_status(stack: Stack) -> bool:
    rows = stack.status()
    print(f"{'component':<14}{'pid':>8}  {'ports':<14}{'health'}")
    for r in rows:
        ports = ",".join(str(p) for p in r.ports)
        print(f"{r.name:<14}{r.pid or '-':>8}  {ports:<14}{r.detail}")
    L = stack.layout
    print(f"\nKafka bootstrap: {L.bootstrap_servers} (Kafka {L.kafka_version})")
    print(f"Prometheus:      {L.prometheus_url}")
    print(f"Alertmanager:    {L.alertmanager_url}")
    print(f"State and logs:  {L.dir}")
    return all(r.healthy for r in rows)
