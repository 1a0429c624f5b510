"""Clients: who uses the brokers' time, who is throttled, and which client software connects."""

from __future__ import annotations

from dashboards.boards.selectors import CT, C, client_throttle
from dashboards.model import ORANGE, RED, Dashboard, Kind, Panel, Query, Row, Var

TOP = Row(
    "Top clients",
    (
        Panel(
            "Top clients by request time",
            (
                Query(
                    f"topk(10, sum by (client_id, user) (kafka_client_request_time_ratio{{{CT}}}))",
                    "{{client_id}} ({{user}})",
                ),
            ),
            "percentunit",
            min=0,
            thresholds=((0.5, ORANGE), (1, RED)),
            description="Share of one broker thread the client's requests use, summed over brokers: the noisiest "
            "clients first.",
        ),
        Panel(
            "Top clients by throttle time",
            (Query(f"topk(10, {client_throttle(CT, 'client_id, user')})", "{{client_id}} ({{user}})"),),
            "s",
            min=0,
            thresholds=((0.01, ORANGE), (0.5, RED)),
        ),
        Panel(
            "Top producers",
            (
                Query(
                    f"topk(10, sum by (client_id, user) (kafka_client_produce_bytes_per_second{{{CT}}}))",
                    "{{client_id}} ({{user}})",
                ),
            ),
            "Bps",
            min=0,
        ),
        Panel(
            "Top consumers",
            (
                Query(
                    f"topk(10, sum by (client_id, user) (kafka_client_fetch_bytes_per_second{{{CT}}}))",
                    "{{client_id}} ({{user}})",
                ),
            ),
            "Bps",
            min=0,
        ),
    ),
)

SOFTWARE = Row(
    "Client software",
    (
        Panel(
            "Connections by client software and version",
            (
                Query(
                    "sort_desc(sum by (client_software_name, client_software_version) "
                    f"(kafka_broker_connections{{{C}}}))",
                    "{{client_software_name}} {{client_software_version}}",
                    instant=True,
                ),
            ),
            "short",
            kind=Kind.BARGAUGE,
            min=0,
            thresholds=((10000, ORANGE),),
            width=12,
            description="From the brokers' socket-server metrics (KIP-511): spot outdated client libraries.",
        ),
        Panel(
            "Connections by client software over time",
            (
                Query(
                    f"sum by (client_software_name, client_software_version) (kafka_broker_connections{{{C}}})",
                    "{{client_software_name}} {{client_software_version}}",
                ),
            ),
            "short",
            min=0,
            stacked=True,
            width=12,
            thresholds=((10000, ORANGE),),
        ),
    ),
)

BOARD = Dashboard(
    uid="kafka-health-clients",
    title="Kafka health / Clients",
    description="Top clients by request time, throttle and bytes; connections by client software and version.",
    rows=(TOP, SOFTWARE),
    variables=(Var.DATASOURCE, Var.CLUSTER, Var.TENANT),
)
