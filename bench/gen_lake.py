"""Synthesize Parquet lakes in the archive's layout (monitor.archive.lake), for benchmarks, demos and tests.

Two generators:

- ``realistic``: many tenants on several clusters, one-minute resolution, diurnal traffic (peak at 14:00 UTC,
  trough at 02:00), weekly growth per tenant, weekend dip, noise, incidents (offline partitions, throttled clients,
  alerts, lag spikes) and disks filling. Every day is written with ``lake.write_day`` like the real archive.
- ``known_answer_lake``: a small lake whose report figures are known exactly (10 % weekly growth, 30 minutes with
  an offline partition, a known top client, storage reaching its budget in exactly 8 weeks...). The tests use it;
  ``KNOWN`` lists the answers.

    python bench/gen_lake.py --lake /tmp/lake --brokers 100 --topics 5000 --tenants 500 --weeks 1 --week 2026-W47
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.archive import lake as lakefs
from monitor.archive.series import LABEL_COLUMNS
from monitor.core.config import (
    ClusterConfig,
    Config,
    LakeSettings,
    TenantConfig,
    TenantContract,
    TenantSelector,
)

UTC = timezone.utc
MIN = 60


def _midnight(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def _np(t: datetime) -> np.datetime64:
    return np.datetime64(t.astimezone(UTC).replace(tzinfo=None), "s")


# ---------------------------------------------------------------------------------------------------------------
# Row accumulation


class Rows:
    """Columns of one (day, cluster) file, appended in blocks (numpy arrays or scalars broadcast)."""

    def __init__(self):
        self.blocks: list[dict] = []

    def add(self, series: str, ts, value, **labels) -> None:
        if isinstance(ts, (list, tuple)):  # aware datetimes: numpy wants naive UTC
            ts = [t.astimezone(UTC).replace(tzinfo=None) for t in ts]
        ts = np.atleast_1d(np.asarray(ts, dtype="datetime64[s]"))
        value = np.broadcast_to(np.asarray(value, dtype="float64"), ts.shape)
        self.blocks.append({"ts": ts, "series": series, "value": value, **labels})

    def table(self) -> pa.Table:
        cols: dict[str, list] = {n: [] for n in lakefs.SCHEMA.names}
        # Series after series, as the archive writes them (one query per series), so row groups hold few series.
        order = {name: i for i, name in enumerate(dict.fromkeys(b["series"] for b in self.blocks))}
        for b in sorted(self.blocks, key=lambda b: order[b["series"]]):
            n = len(b["ts"])
            cols["ts"].append(pa.array(b["ts"].astype("datetime64[us]"), pa.timestamp("us", tz="UTC")))
            cols["series"].append(
                pa.DictionaryArray.from_arrays(np.zeros(n, "int32"), pa.array([b["series"]])).cast(pa.string())
            )
            for c in LABEL_COLUMNS:
                v = b.get(c)
                if v is None or isinstance(v, str):
                    cols[c].append(
                        pa.nulls(n, pa.string())
                        if v is None
                        else pa.DictionaryArray.from_arrays(np.zeros(n, "int32"), pa.array([v])).cast(pa.string())
                    )
                else:  # array of labels
                    cols[c].append(pa.array(v, pa.string()))
            cols["value"].append(pa.array(b["value"]))
        return pa.table(
            {k: pa.chunked_array(v, lakefs.SCHEMA.field(k).type) for k, v in cols.items()}, schema=lakefs.SCHEMA
        )


def write(lake: Path, by_day: dict[date, dict[str, Rows]], now: datetime) -> int:
    n = 0
    for day, clusters in sorted(by_day.items()):
        tables = {c: r.table() for c, r in clusters.items()}
        m = lakefs.write_day(
            lake, day, tables, start=_midnight(day), end=_midnight(day) + timedelta(days=1), complete=True, now=now
        )
        n += m.rows
    return n


# ---------------------------------------------------------------------------------------------------------------
# Known answers

KNOWN_WEEK = "2026-W47"
KNOWN = {
    "acme_bytes_in_base": 7.0e12,  # week k of 0..4 (4 = report week) has base * 1.1**k bytes in
    "acme_growth_wow": 0.1,
    "acme_offline_minutes": 30,
    "acme_under_min_isr_minutes": 25,  # 10 inside the offline half hour, 15 on their own
    "acme_bad_minutes": 45,  # minutes with an offline or under-min-ISR partition: 30 + 15
    "acme_observed_minutes": 7 * 24 * 60,
    "acme_top_client": "acme-orders-writer",
    "acme_weeks_until_budget": 8.0,  # 44 GB used, +7 GB/week, budget 100 GB
    "acme_throttled_minutes": 45,
    "disk_weeks_until_full": 460 / 70,  # main: 460 GB free, used +70 GB/week
    # client-advisor findings of the week: (finding, client_id, group) -> (minutes, first seen, last seen)
    "acme_findings": {
        ("poor_batching", "acme-batch", None): (90, "2026-11-18T09:00:00+00:00", "2026-11-20T09:29:00+00:00"),
        ("slow_consumer", "acme-reader", "acme-consumers"): (
            20,
            "2026-11-21T12:00:00+00:00",
            "2026-11-21T12:19:00+00:00",
        ),
    },
}


def known_answer_config(lake: Path) -> Config:
    main, edge = "main", "edge"
    return Config(
        clusters=(
            ClusterConfig(name=main, bootstrap_servers="127.0.0.1:9"),
            ClusterConfig(name=edge, bootstrap_servers="127.0.0.1:9"),
        ),
        tenants=(
            TenantConfig(
                name="acme",
                selectors=(
                    TenantSelector(
                        cluster=main,
                        topic_prefixes=("acme.",),
                        principals=("User:acme-svc",),
                        client_id_prefixes=("acme-",),
                        group_prefixes=("acme-",),
                    ),
                ),
                contract=TenantContract(storage_budget_bytes=100 * 10**9),
            ),
            TenantConfig(
                name="beta",
                selectors=(TenantSelector(cluster=main, topic_prefixes=("beta.",), client_id_prefixes=("beta-",)),),
            ),
            TenantConfig(name="gamma", selectors=(TenantSelector(cluster=main, topic_prefixes=("gamma.",)),)),
            TenantConfig(name="empty", selectors=(TenantSelector(cluster=main, topic_prefixes=("empty.",)),)),
            TenantConfig(name="delta", whole_clusters=(edge,)),
        ),
        lake=LakeSettings(path=str(lake)),
    )


def known_answer_lake(lake: Path, *, now: datetime | None = None) -> Config:
    """Write the known-answer lake (report week 2026-W47 and the four weeks before) and return its config."""
    week = date.fromisocalendar(2026, 47, 1)
    first = week - timedelta(days=28)
    days = [first + timedelta(days=i) for i in range(35)]
    by_day: dict[date, dict[str, Rows]] = {d: {"main": Rows(), "edge": Rows()} for d in days}
    base = KNOWN["acme_bytes_in_base"]
    for i, d in enumerate(days):
        k = i // 7  # week index 0..4
        t0 = _midnight(d)
        hours = _np(t0) + np.arange(24) * np.timedelta64(3600, "s")
        minutes = _np(t0) + np.arange(1440) * np.timedelta64(60, "s")
        r = by_day[d]["main"]
        # hourly rows: each stands for one minute's rate; the week's total is exactly base * 1.1**k
        per_row = base * 1.1**k / (7 * 24 * MIN)
        r.add("topic_bytes_in_rate", hours, per_row, topic="acme.orders")
        r.add("topic_bytes_out_rate", hours, 2 * base / (7 * 24 * MIN), topic="acme.orders")
        r.add("topic_messages_in_rate", hours, 1000.0, topic="acme.orders")
        r.add("topic_bytes_in_rate", hours, 1000.0, topic="beta.events")
        r.add("topic_size_bytes", [t0 + timedelta(hours=23)], 10e9 + 1e9 * i, topic="acme.orders")
        r.add("topic_size_bytes", [t0 + timedelta(hours=22)], 99e9, topic="acme.orders")  # not the day's last
        r.add("host_filesystem_size_bytes", [t0 + timedelta(hours=23)], 1000e9, broker="1")
        r.add("host_filesystem_free_bytes", [t0 + timedelta(hours=23)], 1000e9 - (200e9 + 10e9 * i), broker="1")
        r.add("group_lag_messages", hours, 100.0 if k == 4 else 50.0, group="acme-consumers", topic="acme.orders")
        if k >= 3:  # every minute of the last two weeks: the availability denominator
            r.add("broker_produce_p99_seconds", minutes, 0.010 if k == 4 else 0.008, broker="1")
        by_day[d]["edge"].add("topic_bytes_in_rate", hours, 500.0, topic="anything")
    wed = _midnight(week + timedelta(days=2))
    m = by_day[week + timedelta(days=2)]["main"]

    def rng(t: datetime, n: int) -> np.ndarray:
        return _np(t) + np.arange(n) * np.timedelta64(60, "s")

    m.add("topic_offline_partitions", rng(wed + timedelta(hours=3), 30), 1.0, topic="acme.orders")
    m.add("topic_offline_partitions", rng(wed + timedelta(hours=4), 10), 0.0, topic="acme.orders")
    m.add("topic_under_min_isr_partitions", rng(wed + timedelta(hours=3, minutes=10), 10), 2.0, topic="acme.orders")
    m.add("topic_under_min_isr_partitions", rng(wed + timedelta(hours=7), 15), 1.0, topic="acme.orders")
    m.add("topic_under_min_isr_partitions", rng(wed + timedelta(hours=7, minutes=15), 30), 0.0, topic="acme.orders")
    m.add("broker_produce_p99_seconds", [wed + timedelta(hours=3)], 0.5, broker="2")
    # clients: the principal wins over the client-id prefix (acme-svc's "beta-thing" is acme's)
    for day in range(7):
        t = _midnight(week + timedelta(days=day))
        hours = rng(t, 1) + np.arange(24) * np.timedelta64(3600, "s")
        r = by_day[week + timedelta(days=day)]["main"]
        r.add("client_produce_bytes_rate", hours, 5e6, user="acme-svc", client_id="acme-orders-writer")
        r.add("client_fetch_bytes_rate", hours, 1e6, user="acme-svc", client_id="acme-orders-writer")
        r.add("client_produce_bytes_rate", hours, 1e6, client_id="acme-batch")
        r.add("client_produce_bytes_rate", hours, 2e6, user="acme-svc", client_id="beta-thing")
        r.add("client_produce_bytes_rate", hours, 9e9, client_id="beta-loader")
    m.add("client_throttle_seconds", rng(wed + timedelta(hours=5), 45), 0.2, client_id="acme-batch")
    m.add("client_throttle_seconds", rng(wed + timedelta(hours=6), 5), 0.0, client_id="acme-batch")
    # alerts: two resolved episodes (30 and 10 minutes), one cluster-wide, one still firing at the week's end
    m.add(
        "alert_firing",
        rng(wed + timedelta(hours=3), 30),
        1.0,
        alertname="KafkaOfflinePartitions",
        severity="critical",
        tenant="acme",
        topic="acme.orders",
    )
    fri = _midnight(week + timedelta(days=4))
    by_day[week + timedelta(days=4)]["main"].add(
        "alert_firing",
        rng(fri + timedelta(hours=10), 10),
        1.0,
        alertname="KafkaOfflinePartitions",
        severity="critical",
        tenant="acme",
        topic="acme.orders",
    )
    m.add(
        "alert_firing",
        rng(wed + timedelta(hours=8), 5),
        1.0,
        alertname="KafkaBrokerUnreachable",
        severity="critical",
        broker="2",
    )
    sun = _midnight(week + timedelta(days=6))
    by_day[week + timedelta(days=6)]["main"].add(
        "alert_firing",
        rng(sun + timedelta(hours=23, minutes=50), 10),
        1.0,
        alertname="KafkaConsumerLagHigh",
        severity="warning",
        tenant="acme",
        group="acme-consumers",
    )
    # client-advisor findings: 60 + 30 minutes of poor batching, 20 of a slow consumer; one the week before (not
    # this week's), a zero sample (the finding did not hold), and beta's finding that acme must never see
    f = dict(tenant="acme", finding="poor_batching", client_id="acme-batch")
    m.add("client_advisor_finding", rng(wed + timedelta(hours=9), 60), 1.0, **f)
    m.add("client_advisor_finding", rng(wed + timedelta(hours=10), 5), 0.0, **f)
    by_day[week + timedelta(days=4)]["main"].add("client_advisor_finding", rng(fri + timedelta(hours=9), 30), 1.0, **f)
    by_day[week - timedelta(days=2)]["main"].add(
        "client_advisor_finding", rng(_midnight(week - timedelta(days=2)), 50), 1.0, **f
    )
    sat = _midnight(week + timedelta(days=5))
    by_day[week + timedelta(days=5)]["main"].add(
        "client_advisor_finding",
        rng(sat + timedelta(hours=12), 20),
        1.0,
        tenant="acme",
        finding="slow_consumer",
        client_id="acme-reader",
        group="acme-consumers",
    )
    m.add("client_advisor_finding", rng(wed, 10), 1.0, tenant="beta", finding="poor_batching", client_id="beta-loader")
    # gamma joins on Wednesday at noon
    for day in range(2, 7):
        t = _midnight(week + timedelta(days=day)) + (timedelta(hours=12) if day == 2 else timedelta())
        n = 12 if day == 2 else 24
        by_day[week + timedelta(days=day)]["main"].add(
            "topic_bytes_in_rate", rng(t, 1) + np.arange(n) * np.timedelta64(3600, "s"), 10.0, topic="gamma.logs"
        )
    write(lake, by_day, now or datetime(2026, 11, 23, 6, tzinfo=UTC))
    return known_answer_config(lake)


# ---------------------------------------------------------------------------------------------------------------
# Realistic


def realistic(
    lake: Path,
    *,
    brokers: int,
    topics: int,
    tenants: int,
    weeks: int,
    end_week: date,
    clusters: int | None = None,
    seed: int = 7,
    progress=print,
) -> tuple[Config, int]:
    """``weeks`` weeks ending with ``end_week`` (its Monday). Returns the config and the number of rows written."""
    rnd = np.random.default_rng(seed)
    clusters = clusters or max(1, brokers // 25)
    cnames = [f"c{i}" for i in range(clusters)]
    tnames = [f"t{i:04d}" for i in range(tenants)]
    t_cluster = [cnames[i % clusters] for i in range(tenants)]
    topic_tenant = np.arange(topics) % tenants
    topic_names = np.array([f"{tnames[t]}.topic{j:05d}" for j, t in enumerate(topic_tenant)])
    topic_cluster = np.array([t_cluster[t] for t in topic_tenant])
    t_scale = rnd.lognormal(0, 1.2, tenants)  # a few tenants dominate
    t_growth = rnd.normal(0.03, 0.04, tenants)  # weekly growth rate
    topic_rate = rnd.lognormal(8, 1.0, topics) * t_scale[topic_tenant]  # bytes/s at the mean
    broker_cluster = [cnames[b % clusters] for b in range(brokers)]
    first = end_week - timedelta(days=7 * (weeks - 1))
    cfg = Config(
        clusters=tuple(ClusterConfig(name=c, bootstrap_servers="127.0.0.1:9") for c in cnames),
        tenants=tuple(
            TenantConfig(
                name=t,
                selectors=(
                    TenantSelector(
                        cluster=t_cluster[i],
                        topic_prefixes=(f"{t}.",),
                        client_id_prefixes=(f"{t}-",),
                        group_prefixes=(f"{t}-",),
                    ),
                ),
                contract=TenantContract(storage_budget_bytes=int(5e12 * t_scale[i]) + 1),
            )
            for i, t in enumerate(tnames)
        ),
        lake=LakeSettings(path=str(lake)),
    )
    total = 0
    for di in range(7 * weeks):
        d = first + timedelta(days=di)
        t0 = _np(_midnight(d))
        minutes = t0 + np.arange(1440) * np.timedelta64(60, "s")
        hour = np.arange(1440) / 60.0
        diurnal = 1 + 0.6 * np.sin((hour - 8) / 24 * 2 * np.pi)  # peak 14:00, trough 02:00
        weekend = 0.7 if d.weekday() >= 5 else 1.0
        by_cluster: dict[str, Rows] = {c: Rows() for c in cnames}
        started = time.monotonic()
        for c in cnames:
            idx = np.nonzero(topic_cluster == c)[0]
            if len(idx) == 0:
                continue
            growth = (1 + t_growth[topic_tenant[idx]]) ** (di / 7)
            rate = (topic_rate[idx] * growth)[:, None] * diurnal[None, :] * weekend
            rate = rate * rnd.normal(1, 0.05, rate.shape).clip(0.5, 1.5)
            ts = np.tile(minutes, len(idx))
            names = np.repeat(topic_names[idx], 1440)
            r = by_cluster[c]
            r.add("topic_bytes_in_rate", ts, rate.ravel(), topic=names)
            r.add("topic_bytes_out_rate", ts, (rate * 2.1).ravel(), topic=names)
            r.add("topic_messages_in_rate", ts, (rate / 850).ravel(), topic=names)
            r.add("topic_messages_out_rate", ts, (rate / 850 * 2).ravel(), topic=names)
            size = (topic_rate[idx] * growth * 86400 * 3 * (1 + di * 0.01))[:, None] * np.ones(1440)
            r.add("topic_size_bytes", ts, size.ravel(), topic=names)
            # incidents: a few topics lose a partition leader for 5-60 minutes
            for j in rnd.choice(idx, size=min(3, len(idx)), replace=False):
                start, n = int(rnd.integers(0, 1380)), int(rnd.integers(5, 60))
                r.add("topic_offline_partitions", minutes[start : start + n], 1.0, topic=str(topic_names[j]))
                tenant = tnames[topic_tenant[j]]
                r.add(
                    "alert_firing",
                    minutes[start : start + n],
                    1.0,
                    alertname="KafkaOfflinePartitions",
                    severity="critical",
                    tenant=tenant,
                    topic=str(topic_names[j]),
                )
            # ... and a few run under min ISR for a while (a slow follower)
            for j in rnd.choice(idx, size=min(3, len(idx)), replace=False):
                start, n = int(rnd.integers(0, 1320)), int(rnd.integers(10, 120))
                r.add("topic_under_min_isr_partitions", minutes[start : start + n], 1.0, topic=str(topic_names[j]))
        for b in range(brokers):
            c = broker_cluster[b]
            p99 = 0.004 + 0.006 * diurnal * rnd.gamma(2, 0.5, 1440)
            r = by_cluster[c]
            r.add("broker_produce_p99_seconds", minutes, p99, broker=str(b))
            r.add("broker_fetch_p99_seconds", minutes, p99 * 1.8, broker=str(b))
            r.add("host_filesystem_size_bytes", minutes, 4e12, broker=str(b))
            r.add("host_filesystem_free_bytes", minutes, 4e12 * (0.7 - 0.004 * di) - hour * 1e8, broker=str(b))
        for ti, t in enumerate(tnames):
            c = t_cluster[ti]
            r = by_cluster[c]
            base = t_scale[ti] * 2e5 * diurnal * weekend
            for k in range(3):
                r.add("client_produce_bytes_rate", minutes, base * (k + 1), user=f"{t}-svc", client_id=f"{t}-app{k}")
                r.add("client_fetch_bytes_rate", minutes, base * (k + 1) * 2, user=f"{t}-svc", client_id=f"{t}-app{k}")
            throttled = base > np.quantile(base, 0.98) * (1.0 if ti % 10 else 0.5)
            r.add(
                "client_throttle_seconds",
                minutes,
                np.where(throttled, 0.05, 0.0),
                user=f"{t}-svc",
                client_id=f"{t}-app0",
            )
            if ti % 7 == 0:  # one tenant in seven has a client the advisor flags for a few hours a day
                start = int(rnd.integers(0, 1200))
                r.add(
                    "client_advisor_finding",
                    minutes[start : start + 180],
                    1.0,
                    tenant=t,
                    finding="poor_batching",
                    client_id=f"{t}-app1",
                )
            lag = 1000 * t_scale[ti] * diurnal * (1 + di * 0.02)
            r.add("group_lag_messages", minutes, lag, group=f"{t}-consumers", topic=f"{t}.topic")
        tables = {c: r.table() for c, r in by_cluster.items()}
        m = lakefs.write_day(
            lake,
            d,
            tables,
            start=_midnight(d),
            end=_midnight(d) + timedelta(days=1),
            complete=True,
            now=datetime.now(UTC),
        )
        total += m.rows
        progress(f"{d}: {m.rows:,} rows in {time.monotonic() - started:.1f}s")
    return cfg, total


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lake", type=Path, required=True)
    p.add_argument("--brokers", type=int, default=100)
    p.add_argument("--topics", type=int, default=5000)
    p.add_argument("--tenants", type=int, default=500)
    p.add_argument("--weeks", type=int, default=1)
    p.add_argument("--week", default="2026-W47", help="last week generated")
    p.add_argument("--known", action="store_true", help="write the small known-answer lake instead")
    p.add_argument("--config-out", type=Path, default=None, help="write the tenants' config YAML here")
    a = p.parse_args(argv)
    if a.known:
        cfg = known_answer_lake(a.lake)
    else:
        y, w = a.week.split("-W")
        cfg, rows = realistic(
            a.lake,
            brokers=a.brokers,
            topics=a.topics,
            tenants=a.tenants,
            weeks=a.weeks,
            end_week=date.fromisocalendar(int(y), int(w), 1),
        )
        print(f"{rows:,} rows written to {a.lake}")
    if a.config_out:
        import yaml

        a.config_out.write_text(yaml.safe_dump(cfg.model_dump(mode="json", exclude_defaults=True), sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
