"""``kafka-health stack up|down|status``, and the options that name a local stack.

``LOCAL_STACK`` is the local stack as the last fallback of ``monitor.config_source.find_config`` (the demo's file
in its directory, then its embedded default); the top-level wiring (``monitor.cli``) plugs it in, so every command
that reads a configuration takes these options without importing this package.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from monitor.core.config import Config
from monitor.core.errors import Invalid
from monitor.stack import Stack
from monitor.stack.kcat import clients_accepted, printed_kcat_line
from monitor.stack.layout import (
    DEFAULT_KAFKA_VERSION,
    DEFAULT_PORT_BASE,
    PROFILES,
    StackLayout,
    default_stack_dir,
    resolve_kafka_version,
)


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
    p.add_argument(
        "--kafka-version", type=kafka_version_arg, default=None, help=f"{DEFAULT_KAFKA_VERSION} (default), 4.1 or 3.9"
    )
    p.add_argument("--port-base", type=port_base_arg, default=DEFAULT_PORT_BASE, help="first of the stack's ports")
    p.add_argument(
        "--security",
        choices=SECURITY_MODES,
        default=None,
        help=(
            "sasl_ssl: SCRAM over TLS, ACLs, JMX with a password (the default for a new stack); plaintext: anonymous "
            "clients, no authorizer; both: sasl_ssl plus an anonymous PLAINTEXT listener whose rights are ACLs "
            "(tests). "
            "An existing stack dir keeps the mode it was made with"
        ),
    )


class LocalStackFallback:
    """The local stack as ``monitor.config_source.LocalStack``: its options, directory and embedded default."""

    def add_args(self, p: argparse.ArgumentParser) -> None:
        add_stack_args(p)

    def directory(self, args: argparse.Namespace) -> Path:
        return layout_from_args(args).dir

    def default_config(self, args: argparse.Namespace) -> Config:
        layout = layout_from_args(args)
        # The embedded default keeps its store and lake in the stack's directory. On a fresh HOME nothing has made
        # it yet (no demo, no `stack up`): make it, so a first `tenants list` answers "none" instead of failing to
        # open it.
        layout.dir.mkdir(parents=True, exist_ok=True)
        return Stack(layout).config()

    def child_args(self, args: argparse.Namespace) -> list[str]:
        out = ["--port-base", str(args.port_base)]
        if getattr(args, "security", None):
            out += ["--security", args.security]
        if args.dir is not None:
            out += ["--dir", str(Path(args.dir).resolve())]
        if args.kafka_version:
            out += ["--kafka-version", args.kafka_version]
        return out


LOCAL_STACK = LocalStackFallback()


def layout_from_args(args: argparse.Namespace) -> StackLayout:
    """The stack the options name; ``add_stack_args`` has already refused a bad version or port base. The security
    mode is ``--security``, else the one the stack dir was made with (``stack.json``), else sasl_ssl."""
    directory = (args.dir or default_stack_dir()).resolve()
    mode = getattr(args, "security", None) or stored_security_mode(directory) or "sasl_ssl"
    return StackLayout(
        dir=directory,
        port_base=args.port_base,
        kafka_version=resolve_kafka_version(args.kafka_version),
        secured=mode != "plaintext",
        plaintext_listener=mode != "sasl_ssl",
        profile=getattr(args, "profile", None) or _stored(directory).get("profile") or "jolokia",
    )


def _stored(directory: Path) -> dict:
    try:
        state = json.loads((directory / "stack.json").read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def stored_security_mode(directory: Path) -> str | None:
    state = _stored(directory)
    if not state:
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
            sp.add_argument(
                "--profile",
                choices=PROFILES,
                default=None,
                help=(
                    "how the brokers run, as on a user's platform: jolokia (our agent, the default), strimzi "
                    "(jmx_prometheus_javaagent with Strimzi's rules), msk (the same agent without rules, plus "
                    "node_exporter), protocol (no agent). An existing stack dir keeps the profile it runs with"
                ),
            )
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
    print(
        json.dumps(
            {
                "healthy": healthy,
                "components": [asdict(r) for r in rows],
                "kafka_version": L.kafka_version,
                "security": L.security_mode,
                "profile": L.profile,
                "bootstrap_servers": L.client_bootstrap,
                "prometheus_url": L.prometheus_url,
                "alertmanager_url": L.alertmanager_url,
                "alertmanager_urls": list(L.alertmanager_urls),
                "dir": str(L.dir),
            },
            indent=2,
        )
    )
    return healthy


def _print_status(stack: Stack) -> bool:
    rows = stack.status()
    print(f"{'component':<14}{'pid':>8}  {'ports':<26}{'health'}")
    for r in rows:
        ports = ",".join(str(p) for p in r.ports)
        print(f"{r.name:<14}{r.pid or '-':>8}  {ports:<26}{r.detail}")
    L = stack.layout
    print(f"\nKafka bootstrap: {L.client_bootstrap} (Kafka {L.kafka_version}, {L.security_mode}, profile {L.profile})")
    if L.secured:
        kc = printed_kcat_line(L, "admin")
        print(f"Client configs:  {L.clients_dir} ({clients_accepted(L.kafka_version)})")
        print(f"List topics:     {kc.command}")
        if kc.note:
            print(f"                 ({kc.note})")
    print(f"Prometheus:      {L.prometheus_url}")
    print(f"Alertmanager:    {', '.join(L.alertmanager_urls)} (a gossiping pair)")
    print(f"State and logs:  {L.dir}")
    return all(r.healthy for r in rows)
