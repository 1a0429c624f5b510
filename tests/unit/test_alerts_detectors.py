"""Detectors' pure functions on synthetic series."""

import pytest

from alerts.detectors.clients import (
    ClientStats,
    is_outdated,
    name_slow_peers,
    persistent_backlog,
    rank_busy_clients,
    rank_slow_clients,
    response_backlog,
)
from alerts.detectors.disk import (
    current_filesystem_start,
    forecast_disk_full,
    growth_rate,
    severity_for_eta,
)
from alerts.detectors.lag import (
    Commit,
    LagStatus,
    burrow_status,
    commits_from_samples,
    pseudo_offsets,
    snap,
)
from alerts.detectors.latency import regression
from alerts.detectors.storage import budget_usage
from alerts.types import Severity

pytestmark = pytest.mark.unit
GiB = 1024**3
HOUR = 3600

# ------------------------------------------------------------------------------------------------ disk


def _series(n, step, f):
    ts = [i * step for i in range(n)]
    return ts, [f(t) for t in ts]


def test_steady_linear_growth_gives_eta():
    # 100 GiB disk, 50 GiB used, growing 1 GiB/h -> full in 50 h
    ts, used = _series(73, 300, lambda t: 50 * GiB + GiB * t / HOUR)
    fc = forecast_disk_full(ts, used, 100 * GiB)
    assert fc.method == "linear"
    assert fc.eta_seconds == pytest.approx((100 - 56) * HOUR, rel=1e-6)
    assert severity_for_eta(fc.eta_seconds, warning=24 * HOUR, critical=6 * HOUR) is None


def test_fast_growth_is_critical():
    ts, used = _series(30, 60, lambda t: 90 * GiB + 2 * GiB * t / HOUR)  # 2 GiB/h, ~9 GiB free
    fc = forecast_disk_full(ts, used, 100 * GiB)
    assert fc.eta_seconds < 6 * HOUR
    assert severity_for_eta(fc.eta_seconds, warning=24 * HOUR, critical=6 * HOUR) is Severity.CRITICAL


def test_retention_bounded_sawtooth_does_not_alarm():
    # grows 10 GiB/h (steep!) but retention deletes back to 40 GiB every hour: peaks stay at 50 GiB
    ts, used = _series(72, 300, lambda t: 40 * GiB + 10 * GiB * ((t % HOUR) / HOUR))
    assert forecast_disk_full(ts, used, 60 * GiB) is None


def test_sawtooth_with_rising_envelope_alarms():
    # each cycle peaks 2 GiB higher than the last: retention does not keep up
    def f(t):
        cycle = t // HOUR
        return 40 * GiB + 2 * GiB * cycle + 5 * GiB * ((t % HOUR) / HOUR)

    ts, used = _series(72, 300, f)
    fc = forecast_disk_full(ts, used, 70 * GiB)
    assert fc.method == "envelope" and fc.drops == 5
    assert fc.growth_bytes_per_second == pytest.approx(2 * GiB / HOUR, rel=0.05)
    assert 0 < fc.eta_seconds < 24 * HOUR


def test_one_retention_drop_and_below_previous_peak_is_bounded():
    ts, used = _series(20, 300, lambda t: 40 * GiB + 5 * GiB * ((t % 3000) / 3000))
    assert forecast_disk_full(ts, used, 50 * GiB) is None


def test_only_points_on_the_current_filesystem_count():
    ts = [0, 10, 20, 30, 40]
    assert current_filesystem_start(ts, ts, [5.0] * 5, 5.0) == 0
    assert current_filesystem_start(ts, [], [], 5.0) == 0  # no history: keep everything
    assert current_filesystem_start(ts, ts, [9.0, 9.0, 5.0, 5.0, 5.0], 5.0) == 2  # moved at 20
    assert current_filesystem_start(ts, [0, 15, 30], [5.0, 9.0, 5.0], 5.0) == 2  # after the last other size


def test_shrinking_or_flat_usage_and_too_few_points():
    ts, used = _series(20, 300, lambda t: 50 * GiB - t)
    assert forecast_disk_full(ts, used, 100 * GiB) is None
    assert forecast_disk_full(ts[:3], used[:3], 100 * GiB) is None


def test_full_disk_eta_zero():
    fc = forecast_disk_full([0, 1, 2, 3, 4, 5, 6, 7], [GiB] * 8, GiB)
    assert fc.eta_seconds == 0 and severity_for_eta(0, warning=1, critical=1) is Severity.CRITICAL


# ------------------------------------------------------------------------------------------------ Burrow


def C(*rows):
    return [Commit(t, o, lag) for t, o, lag in rows]


# Our own small table: (no, commits, current_lag, now, expected); Burrow's own is in test_lag_burrow.py
BURROW_CASES = [
    (1, C(), 0, 100, LagStatus.OK),  # no offsets: nothing to say
    (2, C((0, 10, 5), (10, 20, 0), (20, 30, 5)), 5, 25, LagStatus.OK),  # lag was zero once in the window
    (3, C((0, 10, 5), (10, 20, 5), (20, 30, 5)), 0, 25, LagStatus.OK),  # no lag now
    (4, C((0, 10, 5), (10, 20, 5), (20, 15, 5)), 5, 25, LagStatus.REWIND),
    (5, C((0, 10, 5), (10, 20, 6), (20, 30, 7)), 7, 50, LagStatus.STOP),  # 50-20 > 20-0
    (6, C((0, 10, 5), (10, 10, 6), (20, 10, 7)), 7, 25, LagStatus.STALL),
    (7, C((0, 10, 5), (10, 20, 6), (20, 30, 7)), 7, 25, LagStatus.WARN),  # advancing, lag growing
    (8, C((0, 10, 5), (10, 20, 4), (20, 30, 7)), 7, 25, LagStatus.OK),  # lag decreased once
    (9, C((0, 10, 5), (10, 5, 6), (20, 5, 7)), 7, 100, LagStatus.STOP),  # stop wins over rewind (Burrow since #290)
    (10, C((0, 10, 5), (10, 10, 5), (20, 10, 5)), 5, 100, LagStatus.STOP),  # stop wins over stall
    (11, C((0, 10, 5)), 5, 0, LagStatus.STALL),  # one commit, just now: not stopped, no movement
]


@pytest.mark.parametrize("no,commits,lag,now,expected", BURROW_CASES, ids=[f"case{c[0]}" for c in BURROW_CASES])
def test_burrow_status(no, commits, lag, now, expected):
    assert burrow_status(commits, lag, now) is expected


def test_samples_to_commits_without_members_is_stop():
    # a group with no members whose offset froze at t=20 while lag grows: one commit at 20, now 100 -> STOP
    times, offsets, lags = [0, 10, 20, 30, 40], [5, 8, 10, 10, 10], [1, 2, 3, 5, 8]
    commits = commits_from_samples(times, offsets, lags, members=[0, 0, 0, 0, 0])
    assert [c.offset for c in commits] == [5, 8, 10]
    assert burrow_status(commits, 8, 100) is LagStatus.STOP


def test_samples_to_commits_with_members_is_stall():
    # repeated samples of one offset are one commit; active members stand for the same-offset commits Prometheus
    # cannot see, as one commit at the latest sample
    times, offsets, lags = [0, 10, 20, 30], [10, 10, 10, 10], [1, 2, 3, 5]
    commits = commits_from_samples(times, offsets, lags, members=[2, 2, 2, 2])
    assert [(c.timestamp, c.offset) for c in commits] == [(0, 10), (30, 10)]
    assert burrow_status(commits, 5, 35) is LagStatus.STALL


def test_samples_to_commits_are_offset_changes_and_the_last_intervals_of_them():
    times, offsets, lags = [0, 10, 20, 30, 40, 50], [1, 1, 2, 2, 2, 3], [4, 5, 3, 4, 5, 2]
    commits = commits_from_samples(times, offsets, lags)
    assert [(c.timestamp, c.offset, c.lag) for c in commits] == [(0, 1, 4), (20, 2, 3), (50, 3, 2)]
    assert [c.offset for c in commits_from_samples(times, offsets, lags, intervals=2)] == [2, 3]


def test_pseudo_offsets_from_production_and_lag():
    # 100 msgs produced per step; a stopped consumer's lag grows by ~100 per step (sampling jitter of a few)
    produced = [100, 100, 100, 100, 100]
    lags = [50, 152, 249, 351, 450]
    raw = pseudo_offsets(produced, lags)
    assert raw == [50, 48, 51, 49, 50]
    times = [0, 10, 20, 30, 40]
    commits = commits_from_samples(times, snap(raw, 5), lags, members=[0] * 5)
    assert len(commits) == 1 and burrow_status(commits, 450, 60) is LagStatus.STOP
    # a consumer reset to the beginning: lag jumps by more than production -> the offset falls: REWIND
    lags = [50, 40, 30, 2000, 1990]
    offs = snap(pseudo_offsets(produced, lags), 5)
    assert burrow_status(commits_from_samples(times, offs, lags, [1] * 5), 1990, 45) is LagStatus.REWIND


# ------------------------------------------------------------------------------------------------ clients


def test_response_backlog_needs_queue_and_slowness():
    kw = dict(queue_threshold=50, network_idle_drop=0.1, send_time_ratio=2.0)
    assert response_backlog([80] * 10, [0.9] * 5 + [0.5] * 5, [], **kw)["network_idle_now"] == 0.5
    assert response_backlog([80] * 10, [0.9] * 10, [0.01] * 5 + [0.05] * 5, **kw)["send_time_now_seconds"] == 0.05
    assert response_backlog([80] * 10, [0.9] * 10, [0.01] * 10, **kw) is None  # a queue alone: a burst
    assert response_backlog([10] * 10, [0.9] * 5 + [0.2] * 5, [], **kw) is None  # idle loss alone: more traffic


def test_response_backlog_of_slow_readers_is_seen_in_send_time_only():
    # Kafka mutes a connection until its response is written: a slow reader leaves the queue empty and the
    # network threads idle; the p99 response send time is what rises.
    kw = dict(queue_threshold=50, network_idle_drop=0.1, send_time_ratio=2.0, min_send_seconds=1.0)
    v = response_backlog([0] * 10, [1.0] * 10, [0.001] * 5 + [30.0] * 5, **kw)
    assert v["cause"] == "slow_readers" and v["send_time_now_seconds"] == 30.0
    assert response_backlog([0] * 10, [1.0] * 10, [0.0] * 5 + [2.0] * 5, **kw)["cause"] == "slow_readers"
    assert response_backlog([0] * 10, [1.0] * 10, [0.0001] * 5 + [0.5] * 5, **kw) is None  # under the guard
    assert response_backlog([0] * 10, [1.0] * 10, [5.0] * 10, **kw) is None  # as slow as always: no change
    assert response_backlog([80] * 10, [0.9] * 5 + [0.5] * 5, [], **kw)["cause"] == "network_threads"


def test_name_slow_peers_ranks_persistent_backlogs_and_names_members_at_the_address():
    members = [
        {"client_host": "10.0.0.7", "client_id": "shop-slow", "group": "shop-g", "tenant": "shop"},
        {"client_host": "10.0.0.7", "client_id": "shop-slow", "group": "shop-g", "tenant": "shop"},
        {"client_host": "10.0.0.9", "client_id": "ads-fast", "group": "ads-g", "tenant": "ads"},
    ]
    backlogs = {"10.0.0.7": (24 * 120_000.0, 24), "10.0.0.9": (9_000_000.0, 1), "10.0.0.8": (30_000.0, 3)}
    peers = name_slow_peers(backlogs, members, 3)
    # 10.0.0.9 was caught once mid-write (however large): not a slow reader. 10.0.0.8 has no group member.
    assert [p["peer"] for p in peers] == ["10.0.0.7", "10.0.0.8"]
    assert peers[0]["send_queue_bytes"] == 120_000.0 and peers[0]["samples_backed_up"] == 24
    assert peers[0]["clients"] == [{"client_id": "shop-slow", "group": "shop-g", "tenant": "shop"}]
    assert peers[1]["clients"] == []


def test_rank_slow_clients_prefers_time_per_byte():
    clients = [
        ClientStats("alice", "bulk-producer", request_time_ratio=0.3, bytes_per_second=50 * 1048576),
        ClientStats("bob", "slow-reader", request_time_ratio=0.25, bytes_per_second=10_000),
        ClientStats("carol", "idle", request_time_ratio=0.0),
    ]
    ranked = rank_slow_clients(clients, 2)
    assert [c.client_id for c in ranked] == ["slow-reader", "bulk-producer"]


def test_rank_busy_clients_by_thread_time_per_byte():
    clients = [
        ClientStats("a", "big-batches", request_time_ratio=0.5, bytes_per_second=10_000_000),
        ClientStats("b", "tiny-batches", request_time_ratio=0.8, bytes_per_second=300_000),
        ClientStats("c", "poller", request_time_ratio=0.3, bytes_per_second=0),
        ClientStats("d", "idle", request_time_ratio=0.001, bytes_per_second=0),
    ]
    ranked = rank_busy_clients(clients, 3)
    assert [c.client_id for c in ranked] == ["poller", "tiny-batches", "big-batches"]
    assert ranked[1].as_evidence()["handler_seconds_per_mib"] == pytest.approx(0.8 * 1048576 / 300_000, rel=1e-3)


def test_rank_busy_clients_puts_immaterial_thread_time_after_the_material_however_few_bytes():
    """A CI failure (ad3ae34): on a broker saturated by a tiny-produce flood, a client moving no bytes at 3 % of a
    thread (the monitor's own admin requests grow slow too) ranked first per byte, so the alert named nobody the
    flooder's tenant could see. It is still listed, after the material ones."""
    clients = [
        ClientStats("ads-app", "ads-flood", request_time_ratio=0.5256, bytes_per_second=300_000),
        ClientStats("", "kafka-health-admin", request_time_ratio=0.03, bytes_per_second=0),
    ]
    assert [c.client_id for c in rank_busy_clients(clients, 3)] == ["ads-flood", "kafka-health-admin"]


def test_outdated_versions():
    mins = {"apache-kafka-java": "2.8.0", "librdkafka": "1.9.0"}
    assert is_outdated("apache-kafka-java", "2.4.1", mins)
    assert not is_outdated("apache-kafka-java", "3.7.0", mins)
    assert not is_outdated("apache-kafka-java", "2.8.0", mins)
    assert is_outdated("librdkafka", "1.6.0-RC2", mins)
    assert not is_outdated("unknown", "0.1", mins)


# ------------------------------------------------------------------------------------------------ latency

LAT = dict(own_ratio=2.0, peer_ratio=2.0, min_seconds=0.05, min_delta_seconds=0.02)


def test_latency_regression_against_history_and_peers():
    ev = regression(0.4, [0.1] * 50, [0.1, 0.12], **LAT)
    assert ev["ratio_to_baseline"] == 4.0 and ev["peer_median_seconds"] == 0.11


def test_latency_guards():
    assert regression(0.006, [0.002] * 50, [0.002], **LAT) is None  # quiet broker: absolute guard
    assert regression(0.4, [0.1] * 50, [0.35, 0.4], **LAT) is None  # whole cluster slower: not this broker
    assert regression(0.15, [0.1] * 50, [0.05], **LAT) is None  # below own ratio
    assert regression(0.4, [], [0.1], **LAT) is None  # no history yet
    assert regression(0.4, [0.1] * 10, [], **LAT) is not None  # single broker: own history decides


# ------------------------------------------------------------------------------------------------ storage


def test_tenant_budget_usage():
    owner = {"orders.a": "shop", "orders.b": "shop", "logs": "ops"}.get
    usage = budget_usage(
        [("c1", "orders.a", 60.0), ("c2", "orders.b", 30.0), ("c1", "logs", 5.0)], lambda c, t: owner(t), {"shop": 100}
    )
    assert usage == {
        "shop": {"used_bytes": 90.0, "budget_bytes": 100, "ratio": 0.9, "by_cluster": {"c1": 60.0, "c2": 30.0}}
    }


# ----------------------------------------------------------------------------------------------- disk: growth of a part
# (issue 20) A part of the filesystem's growth (a tenant's log size) is measured like the filesystem itself, so a
# tenant bounded by retention is not taken for the one filling the disk. The split's table is in test_disk_split.py.


def test_growth_rate_of_a_part_follows_the_filesystem_method():
    ts = [i * 300.0 for i in range(12)]
    steady = [GiB + 2**20 * t for t in ts]  # 1 MiB/s, no deletion: least squares
    assert growth_rate(ts, steady, drop_floor=2**20) == (pytest.approx(2**20), "linear", 0)
    # retention deletes every hour back to 1 GiB: one cycle seen, below its peak: bounded (None, read as 0)
    bounded = [GiB + 2**20 * (t % 3000) for t in ts]
    assert growth_rate(ts, bounded, drop_floor=2**20) == (None, "envelope", 1)
    # peaks rising 100 MiB per cycle: the envelope's slope, whatever each tooth's steepness
    rising = [GiB + 100 * 2**20 * (t // 1200) + 2**20 * (t % 1200) for t in ts]
    rate, method, drops = growth_rate(ts, rising, drop_floor=2**20)
    assert method == "envelope" and drops == 2 and rate == pytest.approx(100 * 2**20 / 1200, rel=0.01)


def test_a_principal_client_split_across_quota_entities_is_one_client():
    """Bytes under (user, client) from a per-user byte quota, request time under ("", client) from the default client
    quota: one row, named by its principal; a client id under two principals stays apart."""
    from alerts.detectors.clients import join_principals

    rows = {
        ("ads-app", "ads-flood"): {"produce": 1000.0, "throttle_seconds": 0.0},
        ("", "ads-flood"): {"request_time_ratio": 0.4, "throttle_seconds": 0.2},
        ("", "shop-api"): {"request_time_ratio": 0.01, "produce": 50.0},
        ("a", "shared"): {"produce": 1.0},
        ("b", "shared"): {"produce": 2.0},
        ("", "shared"): {"request_time_ratio": 0.3},
    }
    got = join_principals(rows)
    assert got[("ads-app", "ads-flood")] == {"produce": 1000.0, "throttle_seconds": 0.2, "request_time_ratio": 0.4}
    assert ("", "ads-flood") not in got
    assert got[("", "shop-api")] == {"request_time_ratio": 0.01, "produce": 50.0}
    assert got[("", "shared")] == {"request_time_ratio": 0.3}  # two principals: not guessed


def test_persistent_backlog_finds_the_peer_whose_queue_never_drains():
    kw = dict(min_share=0.8, min_bytes=16384)
    # 12 samples in the window: 10.0.0.7 backed up in 11 of them (a slow reader), 127.0.0.1 (five fast consumers
    # and the followers) caught mid-write in 3, however large
    backlogs = {"10.0.0.7": (11 * 90_000.0, 11), "127.0.0.1": (3 * 400_000.0, 3)}
    v = persistent_backlog(backlogs, 12, **kw)
    assert v == {
        "cause": "slow_readers",
        "trigger": "socket_backlog",
        "peer": "10.0.0.7",
        "send_queue_bytes": 90_000.0,
        "backed_up_share": 0.917,
    }
    assert persistent_backlog({"10.0.0.7": (9 * 90_000.0, 9)}, 12, **kw) is None  # 75 %: drained now and then
    assert persistent_backlog({"10.0.0.7": (12 * 2_000.0, 12)}, 12, **kw) is None  # a few KiB: a busy fast reader
    assert persistent_backlog(backlogs, 0, **kw) is None  # how many samples were taken is unknown: no verdict
    # two slow peers: the larger backlog is the one to name first
    two = {"10.0.0.7": (12 * 90_000.0, 12), "10.0.0.8": (12 * 200_000.0, 12)}
    assert persistent_backlog(two, 12, **kw)["peer"] == "10.0.0.8"
