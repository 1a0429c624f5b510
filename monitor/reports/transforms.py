"""Transforms of the weekly report: plain DataFrame -> DataFrame functions, no I/O, no Python UDFs.

Input frames (built by ``extract``):

- ``metrics``: the lake's rows -- ``ts`` (timestamp), ``series``, label columns (``broker``, ``topic``, ``user``,
  ``client_id``, ``group``, ``alertname``, ``severity``, ``tenant``, ``finding``), ``value`` (double),
  ``cluster``. One row per series, label set and minute.
- ``selectors``: the tenants' selectors as rows ``(s_tenant, s_cluster, s_kind, s_key)`` with ``s_kind`` one of
  ``topic``, ``client``, ``group`` (prefix keys), ``principal`` (exact user) and ``cluster`` (whole cluster, empty key).

Shape of the job (why it is fast): the raw minute rows are reduced *before* anything is attributed to tenants.

1. ``key_days``: the per-topic and per-client series (almost all rows of a lake) become one row per key and day
   (the day's amount, last sample, first/last minute, minutes > 0). Every figure they feed is a sum over minutes
   or a last sample, so nothing is lost.
2. ``cluster_minutes``: one row per cluster and minute with a health sample (observed; worst broker p99). Broker
   and host series are never copied to every tenant of the cluster: tenants with the same clusters share one
   "cluster set" (``cluster_sets``) and get its figures by a join at the end.
3. ``minute_rows``: the per-minute series a tenant owns by name -- partition-state and throttle samples > 0
   (only those count), consumer-group lag, alerts, advisor findings.

These reductions (with ``disk_daily``, the clusters' disks per day) involve no tenant, and each of their rows
belongs to one UTC day and depends on that day's rows only (``Reductions``): a final day's are cached and read back
by later reports (``monitor.reports.cache``). Only they are joined with the tenant lookup (``attribute``, a broadcast
join), on every report, so selectors changed since a day was cached still apply.

Daily figures are wide, one row per (owner, date) (``owner_days``); weekly figures are long: ``(owner, week_start,
metric, value)``, so one ``compare`` serves every metric. Weeks start on Monday 00:00 UTC (Spark's
``date_trunc('week')``). Every method is documented in docs/reports.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

STEP_SECONDS = 60  # one lake row per minute: a rate sample times 60 is that minute's amount

STATE_SERIES = ("topic_offline_partitions", "topic_under_min_isr_partitions")
TOPIC_SERIES = (
    "topic_bytes_in_rate",
    "topic_bytes_out_rate",
    "topic_messages_in_rate",
    "topic_messages_out_rate",
    "topic_size_bytes",
    *STATE_SERIES,
)
GROUP_SERIES = ("group_lag_messages",)
# Share-group lag (records waiting) counts in the tenant's consumer lag beside its consumer groups', owned by the
# tenant its label names (the collector's attribution), like a finding: never by group prefix.
SHARE_LAG_SERIES = ("share_group_lag_messages",)
LAG_SERIES = (*GROUP_SERIES, *SHARE_LAG_SERIES)
CLIENT_SERIES = ("client_produce_bytes_rate", "client_fetch_bytes_rate", "client_throttle_seconds")
LATENCY_SERIES = ("broker_produce_p99_seconds", "broker_fetch_p99_seconds")
HOST_SERIES = ("host_filesystem_size_bytes", "host_filesystem_free_bytes")
# Rows without a device label (older lakes, other exporters): brokers of one host whose size is equal and whose free
# space is within the same MiB are one shared filesystem. Rows with one are grouped by (host, device) exactly.
FS_FREE_TOLERANCE_BYTES = 1 << 20
CLUSTER_SERIES = (*LATENCY_SERIES, *HOST_SERIES)
ALERT_SERIES = ("alert_firing",)
FINDING_SERIES = ("client_advisor_finding",)
SLO_SERIES = ("tenant_slo_minute",)  # per (cluster, tenant): 1 bad, 0 good; no row for an unknown minute

# rate series -> weekly amount metric
AMOUNTS = {
    "topic_bytes_in_rate": "bytes_in",
    "topic_bytes_out_rate": "bytes_out",
    "topic_messages_in_rate": "messages_in",
    "topic_messages_out_rate": "messages_out",
}
# Series whose samples make a minute "observed" for availability: the clusters' health, not their traffic.
OBSERVED_SERIES = (*LATENCY_SERIES, *HOST_SERIES, *STATE_SERIES, *LAG_SERIES)
# Series reduced to one row per key and day first (key_days): every figure they feed is a sum or a last sample.
DAY_SERIES = (*AMOUNTS, "topic_size_bytes", *CLIENT_SERIES)


def week_start(col: str | Column = "ts") -> Column:
    c = F.col(col) if isinstance(col, str) else col
    return F.to_date(F.date_trunc("week", c.cast("timestamp")))


def _col(df: DataFrame, name: str) -> Column:
    """The column, or a null string when the frame does not have it (reduced frames keep only their labels)."""
    return F.col(name) if name in df.columns else F.lit(None).cast("string")


# ---------------------------------------------------------------------------------------------------------------
# Tenant attribution


def _priority() -> Column:
    # Same precedence as TenantIndex: an exact principal beats any prefix, a longer prefix beats a shorter one,
    # a whole-cluster tenant is the fallback.
    return (
        F.when(F.col("s_kind") == "cluster", F.lit(-1))
        .when(F.col("s_kind") == "principal", F.lit(1_000_000))
        .otherwise(F.length("s_key"))
    )


def memberships(selectors: DataFrame) -> DataFrame:
    """``(cluster, owner)``: every tenant with anything on the cluster (cluster-wide trouble hurts all of them)."""
    return selectors.select(F.col("s_cluster").alias("cluster"), F.col("s_tenant").alias("owner")).distinct()


def _keys(metrics: DataFrame) -> DataFrame:
    """Add the attribution key ``(k_kind, k_name)`` each series is owned by."""
    s = F.col("series")
    kind = (
        F.when(s.isin(*TOPIC_SERIES), "topic")
        .when(s.isin(*GROUP_SERIES), "group")
        .when(s.isin(*CLIENT_SERIES), "client")
        .when(s.isin(*CLUSTER_SERIES), "member")
        .when(s.isin(*ALERT_SERIES), "alert")
        .when(s.isin(*FINDING_SERIES, *SLO_SERIES, *SHARE_LAG_SERIES), "finding")
    )
    absent = F.lit("\u0000")  # keeps a null user apart from an empty one
    user, client_id, tenant = (_col(metrics, c) for c in ("user", "client_id", "tenant"))
    name = (
        F.when(s.isin(*TOPIC_SERIES), _col(metrics, "topic"))
        .when(s.isin(*GROUP_SERIES), _col(metrics, "group"))
        .when(s.isin(*CLIENT_SERIES), F.concat_ws("\u0001", F.coalesce(user, absent), F.coalesce(client_id, absent)))
        .when(s.isin(*ALERT_SERIES, *FINDING_SERIES, *SLO_SERIES, *SHARE_LAG_SERIES), F.coalesce(tenant, F.lit("")))
        .otherwise(F.lit(""))
    )
    return metrics.withColumn("k_kind", kind).withColumn("k_name", name)


def attribution_keys(metrics: DataFrame) -> DataFrame:
    """The distinct attribution keys of ``metrics`` (small: one row per topic, group, client, cluster...)."""
    client = F.col("k_kind") == "client"
    return (
        _keys(metrics)
        .select(
            "cluster",
            "k_kind",
            "k_name",
            F.when(client, _col(metrics, "user")).alias("user"),
            F.when(client, _col(metrics, "client_id")).alias("client_id"),
        )
        .distinct()
    )


def ownership(keys: DataFrame, selectors: DataFrame) -> DataFrame:
    """The attribution lookup: keys ``(cluster, k_kind, k_name, user, client_id)`` -> ``(cluster, k_kind, k_name,
    owner)``, one join of the keys with the selectors of their cluster.

    Topic and group keys: the longest matching prefix, else a whole-cluster tenant. Client keys: the exact principal
    first, then the longest client-id prefix, then a whole-cluster tenant. Ties go to the greatest tenant name, so
    the answer is deterministic. ``member`` keys (broker and host series) get one row per tenant on the cluster;
    ``alert`` keys the tenant their label names when it is on the cluster, else every tenant on the cluster;
    ``finding`` keys (advisor findings name one client of one tenant) only the tenant their label names, never the
    others: a client's identity is that tenant's business.
    """
    k, sk = F.col("k_kind"), F.col("s_kind")
    user = F.regexp_replace(F.col("user"), "^User:", "")
    prefix = (sk == "cluster") | ((sk == k) & F.col("k_name").startswith(F.col("s_key")))
    client = (
        (sk == "cluster")
        | ((sk == "principal") & (user == F.regexp_replace(F.col("s_key"), "^User:", "")))
        | ((sk == "client") & F.col("client_id").startswith(F.col("s_key")))
    )
    matched = F.when(k.isin("topic", "group"), prefix).when(k == "client", F.coalesce(client, F.lit(False)))
    joined = keys.join(F.broadcast(selectors), keys["cluster"] == selectors["s_cluster"])
    joined = joined.where(F.coalesce(matched, F.lit(True)))  # member/alert keys: every tenant of the cluster
    key = ["cluster", "k_kind", "k_name"]
    prio = F.when(k.isin("member", "alert", "finding"), F.lit(0)).otherwise(_priority())
    per = joined.groupBy(*key, "s_tenant").agg(F.max(prio).alias("prio"))
    w = Window.partitionBy(*key)
    per = per.withColumn(
        "rank", F.row_number().over(w.orderBy(F.col("prio").desc(), F.col("s_tenant").desc()))
    ).withColumn("labelled", F.max((F.col("s_tenant") == F.col("k_name")).cast("int")).over(w))
    keep = (
        F.when(k.isin("topic", "group", "client"), F.col("rank") == 1)
        .when(k == "alert", (F.col("labelled") == 0) | (F.col("s_tenant") == F.col("k_name")))
        .when(k == "finding", F.col("s_tenant") == F.col("k_name"))
        .otherwise(F.lit(True))
    )
    return per.where(keep).select(*key, F.col("s_tenant").alias("owner"))


def attribute(metrics: DataFrame, lookup: DataFrame) -> DataFrame:
    """``metrics`` plus ``owner``; rows nobody owns are dropped, cluster-wide rows are repeated for each member.

    ``lookup`` is ``ownership(attribution_keys(metrics), selectors)``. Topic series by topic prefix; consumer-group
    series by group prefix; client series by principal, then client-id prefix; broker and host series to every
    tenant on the cluster; alerts to their ``tenant`` label when it names a tenant on that cluster, else to every
    tenant on the cluster. The big frame is joined once, against the broadcast lookup.
    """
    return _keys(metrics).join(F.broadcast(lookup), ["cluster", "k_kind", "k_name"]).drop("k_kind", "k_name")


# ---------------------------------------------------------------------------------------------------------------
# Early reductions of the raw rows (the only steps that read every row of the lake)


def key_days(metrics: DataFrame) -> DataFrame:
    """The per-topic and per-client series, one row per key and UTC day:
    ``(cluster, series, topic, user, client_id, date, amount, last, first_ts, last_ts, positive_minutes)``.

    ``amount`` is the day's sum of rate x 60 s, ``last`` the day's last sample (storage only), ``positive_minutes``
    the minutes with a sample > 0 (throttling). A lake holds one row per label set and minute, so these are exact.
    The last sample (``max_by``, several times the cost of a sum) is taken only for ``topic_size_bytes``, in its own
    aggregation over that series' row groups.
    """
    s, v, ts = F.col("series"), F.col("value"), F.col("ts")
    keys = ["cluster", "series", "topic", "user", "client_id", F.to_date("ts").alias("date")]
    cols = [
        "cluster",
        "series",
        "topic",
        "user",
        "client_id",
        "date",
        "amount",
        "last",
        "first_ts",
        "last_ts",
        "positive_minutes",
    ]
    sums = (
        metrics.where(s.isin(*DAY_SERIES) & (s != "topic_size_bytes"))
        .groupBy(*keys)
        .agg(
            F.sum(v * STEP_SECONDS).alias("amount"),
            F.min("ts").alias("first_ts"),
            F.max("ts").alias("last_ts"),
            F.count(F.when(v > 0, F.lit(1))).alias("positive_minutes"),
        )
    )
    sizes = (
        metrics.where(s == "topic_size_bytes")
        .groupBy(*keys)
        .agg(F.max_by(v, ts).alias("last"), F.min("ts").alias("first_ts"), F.max("ts").alias("last_ts"))
    )
    none = F.lit(None)
    return sums.select(*[F.col(c) if c in sums.columns else none.cast("double").alias(c) for c in cols]).unionByName(
        sizes.select(
            *[
                F.col(c)
                if c in sizes.columns
                else (F.lit(0).cast("long") if c == "positive_minutes" else none.cast("double")).alias(c)
                for c in cols
            ]
        )
    )


def cluster_minutes(metrics: DataFrame) -> DataFrame:
    """One row per cluster and minute with a health sample (``OBSERVED_SERIES``): ``(cluster, ts, produce_p99,
    fetch_p99)``, the worst broker's p99 latency in that minute (null without broker latency samples). The minutes
    observed come from here. Traffic series do not count: a minute with traffic figures but no broker, disk,
    partition-state or lag sample says nothing about availability (and skipping them skips most of the lake)."""
    s, v = F.col("series"), F.col("value")
    return (
        metrics.where(s.isin(*OBSERVED_SERIES))
        .groupBy("cluster", "ts")
        .agg(
            F.max(F.when(s == "broker_produce_p99_seconds", v)).alias("produce_p99"),
            F.max(F.when(s == "broker_fetch_p99_seconds", v)).alias("fetch_p99"),
        )
    )


def minute_rows(metrics: DataFrame) -> DataFrame:
    """The per-minute rows tenants own by name, reduced to what a figure reads: partition-state and throttle
    samples > 0 (a zero counts nowhere), every consumer- and share-group lag sample, firing alerts and advisor
    findings, and every tenant SLO minute (its zeros are the known good minutes)."""
    s, v = F.col("series"), F.col("value")
    return metrics.where(
        (s.isin(*STATE_SERIES, "client_throttle_seconds", *ALERT_SERIES, *FINDING_SERIES) & (v > 0))
        | s.isin(*LAG_SERIES, *SLO_SERIES)
    )


def cluster_sets(selectors: DataFrame) -> DataFrame:
    """``(owner, cset, cluster)``: each tenant's set of clusters as one key (``"a,b"``), with the set's clusters.
    Cluster-wide figures are computed once per set, not once per tenant (hundreds of tenants share a cluster)."""
    m = memberships(selectors)
    sets = m.groupBy("owner").agg(F.concat_ws(",", F.array_sort(F.collect_set("cluster"))).alias("cset"))
    return sets.join(m, "owner")


# Bump when a reduction of ``Reductions`` changes what it computes (not only its schema): cached reductions written
# by another version are recomputed from the lake.
# 2: disk_daily groups by the device label (issue 20); 3: minute_rows keep SLO minutes; 4: and share-group lag
REDUCTION_VERSION = 4


@dataclass(frozen=True)
class Reductions:
    """The raw rows reduced before any tenant is involved: one row per key and day, cluster and minute, ... Every
    row belongs to one UTC day (``date``, else the day of ``ts``) and depends only on that day's raw rows, so the
    reductions of a set of days are the union of each day's (what lets ``monitor.reports.cache`` keep them)."""

    days: DataFrame  # key_days
    clusters: DataFrame  # cluster_minutes
    rows: DataFrame  # minute_rows
    disk: DataFrame  # disk_daily

    KINDS = ("key_days", "cluster_minutes", "minute_rows", "disk_days")  # names of the frames, in field order

    def frames(self) -> dict[str, DataFrame]:
        return dict(zip(self.KINDS, (self.days, self.clusters, self.rows, self.disk)))

    @classmethod
    def of(cls, frames: dict[str, DataFrame]) -> Reductions:
        return cls(*(frames[k] for k in cls.KINDS))

    def union(self, other: Reductions) -> Reductions:
        mine, theirs = self.frames(), other.frames()
        return Reductions.of({k: mine[k].unionByName(theirs[k]) for k in self.KINDS})

    def canonical(self, partitions: int) -> Reductions:
        return Reductions.of({k: canonical(df, partitions) for k, df in self.frames().items()})


def canonical(df: DataFrame, partitions: int) -> DataFrame:
    """``df`` hash-partitioned on all its columns and sorted within each partition: the same rows give the same
    partitions in the same order, whichever days came from the cache or the lake and however the lake's files were
    split. Spark adds doubles in the order it meets them (and a double sum depends on that order in its last bits),
    so this is what makes every figure computed from the reductions the same number for the same data."""
    return df.repartition(partitions, *df.columns).sortWithinPartitions(*df.columns)


def ordered_sum(col: str | Column) -> Column:
    """Sum of a double column in ascending order of its values (null when there is none): the same double however
    the rows were partitioned, unlike ``sum``, which adds partial sums in the order they arrive. For small groups."""
    c = F.col(col) if isinstance(col, str) else col
    return F.when(F.count(c) > 0, F.aggregate(F.array_sort(F.collect_list(c)), F.lit(0.0), lambda acc, x: acc + x))


def reductions(metrics: DataFrame) -> Reductions:
    """Every early reduction of the raw rows (lazy: each is one pruned read of ``metrics`` when materialized)."""
    return Reductions(key_days(metrics), cluster_minutes(metrics), minute_rows(metrics), disk_daily(metrics))


@dataclass(frozen=True)
class Reduced:
    """The raw rows reduced and attributed: what every figure below reads."""

    sets: DataFrame  # cluster_sets
    days: DataFrame  # key_days, not attributed (cluster figures)
    clusters: DataFrame  # cluster_minutes
    rows: DataFrame  # minute_rows, not attributed (cluster figures)
    disk: DataFrame  # disk_daily
    owned_days: DataFrame  # key_days + owner
    mins: DataFrame  # minute_rows + owner

    def owner_days(self) -> DataFrame:
        return owner_days(self.owned_days, self.mins, set_days(self.clusters, self.sets), self.sets)


def reduce(
    parts: Reductions, selectors: DataFrame, *, keep: Callable[[str, DataFrame], DataFrame] = lambda _name, df: df
) -> Reduced:
    """Attribute the early reductions (``reductions(metrics)``, or cached ones) to tenants. ``keep(name, frame)``
    is the caller's hook to materialize a frame that is read more than once (the job checkpoints them; tests need
    not). ``parts`` should be materialized already: its frames are read several times."""
    sets = keep("cluster sets", cluster_sets(selectors))
    keys = attribution_keys(parts.days).unionByName(attribution_keys(parts.rows)).distinct()
    lookup = keep("tenant attribution", ownership(keys, selectors))
    return Reduced(
        sets,
        parts.days,
        parts.clusters,
        parts.rows,
        parts.disk,
        keep("owned daily rows", attribute(parts.days, lookup)),
        keep("owned minute rows", attribute(parts.rows, lookup)),
    )


# ---------------------------------------------------------------------------------------------------------------
# Daily figures, wide: one row per (owner, date)

OWNER_DAY_COLUMNS = (
    "bytes_in",
    "bytes_out",
    "messages_in",
    "messages_out",
    "bad_minutes",
    "offline_minutes",
    "under_min_isr_minutes",
    "throttled_minutes",
    "lag_sum",
    "lag_minutes",
    "lag_max_messages",
    "observed_minutes",
    "produce_p99_sum",
    "produce_p99_minutes",
    "produce_p99_max_seconds",
    "fetch_p99_sum",
    "fetch_p99_minutes",
    "fetch_p99_max_seconds",
    "slo_known_minutes",
    "slo_bad_minutes",
)


def set_days(clusters: DataFrame, sets: DataFrame) -> DataFrame:
    """Per cluster set and day: minutes observed (any sample on one of its clusters) and the p99 latency of the
    worst broker of its clusters per minute, as sum / minutes / max (so weeks can be averaged exactly)."""
    per_set = clusters.join(F.broadcast(sets.select("cset", "cluster").distinct()), "cluster")
    minutes = per_set.groupBy("cset", "ts").agg(
        F.max("produce_p99").alias("produce"), F.max("fetch_p99").alias("fetch")
    )
    return minutes.groupBy("cset", F.to_date("ts").alias("date")).agg(
        F.count("*").alias("observed_minutes"),
        F.sum("produce").alias("produce_p99_sum"),
        F.count("produce").alias("produce_p99_minutes"),
        F.max("produce").alias("produce_p99_max_seconds"),
        F.sum("fetch").alias("fetch_p99_sum"),
        F.count("fetch").alias("fetch_p99_minutes"),
        F.max("fetch").alias("fetch_p99_max_seconds"),
    )


def owner_days(days: DataFrame, mins: DataFrame, sets_daily: DataFrame, sets: DataFrame) -> DataFrame:
    """Every daily figure of every tenant, wide (``OWNER_DAY_COLUMNS``), from the attributed ``key_days`` (``days``),
    the attributed ``minute_rows`` (``mins``) and ``set_days`` of the tenants' cluster sets.

    - amounts (bytes/messages in/out): sum over the tenant's topics of the day's rate x 60 s;
    - ``bad_minutes``: minutes in which some partition of the tenant's topics was offline or under min ISR
      (``offline_minutes``, ``under_min_isr_minutes`` each on its own; a minute with both counts once in bad);
    - ``throttled_minutes``: minutes in which some client of the tenant had a throttle time > 0;
    - lag: per minute the sum over the tenant's groups and topics (share groups' records waiting included), then
      the day's sum, minutes and max;
    - observed minutes and p99 latency: the tenant's cluster set's (``set_days``);
    - ``slo_known_minutes``, ``slo_bad_minutes``: minutes with a tenant SLO sample (``tenant_slo_minute``, rows only
      of the tenant its label names), and those bad on one of its clusters at least.
    """
    s, ts = F.col("series"), F.col("ts")
    amounts = (
        days.where(s.isin(*AMOUNTS))
        .groupBy("owner", "date")
        .agg(*[F.sum(F.when(s == k, F.col("amount"))).alias(v) for k, v in AMOUNTS.items()])
    )
    state = (
        mins.where(s.isin(*STATE_SERIES, "client_throttle_seconds"))
        .groupBy("owner", F.to_date("ts").alias("date"))
        .agg(
            F.countDistinct(F.when(s.isin(*STATE_SERIES), ts)).alias("bad_minutes"),
            F.countDistinct(F.when(s == "topic_offline_partitions", ts)).alias("offline_minutes"),
            F.countDistinct(F.when(s == "topic_under_min_isr_partitions", ts)).alias("under_min_isr_minutes"),
            F.countDistinct(F.when(s == "client_throttle_seconds", ts)).alias("throttled_minutes"),
        )
    )
    slo = (
        mins.where(s.isin(*SLO_SERIES))
        .groupBy("owner", F.to_date("ts").alias("date"))
        .agg(
            F.countDistinct(ts).alias("slo_known_minutes"),
            F.countDistinct(F.when(F.col("value") > 0, ts)).alias("slo_bad_minutes"),
        )
    )
    lag_minute = mins.where(s.isin(*LAG_SERIES)).groupBy("owner", "ts").agg(F.sum("value").alias("lag"))
    lag = lag_minute.groupBy("owner", F.to_date("ts").alias("date")).agg(
        F.sum("lag").alias("lag_sum"), F.count("lag").alias("lag_minutes"), F.max("lag").alias("lag_max_messages")
    )
    shared = sets_daily.join(F.broadcast(sets.select("owner", "cset").distinct()), "cset").drop("cset")
    out = amounts
    for frame in (state, slo, lag, shared):
        out = out.join(frame, ["owner", "date"], "full_outer")
    zero_if_null = (
        "bad_minutes",
        "offline_minutes",
        "under_min_isr_minutes",
        "throttled_minutes",
        "slo_known_minutes",
        "slo_bad_minutes",
    )
    return out.select(
        "owner",
        "date",
        *[F.coalesce(F.col(c), F.lit(0)).alias(c) if c in zero_if_null else F.col(c) for c in OWNER_DAY_COLUMNS],
    )


# ---------------------------------------------------------------------------------------------------------------
# Weekly figures, long: (owner, week_start, metric, value)


def _long(df: DataFrame, metric: str, value: Column) -> DataFrame:
    return df.select("owner", "week_start", F.lit(metric).alias("metric"), value.cast("double").alias("value"))


def weekly_figures(daily: DataFrame) -> DataFrame:
    """From ``owner_days``, per tenant and week, long: sums of the amounts and minute counts; p99 mean (over the
    minutes with a sample) and max; lag mean and max; ``availability_ratio`` = 1 - bad / observed minutes;
    ``slo_availability_ratio`` = 1 - SLO bad / SLO known minutes (the tenant SLO's availability, alerts/slo.py).
    A day missing from the lake lowers neither the numerator nor the denominator."""
    c = F.col
    wide = daily.groupBy("owner", week_start("date").alias("week_start")).agg(
        *[
            F.sum(m).alias(m)
            for m in (
                *AMOUNTS.values(),
                "bad_minutes",
                "offline_minutes",
                "under_min_isr_minutes",
                "throttled_minutes",
                "observed_minutes",
                "slo_known_minutes",
                "slo_bad_minutes",
            )
        ],
        (F.sum("produce_p99_sum") / F.sum("produce_p99_minutes")).alias("produce_p99_mean_seconds"),
        F.max("produce_p99_max_seconds").alias("produce_p99_max_seconds"),
        (F.sum("fetch_p99_sum") / F.sum("fetch_p99_minutes")).alias("fetch_p99_mean_seconds"),
        F.max("fetch_p99_max_seconds").alias("fetch_p99_max_seconds"),
        (F.sum("lag_sum") / F.sum("lag_minutes")).alias("lag_mean_messages"),
        F.max("lag_max_messages").alias("lag_max_messages"),
    )
    wide = wide.withColumn(
        "availability_ratio", F.when(c("observed_minutes") > 0, 1 - c("bad_minutes") / c("observed_minutes"))
    )
    wide = wide.withColumn(
        "slo_availability_ratio", F.when(c("slo_known_minutes") > 0, 1 - c("slo_bad_minutes") / c("slo_known_minutes"))
    )
    metrics = [m for m in wide.columns if m not in ("owner", "week_start")]
    stacked = ", ".join(f"'{m}', cast(`{m}` as double)" for m in metrics)
    return wide.select("owner", "week_start", F.expr(f"stack({len(metrics)}, {stacked}) as (metric, value)")).where(
        F.col("value").isNotNull()
    )


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
    return (
        rows.groupBy(*key, "episode")
        .agg(F.min("ts").alias("started"), F.max("ts").alias("last_seen"), F.count("*").alias("minutes"))
        .drop("episode")
    )


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
    raised = F.col("started") >= start
    resolved = raised & (F.col("last_seen") < last_minute)
    to_resolve = (F.col("last_seen").cast("long") - F.col("started").cast("long")) / STEP_SECONDS + 1
    return in_week.groupBy("owner", "alertname", "severity").agg(
        F.sum(F.when(raised, 1).otherwise(0)).alias("raised"),
        F.sum(firing_min).cast("long").alias("firing_minutes"),
        F.sum(F.when(resolved, 1).otherwise(0)).alias("resolved"),
        F.avg(F.when(resolved, to_resolve)).alias("mean_minutes_to_resolve"),
        F.max(F.when(resolved, to_resolve)).alias("max_minutes_to_resolve"),
    )


def alerts_weekly(episodes: DataFrame) -> DataFrame:
    """Alerts raised per tenant and week (by the week the episode started), for the comparison table."""
    rows = episodes.withColumn("week_start", week_start("started"))
    return _long(rows.groupBy("owner", "week_start").agg(F.count("*").alias("n")), "alerts_raised", F.col("n"))


def weekly(daily: DataFrame, episodes: DataFrame) -> DataFrame:
    """Every weekly figure of every tenant, long."""
    return weekly_figures(daily).unionByName(alerts_weekly(episodes))


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
        this.alias("this_week"),
        prev.alias("previous_week"),
        F.avg(F.when(in4, F.col("value"))).alias("previous4_mean"),
        F.count(F.when(in4, F.col("value"))).alias("previous4_weeks"),
    )

    def growth(base: str) -> Column:
        return F.when(F.col(base) != 0, F.col("this_week") / F.col(base) - 1)

    return agg.withColumn("growth_wow", growth("previous_week")).withColumn("vs_previous4", growth("previous4_mean"))


# ---------------------------------------------------------------------------------------------------------------
# Storage and disk forecasts


def _day_index(col: str = "date") -> Column:
    return F.datediff(F.col(col), F.lit(date(1970, 1, 1))).cast("double")


def storage_daily(days: DataFrame) -> DataFrame:
    """Bytes stored per tenant and day: each topic's last sample of the day (attributed ``key_days``), summed over
    the tenant's topics."""
    rows = days.where(F.col("series") == "topic_size_bytes")
    return rows.groupBy("owner", "date").agg(F.sum("last").alias("bytes"))


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
        F.countDistinct("date").alias("days"),
    )
    weeks = (
        F.when(F.col("limit").isNull(), None)
        .when(F.col("current") >= F.col("limit"), F.lit(0.0))
        .when(
            (F.col("days") >= 2) & (F.col("slope_per_week") > 0),
            (F.col("limit") - F.col("current")) / F.col("slope_per_week"),
        )
    )
    return agg.withColumn("weeks_until_limit", weeks)


def storage_forecast(daily: DataFrame, budgets: DataFrame) -> DataFrame:
    """``daily(owner, date, bytes)`` and ``budgets(owner, budget_bytes)`` -> weeks until the storage budget."""
    joined = daily.join(budgets, "owner", "left").withColumnRenamed("budget_bytes", "limit_bytes")
    return linear_forecast(joined, ["owner"], "bytes", "limit_bytes")


def disk_daily(metrics: DataFrame) -> DataFrame:
    """Per cluster and day: filesystem size and used bytes over the brokers (each broker's last sample of the day per
    filesystem), and how many brokers reported."""
    rows = metrics.where(F.col("series").isin(*HOST_SERIES)).withColumn("date", F.to_date("ts"))
    last = rows.groupBy("cluster", "broker", "host", "device", "date").agg(
        F.max_by(
            F.when(F.col("series") == "host_filesystem_size_bytes", F.col("value")),
            F.when(F.col("series") == "host_filesystem_size_bytes", F.col("ts")),
        ).alias("size"),
        F.max_by(
            F.when(F.col("series") == "host_filesystem_free_bytes", F.col("value")),
            F.when(F.col("series") == "host_filesystem_free_bytes", F.col("ts")),
        ).alias("free"),
    )
    # One filesystem holding several brokers' log dirs (one host, the local stack) is counted once: by its host and
    # device label where the archive has them; else (older lakes) brokers whose size is equal and whose free space is
    # within the same MiB are taken for one filesystem (as the capacity plan does, monitor.advisor.capacity)
    host = F.coalesce(F.col("host"), F.lit(""))
    fs = F.when(
        F.coalesce(F.col("device"), F.lit("")) != "", F.concat_ws(":", F.lit("device"), host, F.col("device"))
    ).otherwise(
        F.concat_ws(
            ":",
            F.lit("figures"),
            host,
            F.col("size").cast("long"),
            F.floor(F.col("free") / FS_FREE_TOLERANCE_BYTES).cast("long"),
        )
    )
    per_fs = (
        last.withColumn("fs", fs)
        .groupBy("cluster", "date", "fs")
        .agg(F.min("size").alias("size"), F.min("free").alias("free"))
    )
    brokers = last.groupBy("cluster", "date").agg(F.countDistinct("broker").cast("long").alias("brokers"))
    # summed over a cluster's filesystems (a few hundred at most) in an order that does not depend on the
    # partitioning: a day's figure is the same whether it was reduced with the 35 days of a report or alone (cached)
    return (
        per_fs.groupBy("cluster", "date")
        .agg(ordered_sum("size").alias("size_bytes"), ordered_sum(F.col("size") - F.col("free")).alias("used_bytes"))
        .join(brokers, ["cluster", "date"])
    )


def disk_forecast(daily: DataFrame) -> DataFrame:
    """Weeks until the clusters' log-dir filesystems are full, from the trend of used bytes."""
    return linear_forecast(daily, ["cluster"], "used_bytes", "size_bytes")


# ---------------------------------------------------------------------------------------------------------------
# Clients, advisor findings, daily series, first data, operator summary


def noisy_clients(days: DataFrame, week: date, n: int = 5) -> DataFrame:
    """Top ``n`` clients per tenant by bytes produced plus fetched in ``week`` (attributed ``key_days``), with their
    throttled minutes."""
    s = F.col("series")
    rows = days.where(s.isin(*CLIENT_SERIES) & (week_start("date") == F.lit(week)))
    agg = rows.groupBy("owner", "cluster", "user", "client_id").agg(
        F.sum(F.when(s == "client_produce_bytes_rate", F.col("amount"))).alias("produce_bytes"),
        F.sum(F.when(s == "client_fetch_bytes_rate", F.col("amount"))).alias("fetch_bytes"),
        F.coalesce(F.sum(F.when(s == "client_throttle_seconds", F.col("positive_minutes"))), F.lit(0)).alias(
            "throttled_minutes"
        ),
    )
    agg = agg.withColumn(
        "total_bytes", F.coalesce(F.col("produce_bytes"), F.lit(0.0)) + F.coalesce(F.col("fetch_bytes"), F.lit(0.0))
    )
    w = Window.partitionBy("owner").orderBy(F.col("total_bytes").desc(), F.col("client_id"), F.col("user"))
    return agg.withColumn("rank", F.row_number().over(w)).where(F.col("rank") <= n)


def client_findings(mins: DataFrame, week: date) -> DataFrame:
    """Client-advisor findings that held in ``week``, per tenant: ``(owner, cluster, finding, client_id, group,
    minutes, first_seen, last_seen)``; minutes are the minutes the finding's gauge was 1 (observed, not inferred)."""
    rows = mins.where(F.col("series").isin(*FINDING_SERIES) & (week_start() == F.lit(week)))
    return rows.groupBy("owner", "cluster", "finding", "client_id", "group").agg(
        F.countDistinct("ts").alias("minutes"), F.min("ts").alias("first_seen"), F.max("ts").alias("last_seen")
    )


def daily_series(daily: DataFrame) -> DataFrame:
    """Per tenant and day, for the charts: bytes in/out, produce p99 (worst minute), mean lag. Long."""
    cols = {
        "bytes_in": F.col("bytes_in"),
        "bytes_out": F.col("bytes_out"),
        "produce_p99_seconds": F.col("produce_p99_max_seconds"),
        "lag_mean_messages": F.col("lag_sum") / F.col("lag_minutes"),
    }
    stacked = F.explode(
        F.array(*[F.struct(F.lit(k).alias("metric"), v.cast("double").alias("value")) for k, v in cols.items()])
    )
    return (
        daily.select("owner", "date", stacked.alias("m"))
        .select("owner", "date", "m.metric", "m.value")
        .where(F.col("value").isNotNull())
    )


def first_seen(days: DataFrame, mins: DataFrame) -> DataFrame:
    """First and last minute with data of the tenant's own resources (topics, groups, clients; not cluster-wide)."""
    own = mins.where(F.col("series").isin(*TOPIC_SERIES, *LAG_SERIES, *CLIENT_SERIES))
    spans = days.select("owner", F.col("first_ts").alias("a"), F.col("last_ts").alias("b")).unionByName(
        own.select("owner", F.col("ts").alias("a"), F.col("ts").alias("b"))
    )
    return spans.groupBy("owner").agg(F.min("a").alias("first_seen"), F.max("b").alias("last_seen"))


def cluster_summary(days: DataFrame, clusters: DataFrame, rows: DataFrame, disk: DataFrame, week: date) -> DataFrame:
    """Operator view per cluster in ``week``: traffic and topics (``key_days``), worst p99 (``cluster_minutes``),
    minutes with an offline/under-min-ISR partition (``minute_rows``), brokers (most brokers with a log-dir sample
    on one day, ``disk_daily``)."""
    s = F.col("series")
    d = days.where(week_start("date") == F.lit(week))
    traffic = d.groupBy("cluster").agg(
        F.sum(F.when(s == "topic_bytes_in_rate", F.col("amount"))).alias("bytes_in"),
        F.sum(F.when(s == "topic_bytes_out_rate", F.col("amount"))).alias("bytes_out"),
        F.sum(F.when(s == "topic_messages_in_rate", F.col("amount"))).alias("messages_in"),
        F.countDistinct(F.when(s.isin(*TOPIC_SERIES), F.col("topic"))).alias("topics"),
    )
    latency = (
        clusters.where(week_start() == F.lit(week))
        .groupBy("cluster")
        .agg(F.max("produce_p99").alias("produce_p99_max_seconds"), F.max("fetch_p99").alias("fetch_p99_max_seconds"))
    )
    bad = (
        rows.where(s.isin(*STATE_SERIES) & (week_start() == F.lit(week)))
        .groupBy("cluster")
        .agg(F.countDistinct("ts").alias("bad_minutes"))
    )
    brokers = disk.where(week_start("date") == F.lit(week)).groupBy("cluster").agg(F.max("brokers").alias("brokers"))
    out = latency.join(traffic, "cluster", "full_outer").join(bad, "cluster", "left").join(brokers, "cluster", "left")
    return out.select(
        "cluster",
        "bytes_in",
        "bytes_out",
        "messages_in",
        "produce_p99_max_seconds",
        "fetch_p99_max_seconds",
        F.coalesce(F.col("bad_minutes"), F.lit(0)).alias("bad_minutes"),
        F.coalesce(F.col("topics"), F.lit(0)).alias("topics"),
        F.coalesce(F.col("brokers"), F.lit(0)).alias("brokers"),
    )
