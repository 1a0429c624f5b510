"""Where a command finds its configuration: the options every command that reads one takes, and one order.

``find_config`` takes the first of:

1. ``--config FILE``;
2. ``$KAFKA_HEALTH_CONFIG``;
3. the file the demo wrote in the local stack's directory (``<dir>/kafka-health.yaml``), so a CLI beside a running
   demo works on the demo's tenants and store;
4. the local stack's embedded default.

3 and 4 belong to the local stack: its options (``--dir``, ``--port-base``, ``--kafka-version``, ``--security``), its
directory and its embedded default come from a ``LocalStack`` that the top-level wiring plugs in (``monitor.cli``
calls ``use_local_stack``), so capabilities import this module and never the development cluster. With none plugged
in (a library use), a command needs 1 or 2. ``-v`` and ``check-config`` say which one was used.
"""

from __future__ import annotations

import argparse
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from monitor.core.config import Config, load_config
from monitor.core.errors import Invalid

log = logging.getLogger(__name__)

ENV_VAR = "KAFKA_HEALTH_CONFIG"
DEMO_CONFIG_NAME = "kafka-health.yaml"  # what the demo writes in the local stack's directory


class LocalStack(Protocol):
    """The last fallbacks, the local development stack's. Implementers must not start anything: finding a
    configuration reads files only (``default_config`` may create the empty state directory)."""

    def add_args(self, p: argparse.ArgumentParser) -> None:
        """The options that name a local stack."""

    def directory(self, args: argparse.Namespace) -> Path:
        """The stack's state directory the options name (where the demo writes its configuration)."""

    def default_config(self, args: argparse.Namespace) -> Config:
        """The embedded default configuration of the stack the options name."""

    def child_args(self, args: argparse.Namespace) -> list[str]:
        """The options that name the same stack to a child ``kafka-health`` command."""


_local: LocalStack | None = None


def use_local_stack(local: LocalStack | None) -> None:
    """Plug in (or, with None, take out) the local stack as the last fallback. Called by the top-level wiring before
    it builds the parsers: the options it adds are part of every command's."""
    global _local
    _local = local


def add_local_args(p: argparse.ArgumentParser) -> None:
    """The local stack's options alone (``check-config``, whose file is an argument)."""
    if _local is not None:
        _local.add_args(p)


def add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default=None, help=f"config YAML (default: ${ENV_VAR}, else the local stack)")
    add_local_args(p)


@dataclass(frozen=True)
class ConfigChoice:
    """Which configuration a command uses: a file, or (``file`` None) the local stack's embedded default."""

    file: Path | None
    how: str  # why this one, in the user's words
    label: str  # what it is called in messages and in the store's record of a sync

    def __str__(self) -> str:
        return f"{self.label} ({self.how})"


def find_config(args: argparse.Namespace) -> ConfigChoice:
    if getattr(args, "config", None):
        return ConfigChoice(Path(args.config).resolve(), "--config", str(Path(args.config).resolve()))
    env = os.environ.get(ENV_VAR)
    if env:
        return ConfigChoice(Path(env).resolve(), f"${ENV_VAR}", str(Path(env).resolve()))
    if _local is None:
        raise Invalid(f"no configuration: give --config FILE or set ${ENV_VAR}")
    directory = _local.directory(args)
    demo_file = directory / DEMO_CONFIG_NAME
    if demo_file.is_file():
        return ConfigChoice(demo_file, f"written by the demo in {directory}", str(demo_file))
    return ConfigChoice(
        None,
        "no file given, none written in the stack directory",
        f"the embedded default of the local stack in {directory}",
    )


def load_choice(choice: ConfigChoice, args: argparse.Namespace) -> Config:
    """The configuration ``find_config`` chose for ``args``."""
    if choice.file is not None:
        return load_config(choice.file)
    if _local is None:  # find_config chooses no file only with a local stack plugged in
        raise Invalid(f"no configuration: give --config FILE or set ${ENV_VAR}")
    return _local.default_config(args)


def config_from_args(args: argparse.Namespace) -> Config:
    choice = find_config(args)
    log.debug("configuration: %s", choice)
    return load_choice(choice, args)


def config_args(args: argparse.Namespace) -> list[str]:
    """The arguments that make a child ``kafka-health`` command load the same config as this one."""
    if getattr(args, "config", None):
        return ["--config", str(Path(args.config).resolve())]
    if os.environ.get(ENV_VAR):
        return []  # inherited through the environment
    return _local.child_args(args) if _local is not None else []
