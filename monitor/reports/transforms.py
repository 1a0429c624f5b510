"""Transforms of the weekly report: plain DataFrame -> DataFrame functions, no I/O, no Python UDFs.

Input frames (built by ``extract``):

- ``metrics``: the lake's rows -- ``ts`` (timestamp), ``series``, label columns (``broker``, ``topic``, ``user``,
  ``client_id``, ``group``, ``alertname``, ``severity``, ``tenant``), ``value`` (double), ``cluster``. One row per
  series, label set and minute.
- ``selectors``: the tenants' selectors as rows ``(s_tenant, s_cluster, s_kind, s_key)`` with ``s_kind`` one of
  ``topic``, ``client``, ``group`` (prefix keys), ``principal`` (exact user) and ``cluster`` (whole cluster, empty key).

``attribute`` gives each row an ``owner`` tenant (the same answers as ``monitor.tenancy.TenantIndex``, expressed as a
join); every figure function below takes the attributed frame and returns small frames keyed by ``owner``. Weekly
figures are long: ``(owner, week_start, metric, value)``, so one ``compare`` serves every metric. Weeks start on
Monday 00:00 UTC (Spark's ``date_trunc('week')``). Every method is documented in docs/reports.md.
"""

from __future__ import annotations

from datetime import date, timedelta

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

STEP_SECONDS = 60  # one lake row per minute: a rate sample times 60 is that minute's amount

TOPIC_SERIES = ("topic_bytes_in_rate", "topic_bytes_out_rate", "topic_messages_in_rate", "topic_messages_out_rate",
                "topic_size_bytes", "topic_offline_partitions", "topic_under_min_isr_partitions")
GROUP_SERIES = ("group_lag_messages",)
CLIENT_SERIES = ("client_produce_bytes_rate", "client_fetch_bytes_rate", "client_throttle_seconds")
CLUSTER_SERIES = ("broker_produce_p99_seconds", "broker_fetch_p99_seconds",
                  "host_filesystem_size_bytes", "host_filesystem_free_bytes")
ALERT_SERIES = ("alert_firing",)

# rate series -> weekly amount metric
AMOUNTS = {"topic_bytes_in_rate": "bytes_in", "topic_bytes_out_rate": "bytes_out",
           "topic_messages_in_rate": "messages_in", "topic_messages_out_rate": "messages_out"}


def week_start(col: str | Column = "ts") -> Column:
    return F.to_date(F.date_trunc("week", F.col(col) if isinstance(col, str) else col))


# ---------------------------------------------------------------------------------------------------------------
# Tenant attribution


def _priority() -> Column:
    # Same precedence as TenantIndex: an exact principal beats any prefix, a longer prefix beats a shorter one,
    # a whole-cluster tenant is the fallback.
    return (F.when(F.col("s_kind") == "cluster", F.lit(-1))
            .when(F.col("s_kind") == "principal", F.lit(1_000_000))
            .otherwise(F.length("s_key")))


def memberships(selectors: DataFrame) -> DataFrame:
    """``(cluster, owner)``: every tenant with anything on the cluster (cluster-wide trouble hurts all of them)."""
    return selectors.select(F.col("s_cluster").alias("cluster"), F.col("s_tenant").alias("owner")).distinct()


def _keys(metrics: DataFrame) -> DataFrame:
    """Add the attribution key ``(k_kind, k_name)`` each series is owned by."""
    s = F.col("series")
    kind = (F.when(s.isin(*TOPIC_SERIES), "topic").when(s.isin(*GROUP_SERIES), "group")
            .when(s.isin(*CLIENT_SERIES), "client").when(s.isin(*CLUSTER_SERIES), "member")
            .when(s.isin(*ALERT_SERIES), "alert"))
    absent = F.lit("\u0000")  # keeps a null user apart from an empty one
    name = (F.when(s.isin(*TOPIC_SERIES), F.col("topic")).when(s.isin(*GROUP_SERIES), F.col("group"))
            .when(s.isin(*CLIENT_SERIES), F.concat_ws("\u0001", F.coalesce(F.col("user"), absent),
                                                      F.coalesce(F.col("client_id"), absent)))
            .when(s.isin(*ALERT_SERIES), F.coalesce(F.col("tenant"), F.lit(""))).otherwise(F.lit("")))
    return metrics.withColumn("k_kind", kind).withColumn("k_name", name)


def attribution_keys(metrics: DataFrame) -> DataFrame:
    """The distinct attribution keys of ``metrics`` (small: one row per topic, group, client, cluster...)."""
    client = F.col("k_kind") == "client"
    return (_keys(metrics).select("cluster", "k_kind", "k_name", F.when(client, F.col("user")).alias("user"),
                                  F.when(client, F.col("client_id")).alias("client_id")).distinct())


def ownership(keys: DataFrame, selectors: DataFrame) -> DataFrame:
    """The attribution lookup: keys ``(cluster, k_kind, k_name, user, client_id)`` -> ``(cluster, k_kind, k_name,
    owner)``, one join of the keys with the selectors of their cluster.

    Topic and group keys: the longest matching prefix, else a whole-cluster tenant. Client keys: the exact principal
    first, then the longest client-id prefix, then a whole-cluster tenant. Ties go to the greatest tenant name, so
    the answer is deterministic. ``member`` keys (broker and host series) get one row per tenant on the cluster;
    ``alert`` keys the tenant their label names when it is on the cluster, else every tenant on the cluster.
    """
    k, sk = F.col("k_kind"), F.col("s_kind")
    user = F.regexp_replace(F.col("user"), "^User:", "")
    prefix = (sk == "cluster") | ((sk == k) & F.col("k_name").startswith(F.col("s_key")))
    client = ((sk == "cluster") | ((sk == "principal") & (user == F.regexp_replace(F.col("s_key"), "^User:", "")))
              | ((sk == "client") & F.col("client_id").startswith(F.col("s_key"))))
    matched = F.when(k.isin("topic", "group"), prefix).when(k == "client", F.coalesce(client, F.lit(False)))
    joined = keys.join(F.broadcast(selectors), keys["cluster"] == selectors["s_cluster"])
    joined = joined.where(F.coalesce(matched, F.lit(True)))  # member/alert keys: every tenant of the cluster
    key = ["cluster", "k_kind", "k_name"]
    prio = F.when(k.isin("member", "alert"), F.lit(0)).otherwise(_priority())
    per = joined.groupBy(*key, "s_tenant").agg(F.max(prio).alias("prio"))
    w = Window.partitionBy(*key)
    per = (per.withColumn("rank", F.row_number().over(w.orderBy(F.col("prio").desc(), F.col("s_tenant").desc())))
           .withColumn("labelled", F.max((F.col("s_tenant") == F.col("k_name")).cast("int")).over(w)))
    keep = (F.when(k.isin("topic", "group", "client"), F.col("rank") == 1)
            .when(k == "alert", (F.col("labelled") == 0) | (F.col("s_tenant") == F.col("k_name")))
            .otherwise(F.lit(True)))
    return per.where(keep).select(*key, F.col("s_tenant").alias("owner"))


def attribute(metrics: DataFrame, lookup: DataFrame) -> DataFrame:
    """``metrics`` plus ``owner``; rows nobody owns are dropped, cluster-wide rows are repeated for each member.

    ``lookup`` is ``ownership(attribution_keys(metrics), selectors)``. Topic series by topic prefix; consumer-group
    series by group prefix; client series by principal, then client-id prefix; broker and host series to every
    tenant on the cluster; alerts to their ``tenant`` label when it names a tenant on that cluster, else to every
    tenant on the cluster. The big frame is joined once, against the broadcast lookup.
    """
    return _keys(metrics).join(F.broadcast(lookup), ["cluster", "k_kind", "k_name"]).drop("k_kind", "k_name")


def minutely(attributed: DataFrame) -> DataFrame:
    """The central reduction: per tenant, series and minute the sum (``total``) and max (``peak``) over the
    tenant's topics, groups, clients or brokers. Most weekly and daily figures are read from this frame."""
    return attributed.groupBy("owner", "series", "ts").agg(F.sum("value").alias("total"), F.max("value").alias("peak"))


# ---------------------------------------------------------------------------------------------------------------
# Weekly figures, long: (owner, week_start, metric, value)


def _long(df: DataFrame, metric: str, value: Column) -> DataFrame:
    return df.select("owner", "week_start", F.lit(metric).alias("metric"), value.cast("double").alias("value"))


def weekly_figures(mins: DataFrame) -> DataFrame:
    """From ``minutely``, per tenant and week, long:

    - ``bytes_in``/``bytes_out``/``messages_in``/``messages_out``: sum over minutes of (rate x 60 s);
    - ``produce_p99_mean_seconds``/``..._max_seconds`` (and fetch): per minute the worst broker of the tenant's
      clusters, then the week's mean and max;
    - ``throttled_minutes``: minutes in which some client of the tenant had a throttle time > 0;
    - ``lag_mean_messages``/``lag_max_messages``: per minute the sum over the tenant's groups, then mean and max;
    - ``bad_minutes`` (some partition of the tenant offline or under min ISR), ``observed_minutes`` (minutes with
      any sample of the tenant, its clusters' broker series included) and ``availability_ratio`` = 1 - bad/observed.
      A day missing from the lake lowers neither the numerator nor the denominator.
    """
    s, total, peak = F.col("series"), F.col("total"), F.col("peak")
    rows = mins.withColumn("week_start", week_start())

    def when(cond: Column, value: Column) -> Column:
        return F.when(cond, value)

    aggs = [F.sum(when(s == k, total * STEP_SECONDS)).alias(v) for k, v in AMOUNTS.items()]
    for series, name in (("broker_produce_p99_seconds", "produce_p99"), ("broker_fetch_p99_seconds", "fetch_p99")):
        aggs += [F.avg(when(s == series, peak)).alias(f"{name}_mean_seconds"),
                 F.max(when(s == series, peak)).alias(f"{name}_max_seconds")]
    aggs += [F.count(when((s == "client_throttle_seconds") & (peak > 0), F.lit(1))).alias("throttled_minutes"),
             F.avg(when(s == "group_lag_messages", total)).alias("lag_mean_messages"),
             F.max(when(s == "group_lag_messages", total)).alias("lag_max_messages"),
             F.countDistinct(when(s.isin("topic_offline_partitions", "topic_under_min_isr_partitions") & (peak > 0),
                                  F.col("ts"))).alias("bad_minutes"),
             F.countDistinct("ts").alias("observed_minutes")]
    wide = rows.groupBy("owner", "week_start").agg(*aggs)
    wide = wide.withColumn("availability_ratio", F.when(F.col("observed_minutes") > 0,
                                                        1 - F.col("bad_minutes") / F.col("observed_minutes")))
    metrics = [c for c in wide.columns if c not in ("owner", "week_start")]
    stacked = ", ".join(f"'{m}', cast(`{m}` as double)" for m in metrics)
    return (wide.select("owner", "week_start", F.expr(f"stack({len(metrics)}, {stacked}) as (metric, value)"))
            .where(F.col("value").isNotNull()))


def alert_episodes(attributed: DataFrame) -> DataFrame:
    """Firing episodes: consecutive minutes of ``alert_firing`` for one alert instance (a gap > 1 step ends one).

    -> ``(owner, cluster, alertname, severity, instance, started, last_seen, minutes)``.
    """
    rows = attributed.where((F.col("series") == "alert_firing") & (F.col("value") > 0))
    instance = F.concat_ws("|", *[F.coalesce(F.col(c), F.lit("")) for c in ("broker", "topic", "group", "tenant")])
    rows = rows.withColumn("instance", instance)
    key = ["owner", "cluster", "alertname", "severity", "instance"]
    w = Window.partitionBy(*key).orderBy("ts")
    gap = F.col("ts").cast("long") - F.lag(F.col("ts").cast("long")).over(w)
    rows = rows.withColumn("new", F.when(gap.isNull() | (gap > STEP_SECONDS), 1).otherwise(0))
    rows = rows.withColumn("episode", F.sum("new").over(w.rowsBetween(Window.unboundedPreceding, 0)))
    return (rows.groupBy(*key, "episode")
            .agg(F.min("ts").alias("started"), F.max("ts").alias("last_seen"), F.count("*").alias("minutes"))
            .drop("episode"))


def alerts_by_name(episodes: DataFrame, week: date, data_end: Column | None = None) -> DataFrame:
    """Per tenant and alert name in ``week``: raised (episodes started in the week), firing minutes in the week
    (clipped), resolved episodes and their time to resolve (first to last firing minute, plus one step).

    An episode whose last firing minute is the last minute of the data (``data_end`` - 1 step) is still firing.
    """
    start = F.lit(week).cast("timestamp")
    end = F.lit(week + timedelta(days=7)).cast("timestamp")
    data_end = data_end if data_end is not None else end
    last_minute = data_end - F.expr(f"INTERVAL {STEP_SECONDS} SECONDS")
    in_week = episodes.where((F.col("last_seen") >= start) & (F.col("started") < end))
    clip_lo = F.greatest(F.col("started"), start)
    clip_hi = F.least(F.col("last_seen"), end - F.expr(f"INTERVAL {STEP_SECONDS} SECONDS"))
    firing_min = (clip_hi.cast("long") - clip_lo.cast("long")) / STEP_SECONDS + 1
    raised = (F.col("started") >= start)
    resolved = raised & (F.col("last_seen") < last_minute)
    to_resolve = (F.col("last_seen").cast("long") - F.col("started").cast("long")) / STEP_SECONDS + 1
    return (in_week.groupBy("owner", "alertname", "severity")
            .agg(F.sum(F.when(raised, 1).otherwise(0)).alias("raised"),
                 F.sum(firing_min).cast("long").alias("firing_minutes"),
                 F.sum(F.when(resolved, 1).otherwise(0)).alias("resolved"),
                 F.avg(F.when(resolved, to_resolve)).alias("mean_minutes_to_resolve"),
                 F.max(F.when(resolved, to_resolve)).alias("max_minutes_to_resolve")))


def alerts_weekly(episodes: DataFrame) -> DataFrame:
    """Alerts raised per tenant and week (by the week the episode started), for the comparison table."""
    rows = episodes.withColumn("week_start", week_start("started"))
    return _long(rows.groupBy("owner", "week_start").agg(F.count("*").alias("n")), "alerts_raised", F.col("n"))


def weekly(mins: DataFrame, episodes: DataFrame) -> DataFrame:
    """Every weekly figure of every tenant, long."""
    return weekly_figures(mins).unionByName(alerts_weekly(episodes))


def compare(weekly_long: DataFrame, week: date) -> DataFrame:
    """Report week against the previous week and the mean of the four weeks before it.

    -> ``(owner, metric, this_week, previous_week, growth_wow, previous4_mean, previous4_weeks, vs_previous4)``;
    growth is a ratio minus one (0.1 = +10 %), null when the base is missing or zero.
    """
    w = F.col("week_start")
    this = F.max(F.when(w == F.lit(week), F.col("value")))
    prev = F.max(F.when(w == F.lit(week - timedelta(days=7)), F.col("value")))
    in4 = (w >= F.lit(week - timedelta(days=28))) & (w < F.lit(week))
    agg = weekly_long.groupBy("owner", "metric").agg(
        this.alias("this_week"), prev.alias("previous_week"),
        F.avg(F.when(in4, F.col("value"))).alias("previous4_mean"),
        F.count(F.when(in4, F.col("value"))).alias("previous4_weeks"))

    def growth(base: str) -> Column:
        return F.when(F.col(base) != 0, F.col("this_week") / F.col(base) - 1)

    return (agg.withColumn("growth_wow", growth("previous_week"))
            .withColumn("vs_previous4", growth("previous4_mean")))


# ---------------------------------------------------------------------------------------------------------------
# Storage and disk forecasts


def _day_index(col: str = "date") -> Column:
    return F.datediff(F.col(col), F.lit(date(1970, 1, 1))).cast("double")


def storage_daily(attributed: DataFrame) -> DataFrame:
    """Bytes stored per tenant and day: each topic's last sample of the day, summed over the tenant's topics."""
    rows = attributed.where(F.col("series") == "topic_size_bytes").withColumn("date", F.to_date("ts"))
    last = rows.groupBy("owner", "cluster", "topic", "date").agg(F.max_by("value", "ts").alias("value"))
    return last.groupBy("owner", "date").agg(F.sum("value").alias("bytes"))


def linear_forecast(daily: DataFrame, key: list[str], value: str, limit: str) -> DataFrame:
    """Least-squares line through the daily values; weeks until ``value`` reaches ``limit``.

    -> key + ``(current, slope_per_week, days, weeks_until_limit)``. ``current`` is the last day's value.
    weeks_until_limit is 0 when already at/over the limit, null when the trend is flat or shrinking, or when
    fewer than two days are known (no trend can be drawn).
    """
    agg = daily.groupBy(*key).agg(
        F.max_by(F.col(value), F.col("date")).alias("current"),
        F.max_by(F.col(limit), F.col("date")).alias("limit"),
        (F.regr_slope(F.col(value), _day_index()) * 7).alias("slope_per_week"),
        F.countDistinct("date").alias("days"))
    weeks = (F.when(F.col("limit").isNull(), None)
             .when(F.col("current") >= F.col("limit"), F.lit(0.0))
             .when((F.col("days") >= 2) & (F.col("slope_per_week") > 0),
                   (F.col("limit") - F.col("current")) / F.col("slope_per_week")))
    return agg.withColumn("weeks_until_limit", weeks)


def storage_forecast(daily: DataFrame, budgets: DataFrame) -> DataFrame:
    """``daily(owner, date, bytes)`` and ``budgets(owner, budget_bytes)`` -> weeks until the storage budget."""
    joined = daily.join(budgets, "owner", "left").withColumnRenamed("budget_bytes", "limit_bytes")
    return linear_forecast(joined, ["owner"], "bytes", "limit_bytes")


def disk_daily(metrics: DataFrame) -> DataFrame:
    """Per cluster and day: filesystem size and used bytes over the brokers (each broker's last sample of the day)."""
    rows = (metrics.where(F.col("series").isin("host_filesystem_size_bytes", "host_filesystem_free_bytes"))
            .withColumn("date", F.to_date("ts")))
    last = (rows.groupBy("cluster", "broker", "date")
            .agg(F.max_by(F.when(F.col("series") == "host_filesystem_size_bytes", F.col("value")),
                          F.when(F.col("series") == "host_filesystem_size_bytes", F.col("ts"))).alias("size"),
                 F.max_by(F.when(F.col("series") == "host_filesystem_free_bytes", F.col("value")),
                          F.when(F.col("series") == "host_filesystem_free_bytes", F.col("ts"))).alias("free")))
    return (last.groupBy("cluster", "date")
            .agg(F.sum("size").alias("size_bytes"), F.sum(F.col("size") - F.col("free")).alias("used_bytes")))


def disk_forecast(daily: DataFrame) -> DataFrame:
    """Weeks until the clusters' log-dir filesystems are full, from the trend of used bytes."""
    return linear_forecast(daily, ["cluster"], "used_bytes", "size_bytes")


# ---------------------------------------------------------------------------------------------------------------
# Clients, daily series, first data, operator summary


def noisy_clients(attributed: DataFrame, week: date, n: int = 5) -> DataFrame:
    """Top ``n`` clients per tenant by bytes produced plus fetched in ``week``, with their throttled minutes."""
    rows = attributed.where(F.col("series").isin(*CLIENT_SERIES) & (week_start() == F.lit(week)))
    s = F.col("series")
    agg = rows.groupBy("owner", "cluster", "user", "client_id").agg(
        F.sum(F.when(s == "client_produce_bytes_rate", F.col("value") * STEP_SECONDS)).alias("produce_bytes"),
        F.sum(F.when(s == "client_fetch_bytes_rate", F.col("value") * STEP_SECONDS)).alias("fetch_bytes"),
        F.countDistinct(F.when((s == "client_throttle_seconds") & (F.col("value") > 0), F.col("ts")))
        .alias("throttled_minutes"))
    agg = agg.withColumn("total_bytes", F.coalesce(F.col("produce_bytes"), F.lit(0.0))
                         + F.coalesce(F.col("fetch_bytes"), F.lit(0.0)))
    w = Window.partitionBy("owner").orderBy(F.col("total_bytes").desc(), F.col("client_id"), F.col("user"))
    return agg.withColumn("rank", F.row_number().over(w)).where(F.col("rank") <= n)


def daily_series(mins: DataFrame) -> DataFrame:
    """Per tenant and day, for the charts: bytes in/out, produce p99 (worst minute), mean lag. Long."""
    s = F.col("series")
    rows = mins.where(s.isin("topic_bytes_in_rate", "topic_bytes_out_rate", "broker_produce_p99_seconds",
                             "group_lag_messages")).withColumn("date", F.to_date("ts"))
    metric = (F.when(s == "topic_bytes_in_rate", "bytes_in").when(s == "topic_bytes_out_rate", "bytes_out")
              .when(s == "broker_produce_p99_seconds", "produce_p99_seconds").otherwise("lag_mean_messages"))
    value = (F.when(s.isin("topic_bytes_in_rate", "topic_bytes_out_rate"), F.sum(F.col("total") * STEP_SECONDS))
             .when(s == "broker_produce_p99_seconds", F.max("peak")).otherwise(F.avg("total")))
    return rows.groupBy("owner", "date", "series").agg(value.alias("value")).select(
        "owner", "date", metric.alias("metric"), "value")


def first_seen(mins: DataFrame) -> DataFrame:
    """First and last minute with data of the tenant's own resources (topics, groups, clients; not cluster-wide)."""
    own = mins.where(F.col("series").isin(*TOPIC_SERIES, *GROUP_SERIES, *CLIENT_SERIES))
    return own.groupBy("owner").agg(F.min("ts").alias("first_seen"), F.max("ts").alias("last_seen"))


def cluster_summary(metrics: DataFrame, week: date) -> DataFrame:
    """Operator view per cluster in ``week``: traffic, worst p99, minutes with an offline/under-min-ISR partition."""
    rows = metrics.where(week_start() == F.lit(week))
    s, v = F.col("series"), F.col("value")
    return rows.groupBy("cluster").agg(
        F.sum(F.when(s == "topic_bytes_in_rate", v * STEP_SECONDS)).alias("bytes_in"),
        F.sum(F.when(s == "topic_bytes_out_rate", v * STEP_SECONDS)).alias("bytes_out"),
        F.sum(F.when(s == "topic_messages_in_rate", v * STEP_SECONDS)).alias("messages_in"),
        F.max(F.when(s == "broker_produce_p99_seconds", v)).alias("produce_p99_max_seconds"),
        F.max(F.when(s == "broker_fetch_p99_seconds", v)).alias("fetch_p99_max_seconds"),
        F.countDistinct(F.when(s.isin("topic_offline_partitions", "topic_under_min_isr_partitions") & (v > 0),
                               F.col("ts"))).alias("bad_minutes"),
        F.countDistinct("topic").alias("topics"),
        F.countDistinct("broker").alias("brokers"))
