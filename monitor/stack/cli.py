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
import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from monitor.core.config import Config, load_config
from monitor.core.errors import Invalid
from monitor.stack import Stack
from monitor.stack.layout import (
    DEFAULT_KAFKA_VERSION,
    DEFAULT_PORT_BASE,
    StackLayout,
    default_stack_dir,
    resolve_kafka_version,
)

log = logging.getLogger(__name__)


def kafka_version_arg(text: str) -> str:
    """argparse ``type`` for ``--kafka-version``: the text as given (children get it back), if the stack knows it.
    Refused here, a bad value is a usage error (exit 2) before anything runs."""
    try:
        resolve_kafka_version(text)
    except Invalid as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def port_base_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1024 <= value <= 65000:
        raise argparse.ArgumentTypeError("must be between 1024 and 65000")
    return value


SECURITY_MODES = ("sasl_ssl", "plaintext", "both")


def add_stack_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dir", type=Path, default=None, help="stack state directory (default ~/.kafka-health/stack)")
    p.add_argument("--kafka-version", type=kafka_version_arg, default=None,
                   help=f"{DEFAULT_KAFKA_VERSION} (default), 4.1 or 3.9")
    p.add_argument("--port-base", type=port_base_arg, default=DEFAULT_PORT_BASE, help="first of the stack's ports")
    p.add_argument("--security", choices=SECURITY_MODES, default=None, help=(
        "sasl_ssl: SCRAM over TLS, ACLs, JMX with a password (the default for a new stack); plaintext: anonymous "
        "clients, no authorizer; both: sasl_ssl plus an anonymous PLAINTEXT listener whose rights are ACLs (tests). "
        "An existing stack dir keeps the mode it was made with"))


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
    layout = layout_from_args(args)
    # The embedded default keeps its store and lake in the stack's directory. On a fresh HOME nothing has made it
    # yet (no demo, no `stack up`): make it, so a first `tenants list` answers "none" instead of failing to open it.
    layout.dir.mkdir(parents=True, exist_ok=True)
    return Stack(layout).config()


def config_args(args: argparse.Namespace) -> list[str]:
    """The arguments that make a child ``kafka-health`` command load the same config as this one."""
    if args.config:
        return ["--config", str(Path(args.config).resolve())]
    if os.environ.get("KAFKA_HEALTH_CONFIG"):
        return []  # inherited through the environment
    out = ["--port-base", str(args.port_base)]
    if getattr(args, "security", None):
        out += ["--security", args.security]
    if args.dir is not None:
        out += ["--dir", str(Path(args.dir).resolve())]
    if args.kafka_version:
        out += ["--kafka-version", args.kafka_version]
    return out


def layout_from_args(args: argparse.Namespace) -> StackLayout:
    """The stack the options name; ``add_stack_args`` has already refused a bad version or port base. The security
    mode is ``--security``, else the one the stack dir was made with (``stack.json``), else sasl_ssl."""
    directory = (args.dir or default_stack_dir()).resolve()
    mode = getattr(args, "security", None) or stored_security_mode(directory) or "sasl_ssl"
    return StackLayout(dir=directory, port_base=args.port_base, kafka_version=resolve_kafka_version(args.kafka_version),
                       secured=mode != "plaintext", plaintext_listener=mode != "sasl_ssl")


def stored_security_mode(directory: Path) -> str | None:
    try:
        state = json.loads((directory / "stack.json").read_text())
    except (OSError, ValueError):
        return None
    if state.get("security") in SECURITY_MODES:
        return state["security"]
    return "plaintext" if state.get("cluster_id") else None  # made before the secured mode existed


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
        if name == "status":
            sp.add_argument("--json", action="store_true", help="the same as one JSON document")
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
    healthy = _print_status_json(stack) if args.json else _print_status(stack)
    return 0 if healthy else 3


def _print_status_json(stack: Stack) -> bool:
    rows = stack.status()
    L = stack.layout
    healthy = all(r.healthy for r in rows)
    print(json.dumps({
        "healthy": healthy,
        "components": [asdict(r) for r in rows],
        "kafka_version": L.kafka_version, "security": L.security_mode, "bootstrap_servers": L.client_bootstrap,
        "prometheus_url": L.prometheus_url, "alertmanager_url": L.alertmanager_url, "dir": str(L.dir),
    }, indent=2))
    return healthy


def _print_status(stack: Stack) -> bool:
    rows = stack.status()
    print(f"{'component':<14}{'pid':>8}  {'ports':<26}{'health'}")
    for r in rows:
        ports = ",".join(str(p) for p in r.ports)
        print(f"{r.name:<14}{r.pid or '-':>8}  {ports:<26}{r.detail}")
    L = stack.layout
    print(f"\nKafka bootstrap: {L.client_bootstrap} (Kafka {L.kafka_version}, {L.security_mode})")
    if L.secured:
        print(f"Client configs:  {L.clients_dir} (e.g. kcat -F {L.clients_dir / 'admin.properties'} -L)")
    print(f"Prometheus:      {L.prometheus_url}")
    print(f"Alertmanager:    {L.alertmanager_url}")
    print(f"State and logs:  {L.dir}")
    return all(r.healthy for r in rows)
