"""``kafka-health tenants apply-quotas``: each tenant principal's contract as a Kafka user quota on its cluster.

The plan is the tenants' (``monitor.tenants.quotas``); applying it runs Kafka's own ConfigCommand in a short JVM
from the local stack's jars (confluent-kafka's Admin API has no client-quota call), as ``telemetry subscribe`` does,
so the command lives beside the stack and the wiring (``monitor.cli``) adds it under ``tenants``. Authenticated by a
Java client properties file given by path, never by a password in argv.
"""

from __future__ import annotations

import argparse

from monitor.config_source import add_config_args
from monitor.core.errors import NotFound
from monitor.stack import kafka as stack_kafka
from monitor.stack.cli import layout_from_args
from monitor.tenants import quotas
from monitor.tenants.cli import open_registry
from monitor.tenants.live import with_stored_tenants


def _apply_quotas(args: argparse.Namespace) -> int:
    config, store = open_registry(args)
    config = with_stored_tenants(config, store)
    clusters = [c for c in config.clusters if args.cluster in (None, c.name)]
    if not clusters:
        raise NotFound(f"no cluster {args.cluster!r} in the configuration")
    planned = [(c, q) for c in clusters for q in quotas.plan(config.tenants, c.name)]
    for c, q in planned:
        print(f"{c.name}: User:{q.user} (tenant {q.tenant}): {q.add_config}")
    if not planned:
        print("no tenant names a principal with a produce or fetch quota: nothing to apply")
        return 0
    if args.dry_run:
        return 0
    layout = layout_from_args(args)
    stack_kafka.config_commands_as(
        args.admin_config,
        layout,
        layout.logs_dir / "apply-quotas.log",
        [(c.bootstrap_servers, quotas.config_command_args(q), f"the quota of User:{q.user}") for c, q in planned],
        allowed_to="alter quotas",
    )
    print(f"applied {len(planned)} user quota(s)")
    return 0


def register(tenants_commands: argparse._SubParsersAction) -> None:
    """Add ``apply-quotas`` to the subcommands of ``tenants`` (``monitor.tenants.cli`` made them)."""
    p = tenants_commands.add_parser(
        "apply-quotas", help="set each tenant principal's Kafka user quota from its contract"
    )
    p.add_argument("--cluster", default=None, help="only this cluster (default: every cluster of the config)")
    p.add_argument(
        "--admin-config",
        default=None,
        metavar="FILE",
        help="Java client properties of a principal allowed to alter quotas (never a password in argv)",
    )
    p.add_argument("--dry-run", action="store_true", help="print what would be set, change nothing")
    add_config_args(p)
    p.set_defaults(func=_apply_quotas)
