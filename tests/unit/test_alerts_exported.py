"""The engine's alert instances as ``kafka_health_alert_instance``: which series a list of instances makes (pending and
firing only, labelled like ``ALERTS``, one per instance), the collector that serves the last cycle's, and the alert
service publishing them after each evaluation."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from alerts.exported import ALERT_METRIC, ActiveAlerts, alert_series
from alerts.types import AlertState, Instance, Severity
from monitor.core.config import ClusterConfig, Config, TenantConfig, TenantSelector
from monitor.core.metric_names import M
from monitor.core.prom import InstantSample
from monitor.schema import create_all
from tests.harness.fake_source import FakeSource

pytestmark = pytest.mark.unit
T0 = datetime(2026, 11, 22, 0, 0, tzinfo=timezone.utc)


def _inst(rule: str, state: AlertState, severity: Severity = Severity.WARNING, **labels: str) -> Instance:
    return Instance(
        rule=rule,
        labels={"alertname": rule, "severity": severity.value, **labels},
        state=state,
        severity=severity,
        evidence={"eta_seconds": 3600},
        value=3600.0,
    )


DISK_A = _inst(
    "KafkaDiskFullRisk",
    AlertState.FIRING,
    Severity.CRITICAL,
    cluster="c",
    broker="1",
    tenant="a",
    mountpoint="/var/lib/kafka",
)
DISK_B = _inst(
    "KafkaDiskFullRisk",
    AlertState.FIRING,
    Severity.CRITICAL,
    cluster="c",
    broker="1",
    tenant="b",
    mountpoint="/var/lib/kafka",
)
LAG_1 = _inst(
    "KafkaConsumerGroupLag", AlertState.PENDING, cluster="c", tenant="a", group="billing", topic="t", status="STALL"
)
LAG_2 = _inst(
    "KafkaConsumerGroupLag", AlertState.FIRING, cluster="c", tenant="a", group="audit", topic="t", status="ERR"
)
SLOW = _inst("KafkaResponseQueueBacklog", AlertState.RESOLVED, cluster="c", broker="2", tenant="a")


def test_one_series_per_pending_or_firing_instance_labelled_like_alerts():
    series = [dict(s) for s in alert_series([DISK_A, DISK_B, LAG_1, LAG_2, SLOW])]
    assert series == sorted(series, key=lambda d: tuple(sorted(d.items())))
    assert {
        "alertname": "KafkaDiskFullRisk",
        "alertstate": "firing",
        "severity": "critical",
        "cluster": "c",
        "broker": "1",
        "tenant": "a",
        "mountpoint": "/var/lib/kafka",
    } in series
    # An alert hurting two tenants is two instances: each tenant's series carries its tenant.
    assert sorted(s["tenant"] for s in series if s["alertname"] == "KafkaDiskFullRisk") == ["a", "b"]
    # Two groups of one tenant stay two series (their identity labels differ), each with its own state.
    assert sorted((s["group"], s["alertstate"]) for s in series if s["alertname"] == "KafkaConsumerGroupLag") == [
        ("audit", "firing"),
        ("billing", "pending"),
    ]
    assert not any(s["alertname"] == "KafkaResponseQueueBacklog" for s in series)  # resolved: no series
    assert len(series) == 4


def test_name_severity_and_state_come_from_the_instance_and_bad_labels_are_dropped():
    odd = Instance(
        rule="KafkaGcPressure",
        labels={
            "alertname": "stale",
            "__name__": "kafka_jvm_gc",
            "bad-name": "x",
            "empty": "",
            "alertstate": "inactive",
            "broker": "3",
        },
        state=AlertState.FIRING,
        severity=Severity.WARNING,
    )
    assert alert_series([odd]) == [
        (("alertname", "KafkaGcPressure"), ("alertstate", "firing"), ("broker", "3"), ("severity", "warning"))
    ]
    # Left with the same labels, a pending and a firing instance make one series: the firing one.
    twin = odd.evolve(state=AlertState.PENDING, labels={**odd.labels, "bad-name": "y"})
    assert [dict(s)["alertstate"] for s in alert_series([twin, odd])] == ["firing"]
    assert alert_series([]) == []


def _exposed(registry: CollectorRegistry) -> list[str]:
    return [line for line in generate_latest(registry).decode().splitlines() if line.startswith(ALERT_METRIC)]


def test_collector_serves_the_last_published_instances_only():
    board = ActiveAlerts()
    registry = CollectorRegistry()
    registry.register(board)
    assert _exposed(registry) == []  # nothing active: no series (not a 0)
    board.publish([DISK_A, LAG_1, SLOW])
    assert _exposed(registry) == [
        'kafka_health_alert_instance{alertname="KafkaConsumerGroupLag",alertstate="pending",cluster="c",'
        'group="billing",severity="warning",status="STALL",tenant="a",topic="t"} 1.0',
        'kafka_health_alert_instance{alertname="KafkaDiskFullRisk",alertstate="firing",broker="1",cluster="c",'
        'mountpoint="/var/lib/kafka",severity="critical",tenant="a"} 1.0',
    ]
    board.publish([DISK_A])  # the lag alert cleared: its series disappears
    assert len(_exposed(registry)) == 1 and "KafkaDiskFullRisk" in _exposed(registry)[0]


# Two tenants on the cluster (by topic prefix): a broker down hurts both while their placement is unknown.
CONFIG = Config(
    clusters=(ClusterConfig(name="c1", bootstrap_servers="localhost:9092"),),
    tenants=tuple(
        TenantConfig(name=t, selectors=(TenantSelector(cluster="c1", topic_prefixes=(f"{t}.",)),))
        for t in ("ads", "shop")
    ),
)


def _source() -> FakeSource:
    """Every input present; broker 1 down; the watchdog's vector(1). Anything else has no data."""
    return FakeSource(
        {
            "vector(1)": [InstantSample({}, 1.0)],
            M["broker_up"]: lambda expr, at: (
                [InstantSample({"cluster": "c1", "broker": "1"}, 0.0)] if "==" in expr else []
            ),
        },
        present=M.values(),
    )


def test_the_alert_service_exports_its_instances_after_each_evaluation(tmp_path):
    from alerts.component import AlertService
    from monitor.core.store import Store

    store = Store(f"sqlite:///{tmp_path / 'alerts.db'}")
    create_all(store)
    registry = CollectorRegistry()
    service = AlertService(CONFIG, store=store, registry=registry, source=_source(), clock=lambda: T0)
    result = service.evaluate(T0)
    active = [i for i in result.instances.values() if i.state in (AlertState.PENDING, AlertState.FIRING)]
    lines = _exposed(registry)
    assert active and len(lines) == len(active)
    assert any('alertname="KafkaHealthWatchdog",alertstate="firing"' in line for line in lines)
    # Broker 1 down (for: 30s): pending for each tenant on the cluster, no placement known.
    unreachable = sorted(line for line in lines if 'alertname="KafkaBrokerUnreachable"' in line)
    assert [
        ('alertstate="pending"' in line, 'tenant="ads"' in line, 'tenant="shop"' in line) for line in unreachable
    ] == [(True, True, False), (True, False, True)]
