"""Tenant health as a pure function: a numbered table of cases (heartbeats, firing instances, now) -> verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import pytest

from monitor.tenants.health import (
    ComponentKind,
    HealthStatus,
    assess,
    component_of,
    steady_until,
)

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
STALE = timedelta(seconds=45)


@dataclass
class A:
    rule: str
    severity: str = "warning"
    state: str = "firing"
    cluster: str | None = "c1"
    broker: str | None = None
    labels: dict = field(default_factory=dict)
    annotations: dict = field(default_factory=dict)
    evidence: dict = field(default_factory=dict)


@dataclass
class HB:
    cluster: str
    evaluated_at: datetime
    data_ok: bool = True
    detail: str = ""


def fresh(*clusters: str, age: float = 5, data_ok: bool = True, naive: bool = False) -> dict[str, HB]:
    at = NOW - timedelta(seconds=age)
    return {c: HB(c, at.replace(tzinfo=None) if naive else at, data_ok) for c in clusters}


# (number, clusters, firing, heartbeats, expected status, expected score, expected {(kind, id): status})
CASES = [
    (1, ["c1"], [], fresh("c1"), "ok", 100, {}),
    (2, ["c1"], [], {}, "unknown", 50, {("cluster", "c1"): "unknown"}),
    (3, ["c1"], [], fresh("c1", age=46), "unknown", 50, {("cluster", "c1"): "unknown"}),
    (4, ["c1"], [], fresh("c1", age=44), "ok", 100, {}),
    (5, ["c1"], [], fresh("c1", data_ok=False), "unknown", 50, {("cluster", "c1"): "unknown"}),
    (
        6,
        ["c1"],
        [A("Lag", labels={"group": "g1", "topic": "t"})],
        fresh("c1"),
        "degraded",
        90,
        {("consumergroup", "g1"): "degraded"},
    ),
    (
        7,
        ["c1"],
        [A("Offline", severity="critical", labels={"topic": "t1"})],
        fresh("c1"),
        "critical",
        40,
        {("topic", "t1"): "critical"},
    ),
    # A known critical outranks missing data elsewhere; missing data outranks a warning.
    (
        8,
        ["c1", "c2"],
        [A("Offline", severity="critical", labels={"topic": "t1"})],
        fresh("c1"),
        "critical",
        40,
        {("topic", "t1"): "critical", ("cluster", "c2"): "unknown"},
    ),
    (
        9,
        ["c1", "c2"],
        [A("Lag", labels={"group": "g"})],
        fresh("c1"),
        "unknown",
        50,
        {("consumergroup", "g"): "degraded", ("cluster", "c2"): "unknown"},
    ),
    # Pending and resolved instances are not reasons.
    (10, ["c1"], [A("X", state="pending"), A("Y", state="resolved", severity="critical")], fresh("c1"), "ok", 100, {}),
    # Several reasons on one component; score counts each.
    (
        11,
        ["c1"],
        [A("Down", severity="critical", broker="2"), A("Gc", broker="2"), A("Heap", broker="2")],
        fresh("c1"),
        "critical",
        40,
        {("broker", "2"): "critical"},
    ),
    (
        12,
        ["c1"],
        [A(f"W{i}", labels={"topic": f"t{i}"}) for i in range(12)],
        fresh("c1"),
        "degraded",
        0,
        {("topic", f"t{i}"): "degraded" for i in range(12)},
    ),
    (
        13,
        ["c1"],
        [A("Throttled", labels={"client_id": "app-1", "user": "svc"})],
        fresh("c1"),
        "degraded",
        90,
        {("client", "app-1"): "degraded"},
    ),
    (
        14,
        ["c1"],
        [A("NoController", severity="critical")],
        fresh("c1"),
        "critical",
        40,
        {("cluster", "c1"): "critical"},
    ),
    # A tenant on no cluster: nothing is known about it, so never ok.
    (15, [], [], {}, "unknown", 50, {}),
    # SQLite hands back naive datetimes; they are UTC.
    (16, ["c1"], [], fresh("c1", naive=True), "ok", 100, {}),
    (
        17,
        ["c1"],
        [A("Lag", labels={"group": "g"}), A("Lag2", labels={"group": "g"})],
        fresh("c1"),
        "degraded",
        80,
        {("consumergroup", "g"): "degraded"},
    ),
]


@pytest.mark.parametrize("n,clusters,firing,beats,status,score,components", CASES, ids=[f"case{c[0]}" for c in CASES])
def test_assess_table(n, clusters, firing, beats, status, score, components):
    result = assess(clusters=clusters, firing=firing, heartbeats=beats, now=NOW, stale_after=STALE)
    assert result.status == HealthStatus(status)
    assert result.score == score
    assert {(c.kind.value, c.id): c.status.value for c in result.components} == components


def test_reasons_carry_alert_severity_summary_and_evidence_worst_first():
    firing = [
        A("KafkaConsumerLag", labels={"group": "g"}, annotations={"summary": "lag 120s"}, evidence={"lag_s": 120}),
        A("KafkaConsumerStalled", severity="critical", labels={"group": "g"}, evidence={"committed": 5}),
    ]
    result = assess(clusters=["c1"], firing=firing, heartbeats=fresh("c1"), now=NOW, stale_after=STALE)
    (comp,) = result.components
    assert comp.cluster == "c1"
    assert [(r.alert, r.severity) for r in comp.reasons] == [
        ("KafkaConsumerStalled", "critical"),
        ("KafkaConsumerLag", "warning"),
    ]
    assert comp.reasons[0].summary == "KafkaConsumerStalled"  # no summary annotation: the alert name
    assert comp.reasons[1].summary == "lag 120s"
    assert comp.reasons[1].evidence == {"lag_s": 120}


def test_unknown_reason_says_why_and_as_of_is_the_stalest_heartbeat():
    beats = {**fresh("c1", age=5), **fresh("c2", age=300)}
    result = assess(clusters=["c1", "c2"], firing=[], heartbeats=beats, now=NOW, stale_after=STALE)
    (comp,) = result.components
    assert comp.id == "c2" and comp.reasons[0].alert == "KafkaHealthEvaluationStale"
    assert comp.reasons[0].evidence["age_seconds"] == 300
    assert result.as_of == NOW - timedelta(seconds=300)


def test_no_data_reason_carries_the_engine_detail():
    beats = {"c1": HB("c1", NOW, data_ok=False, detail="no broker metrics for 3 brokers")}
    result = assess(clusters=["c1"], firing=[], heartbeats=beats, now=NOW, stale_after=STALE)
    reason = result.components[0].reasons[0]
    assert reason.alert == "KafkaHealthNoData" and "no broker metrics" in reason.summary


def test_as_of_is_now_without_any_heartbeat():
    assert assess(clusters=["c1"], firing=[], heartbeats={}, now=NOW, stale_after=STALE).as_of == NOW


def test_components_sorted_worst_first():
    firing = [A("W", labels={"topic": "a"}), A("C", severity="critical", labels={"topic": "b"})]
    result = assess(clusters=["c1"], firing=firing, heartbeats=fresh("c1"), now=NOW, stale_after=STALE)
    assert [c.id for c in result.components] == ["b", "a"]


@pytest.mark.parametrize(
    "labels,broker,expected",
    [
        ({"client_id": "c", "topic": "t", "group": "g"}, "1", (ComponentKind.CLIENT, "c")),
        ({"user": "u"}, None, (ComponentKind.CLIENT, "u")),
        ({"group": "g", "topic": "t"}, None, (ComponentKind.CONSUMERGROUP, "g")),
        ({"topic": "t"}, "1", (ComponentKind.TOPIC, "t")),
        ({}, "3", (ComponentKind.BROKER, "3")),
        ({"broker": "4"}, None, (ComponentKind.BROKER, "4")),
        ({}, None, (ComponentKind.CLUSTER, "c1")),
    ],
)
def test_component_of_labels(labels, broker, expected):
    kind, cluster, ident = component_of(A("R", labels=labels, broker=broker))
    assert (kind, ident) == expected and cluster == "c1"


@pytest.mark.parametrize(
    "n,clusters,beats,expected",
    [
        (1, ["c1"], fresh("c1", age=5), NOW + STALE - timedelta(seconds=5)),
        (2, ["c1", "c2"], {**fresh("c1", age=5), **fresh("c2", age=30)}, NOW + STALE - timedelta(seconds=30)),
        (3, ["c1", "c2"], fresh("c1", age=5), NOW + STALE - timedelta(seconds=5)),  # c2 never evaluated: no age in it
        (4, ["c1"], fresh("c1", age=5, naive=True), NOW + STALE - timedelta(seconds=5)),
        (5, ["c1"], {}, None),  # as_of is now: moves with every request
        (6, [], fresh("c1"), None),  # no cluster at all: as_of is now
        (7, ["c1", "c2"], {**fresh("c1", age=5), **fresh("c2", age=46)}, None),  # stale: its age is in the reason
    ],
)
def test_steady_until_is_when_time_alone_would_change_the_answer(n, clusters, beats, expected):
    until = steady_until(clusters=clusters, heartbeats=beats, now=NOW, stale_after=STALE)
    assert until == expected, n
    if until is not None:  # just before: the same answer; at and after it, not necessarily
        before = assess(
            clusters=clusters, firing=[], heartbeats=beats, now=until - timedelta(milliseconds=1), stale_after=STALE
        )
        now = assess(clusters=clusters, firing=[], heartbeats=beats, now=NOW, stale_after=STALE)
        later = assess(
            clusters=clusters, firing=[], heartbeats=beats, now=until + timedelta(milliseconds=1), stale_after=STALE
        )
        assert before == now and later != now, n
