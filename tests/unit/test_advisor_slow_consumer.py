"""slow_consumer_loop: a consumer whose application is its bottleneck, named from its own poll idle ratio (KIP-714
telemetry) while it has records to read. One numbered table of cases; the idle consumer and the one keeping up must
produce no finding."""

from __future__ import annotations

import dataclasses

import pytest

from monitor.advisor import findings
from monitor.advisor.findings import Thresholds, advise, for_tenant
from monitor.advisor.types import FindingKind, FindingSeverity, GroupSample
from tests.unit.test_advisor_findings import KIB, client, snap, telemetry

pytestmark = pytest.mark.unit
T = Thresholds()


def grp(name, members=("shop-worker",), *, tenant="shop", lag=500.0, change=300.0, lag_s=12.0, committed=30.0):
    return GroupSample(
        cluster="c",
        group=name,
        tenant=tenant,
        members=float(len(members)),
        member_changes=0,
        rebalancing_share=0.0,
        window_seconds=600,
        client_ids=tuple(members),
        lag_records=lag,
        lag_change_records=change,
        lag_seconds=lag_s,
        committed_records_per_second=committed,
    )


def slow(*, groups=(), clients=(), tele=()):
    s = dataclasses.replace(snap(*clients, groups=groups), telemetry=tuple(tele))
    return findings.slow_consumer_loop(s, T)


WORKER = "shop-worker"
SLOW_LOOP = [
    # (id, telemetry of shop-worker, groups, quota-sensor clients, expected severity or None: not named)
    (1, dict(poll_idle_ratio=0.004), [grp("shop-g")], [], FindingSeverity.WARNING),  # behind, and more so
    (2, dict(poll_idle_ratio=0.05), [grp("shop-g", change=-40.0)], [], FindingSeverity.INFO),  # catching up slowly
    (3, dict(poll_idle_ratio=0.1), [grp("shop-g")], [], FindingSeverity.WARNING),  # at the threshold
    (4, dict(poll_idle_ratio=0.45), [grp("shop-g")], [], None),  # keeping up: waits in poll half the time
    (5, dict(poll_idle_ratio=0.99), [grp("shop-g", lag=0.0, change=0.0)], [], None),  # idle, nothing to read
    # busy between polls with something else: nothing to read, so not named whatever its ratio
    (6, dict(poll_idle_ratio=0.0), [grp("shop-g", lag=0.0, change=0.0)], [], None),
    (7, dict(fetch_latency_seconds=0.5), [grp("shop-g")], [], None),  # pushed no idle ratio (a producer, old client)
    (8, dict(poll_idle_ratio=0.01), [grp("shop-g", members=("shop-other",))], [], None),  # not its group, no fetches
    # its group's lag is not collected (manual assignment): its own fetched bytes say it has records
    (9, dict(poll_idle_ratio=0.01), [], [client(WORKER, fetch=8 * KIB, rt=0.001)], FindingSeverity.INFO),
    (10, dict(poll_idle_ratio=0.01), [], [client(WORKER, fetch=300.0, rt=0.001)], None),  # empty fetches only
    (11, dict(poll_idle_ratio=0.01), [], [], None),  # no group, no quota sensor: nothing says it has records
    # a group of the same client id in another tenant: neither evidence nor a reason to name it
    (12, dict(poll_idle_ratio=0.01), [grp("ads-g", tenant="ads")], [], None),
]


@pytest.mark.parametrize("case,tele,groups,clients,expected", SLOW_LOOP, ids=[f"slow-loop-{c[0]}" for c in SLOW_LOOP])
def test_slow_consumer_loop(case, tele, groups, clients, expected):
    found = slow(groups=groups, clients=clients, tele=[telemetry(WORKER, **tele)])
    assert [f.severity for f in found] == ([expected] if expected else [])
    for f in found:
        assert f.kind is FindingKind.SLOW_CONSUMER_LOOP and f.client_id == WORKER and f.tenant == "shop"
        assert f.basis == "client_telemetry" == f.evidence["basis"]
        assert f.evidence["poll_idle_ratio"] == tele["poll_idle_ratio"]
        assert f.evidence["client_software"] == "apache-kafka-java 3.9.1"
        assert "kafka_client_telemetry_consumer_poll_idle_ratio_avg" in f.metrics
        assert "max.poll.records" in f.fix and "max.poll.interval.ms" in f.fix and "worker pool" in f.fix
        assert not f.hurts_other_tenants and f.as_json()["hurts_other_tenants"] is False
        assert f.evidence["falling_behind"] is (expected is FindingSeverity.WARNING)


def test_the_evidence_names_its_groups_lag_and_pace():
    g = grp("shop-g", members=(WORKER, "shop-worker-2"), lag=1200.0, change=600.0, lag_s=40.0, committed=33.3)
    (f,) = slow(groups=[g], tele=[telemetry(WORKER, poll_idle_ratio=0.0123, fetch_latency_seconds=0.02)])
    assert f.evidence["groups"] == {
        "shop-g": {
            "lag_records": 1200.0,
            "lag_change_records_per_second": 1.0,
            "lag_seconds": 40.0,
            "committed_records_per_second": 33.3,
        }
    }
    assert f.evidence["poll_idle_ratio"] == 0.012 and f.evidence["fetch_latency_seconds"] == 0.02
    assert "1%" in f.cause and "shop-g is 1200 records behind" in f.cause and "lag grew" in f.cause


def test_a_slow_loop_is_not_polling_too_often_and_the_advice_keeps_tenants_apart():
    """The slow loop and the tight poller are opposites on one signal: each finding names only its consumer, and
    each tenant sees only its own (the ads consumer's group is ads')."""
    tele = [
        telemetry(WORKER, poll_idle_ratio=0.01, fetch_latency_seconds=0.2),
        telemetry("shop-spin", poll_idle_ratio=0.6, fetch_latency_seconds=0.001),
        telemetry("ads-worker", tenant="ads", poll_idle_ratio=0.02, fetch_latency_seconds=0.2),
    ]
    s = dataclasses.replace(
        snap(groups=[grp("shop-g"), grp("ads-g", members=("ads-worker",), tenant="ads")]), telemetry=tuple(tele)
    )
    found = advise(s)
    assert sorted((f.kind.value, f.client_id) for f in for_tenant(found, "shop")) == [
        ("polling_too_often", "shop-spin"),
        ("slow_consumer_loop", WORKER),
    ]
    ads = for_tenant(found, "ads")
    assert [(f.kind, f.client_id) for f in ads] == [(FindingKind.SLOW_CONSUMER_LOOP, "ads-worker")]
    assert list(ads[0].evidence["groups"]) == ["ads-g"] and "shop" not in repr(ads[0].as_json())
