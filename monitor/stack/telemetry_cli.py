"""``kafka-health telemetry subscribe``: the KIP-714 ``CLIENT_METRICS`` subscription on each cluster of the config,
so its clients push the metrics the broker plugin keeps (docs/operations.md, "Client telemetry (KIP-714)").

Applied with Kafka's own ConfigCommand in a short JVM (confluent-kafka's Admin API has no CLIENT_METRICS resource),
authenticated by a Java client properties file given by path, never by a password in argv.
"""

from __future__ import annotations

from monitor.config_source import add_config_args, config_from_args
from monitor.core.errors import NotFound
from monitor.core.times import parse_duration
from monitor.stack import kafka as stack_kafka
from monitor.stack import telemetry
from monitor.stack.cli import layout_from_args


def subscription_from_args(args) -> telemetry.Subscription:
    seconds = parse_duration(args.interval)
    return telemetry.Subscription(
        name=args.name,
        metrics=tuple(args.metric or telemetry.SUBSCRIBED_METRICS),
        interval_ms=round(seconds * 1000),
        match=tuple(args.match or ()),
    )


def _subscribe(args) -> int:
    config = config_from_args(args)
    clusters = [c for c in config.clusters if args.cluster in (None, c.name)]
    if not clusters:
        raise NotFound(f"no cluster {args.cluster!r} in the configuration")
    sub = subscription_from_args(args)
    command = sub.delete_args() if args.remove else sub.config_command_args()
    for c in clusters:
        print(f"{c.name}: client-metrics {sub.name}: " + ("remove" if args.remove else sub.add_config))
    if args.dry_run:
        return 0
    layout = layout_from_args(args)
    stack_kafka.config_commands_as(
        args.admin_config,
        layout,
        layout.logs_dir / "telemetry-subscribe.log",
        [(c.bootstrap_servers, command, f"the client-metrics subscription {sub.name} of {c.name}") for c in clusters],
        allowed_to="alter cluster configs",
    )
    print(f"{'removed' if args.remove else 'applied'} the subscription on {len(clusters)} cluster(s)")
    return 0


def register(sub) -> None:
    t = sub.add_parser("telemetry", help="KIP-714 client telemetry: the clusters' CLIENT_METRICS subscription")
    tsub = t.add_subparsers(dest="telemetry_command", required=True)
    p = tsub.add_parser("subscribe", help="make the clients of each cluster push the metrics kafka-health keeps")
    p.add_argument("--cluster", default=None, help="only this cluster (default: every cluster of the config)")
    p.add_argument(
        "--interval",
        default=f"{telemetry.DEFAULT_INTERVAL_MS // 1000}s",
        help="how often clients push (100ms..1h; default 60s)",
    )
    p.add_argument(
        "--metric",
        action="append",
        metavar="PREFIX",
        help="a metric name prefix to subscribe (repeatable; default: the signals the plugin keeps)",
    )
    p.add_argument(
        "--match",
        action="append",
        metavar="SELECTOR=REGEX",
        help="only clients matching (repeatable), e.g. client_software_name=apache-kafka-java",
    )
    p.add_argument("--name", default=telemetry.SUBSCRIPTION_NAME, help="the client-metrics resource name")
    p.add_argument("--remove", action="store_true", help="empty the subscription: its clients stop pushing for it")
    p.add_argument(
        "--admin-config",
        default=None,
        metavar="FILE",
        help="Java client properties of a principal allowed to alter configs (never a password in argv)",
    )
    p.add_argument("--dry-run", action="store_true", help="print what would be set, change nothing")
    add_config_args(p)
    p.set_defaults(func=_subscribe)
