"""The report's Spark transforms on tiny frames with known answers (session ``spark`` fixture, local mode).

Marked ``integration`` because they need the Spark JVM (see the markers in pyproject); they are pure
DataFrame -> DataFrame checks otherwise.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest
from pyspark.sql import functions as F

from monitor.core.config import TenantConfig, TenantContract, TenantSelector
from monitor.core.tenancy import TenantIndex
from monitor.reports import transforms as T
from monitor.reports.extract import FRAME_SCHEMA, SPARK_SCHEMA, selectors_frame

pytestmark = pytest.mark.integration

UTC = timezone.utc
WEEK = date(2026, 11, 16)  # Monday of 2026-W47
T0 = datetime(2026, 11, 16, tzinfo=UTC)
LABELS = [f.name for f in SPARK_SCHEMA.fields if f.name not in ("ts", "series", "value")]

TENANTS = (
    TenantConfig(
        name="acme",
        selectors=(
            TenantSelector(
                cluster="main",
                topic_prefixes=("acme.",),
                principals=("User:acme-svc",),
                client_id_prefixes=("acme-",),
                group_prefixes=("acme-",),
            ),
        ),
        contract=TenantContract(storage_budget_bytes=100 * 10**9),
    ),
    TenantConfig(name="acme-eu", selectors=(TenantSelector(cluster="main", topic_prefixes=("acme.eu.",)),)),
    TenantConfig(
        name="beta",
        selectors=(TenantSelector(cluster="main", topic_prefixes=("beta.",), client_id_prefixes=("beta-",)),),
    ),
    TenantConfig(name="delta", whole_clusters=("edge",)),
)


def row(series: str, ts: datetime, value: float, cluster: str = "main", **labels) -> tuple:
    return (ts, series, *[labels.get(c) for c in LABELS], float(value), cluster)


def frame(spark, rows):
    return spark.createDataFrame(rows, FRAME_SCHEMA)


def minutes(start: datetime, n: int) -> list[datetime]:
    return [start + timedelta(minutes=i) for i in range(n)]


@pytest.fixture(scope="module")
def selectors(spark):
    return selectors_frame(spark, TENANTS)


def attributed(spark, selectors, rows):
    metrics = frame(spark, rows)
    return T.attribute(metrics, T.ownership(T.attribution_keys(metrics), selectors))


def reduced(spark, selectors, rows) -> T.Reduced:
    return T.reduce(T.reductions(frame(spark, rows)), selectors)


def weekly_of(spark, selectors, rows, owner: str = "acme") -> dict:
    r = reduced(spark, selectors, rows)
    return {
        (o, m): v
        for o, _w, m, v in T.weekly(r.owner_days(), T.alert_episodes(r.mins)).collect()
        if owner is None or o == owner
    }


def test_attribution_matches_the_python_tenant_index(spark, selectors):
    """Every kind of key gets the owner TenantIndex gives (the Spark join and the matcher must agree)."""
    index = TenantIndex(TENANTS)
    topics = [
        ("main", "acme.orders"),
        ("main", "acme.eu.orders"),
        ("main", "beta.x"),
        ("main", "other"),
        ("edge", "anything"),
    ]
    clients = [
        ("main", "acme-svc", "beta-thing"),
        ("main", None, "acme-batch"),
        ("main", "User:acme-svc", None),
        ("main", "bob", "beta-loader"),
        ("main", "bob", "zzz"),
    ]
    rows = [row("topic_bytes_in_rate", T0, 1, cluster=c, topic=t) for c, t in topics]
    rows += [row("client_produce_bytes_rate", T0, 1, cluster=c, user=u, client_id=i) for c, u, i in clients]
    rows += [row("group_lag_messages", T0, 1, group="acme-g", topic="beta.x")]
    got = {
        (r["series"], r["cluster"], r["topic"], r["user"], r["client_id"], r["group"]): r["owner"]
        for r in attributed(spark, selectors, rows).collect()
    }
    for c, t in topics:
        assert got.get(("topic_bytes_in_rate", c, t, None, None, None)) == index.for_topic(c, t), t
    for c, u, i in clients:
        assert got.get(("client_produce_bytes_rate", c, None, u, i, None)) == index.for_client(c, client_id=i, user=u)
    assert got[("group_lag_messages", "main", "beta.x", None, None, "acme-g")] == "acme"
    assert got[("topic_bytes_in_rate", "main", "acme.eu.orders", None, None, None)] == "acme-eu"  # longest prefix


def test_cluster_wide_series_and_alerts_reach_the_right_tenants(spark, selectors):
    rows = [
        row("broker_produce_p99_seconds", T0, 0.01, broker="1"),
        row("alert_firing", T0, 1, alertname="KafkaBrokerUnreachable", broker="1"),
        row("alert_firing", T0, 1, alertname="KafkaConsumerLagHigh", tenant="beta"),
        row("alert_firing", T0, 1, alertname="Stray", tenant="delta"),
    ]  # delta is not on main
    owners = {}
    for r in attributed(spark, selectors, rows).collect():
        owners.setdefault(r["alertname"] or r["series"], set()).add(r["owner"])
    assert owners["broker_produce_p99_seconds"] == {"acme", "acme-eu", "beta"}
    assert owners["KafkaBrokerUnreachable"] == {"acme", "acme-eu", "beta"}
    assert owners["KafkaConsumerLagHigh"] == {"beta"}
    assert owners["Stray"] == {"acme", "acme-eu", "beta"}  # a label naming no tenant of the cluster is cluster-wide


def test_growth_of_ten_percent_and_comparison_with_four_weeks(spark, selectors):
    # one hourly row per week k standing for a minute: the week's bytes are 60 * rate
    rates = [1000.0 * 1.1**k for k in range(5)]
    rows = [
        row("topic_bytes_in_rate", T0 - timedelta(days=7 * (4 - k)) + timedelta(hours=5), r, topic="acme.a")
        for k, r in enumerate(rates)
    ]
    r = reduced(spark, selectors, rows)
    cmp = {
        c["metric"]: c
        for c in T.compare(T.weekly(r.owner_days(), T.alert_episodes(r.mins)), WEEK).collect()
        if c["owner"] == "acme"
    }
    b = cmp["bytes_in"]
    assert b["this_week"] == pytest.approx(60 * rates[4])
    assert b["growth_wow"] == pytest.approx(0.10, abs=1e-12)
    assert b["previous4_weeks"] == 4
    assert b["vs_previous4"] == pytest.approx(rates[4] / (sum(rates[:4]) / 4) - 1, abs=1e-12)


def test_availability_counts_exactly_the_bad_minutes(spark, selectors):
    rows = [row("broker_produce_p99_seconds", ts, 0.01, broker="1") for ts in minutes(T0, 600)]
    rows += [row("topic_offline_partitions", ts, 1, topic="acme.a") for ts in minutes(T0 + timedelta(hours=1), 30)]
    rows += [
        row("topic_under_min_isr_partitions", ts, 2, topic="acme.b")
        for ts in minutes(T0 + timedelta(hours=1, minutes=20), 20)
    ]  # 10 of them overlap the offline ones
    rows += [row("topic_offline_partitions", ts, 0, topic="acme.a") for ts in minutes(T0 + timedelta(hours=3), 30)]
    rows += [row("topic_offline_partitions", ts, 1, topic="beta.x") for ts in minutes(T0, 5)]
    weekly = weekly_of(spark, selectors, rows, owner=None)
    assert weekly[("acme", "bad_minutes")] == 40
    assert weekly[("acme", "offline_minutes")] == 30
    assert weekly[("acme", "under_min_isr_minutes")] == 20
    assert weekly[("acme", "observed_minutes")] == 600
    assert weekly[("acme", "availability_ratio")] == pytest.approx(1 - 40 / 600)
    assert weekly[("beta", "bad_minutes")] == 5
    assert weekly[("acme-eu", "bad_minutes")] == 0


def test_throttled_minutes_lag_and_latency(spark, selectors):
    rows = [row("client_throttle_seconds", ts, 0.2, client_id="acme-batch") for ts in minutes(T0, 45)]
    rows += [
        row("client_throttle_seconds", ts, 0.0, client_id="acme-batch") for ts in minutes(T0 + timedelta(hours=1), 15)
    ]
    rows += [
        row("group_lag_messages", ts, v, group="acme-g", topic="acme.a")
        for ts, v in zip(minutes(T0, 4), (10, 20, 30, 40))
    ]
    rows += [row("group_lag_messages", ts, 5, group="acme-h", topic="acme.b") for ts in minutes(T0, 4)]
    rows += [
        row("broker_produce_p99_seconds", ts, v, broker=b)
        for b, vs in (("1", (0.01, 0.02)), ("2", (0.03, 0.01)))
        for ts, v in zip(minutes(T0, 2), vs)
    ]
    w = {m: v for (_o, m), v in weekly_of(spark, selectors, rows).items()}
    assert w["throttled_minutes"] == 45
    assert w["lag_mean_messages"] == pytest.approx((15 + 25 + 35 + 45) / 4)  # summed over groups per minute
    assert w["lag_max_messages"] == 45
    assert w["produce_p99_mean_seconds"] == pytest.approx((0.03 + 0.02) / 2)  # worst broker per minute
    assert w["produce_p99_max_seconds"] == pytest.approx(0.03)


def test_share_group_lag_counts_in_its_labelled_tenants_lag_only(spark, selectors):
    """A share group's records waiting (issue 29) count in the consumer lag of the tenant the collector named, beside
    its consumer groups, and nowhere else: not by a group prefix another tenant holds (``acme-`` is acme's, but the
    collector gave this group to beta by the topics it reads), never in an unlabelled tenant's."""
    rows = [row("group_lag_messages", ts, 5, group="acme-g", topic="acme.a") for ts in minutes(T0, 4)]
    rows += [
        row("share_group_lag_messages", ts, v, group="acme-share", topic="beta.x", tenant="beta")
        for ts, v in zip(minutes(T0, 4), (100, 200, 300, 400))
    ]
    rows += [
        row("share_group_lag_messages", ts, 7, group="acme-share", topic="acme.a", tenant="acme")
        for ts in minutes(T0, 2)
    ]
    weekly = weekly_of(spark, selectors, rows, owner=None)
    assert weekly[("beta", "lag_mean_messages")] == pytest.approx(250)
    assert weekly[("beta", "lag_max_messages")] == 400
    assert weekly[("acme", "lag_mean_messages")] == pytest.approx((12 + 12 + 5 + 5) / 4)  # its own share rows only
    assert ("acme-eu", "lag_mean_messages") not in weekly or weekly[("acme-eu", "lag_mean_messages")] is None


def test_alert_episodes_raised_firing_and_time_to_resolve(spark, selectors):
    wed = T0 + timedelta(days=2)
    rows = [
        row(
            "alert_firing",
            ts,
            1,
            alertname="KafkaOfflinePartitions",
            severity="critical",
            tenant="acme",
            topic="acme.a",
        )
        for ts in minutes(wed, 30) + minutes(wed + timedelta(hours=2), 10)
    ]
    # started the week before: counted as firing this week, not raised this week
    rows += [
        row("alert_firing", ts, 1, alertname="KafkaDiskFull", severity="warning", tenant="acme", broker="1")
        for ts in minutes(T0 - timedelta(minutes=5), 20)
    ]
    # still firing at the end of the data
    rows += [
        row("alert_firing", ts, 1, alertname="KafkaConsumerLagHigh", severity="warning", tenant="acme")
        for ts in minutes(T0 + timedelta(days=7, minutes=-10), 10)
    ]
    ep = T.alert_episodes(reduced(spark, selectors, rows).mins)
    got = {r["alertname"]: r for r in T.alerts_by_name(ep, WEEK).collect() if r["owner"] == "acme"}
    off = got["KafkaOfflinePartitions"]
    assert (off["raised"], off["firing_minutes"], off["resolved"]) == (2, 40, 2)
    assert (off["mean_minutes_to_resolve"], off["max_minutes_to_resolve"]) == (20, 30)
    disk = got["KafkaDiskFull"]
    assert (disk["raised"], disk["firing_minutes"]) == (0, 15)
    lag = got["KafkaConsumerLagHigh"]
    assert (lag["raised"], lag["resolved"], lag["mean_minutes_to_resolve"]) == (1, 0, None)


def test_storage_weeks_until_budget(spark, selectors):
    daily = spark.createDataFrame(
        [("acme", WEEK - timedelta(days=34 - i), 10e9 + 1e9 * i) for i in range(35)]
        + [("beta", WEEK + timedelta(days=i), 5e9) for i in range(7)]
        + [("full", WEEK + timedelta(days=i), 200e9 + i) for i in range(2)],
        "owner string, date date, bytes double",
    )
    budgets = spark.createDataFrame(
        [("acme", 100e9), ("beta", 10e9), ("full", 100e9)], "owner string, budget_bytes double"
    )
    got = {r["owner"]: r for r in T.storage_forecast(daily, budgets).collect()}
    assert got["acme"]["current"] == 44e9
    assert got["acme"]["slope_per_week"] == pytest.approx(7e9)
    assert got["acme"]["weeks_until_limit"] == pytest.approx(8.0)
    assert got["beta"]["weeks_until_limit"] is None  # flat: never
    assert got["full"]["weeks_until_limit"] == 0.0


def test_top_clients_by_bytes(spark, selectors):
    rows = []
    for ts in minutes(T0, 10):
        rows += [
            row("client_produce_bytes_rate", ts, 5e6, user="acme-svc", client_id="acme-orders"),
            row("client_fetch_bytes_rate", ts, 1e6, user="acme-svc", client_id="acme-orders"),
            row("client_produce_bytes_rate", ts, 5.5e6, client_id="acme-batch"),
            row("client_produce_bytes_rate", ts, 1e3, client_id="acme-tiny"),
        ]
    rows += [
        row("client_throttle_seconds", ts, v, client_id="acme-batch")
        for ts, v in zip(minutes(T0, 10), [0.1] * 3 + [0.0] * 7)
    ]
    top = sorted(
        T.noisy_clients(reduced(spark, selectors, rows).owned_days, WEEK, n=2).collect(), key=lambda r: r["rank"]
    )
    assert [r["client_id"] for r in top] == ["acme-orders", "acme-batch"]
    assert top[0]["total_bytes"] == pytest.approx(10 * 60 * 6e6)
    assert (top[0]["throttled_minutes"], top[1]["throttled_minutes"]) == (0, 3)


def test_shared_cluster_figures_are_computed_once_per_cluster_set(spark, selectors):
    """Broker latency and observed minutes reach every tenant of the cluster through its cluster set, without
    copying the broker rows per tenant; a tenant on two clusters gets the worse broker of both per minute."""
    sel = selectors_frame(
        spark,
        TENANTS
        + (
            TenantConfig(
                name="both",
                whole_clusters=("edge",),
                selectors=(TenantSelector(cluster="main", topic_prefixes=("both.",)),),
            ),
        ),
    )
    rows = [row("broker_produce_p99_seconds", ts, v, broker="1") for ts, v in zip(minutes(T0, 3), (0.01, 0.05, 0.01))]
    rows += [row("broker_produce_p99_seconds", ts, 0.02, cluster="edge", broker="7") for ts in minutes(T0, 4)]
    r = T.reduce(T.reductions(frame(spark, rows)), sel)
    sets = {x["owner"]: x["cset"] for x in r.sets.collect()}
    assert sets["acme"] == sets["beta"] == "main" and sets["both"] == "edge,main"
    w = {(o, m): v for o, _w, m, v in T.weekly_figures(r.owner_days()).collect()}
    assert w[("acme", "observed_minutes")] == 3 and w[("both", "observed_minutes")] == 4
    assert w[("acme", "produce_p99_mean_seconds")] == pytest.approx((0.01 + 0.05 + 0.01) / 3)
    assert w[("both", "produce_p99_mean_seconds")] == pytest.approx((0.02 + 0.05 + 0.02 + 0.02) / 4)
    assert w[("delta", "produce_p99_max_seconds")] == pytest.approx(0.02)


def test_findings_reach_only_the_tenant_they_name(spark, selectors):
    wed = T0 + timedelta(days=2)
    rows = [
        row("client_advisor_finding", ts, 1, tenant="acme", finding="poor_batching", client_id="acme-batch")
        for ts in minutes(wed, 12)
    ]
    rows += [
        row("client_advisor_finding", ts, 0, tenant="acme", finding="poor_batching", client_id="acme-batch")
        for ts in minutes(wed + timedelta(hours=1), 5)
    ]  # 0: the finding did not hold
    rows += [row("client_advisor_finding", T0, 1, tenant="", finding="connection_churn")]  # nobody's
    rows += [
        row("client_advisor_finding", T0, 1, tenant="delta", finding="poor_batching", client_id="x")
    ]  # delta is not on main
    got = T.client_findings(reduced(spark, selectors, rows).mins, WEEK).collect()
    assert [(f["owner"], f["finding"], f["client_id"], f["minutes"]) for f in got] == [
        ("acme", "poor_batching", "acme-batch", 12)
    ]
    assert (got[0]["first_seen"], got[0]["last_seen"]) == (
        wed.replace(tzinfo=None),
        (wed + timedelta(minutes=11)).replace(tzinfo=None),
    )


def test_canonical_order_makes_sums_independent_of_where_the_rows_came_from(spark):
    """The same rows split differently (cached days + fresh days, or one read of the lake) become the same partitions
    in the same order, so any sum computed after them is the same double; ``ordered_sum`` needs no such help. The
    values are chosen so that the order of the additions shows in the result."""
    values = [1e16, 1.0, -1e16, 1.0, 3.3, 1e-3, 7e15, -7e15, 0.1, 0.2] * 4
    rows = [(f"k{i % 3}", v) for i, v in enumerate(values)]
    one_read = spark.createDataFrame(rows, "k string, v double").repartition(3)
    cache_and_lake = (
        spark.createDataFrame(rows[::2], "k string, v double")
        .coalesce(1)
        .unionByName(spark.createDataFrame(rows[1::2][::-1], "k string, v double"))
    )
    a, b = T.canonical(one_read, 4), T.canonical(cache_and_lake, 4)
    assert a.rdd.glom().collect() == b.rdd.glom().collect()
    assert a.groupBy("k").agg(F.sum("v")).sort("k").collect() == b.groupBy("k").agg(F.sum("v")).sort("k").collect()

    def ordered(df):
        return df.groupBy("k").agg(T.ordered_sum("v").alias("s")).sort("k").collect()

    assert ordered(one_read) == ordered(cache_and_lake)
    assert spark.createDataFrame([("x", None)], "k string, v double").agg(T.ordered_sum("v")).first()[0] is None


def test_a_filesystem_shared_by_brokers_is_counted_once(spark):
    """Brokers 1-3 keep their log dirs on one 100 GiB filesystem (one host: equal size, free within a MiB); broker 4
    has a 50 GiB one of its own. The cluster has 150 GiB, not 350 GiB."""
    gib, t = 1 << 30, datetime(2026, 11, 17, 23, 59, tzinfo=timezone.utc)
    rows = []
    for broker, size, free in (
        ("1", 100 * gib, 40 * gib),
        ("2", 100 * gib, 40 * gib + 1000),
        ("3", 100 * gib, 40 * gib + 5000),
        ("4", 50 * gib, 10 * gib),
    ):
        rows += [
            row("host_filesystem_size_bytes", t, size, broker=broker),
            row("host_filesystem_free_bytes", t, free, broker=broker),
        ]
    (day,) = T.disk_daily(frame(spark, rows)).collect()
    assert day["size_bytes"] == 150 * gib and day["brokers"] == 4
    assert day["used_bytes"] == (100 - 40) * gib + (50 - 10) * gib


def _two_brokers_day(spark, devices, frees):
    gib, t = 1 << 30, datetime(2026, 11, 17, 23, 59, tzinfo=timezone.utc)
    rows = []
    for broker, device, free in zip(("1", "2"), devices, frees):
        labels = {"broker": broker, "host": "h", "device": device}
        rows += [
            row("host_filesystem_size_bytes", t, 100 * gib, **labels),
            row("host_filesystem_free_bytes", t, free, **labels),
        ]
    (day,) = T.disk_daily(frame(spark, rows)).collect()
    return day["size_bytes"] / gib, day["brokers"]


def test_one_device_is_one_filesystem_even_with_free_space_10_mib_apart(spark):
    # brokers 1 and 2 on the host's 8:1, read while something wrote 10 MiB: the figures alone would say two disks
    gib, mib = 1 << 30, 1 << 20
    assert _two_brokers_day(spark, ("8:1", "8:1"), (40 * gib, 40 * gib - 10 * mib)) == (100, 2)
    assert _two_brokers_day(spark, (None, None), (40 * gib, 40 * gib - 10 * mib)) == (200, 2)  # the fallback


def test_two_devices_of_equal_figures_are_two_filesystems(spark):
    # two disks of one model, equally full: the figures alone would say one disk
    gib = 1 << 30
    assert _two_brokers_day(spark, ("8:1", "8:17"), (40 * gib, 40 * gib)) == (200, 2)
    assert _two_brokers_day(spark, (None, None), (40 * gib, 40 * gib)) == (100, 2)  # the fallback


def test_slo_minutes_count_known_and_bad_minutes_of_the_tenant_they_name(spark, selectors):
    """The archive's tenant_slo_minute (alerts/slo.py): 1 bad, 0 good, no row while unknown. 600 known minutes, 6 of
    them bad, and an hour without rows (the probe down) that counts neither way: 1 - 6/600."""
    known = minutes(T0, 300) + minutes(T0 + timedelta(hours=6), 300)
    bad = set(minutes(T0 + timedelta(hours=7), 6))
    rows = [row("tenant_slo_minute", ts, 1 if ts in bad else 0, tenant="acme") for ts in known]
    rows += [row("tenant_slo_minute", ts, 1, tenant="beta") for ts in minutes(T0, 3)]
    rows += [row("tenant_slo_minute", ts, 1, cluster="edge", tenant="acme") for ts in minutes(T0, 3)]  # not its cluster
    weekly = weekly_of(spark, selectors, rows, owner=None)
    assert (weekly[("acme", "slo_known_minutes")], weekly[("acme", "slo_bad_minutes")]) == (600, 6)
    assert weekly[("acme", "slo_availability_ratio")] == pytest.approx(0.99)
    assert weekly[("beta", "slo_availability_ratio")] == 0.0
    assert ("acme-eu", "slo_availability_ratio") not in weekly  # no known minute: unknown, not 100 %
