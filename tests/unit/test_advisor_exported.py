"""The advisor's findings as ``kafka_client_advisor_finding``: which series the findings make, the board that holds
the latest per cluster (publish replaces, forget on failure, stale findings not served), and the detector that
publishes them while it evaluates KafkaClientHurtsOtherTenants."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from alerts.detectors import DetectorContext
from alerts.detectors.registry import builtin_detectors
from alerts.rules import load_rules
from monitor.advisor.exported import FINDING_METRIC, FindingsBoard, finding_series
from monitor.advisor.findings import advise
from monitor.advisor.types import ClientSample, ClusterSample, GroupSample, Snapshot
from monitor.core.config import ClusterConfig, Config, TenantConfig, TenantSelector
from monitor.core.errors import QueryError
from monitor.core.prom import InstantSample
from monitor.core.tenancy import TenantIndex
from tests.harness.fake_source import FakeSource

pytestmark = pytest.mark.unit
MIB = 1048576.0


def _snapshot() -> Snapshot:
    tiny = ClientSample(
        cluster="c",
        user="",
        client_id="shop-tiny",
        tenant="shop",
        produce_bytes_per_second=2048,
        request_time_ratio=0.3,
    )
    good = ClientSample(
        cluster="c",
        user="",
        client_id="shop-good",
        tenant="shop",
        produce_bytes_per_second=MIB,
        request_time_ratio=0.01,
    )
    flappy = GroupSample(
        cluster="c",
        group="shop-flappy",
        tenant="shop",
        members=1,
        member_changes=6,
        rebalancing_share=0.0,
        window_seconds=600,
    )
    # Churn: 5 new connections/s living 2 s on average; shop-tiny is the only costly suspect.
    cl = ClusterSample(cluster="c", window_seconds=600, new_connections_per_second=5, open_connections=10)
    return Snapshot(cluster=cl, clients=(tiny, good), groups=(flappy,))


def test_series_name_the_client_or_the_group_never_a_suspect():
    series = finding_series(advise(_snapshot()))
    assert ("c", "shop", "shop-tiny", "", "poor_batching") in series
    assert ("c", "shop", "", "shop-flappy", "frequent_rebalances") in series
    # churn is counted per broker, not per client: shop-tiny is its suspect, not its name (issue 28)
    assert ("c", "shop", "", "", "connection_churn") in series  # the tenant's copy
    assert ("c", "", "", "", "connection_churn") in series  # the operators' copy
    assert not any(s[2] == "shop-good" for s in series)
    assert series == sorted(set(series))


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def _exposed(board: FindingsBoard) -> list[str]:
    registry = CollectorRegistry()
    registry.register(board)
    return [line for line in generate_latest(registry).decode().splitlines() if line.startswith(FINDING_METRIC)]


def test_board_replaces_a_clusters_findings_forgets_failures_and_drops_stale_ones():
    clock = Clock()
    board = FindingsBoard(max_age_seconds=60, clock=clock)
    assert _exposed(board) == []  # nothing published: no series (not a 0)
    found = advise(_snapshot())
    board.publish("c", found)
    board.publish("d", [f for f in found if f.group])
    lines = _exposed(board)
    assert (
        'kafka_client_advisor_finding{client_id="shop-tiny",cluster="c",finding="poor_batching",group="",'
        'tenant="shop"} 1.0'
    ) in lines
    assert len(lines) == len(finding_series(found)) + 1
    board.publish("c", [f for f in found if f.kind.value != "poor_batching"])  # cleared: its series disappears
    assert not any('finding="poor_batching"' in line for line in _exposed(board))
    board.forget("d")
    assert not any('cluster="d"' in line for line in _exposed(board))
    clock.t += 61  # the engine stopped publishing: nothing is served rather than stale findings
    assert _exposed(board) == []


def prometheus() -> FakeSource:
    """Prometheus answering per cluster: cluster "bad" fails, cluster "ok" has one producer sending tiny requests."""
    row = {"user": "", "client_id": "shop-tiny"}
    return FakeSource(
        {
            'cluster="bad"': QueryError("Prometheus said no"),
            "avg_over_time(kafka_client_request_time_ratio": [InstantSample(row, 0.3)],
            "avg_over_time(kafka_client_produce_bytes_per_second": [InstantSample(row, 2048.0)],
        }
    )


def test_the_detector_publishes_every_finding_once_per_cycle_and_forgets_a_failed_cluster():
    tenants = (TenantConfig(name="shop", selectors=(TenantSelector(cluster="ok", client_id_prefixes=("shop-",)),)),)
    config = Config(
        clusters=(
            ClusterConfig(name="ok", bootstrap_servers="x:9092"),
            ClusterConfig(name="bad", bootstrap_servers="y:9092"),
        ),
        tenants=tenants,
    )
    rule = next(r for r in load_rules() if r.name == "KafkaClientHurtsOtherTenants")
    clock = Clock()
    board = FindingsBoard(max_age_seconds=60, clock=clock)
    board.publish("bad", advise(_snapshot()))  # what a previous cycle saw there
    detect = builtin_detectors(findings=board)["noisy_clients"]
    source = prometheus()
    ctx = DetectorContext(
        source=source, now=datetime(2026, 11, 22, tzinfo=timezone.utc), config=config, tenants=TenantIndex(tenants)
    )
    with pytest.raises(QueryError):
        detect(rule, ctx)  # the rule reports the failure ...
    assert board.series() == [("ok", "shop", "shop-tiny", "", "poor_batching")]  # ... the readable cluster publishes
    assert (
        builtin_detectors()["noisy_clients"](
            rule,
            DetectorContext(
                source=prometheus(),
                now=ctx.now,
                config=config.model_copy(update={"clusters": config.clusters[:1]}),
                tenants=ctx.tenants,
            ),
        )[0].labels["client_id"]
        == "shop-tiny"
    )  # without a board: the alert alone
