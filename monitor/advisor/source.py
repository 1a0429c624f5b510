"""The advisor's thin shell: PromQL in, ``Snapshot`` / ``ClusterUsage`` out. No decisions here.

Reads through ``monitor.core.prom.Source`` (the alert engine's seam: ``QueryError`` on failure, [] for no data), at the
``now`` it is given, over a window. Tenants are resolved here with a ``TenantIndex`` built from the caller's tenant
list (the API's store, or the config), not from the series' ``tenant`` label, so a tenant created through the API
after the collectors started is attributed too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime

from monitor.advisor.capacity import (
    DAY,
    BrokerUsage,
    ClusterUsage,
    Limits,
    LogDirDisk,
    TenantUsage,
    same_filesystems,
)
from monitor.advisor.types import (
    ClientSample,
    ClusterSample,
    DeprecatedSample,
    GroupSample,
    Snapshot,
    SoftwareSample,
    TelemetrySample,
    TopicSample,
)
from monitor.core.clients import principal_owners, replica_fetch_connections_in_cluster
from monitor.core.config import TenantConfig
from monitor.core.metric_names import M
from monitor.core.prom import InstantSample, Source
from monitor.core.tenancy import TenantIndex
from monitor.core.times import parse_duration

# The KIP-714 client-telemetry gauges (exported by the brokers' metrics plugin, docs/metrics.md), by the
# ``TelemetrySample`` field each fills. Present only for metrics a client pushed.
TELEMETRY = "kafka_client_telemetry_"
TELEMETRY_FIELDS = {
    "batch_size_avg_bytes": "producer_batch_size_avg_bytes",
    "records_per_request": "producer_records_per_request_avg",
    "record_queue_time_seconds": "producer_record_queue_time_avg_seconds",
    "produce_request_rate": "producer_request_rate",
    "request_latency_seconds": "request_latency_avg_seconds",
    "throttle_seconds": "throttle_time_avg_seconds",
    "poll_idle_ratio": "consumer_poll_idle_ratio_avg",
    "fetch_latency_seconds": "consumer_fetch_latency_avg_seconds",
    "commit_latency_seconds": "consumer_commit_latency_avg_seconds",
}
TELEMETRY_RATES = frozenset({"produce_request_rate"})  # summed over a client id's instances; the others averaged
# Averages of requests' latencies where a push without such a request says 0: librdkafka averages over the brokers
# that had one (``brokers_avg`` in rdkafka_telemetry_encode.c) and pushes 0 when none had, where Java pushes nothing
# (NaN). A 0 is no measurement, not an instant answer: a consumer that fetched nothing (no partition assigned yet, a
# topic its metadata has not seen) would read as fetching "in 0 ms" and be named polling_too_often (stop 41's CI:
# shop-good-3-consumer, idle in poll(), named in 27 of 30 reads). These are averaged over their non-zero pushes only.
TELEMETRY_ZERO_IS_NONE = frozenset({"fetch_latency_seconds", "commit_latency_seconds", "request_latency_seconds"})
TELEMETRY_STEP = "15s"  # the subquery's step for those: the collection interval's default

REBALANCING_STATES = "preparingrebalance|completingrebalance|assigning|reconciling"


def _ok(v: float) -> bool:
    return not (math.isnan(v) or math.isinf(v))


class Reader:
    def __init__(self, source: Source, *, now: datetime, window: str = "10m"):
        self.source, self.now, self.window = source, now, window

    def q(self, expr: str) -> list[InstantSample]:
        return [s for s in self.source.query(expr, self.now) if _ok(s.value)]

    def by(self, expr: str, *labels: str) -> dict[tuple[str, ...], float]:
        return {tuple(s.labels.get(k, "") for k in labels): s.value for s in self.q(expr)}

    def scalar(self, expr: str) -> float:
        rows = self.q(expr)
        return sum(s.value for s in rows)


REQUEST_FIELDS = ("request_time_ratio", "request_throttle_seconds")


def attribute_request_sensors(
    fields: dict[str, dict[tuple[str, ...], float]], seen: dict[tuple[str, ...], float]
) -> tuple[dict, dict]:
    """Kafka tags a quota type's sensors with the entity its quota matched: with byte-rate quotas per user
    (``users/U/clients/<default>``, as ``tenants apply-quotas`` sets them) and the request quota only per client id
    (the default client quota), one client's byte rates come as (user=U, client_id=C) and its request time as
    (user="", client_id=C). Read apart, neither half is a costly client: one moves bytes for no thread time, the other
    spends thread time moving nothing. A user-less request series goes to the one user whose byte series carry its
    client id; with none or several such users (a client id shared across principals) it stays as it is; ``seen``
    (each client's ``seen_share``, read on the request series) moves with it."""
    owner = principal_owners(k for f, rows in fields.items() if f not in REQUEST_FIELDS for k in rows)

    def moved(rows: dict[tuple[str, ...], float], combine) -> dict[tuple[str, ...], float]:
        out: dict[tuple[str, ...], float] = {}
        for (user, cid), v in rows.items():
            key = (owner[cid], cid) if not user and cid in owner else (user, cid)
            out[key] = combine(out[key], v) if key in out else v
        return out

    fields = {
        f: moved(rows, max if f == "request_throttle_seconds" else (lambda a, b: a + b))
        if f in REQUEST_FIELDS
        else rows
        for f, rows in fields.items()
    }
    return fields, moved(seen, max)


def telemetry_expr(field: str, name: str, sel: str, window: str) -> str:
    """The PromQL of one ``TelemetrySample`` field: each client instance's average over ``window`` (over its non-zero
    pushes only for ``TELEMETRY_ZERO_IS_NONE``), then summed (rates) or averaged over the instances of a client id."""
    agg = "sum" if field in TELEMETRY_RATES else "avg"
    inst = "user, client_id, client_instance_id"
    series = f"{TELEMETRY}{name}{{{sel}}}"
    over = f"({series} > 0)[{window}:{TELEMETRY_STEP}]" if field in TELEMETRY_ZERO_IS_NONE else f"{series}[{window}]"
    return f"{agg} by (user, client_id) (avg by ({inst}) (avg_over_time({over})))"


def read_telemetry(r: Reader, sel: str, cluster: str, index: TenantIndex) -> tuple[TelemetrySample, ...]:
    """One sample per (user, client id) that pushed telemetry in the window. A client pushes to one broker at a time
    and may move: each instance is averaged over its brokers' series first, then rates are summed over the instances
    sharing a client id (processes of one application) and averages averaged."""
    w, cb = r.window, ("user", "client_id")
    fields: dict[str, dict[tuple[str, ...], float]] = {}
    for field, name in TELEMETRY_FIELDS.items():
        fields[field] = r.by(telemetry_expr(field, name, sel, w), *cb)
    software: dict[tuple[str, str], tuple[str, str]] = {}
    for smp in r.q(
        f"max by (user, client_id, client_software_name, client_software_version) "
        f"(max_over_time({TELEMETRY}last_push_timestamp_seconds{{{sel}}}[{w}]))"
    ):
        lb = smp.labels
        software[(lb.get("user", ""), lb.get("client_id", ""))] = (
            lb.get("client_software_name", ""),
            lb.get("client_software_version", ""),
        )
    keys = sorted({k for rows in fields.values() for k in rows} | set(software))
    return tuple(
        TelemetrySample(
            cluster=cluster,
            user=user,
            client_id=cid,
            tenant=index.for_client(cluster, client_id=cid, user=user),
            software_name=software.get((user, cid), ("", ""))[0],
            software_version=software.get((user, cid), ("", ""))[1],
            **{f: rows[(user, cid)] for f, rows in fields.items() if (user, cid) in rows},
        )
        for user, cid in keys
    )


def read_snapshot(
    source: Source, *, cluster: str, tenants: Iterable[TenantConfig] | TenantIndex, now: datetime, window: str = "10m"
) -> Snapshot:
    """Everything the advisor's rules read for one ``cluster`` over ``window`` before ``now``, one named step per
    input (``SNAPSHOT_INPUTS``): the clients' quota sensors, the topics' produce counts, the consumer groups, the
    client software (KIP-511, KIP-896), the cluster's request figures, and what clients pushed (KIP-714). Raises
    ``QueryError`` when Prometheus fails; a series that is absent is an empty input, never an error."""
    r = Reader(source, now=now, window=window)
    index = tenants if isinstance(tenants, TenantIndex) else TenantIndex(tenants)
    sel = f'cluster="{cluster}"'
    return Snapshot(
        cluster=_read_cluster(r, sel, cluster),
        clients=_read_clients(r, sel, cluster, index),
        topics=_read_topics(r, sel, cluster, index),
        groups=_read_groups(r, sel, cluster, index),
        software=_read_software(r, sel, cluster),
        deprecated=_read_deprecated(r, sel, cluster),
        telemetry=read_telemetry(r, sel, cluster, index),
        whole_cluster_tenant=index.for_topic(cluster, None),
    )


def seen_share_expr(sel: str, window: str) -> str:
    """The PromQL of each (user, client id)'s ``seen_share`` over ``window``, from its request-time sensor series:

    - 1 when it has samples in the window before this one: seen all along, whatever gaps the window has (a failed
      scrape leaves a series stale for one interval: missing at the subquery's first steps, a client seen for hours
      read as seen for as little as 0.78 of a 2-minute window at a 15 s interval, under ``min_seen_share``, and was
      not judged at that reading);
    - else the time since its first sample in the window, over the window: the earliest sample by a subquery at a
      tenth of the window, or for a client newer than the subquery's last step, its one sample's time (it read as
      seen all along, and was judged on its first seconds)."""
    wsec = parse_duration(window)
    step = max(1, int(wsec // 10))
    series = f"{M['client_request_time']}{{{sel}}}"
    by = "user, client_id"
    before = f"count by ({by}) (count_over_time({series}[{window}] offset {window})) * 0 + 1"
    first = (
        f"min by ({by}) (min_over_time(timestamp({series})[{window}:{step}s])) or min by ({by}) (timestamp({series}))"
    )
    return f"{before} or clamp_max(clamp_min(time() - ({first}), 0) / {wsec:g}, 1)"


def _read_clients(r: Reader, sel: str, cluster: str, index: TenantIndex) -> tuple[ClientSample, ...]:
    """One sample per (user, client id) from the brokers' quota sensors, with the share of the window it was seen."""
    w, cb, by_client = r.window, ("user", "client_id"), "user, client_id"

    def per_client(metric: str, agg: str = "sum") -> dict[tuple[str, ...], float]:
        return r.by(f"{agg} by ({by_client}) (avg_over_time({metric}{{{sel}}}[{w}]))", *cb)

    fields = {
        "request_time_ratio": per_client(M["client_request_time"]),
        "produce_bytes_per_second": per_client(M["client_produce_rate"]),
        "fetch_bytes_per_second": per_client(M["client_fetch_rate"]),
        "produce_throttle_seconds": per_client(M["client_produce_throttle"], "max"),
        "fetch_throttle_seconds": per_client(M["client_fetch_throttle"], "max"),
        "request_throttle_seconds": per_client(M["client_request_throttle"], "max"),
    }
    fields, seen = attribute_request_sensors(fields, r.by(seen_share_expr(sel, w), *cb))
    keys = sorted({k for rows in fields.values() for k in rows})
    return tuple(
        ClientSample(
            cluster=cluster,
            user=user,
            client_id=cid,
            tenant=index.for_client(cluster, client_id=cid, user=user),
            fetch_seen=(user, cid) in fields["fetch_bytes_per_second"],
            # no request series at all (no request quota sensor): nothing says when it started
            seen_share=seen.get((user, cid), 1.0),
            **{f: rows.get((user, cid), 0.0) for f, rows in fields.items()},
        )
        for user, cid in keys
    )


def _read_topics(r: Reader, sel: str, cluster: str, index: TenantIndex) -> tuple[TopicSample, ...]:
    """Records, produce requests and bytes in per topic (BrokerTopicMetrics, summed over brokers); internal topics
    left out."""

    def per_topic(metric: str) -> dict[tuple[str, ...], float]:
        return r.by(f"sum by (topic) (rate({metric}{{{sel}}}[{r.window}]))", "topic")

    msgs, reqs, byts = (
        per_topic(M["topic_messages_in"]),
        per_topic(M["topic_produce_requests"]),
        per_topic(M["topic_bytes_in"]),
    )
    return tuple(
        TopicSample(
            cluster=cluster,
            topic=t,
            tenant=index.for_topic(cluster, t),
            messages_per_second=msgs.get((t,), 0.0),
            produce_requests_per_second=reqs.get((t,), 0.0),
            bytes_per_second=byts.get((t,), 0.0),
        )
        for (t,) in sorted(set(msgs) | set(reqs))
        if not t.startswith("__")
    )


def _read_groups(r: Reader, sel: str, cluster: str, index: TenantIndex) -> tuple[GroupSample, ...]:
    """Each consumer group: membership and its changes, the share of samples spent rebalancing, its members' client
    ids and its lag (what slow_consumer_loop needs: who is in it, and whether it has records to read)."""
    w, wsec = r.window, parse_duration(r.window)
    members = r.by(f"max by (group) ({M['group_members']}{{{sel}}})", "group")
    changes = r.by(f"max by (group) (changes({M['group_members']}{{{sel}}}[{w}]))", "group")
    samples = r.by(f"max by (group) (count_over_time({M['group_members']}{{{sel}}}[{w}]))", "group")
    rebal = r.by(
        f'sum by (group) (sum_over_time({M["group_state"]}{{{sel},state=~"{REBALANCING_STATES}"}}[{w}]))', "group"
    )
    member_ids: dict[str, set[str]] = {}
    for g, cid in r.by(
        f"max by (group, client_id) (max_over_time({M['group_member_info']}{{{sel}}}[{w}]))", "group", "client_id"
    ):
        member_ids.setdefault(g, set()).add(cid)
    lag = r.by(f"sum by (group) ({M['group_lag']}{{{sel}}})", "group")
    lag_change = r.by(f"sum by (group) (delta({M['group_lag']}{{{sel}}}[{w}]))", "group")
    lag_seconds = r.by(f"max by (group) ({M['group_lag_seconds']}{{{sel}}})", "group")
    committed = r.by(f"sum by (group) (rate({M['group_committed_offset']}{{{sel}}}[{w}]))", "group")
    return tuple(
        GroupSample(
            cluster=cluster,
            group=g,
            tenant=index.for_group(cluster, g),
            members=members[(g,)],
            member_changes=changes.get((g,), 0.0),
            rebalancing_share=rebal.get((g,), 0.0) / samples[(g,)] if samples.get((g,)) else 0.0,
            window_seconds=wsec,
            client_ids=tuple(sorted(member_ids.get(g, ()))),
            lag_records=lag.get((g,)),
            lag_change_records=lag_change.get((g,)),
            lag_seconds=lag_seconds.get((g,)),
            committed_records_per_second=committed.get((g,)),
        )
        for (g,) in sorted(members)
    )


def _read_software(r: Reader, sel: str, cluster: str) -> tuple[SoftwareSample, ...]:
    """Open connections by client software name and version (KIP-511), summed over brokers."""
    return tuple(
        SoftwareSample(cluster=cluster, name=n, version=v, connections=c)
        for (n, v), c in sorted(
            r.by(
                f"sum by (client_software_name, client_software_version) ({M['client_connections']}{{{sel}}})",
                "client_software_name",
                "client_software_version",
            ).items()
        )
    )


def _read_deprecated(r: Reader, sel: str, cluster: str) -> tuple[DeprecatedSample, ...]:
    """Requests per second in deprecated API versions (KIP-896) per client software, those sent in the window."""
    sw_labels = ("client_software_name", "client_software_version", "request", "api_version")
    return tuple(
        DeprecatedSample(cluster=cluster, name=n, version=v, request=req, api_version=api, requests_per_second=rps)
        for (n, v, req, api), rps in sorted(
            r.by(
                f"sum by ({', '.join(sw_labels)}) (rate({M['deprecated_requests']}{{{sel}}}[{r.window}]))", *sw_labels
            ).items()
        )
        if rps > 0
    )


def _read_cluster(r: Reader, sel: str, cluster: str) -> ClusterSample:
    """Cluster-wide request figures: requests and errors per second (by request and by error), new and open
    connections, nameless ones; and the cluster's own state over the window (brokers down, partitions under-replicated
    or offline: the worst sample of each), which request_storm's guard reads."""
    w, wsec = r.window, parse_duration(r.window)
    by_pair = r.by(
        f'sum by (request, error) (rate({M["request_errors"]}{{{sel},error!="NONE"}}[{w}]))', "request", "error"
    )
    errors: dict[str, float] = {}
    codes: dict[str, float] = {}
    for (request, error), v in by_pair.items():
        errors[request] = errors.get(request, 0.0) + v
        codes[error] = codes.get(error, 0.0) + v
    step = f"{max(1, int(wsec // 20))}s"

    def worst(expr: str) -> float:  # the largest sample over the window; 0 where the series is absent
        return r.scalar(f"max_over_time(({expr} or vector(0))[{w}:{step}])")

    fetches = r.q(f'sum(rate({M["requests"]}{{{sel},request="FetchConsumer"}}[{w}]))')
    return ClusterSample(
        cluster=cluster,
        window_seconds=wsec,
        requests_per_second=r.scalar(f"sum(rate({M['requests']}{{{sel}}}[{w}]))"),
        errors_per_second=sum(errors.values()),
        # Every client connection starts with ApiVersions (KIP-35/KIP-511), so its rate is the rate of new
        # connections; Kafka's connection-creation-rate is not exported.
        new_connections_per_second=r.scalar(f'sum(rate({M["requests"]}{{{sel},request="ApiVersions"}}[{w}]))'),
        open_connections=r.scalar(f"sum({M['client_connections']}{{{sel}}})"),
        # Averaged over the window with its gaps as zero (a subquery over "sum or 0"): a connection that lived a
        # moment before its ApiVersions named its software must not count as one held all along.
        # Less the other brokers' replica fetchers' connections, nameless too (monitor/core/clients.py).
        nameless_connections=max(
            0.0,
            r.scalar(
                f'avg_over_time((sum({M["client_connections"]}{{{sel},client_software_name="unknown"}}) or vector(0))'
                f"[{w}:{step}])"
            )
            - replica_fetch_connections_in_cluster(r.scalar(f"count({M['broker_up']}{{{sel}}} == 1)")),
        ),
        errors_by_request={k: v for k, v in errors.items() if v > 0},
        errors_by_code={k: v for k, v in codes.items() if v > 0},
        brokers_down=worst(f"count({M['broker_up']}{{{sel}}} == 0)"),
        under_replicated_partitions=worst(f"sum({M['under_replicated']}{{{sel}}})"),
        offline_partitions=max(
            worst(f"max({M['offline_partitions']}{{{sel}}})"), worst(f"sum({M['topic_offline_partitions']}{{{sel}}})")
        ),
        consumer_fetches_per_second=sum(s.value for s in fetches) if fetches else None,
        # The most at once over the window, so a broker restarting (its series stale for a while) does not shrink
        # the capacity a client's cost is measured against
        brokers=max(
            worst(f"count(count by (broker) ({M['requests']}{{{sel}}}))"),
            worst(f"count({M['broker_up']}{{{sel}}})"),
        ),
        # Each broker's most over the window, as the brokers above: a broker restarting keeps its threads
        handler_threads={
            b: v
            for (b,), v in r.by(
                f"max by (broker) (max_over_time({M['request_handler_threads']}{{{sel}}}[{w}]))", "broker"
            ).items()
        },
    )


def read_usage(
    source: Source,
    *,
    cluster: str,
    tenants: Iterable[TenantConfig],
    now: datetime,
    window: str = "1h",
    limits: Limits = Limits(),
) -> ClusterUsage:
    """Observed usage over ``window``: ingress as the window's average rate, threads at the window's lowest idle."""
    tenants = tuple(tenants)
    r = Reader(source, now=now, window=window)
    index = TenantIndex(tenants)
    sel = f'cluster="{cluster}"'
    w = window
    disks = read_log_dir_disks(r, sel)
    size, avail = {}, {}
    for b, dirs in disks.items():  # a broker's log dirs on one filesystem count it once
        groups = same_filesystems(dirs)
        size[(b,)] = sum(g[0].size_bytes for g in groups)
        avail[(b,)] = sum(g[0].avail_bytes for g in groups)
    parts = r.by(f"max by (broker) ({M['broker_partitions']}{{{sel}}})", "broker")
    leaders = r.by(f"max by (broker) ({M['broker_leader_partitions']}{{{sel}}})", "broker")
    handler = r.by(f"min by (broker) (min_over_time({M['request_handler_idle']}{{{sel}}}[{w}]))", "broker")
    network = r.by(f"min by (broker) (min_over_time({M['network_processor_idle']}{{{sel}}}[{w}]))", "broker")
    ids = sorted(set(size) | set(parts) | set(handler), key=lambda k: (len(k[0]), k[0]))
    brokers = tuple(
        BrokerUsage(
            broker=b,
            disk_size_bytes=size.get((b,), 0.0),
            disk_avail_bytes=avail.get((b,), 0.0),
            partitions=parts.get((b,), 0.0),
            leaders=leaders.get((b,), 0.0),
            handler_idle_at_peak=handler.get((b,)),
            network_idle_at_peak=network.get((b,)),
            disks=tuple(disks.get(b, ())),
        )
        for (b,) in ids
    )

    bytes_in = r.by(f"sum by (topic) (rate({M['topic_bytes_in']}{{{sel}}}[{w}]))", "topic")
    stored = r.by(f"sum by (topic) ({M['topic_size']}{{{sel}}})", "topic")
    tparts = r.by(f"max by (topic) ({M['topic_partitions']}{{{sel}}})", "topic")
    # The replication factor from the metadata (replicas / partitions). Not from ReplicationBytesIn / BytesIn: on
    # the test stack that ratio read 11 for RF 3 (follower fetches of tiny batches are not 1:1 with produce bytes).
    replicas = r.by(f"max by (topic) ({M['topic_replicas']}{{{sel}}})", "topic")

    acc: dict[str | None, list[float]] = {}
    for (topic,) in set(bytes_in) | set(stored) | set(tparts):
        owner = index.for_topic(cluster, topic) if not topic.startswith("__") else None
        a = acc.setdefault(owner, [0.0, 0.0, 0.0, 0.0])
        a[0] += bytes_in.get((topic,), 0.0)
        a[1] += stored.get((topic,), 0.0)
        if (topic,) in replicas:  # partitions counted with their replicas only, so the ratio is consistent
            a[2] += tparts.get((topic,), 0.0)
            a[3] += replicas[(topic,)]
    all_parts = sum(a[2] for a in acc.values())
    rf = sum(a[3] for a in acc.values()) / all_parts if all_parts else 1.0
    on_cluster = [t for t in tenants if cluster in t.whole_clusters or any(s.cluster == cluster for s in t.selectors)]
    usages = []
    for t in on_cluster:
        a = acc.get(t.name, [0.0, 0.0, 0.0, 0.0])
        c = t.contract
        usages.append(
            TenantUsage(
                tenant=t.name,
                bytes_in_per_second=a[0],
                stored_bytes=a[1],
                retention_seconds=c.retention_hours * 3600 if c.retention_hours else limits.default_retention_seconds,
                budget_bytes=float(c.storage_budget_bytes) if c.storage_budget_bytes else None,
                partitions=a[2],
                replication_factor=a[3] / a[2] if a[2] else None,
            )
        )
    other = acc.get(None, [0.0, 0.0, 0.0, 0.0])
    return ClusterUsage(
        cluster=cluster,
        brokers=brokers,
        tenants=tuple(usages),
        replication_factor=rf,
        other_bytes_in_per_second=other[0],
        other_stored_bytes=other[1],
    )


# Labels that name the filesystem itself (the host collector exports `device`, "major:minor" of st_dev; `mountpoint`
# as another exporter might): log dirs are on one filesystem when they say so, not when their sizes and free space
# agree. Series without them fall back to the figures (capacity.same_filesystems).
DEVICE_LABELS = ("device", "mountpoint")


def read_log_dir_disks(r: Reader, sel: str) -> dict[str, list[LogDirDisk]]:
    """The filesystem of each broker log dir (size and available bytes now), per broker."""
    by = "broker, host, path, " + ", ".join(DEVICE_LABELS)
    avail = {_dir_key(s.labels): s.value for s in r.q(f"max by ({by}) ({M['fs_avail']}{{{sel}}})")}
    out: dict[str, list[LogDirDisk]] = {}
    for s in r.q(f"max by ({by}) ({M['fs_size']}{{{sel}}})"):
        labels = s.labels
        device = next((labels[k] for k in DEVICE_LABELS if labels.get(k)), "")
        out.setdefault(labels.get("broker", ""), []).append(
            LogDirDisk(
                broker=labels.get("broker", ""),
                path=labels.get("path", ""),
                host=labels.get("host", ""),
                size_bytes=s.value,
                avail_bytes=avail.get(_dir_key(labels), 0.0),
                device=device,
            )
        )
    return out


def _dir_key(labels: dict[str, str]) -> tuple[str, ...]:
    return tuple(labels.get(k, "") for k in ("broker", "host", "path", *DEVICE_LABELS))


__all__ = ["DAY", "read_log_dir_disks", "read_snapshot", "read_usage"]
