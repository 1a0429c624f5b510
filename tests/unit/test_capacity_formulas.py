"""Capacity formulas against hand-computed cases (the arithmetic is written out beside each expectation)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from monitor.advisor.capacity import (
    DAY,
    BrokerUsage,
    ClusterUsage,
    Limits,
    NewTenant,
    Scenario,
    TenantUsage,
    brokers_for,
    fill_time,
    missing_inputs,
    plan,
    seconds_until,
    steady_storage_bytes,
    thread_headroom,
)
from monitor.advisor.service import parse_scenario
from monitor.core.errors import Invalid

pytestmark = pytest.mark.unit
GB = 1e9


def test_steady_storage_is_ingress_times_retention_times_replication():
    assert steady_storage_bytes(1e6, 7 * DAY, 3) == 1e6 * 604800 * 3 == 1.8144e12


SECONDS_UNTIL = [
    # (level, stored, ingress, rf, steady, expected)
    (2e12, 50e9, 3e6, 3, 5.4432e12, (2e12 - 50e9) / 9e6),  # grows at 9 MB/s past the level
    (2e12, 50e9, 1e6, 3, 1.8144e12, None),  # steady state below the budget: never
    (2e12, 2.5e12, 1e6, 3, 1.8144e12, 0.0),  # already over
    (2e12, 0.0, 0.0, 3, 0.0, None),  # no ingress
]


@pytest.mark.parametrize("level,stored,ingress,rf,steady,expected", SECONDS_UNTIL)
def test_seconds_until(level, stored, ingress, rf, steady, expected):
    got = seconds_until(level, stored, ingress, rf, steady)
    assert got == (None if expected is None else pytest.approx(expected))


def test_thread_headroom():
    assert thread_headroom(0.6, 0.2) == pytest.approx(0.8 / 0.4)  # load can double
    assert thread_headroom(0.1, 0.2) == pytest.approx(0.8 / 0.9)  # already past the floor: < 1
    assert thread_headroom(1.0, 0.2) == math.inf
    assert thread_headroom(None, 0.2) is None


def test_brokers_for_each_constraint():
    got = brokers_for(
        disk_needed_bytes=5.5728e12,
        disk_per_broker_bytes=1e12,
        partition_replicas=9000,
        leaders=4500,
        handler_busy=2.8,
        network_busy=0.5,
        limits=Limits(),
    )
    # 5.5728 / 0.8 = 6.97 -> 7; 9000 / 4000 = 2.25 -> 3; 4500 / 2000 = 2.25 -> 3; 2.8 / 0.8 = 3.5 -> 4; 0.5 / 0.7 -> 1
    assert got == {"disk": 7, "partitions": 3, "leaders": 3, "request_handler_threads": 4, "network_threads": 1}


def test_brokers_for_leaves_out_a_constraint_whose_input_is_unknown():
    got = brokers_for(
        disk_needed_bytes=5e12,
        disk_per_broker_bytes=None,
        partition_replicas=10,
        leaders=4,
        handler_busy=None,
        network_busy=0.5,
        limits=Limits(),
    )
    assert got == {"partitions": 1, "leaders": 1, "network_threads": 1}  # no "disk": 0, no "threads": 1


FILL_TIME = [
    # (level, used, growers (rate, room), expected)
    (100.0, 10.0, [(2.0, 1000.0)], 45.0),  # one grower, never stops before: 90 / 2
    # Two growers: 3 B/s together until the second stops at t=10 (room 10), having added 30; then 2 B/s for the
    # other 60: 10 + 30 = 40 (at a constant 3 B/s the answer would be 30: an underestimate).
    (100.0, 10.0, [(2.0, 1000.0), (1.0, 10.0)], 40.0),
    (100.0, 10.0, [(2.0, 40.0), (1.0, 10.0)], None),  # both stop at 10 + 40 + 10 = 60 < 100: never
    (100.0, 100.0, [], 0.0),  # already there
    (100.0, 10.0, [(0.0, 50.0), (5.0, -3.0)], None),  # no growth, or already past the steady state
]


@pytest.mark.parametrize("level,used,growers,expected", FILL_TIME)
def test_fill_time_is_piecewise_linear(level, used, growers, expected):
    got = fill_time(level, used, growers)
    assert got == (None if expected is None else pytest.approx(expected))


def usage() -> ClusterUsage:
    brokers = tuple(
        BrokerUsage(
            broker=str(i),
            disk_size_bytes=1000 * GB,
            disk_avail_bytes=900 * GB,
            partitions=100,
            leaders=34,
            handler_idle_at_peak=0.6,
            network_idle_at_peak=0.65,
        )
        for i in (1, 2, 3)
    )
    tenants = (
        TenantUsage("shop", 1e6, 50 * GB, 7 * DAY, budget_bytes=2000 * GB, partitions=30),
        TenantUsage("ads", 0.5e6, 100 * GB, 1 * DAY, partitions=20),
    )
    return ClusterUsage(cluster="c", brokers=brokers, tenants=tenants, replication_factor=3.0)


def test_plan_today():
    p = plan(usage())
    shop, ads = p.tenants
    assert shop.steady_storage_bytes == pytest.approx(1.8144e12)  # 1 MB/s x 7 d x 3
    assert shop.budget_full_in_seconds is None  # 1.81 TB steady < 2 TB budget
    assert ads.steady_storage_bytes == pytest.approx(129.6e9)  # 0.5 MB/s x 1 d x 3
    assert p.steady_storage_bytes == pytest.approx(1.944e12)
    assert (p.disk_total_bytes, p.disk_used_bytes) == (3000 * GB, 300 * GB)
    # Disks stop growing at 1.944 TB + nothing else, below 80% of 3 TB = 2.4 TB: never full.
    assert p.disk_full_in_seconds is None
    # disk 1.944 / 0.8 = 2.43 -> 3; 300 replicas -> 1; 102 leaders -> 1; handler 3 x 0.4 / 0.8 = 1.5 -> 2;
    # network 3 x 0.35 / 0.7 -> 2
    assert p.brokers_needed == {
        "disk": 3,
        "partitions": 1,
        "leaders": 1,
        "request_handler_threads": 2,
        "network_threads": 2,
    }
    assert p.missing == ()
    assert p.brokers_required == 3
    assert p.handler_headroom == pytest.approx(2.0) and p.network_headroom == pytest.approx(2.0)


def test_what_if_a_tenant_grows_three_times():
    p = plan(usage(), scenario=Scenario(grow=(("shop", 3.0),)))
    shop = p.tenants[0]
    assert shop.steady_storage_bytes == pytest.approx(5.4432e12)  # 3 MB/s x 7 d x 3
    assert shop.budget_full_in_seconds == pytest.approx((2000 * GB - 50 * GB) / 9e6)  # 216,667 s = 2.5 days
    # Disk grows from 0.3 TB towards 2.4 TB (2.1e12 to go) at (3 + 0.5) MB/s x 3 = 10.5 MB/s until ads reaches its
    # steady state: (129.6 - 100) GB / 1.5 MB/s = 19,733.3 s, adding 207.2 GB; then at shop's 9 MB/s for the
    # remaining 1,892.8 GB: 210,311.1 s. Full in 230,044.4 s (2.66 days; a constant 10.5 MB/s would say 200,000).
    assert p.disk_full_in_seconds == pytest.approx(29.6e9 / 1.5e6 + (2.1e12 - 29.6e9 / 1.5e6 * 10.5e6) / 9e6)
    assert p.disk_full_in_seconds == pytest.approx(230044.4, abs=0.1)
    # Ingress 1.5 -> 3.5 MB/s: load x 7/3. Disk 5.5728 / 0.8 -> 7; handler 1.2 x 7/3 / 0.8 = 3.5 -> 4.
    assert p.brokers_needed == {
        "disk": 7,
        "partitions": 1,
        "leaders": 1,
        "request_handler_threads": 4,
        "network_threads": 4,
    }
    assert p.brokers_required == 7
    assert p.handler_headroom == pytest.approx(2.0 * 3 / 7)


def test_what_if_a_new_tenant_is_added():
    p = plan(usage(), scenario=Scenario(add=(NewTenant("newco", 5e6, 7 * DAY, partitions=48),)))
    newco = p.tenants[-1]
    assert newco.steady_storage_bytes == pytest.approx(9.072e12)  # 5 MB/s x 7 d x 3
    assert p.partitions_per_broker_max == pytest.approx(100 + 48 * 3 / 3)
    assert p.leaders_per_broker_max == pytest.approx(34 + 48 / 3)  # one leader per new partition, spread
    # steady 1.944 + 9.072 = 11.016 TB / 0.8 TB per broker = 13.77 -> 14
    assert p.brokers_needed["disk"] == 14
    # load (1.5 + 5) / 1.5 = 4.333; handler 1.2 x 4.333 / 0.8 = 6.5 -> 7
    assert p.brokers_needed["request_handler_threads"] == 7


def test_plan_json_for_a_tenant_has_no_cluster_totals():
    doc = plan(usage()).as_json(cluster_wide=False)
    assert set(doc) == {"cluster", "replication_factor", "tenants"}
    full = plan(usage()).as_json()
    assert full["brokers_required"] == 3 and full["disk_full_in_seconds"] is None


def test_parse_scenario():
    s = parse_scenario(["shop:3"], ["newco:5:7:48", "tiny:0.5:1"])
    assert s.grow == (("shop", 3.0),)
    assert s.add == (NewTenant("newco", 5e6, 7 * DAY, 48.0), NewTenant("tiny", 0.5e6, DAY, 0.0))
    for grow, add in ((["shop"], []), (["shop:-1"], []), ([], ["x:5"]), ([], ["x:a:7"]), ([], ["x:5:0"])):
        with pytest.raises(Invalid):
            parse_scenario(grow, add)


def test_a_tenant_with_its_own_replication_factor():
    u = usage()
    u = replace(u, tenants=(replace(u.tenants[0], replication_factor=2.0), u.tenants[1]))
    shop, ads = plan(u).tenants
    assert shop.replication_factor == 2.0 and shop.steady_storage_bytes == pytest.approx(1e6 * 604800 * 2)
    assert ads.replication_factor == 3.0  # the cluster's


def test_leaders_per_broker_limit_the_brokers_required():
    # 3 brokers each leading 2,500 partitions (RF 1: 2,500 replicas each): 7,500 leaders / 2,000 per broker = 3.75
    # -> 4 brokers, though 7,500 replicas / 4,000 = 1.9 -> 2 and disk and threads need fewer.
    u = usage()
    u = replace(
        u,
        brokers=tuple(replace(b, partitions=2500, leaders=2500) for b in u.brokers),
        replication_factor=1.0,
        tenants=(),
    )
    p = plan(u)
    assert p.brokers_needed["leaders"] == 4 and p.brokers_needed["partitions"] == 2
    assert p.brokers_required == 4
    # What-if: a tenant with 600 partitions adds 600 leaders: 8,100 / 2,000 = 4.05 -> 5.
    p = plan(u, scenario=Scenario(add=(NewTenant("newco", 0.0, DAY, partitions=600),)))
    assert p.brokers_needed["leaders"] == 5 and p.leaders_per_broker_max == pytest.approx(2500 + 600 / 3)
    assert plan(u, limits=Limits(max_leaders_per_broker=4000)).brokers_needed["leaders"] == 2  # 7,500 / 4,000


def test_a_broker_without_disk_size_is_not_full_now():
    # The shell reads a missing filesystem series as size 0 (and avail 0): "used >= 80% of 0" must not mean full.
    u = usage()
    u = replace(u, brokers=(replace(u.brokers[0], disk_size_bytes=0.0, disk_avail_bytes=0.0), *u.brokers[1:]))
    p = plan(u)
    assert p.missing == ("disk_size",)
    assert p.disk_full_in_seconds is None and "disk" not in p.brokers_needed
    doc = p.as_json()
    assert doc["disk_full_in_seconds"] is None and set(doc["missing"]) == {"disk_size"}
    assert "kafka_host_filesystem_size_bytes" in doc["missing"]["disk_size"]


def test_a_broker_without_thread_idle_leaves_headroom_unknown():
    u = usage()
    u = replace(u, brokers=(replace(u.brokers[0], handler_idle_at_peak=None), *u.brokers[1:]))
    p = plan(u)
    assert p.missing == ("handler_idle",)
    assert p.handler_headroom is None and "request_handler_threads" not in p.brokers_needed
    assert p.network_headroom == pytest.approx(2.0)


def test_missing_inputs_of_an_empty_cluster():
    empty = ClusterUsage(cluster="c", brokers=(), tenants=(TenantUsage("shop", 0.0, 0.0, DAY),), replication_factor=1.0)
    assert missing_inputs(empty) == ("brokers", "topics")
    assert missing_inputs(usage()) == ()
