"""The client advisor's rules: pure functions of a ``Snapshot`` (monitor.advisor.types) -> ``Finding``s.

Each rule is small, named after what it finds, and reads only what the collectors export (docs/metrics.md); every
threshold is a field of ``Thresholds`` (documented with its reason in docs/advisor.md). Rules never query anything
and never read the clock: ``monitor.advisor.source`` builds the snapshot, ``advise`` runs the rules.

Kafka has no per-client request count: the quota sensor's ``request-time`` (the share of a broker thread a client's
requests use) stands for it. A client that sends many small requests uses a lot of thread time per byte moved;
that cost per MiB, compared with the other clients of the cluster, is what "far from the norm" means here.
"""

from __future__ import annotations

import bisect
import dataclasses
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from monitor.advisor.types import (
    ClientSample,
    ClusterSample,
    Finding,
    FindingKind,
    FindingSeverity,
    Snapshot,
    TelemetrySample,
    TopicSample,
)
from monitor.core.clients import is_outdated
from monitor.core.metric_names import M

MIB = 1048576.0
NAMELESS = "unknown"  # the software name and version Kafka gives a connection whose client sent none (KIP-511)


@dataclass(frozen=True)
class Thresholds:
    min_thread_share: float = 0.02  # a client using < 2% of one broker thread is not worth a finding
    cost_factor: float = 5.0  # thread-seconds per MiB this many times the norm of the cluster's other clients
    min_seconds_per_mib: float = 0.05  # ...and at least this (a cluster of excellent clients flags no good one)
    reference_seconds_per_mib: float = 0.02  # the norm when a client has no peer to compare with
    storm_thread_share: float = 0.25  # a quarter of a broker thread for one client's requests
    # ... or min_thread_share while moving less than this: thread time spent on requests that carry no data
    # (retried metadata lookups, failing requests), not on records
    storm_max_bytes_per_second: float = 1024.0
    storm_error_ratio: float = 0.05  # with at least 5% of the cluster's responses being errors, or throttled
    throttle_seconds: float = 0.001  # average throttle above 1 ms: the quota is biting
    rebalance_changes: float = 3  # membership changes per window
    rebalancing_share: float = 0.2  # or this share of samples spent rebalancing
    churn_new_per_second: float = 1.0  # new connections per second across the cluster
    churn_max_lifetime_seconds: float = 300.0  # with connections living on average less than this
    nameless_min_connections: float = 1.0  # connections without a software name held on average over the window
    min_versions: tuple[tuple[str, str], ...] = (
        ("apache-kafka-java", "2.8.0"),
        ("librdkafka", "1.9.0"),
        ("confluent-kafka-python", "1.9.0"),
    )
    churn_suspect_share: float = 0.002  # a churn suspect uses at least 0.2% of a thread (idle consumers use less)
    top_suspects: int = 3
    # Cost rules judge a client only once it has been seen for (nearly) the whole window: its cost is an average over
    # the window, and a client's start (a consumer's group join and empty first fetches, a producer ramping up on a
    # loaded machine) looks like polling too often or poor batching. 0.9, not 1: the first-seen time is read at a
    # tenth of the window's resolution.
    min_seen_share: float = 0.9
    # Absolute per-topic batching signal: at most this many records per produce request (per partition batch) is
    # "close to one": a linger.ms=0 producer gathers a few records per batch on its own once its requests slow down
    # (kafka-clients 2.3.1 at 200 records/s measured 3.1 on a stack at load 60; 1.1-1.3 unloaded), while producers
    # with linger.ms=100 at the same rate carried 36-41. At this many produce requests per second or more it is
    # worth telling, before it does harm (the finding says what it costs now and at 10x). Not lower: a topic's
    # records arriving slower than this are 50 ms or more apart, longer than any usual linger.ms (5-50 ms), so a
    # producer of any configuration sends them one or two a request and the count says nothing of its settings (the
    # false-alarm bench's healthy demo producers, linger.ms=20, carried 1.7-2.3 records a request at 7-9 requests/s
    # per topic, and were paged at the 5 this was). A starved broker also slows a one-record-per-request producer's
    # own rate (a Java batch.size=1 producer offered 200 records/s delivered 10/s at load 60 on 2 cores): its own
    # telemetry, below, does not depend on the rate that far
    batching_max_records_per_request: float = 4.0
    batching_min_requests_per_second: float = 20.0
    # ... or, at a lower rate, every record its own request: a kcat with batch.num.messages=1 starved to 12.6 records/s
    # on the loaded machine carried 1.0 at 12.6 requests/s, where the healthy demo producers' records still shared
    # requests (1.7-2.3; their load generator sends in bursts)
    batching_single_max_records_per_request: float = 1.2
    batching_single_min_requests_per_second: float = 5.0
    projection_factor: float = 10.0  # "at 10x the rate it costs ...": the measured cost scaled
    # "Hurts other tenants" (a page) needs a material cost on the threads every tenant of the broker shares; below it a
    # finding is advice for its own tenant (info). First by the produce requests per second the behaviour sends (the
    # client's own telemetry, or its share of its poor topics' produce requests) as a share of the cluster's
    # request-handler capacity: at least ``material_requests_per_handler_thread`` (10) requests/s for every handler
    # thread of the cluster's brokers, each broker's num.io.threads as the Admin collector reads it
    # (kafka_broker_request_handler_threads, its most over the window), ``handler_threads_per_broker`` (8, Kafka's
    # default) for a broker without that series (the principal lacks DescribeConfigs on the cluster). The stack's
    # brokers run 4 (monitor/stack/kafka.py): 10 x 12 = 120 requests/s on its 3 brokers, the bar every figure below
    # was measured against (while no series gave the threads it was 5 x 8 assumed x 3: the same 120); on 3 brokers
    # of Kafka's default 8 it is 240, of 16 480: a cluster with more handlers has more to spare.
    # Requests, not thread time, because a request costs a network read, a handler append and a response whatever it
    # carries, and because thread time is not stable across machines: on the shared 2-core test machine a one-record
    # produce request cost 0.5-0.7 ms of thread time at load 20 and under 0.16 ms quiet (the real-client test's
    # one-record producers, 124-220 requests/s: 10-16 % of a thread, and under 2 %). At 10 requests/s per handler
    # thread, even at the loaded machine's 0.7 ms a request, a client takes 0.7 % of every handler thread of the
    # cluster; below that it is not a cost on the others. Why 120 on the stack and not the 50 requests/s in all this
    # was: a default producer sends at most one request a record, so at ~100 records/s it sends up to ~100 requests/s
    # whatever its library (Java < 4.0 and kafkajs one a record at an even rate; confluent-kafka's linger.ms=5
    # gathered nothing at 100 records/s over 3 partitions on a quiet machine: 1.05-1.08 records a request at 93-96
    # requests/s, the false-alarm run of f84dd81, where it paged at 50). 120 is above that; a one-record-a-request
    # producer at a few hundred records a second is over it (the demo's payments-batch-import offers 400/s:
    # payments.orders took 159-440 requests/s in two demo e2e runs at load 12-33, acks=all, 1.04 records a request).
    # The cluster's handlers, not those of the brokers leading its partitions: a one-partition default producer at
    # 100 records/s puts all its requests on one broker's 4 (25 a thread), and a rolling restart moves leaders for
    # minutes. A cluster whose brokers are not known is counted as one broker of 8 (80 requests/s: the bar errs
    # towards paging)
    material_requests_per_handler_thread: float = 10.0
    handler_threads_per_broker: int = 8
    # ... where no request count exists (the thread-time rule, polling), its measured share of one broker thread
    # (quota sensors, summed over brokers): 5 %, 1/660 of a 3-broker cluster's 33 request threads (num.io.threads 8 +
    # num.network.threads 3 per broker), three times the busiest good client of that loaded run
    material_thread_share: float = 0.05
    # A consumer's polling cost is at most what its fetches could take: as many fetches a second as it can have sent
    # (its own pushed request rate, else every consumer fetch the cluster served: no one consumer sends more), each
    # at this much broker thread time. 1 ms is above any fetch's cost on a broker that is not starved: the real-client
    # test's one-record producers measured under 2 % of a thread at 124-220 requests/s on a quiet machine (under
    # 0.16 ms a request) and 10-16 % at load 20 (0.5-0.7 ms). Only a starved broker bills more (15-40 ms a request
    # at load 40-55 on 2 cores), and that is the starvation's cost, not the consumer's: the false-alarm run's default
    # payments-api-consumer read 1.10 of a thread while the cluster's consumers all together sent about 39 fetches/s
    polling_request_thread_seconds: float = 0.001
    # A tenant's lone producer is named on its topics' counts only if its own produced bytes (quota sensor: records
    # plus batch overhead, so at least the topic's record bytes) are at least half its poor topics' bytes in
    lone_producer_bytes_share: float = 0.5
    # ... and such a lone producer pages the other tenants (beside the material request rate) only if its broker
    # thread time per MiB stands out: at least ``lone_cost_factor`` times the norm of the cluster's other producers,
    # that norm taken at most ``lone_reference_seconds_per_mib``, so that many poorly batching peers cannot raise it
    # (bench/false_alarms.py's zoo has six one-record producers among 14) and the bar is never above 2 x 4 = 8 s/MiB.
    # Below it the finding names it as advice for its own tenant (info): a default producer at a modest rate sends a
    # few records a request (confluent-kafka's linger.ms=5 at 100 records/s: 1.7-1.83, franz-go's at 200/s: 3.3) and
    # pays what the cluster's producers pay per MiB. Measured (thread s/MiB against the others' norm, the 15-minute
    # false-alarm run of cec6668, load 4-42): the default pydef-app 2.66/3.05 and 4.44/6.94 (0.6-0.9x), franzdef-app
    # 1.04/1.24 and 1.08/1.47 (0.7-0.8x), where the one-record badjv2-app read 10.96/3.07 and 17.0/6.44 (2.8-3.6x),
    # and 9.5/10.8 when the heavier first zoo starved 2 cores (load 28-129): only the reference names it there. The
    # stack test's good real producers cost 0.4-6.3 s/MiB, its one-record ones 112-192: 8 s/MiB sits between.
    # Not enough on a quiet machine: there pydef-app sent 1.05-1.08 records a request at 93-96 requests/s, 2.3x the
    # norm, and still pages (docs/advisor.md, the false-alarm bar)
    lone_cost_factor: float = 2.0
    lone_reference_seconds_per_mib: float = 4.0
    # A producer's own records-per-request-avg counts every batch of a request (one per partition it writes on that
    # broker): a producer of one-record batches to 3 partitions reports 3 (Java 3.9.1 with batch.size=1 measured 3.0
    # and 88-byte batches; with linger.ms=100 at the same rate, 38-41). Its request-rate is per client, not per
    # partition: that producer measured 14-19 requests/s (8 at load 60)
    telemetry_max_records_per_request: float = 5.0
    telemetry_min_requests_per_second: float = 5.0
    # A consumer's own telemetry: waiting in poll() at least this share of the time (nothing to do) while fetches
    # return within this (the broker did not wait for data: fetch.min.bytes=1 or a short fetch.max.wait.ms). A
    # consumer catching up a backlog has records at every poll and idles near 0; a Java 3.9.1 consumer keeping up
    # with fetch.max.wait.ms=0 measured 0.49 idle and 0.4 ms fetches on the stack
    telemetry_min_poll_idle_ratio: float = 0.4
    # 5 ms: the broker answered without waiting for data. Not 50 ms (what it was): a default consumer (Java and
    # librdkafka fetch.max.wait.ms / fetch.wait.max.ms=500, fetch.min.bytes=1) keeping up with records that arrive
    # every 25 ms has its fetches answered in 10-20 ms because data arrives, not because it polls too often (the
    # demo's confluent-kafka consumers: idle 0.91, fetches in 18 ms, were paged at 50 ms)
    telemetry_max_fetch_latency_seconds: float = 0.005
    # A consumer whose application is the bottleneck (slow_consumer_loop): by its own telemetry it waits inside poll()
    # at most this share of the time, so it spends the rest processing between polls, while it has records to read.
    # A consumer with nothing to do waits in poll() nearly all the time (idle near 1), and one keeping up idles well
    # above this: a Java 3.9.1 consumer keeping up with ~200 records/s pushed 0.49 on a quiet machine and 0.26-0.43
    # on a starved one (load 60 on 2 cores); one sleeping 30 ms per record pushed under 0.01 (docs/advisor.md)
    slow_loop_max_poll_idle_ratio: float = 0.1
    # "Has records to read": its group (a group it is a member of, of its own tenant) lags by at least this many
    # records; a consumer in no group the collector sees (manual assignment) must fetch at least this many bytes a
    # second instead (its quota sensor: an idle consumer's empty fetch responses carry a few hundred bytes a second)
    slow_loop_min_lag_records: float = 1.0
    slow_loop_min_fetch_bytes_per_second: float = 1024.0


def _mib(bytes_per_second: float) -> float:
    # A floor of 1 KiB/s: a client moving nothing at all still has a finite (large) cost per MiB.
    return max(bytes_per_second, 1024.0) / MIB


def seconds_per_mib(thread_share: float, bytes_per_second: float) -> float:
    """Broker thread-seconds spent per MiB the client moved: request-time ratio / (MiB/s)."""
    return thread_share / _mib(bytes_per_second)


def norms_without(values: dict[str, float], default: float) -> dict[str, float]:
    """For every key, the lower median of the *other* keys' values: the client under test must not set its own norm,
    and with few peers one other outlier must not either (the lower median of two is the better-behaved one).

    One sort for all keys (a cluster can have thousands of clients): removing x from the sorted values shifts the
    others' median index by one exactly when x sits at or before it."""
    ordered = sorted(values.values())
    if len(ordered) < 2:
        return {k: default for k in values}
    i = (len(ordered) - 2) // 2  # index of the lower median among n - 1 values
    return {k: ordered[i + 1] if bisect.bisect_left(ordered, v) <= i else ordered[i] for k, v in values.items()}


def _key(c: ClientSample) -> str:
    return f"{c.user}\x00{c.client_id}"


# What each per-client finding reads, its likely cause and the settings to change (docs/advisor.md has the sources).
ADVICE: dict[FindingKind, tuple[tuple[str, ...], str, str]] = {
    FindingKind.POOR_BATCHING: (
        (
            M["client_request_time"],
            M["client_produce_rate"],
            "kafka_topic_messages_in_total",
            "kafka_topic_produce_requests_total",
        ),
        "the producer sends many small produce requests: linger.ms=0 and/or a small batch.size, so every few records "
        "cost a whole request on the broker's network and request-handler threads",
        "linger.ms=5..50 (Java < 4.0 and librdkafka < 2.x default 0), batch.size>=65536 (librdkafka: batch.size and "
        "batch.num.messages), compression.type=lz4 or zstd; share one producer per process",
    ),
    FindingKind.POLLING_TOO_OFTEN: (
        (M["client_request_time"], M["client_fetch_rate"]),
        "the consumer's fetches come back (nearly) empty and are sent again at once: fetch.min.bytes=1 with a short "
        "fetch wait, so the broker answers many small or empty fetches",
        "fetch.min.bytes=1024..65536 with fetch.max.wait.ms=500 (librdkafka: fetch.wait.max.ms=500, fetch.min.bytes); "
        "do not call poll in a tight loop with a zero timeout on a new consumer",
    ),
    FindingKind.SLOW_CONSUMER_LOOP: (
        (
            "kafka_client_telemetry_consumer_poll_idle_ratio_avg",
            M["group_member_info"],
            M["group_lag"],
            M["group_lag_seconds"],
            M["group_committed_offset"],
        ),
        "the consumer's application is its bottleneck: it spends nearly all its time processing records between "
        "polls, not waiting for them, so it falls behind when records come faster, and a batch that takes longer than "
        "max.poll.interval.ms makes the group rebalance",
        "process faster, or hand the records to a worker pool and commit only what it finished; max.poll.records "
        "lower (e.g. 50-100: librdkafka's consumers take fewer messages per call) so one batch ends well inside "
        "max.poll.interval.ms; max.poll.interval.ms above the longest batch's processing time; more consumers in "
        "the group, with at least as many partitions (a group uses one consumer per partition at most)",
    ),
    FindingKind.REQUEST_STORM: (
        (
            M["client_request_time"],
            M["client_request_throttle"],
            "kafka_broker_request_errors_total",
            "kafka_broker_requests_total",
        ),
        "the client retries failing requests (or reconnects) without backing off, using a large share of a broker "
        "thread while requests fail or are throttled",
        "retry.backoff.ms>=100 with retry.backoff.max.ms=1000 (exponential, KIP-580), reconnect.backoff.ms>=50 and "
        "reconnect.backoff.max.ms=1000; fix the error the retries hit",
    ),
    FindingKind.THROTTLED_BY_QUOTA: (
        (M["client_produce_throttle"], M["client_fetch_throttle"], M["client_request_throttle"]),
        "the client exceeds its quota; the broker delays its responses",
        "lower the client's rate, or raise its quota: kafka-configs --alter --entity-type clients --entity-name "
        "<client_id> (or users) --add-config producer_byte_rate=|consumer_byte_rate=|request_percentage= (and the "
        "tenant's contract)",
    ),
}


def _finding(
    kind: FindingKind,
    c,
    evidence: dict,
    severity: FindingSeverity = FindingSeverity.WARNING,
    cause: str | None = None,
    basis: str = "",
    metrics: tuple[str, ...] | None = None,
) -> Finding:
    """A per-client finding; ``c`` is a ``ClientSample`` or a ``TelemetrySample`` (both name cluster, tenant,
    client)."""
    default_metrics, default_cause, fix = ADVICE[kind]
    return Finding(
        kind=kind,
        severity=severity,
        cluster=c.cluster,
        tenant=c.tenant,
        client_id=c.client_id,
        user=c.user,
        evidence=evidence,
        metrics=metrics or default_metrics,
        cause=cause or default_cause,
        fix=fix,
        basis=basis,
    )


def _costly(clients: Iterable[ClientSample], t: Thresholds, bytes_of: Callable[[ClientSample], float]) -> list:
    """(client, cost, norm) for the clients whose thread time per MiB is far above the others'. Clients seen for less
    than ``min_seen_share`` of the window are neither judged nor part of the norm."""
    pool = [c for c in clients if c.seen_share >= t.min_seen_share]
    costs = {_key(c): seconds_per_mib(c.request_time_ratio, bytes_of(c)) for c in pool}
    norms = norms_without(costs, t.reference_seconds_per_mib)
    out = []
    for c in pool:
        if c.request_time_ratio < t.min_thread_share:
            continue
        cost, norm = costs[_key(c)], norms[_key(c)]
        if cost >= t.min_seconds_per_mib and cost >= t.cost_factor * norm:
            out.append((c, cost, norm))
    return out


def _records_per_request(topics: Iterable[TopicSample]) -> dict[str, float]:
    return {
        tp.topic: tp.messages_per_second / tp.produce_requests_per_second
        for tp in topics
        if tp.produce_requests_per_second > 0
    }


def _cost_now_and_at(share: float | None, requests_per_second: float | None, factor: float) -> dict:
    """What the client's requests cost the brokers now, measured (its quota sensors' share of one thread), and at
    ``factor`` times the record rate with the same batching: as many times the requests, each costing what one costs
    now (measured thread time per request), so the projection is the measured figures scaled, not a constant."""
    if share is None:
        return {"thread_share_now": None, f"thread_share_at_{factor:g}x": None}
    per_request = share / requests_per_second if requests_per_second else None
    return {
        "thread_share_now": round(share, 4),
        "thread_ms_per_request": round(per_request * 1000, 4) if per_request is not None else None,
        f"thread_share_at_{factor:g}x": round(share * factor, 4),
    }


def _cost_sentence(ev: dict, factor: float) -> str:
    now, then = ev.get("thread_share_now"), ev.get(f"thread_share_at_{factor:g}x")
    if now is None:
        return ""
    return (
        f"; at this rate its requests cost {now * 100:.1f}% of a broker thread (measured), at {factor:g}x the "
        f"rate with the same batching {then * 100:.1f}%, on threads every tenant of the broker shares"
    )


def _batching_finding(
    c, evidence: dict, basis: str, t: Thresholds, cause: str, suspects: tuple[str, ...] = (), material: bool = True
) -> Finding:
    """A named poor-batching finding; below the material cost it is advice for its own tenant (info)."""
    evidence = {**evidence, "basis": basis}
    metrics = {"client_telemetry": TELEMETRY_BATCHING_METRICS, "topic_records_per_request": TOPIC_BATCHING_METRICS}
    f = _finding(
        FindingKind.POOR_BATCHING,
        c,
        evidence,
        cause=cause + _cost_sentence(evidence, t.projection_factor),
        basis=basis,
        metrics=metrics.get(basis),
        severity=FindingSeverity.WARNING if material else FindingSeverity.INFO,
    )
    return dataclasses.replace(f, suspects=suspects, material=material)


TELEMETRY_BATCHING_METRICS = (
    "kafka_client_telemetry_producer_records_per_request_avg",
    "kafka_client_telemetry_producer_batch_size_avg_bytes",
    "kafka_client_telemetry_producer_request_rate",
    M["client_request_time"],
)
TOPIC_BATCHING_METRICS = (
    "kafka_topic_messages_in_total",
    "kafka_topic_produce_requests_total",
    "kafka_topic_bytes_in_total",
    M["client_request_time"],
    M["client_produce_rate"],
)


def _quota_sample_finder(clients: Iterable[ClientSample]) -> Callable[[TelemetrySample], ClientSample | None]:
    """The quota-sensor sample of a client that pushed telemetry. Telemetry's ``user`` is the principal's name
    (``ANONYMOUS`` on a PLAINTEXT listener), the quota sensors' the quota entity that matched ("" under a client-id
    quota): same (user, client id) first, else the one sample with that client id."""
    by_key = {(c.user, c.client_id): c for c in clients}
    by_id: dict[str, list[ClientSample]] = {}
    for c in by_key.values():
        by_id.setdefault(c.client_id, []).append(c)

    def find(tm: TelemetrySample) -> ClientSample | None:
        hit = by_key.get((tm.user, tm.client_id))
        if hit is None and len(by_id.get(tm.client_id, ())) == 1:
            hit = by_id[tm.client_id][0]
        return hit

    return find


@dataclass(frozen=True)
class TopicBlame:
    """Who a tenant's poorly batched topics are blamed on (``blame_topic``): ``named`` only those whose own figures
    show it; ``candidates`` every producer of the tenant that may cause it, new ones included (not a name)."""

    named: tuple[ClientSample, ...]
    candidates: tuple[str, ...]
    # A lone producer named on its topics' counts (way 2): the thread time per MiB it must reach to page the other
    # tenants (``lone_bar``). None when the producers were named on their own cost (way 1) or nobody was.
    lone_bar: float | None = None


def blame_topic(
    mine: list[ClientSample],
    costs: dict[str, float],
    norms: dict[str, float],
    t: Thresholds,
    topic_bytes_per_second: float = 0.0,
) -> TopicBlame:
    """Kafka counts records and produce requests per topic, not per client, so the topic's figures name nobody. A
    producer of the tenant is named only on its own figures, seen for (nearly) the whole window
    (``min_seen_share``), in one of two ways:

    1. its own quota sensors: its broker thread time per MiB is at least ``min_seconds_per_mib`` and at least
       ``cost_factor`` times the norm of the cluster's other producers (the cost the poor batching causes, measured
       on it);
    2. it is the tenant's only producer with a sensor (new or not), the bytes it produced account for at least
       ``lone_producer_bytes_share`` of the poor topics' bytes in, and it pays at least ``min_seconds_per_mib`` for
       them: the topic's counts are its own. A producer writing a fraction of them is not the writer of the rest
       (the culprit may have no sensor yet), and one that batches well pays little thread time per MiB. It pages the
       other tenants only at or above ``lone_bar``: ``lone_cost_factor`` times the other producers' norm, that norm
       taken at most ``lone_reference_seconds_per_mib`` (many poorly batching peers cannot raise it); below, it is
       named as advice for its own tenant (a default producer at a modest rate).

    Otherwise nobody is named: a well-batching producer of the tenant is not the culprit because it is the costliest
    one known, and a producer whose sensors are new (or not there yet) is a candidate, never excluded. Pure."""
    seasoned = [c for c in mine if c.seen_share >= t.min_seen_share]
    own = [
        c
        for c in seasoned
        if costs[_key(c)] >= t.min_seconds_per_mib
        and _key(c) in norms
        and costs[_key(c)] >= t.cost_factor * norms[_key(c)]
    ]
    if (
        not own
        and len(mine) == 1
        and costs[_key(mine[0])] >= t.min_seconds_per_mib
        and mine[0].produce_bytes_per_second >= t.lone_producer_bytes_share * topic_bytes_per_second
    ):
        # its own bytes are the topic's, and it pays for them in thread time: a newcomer too
        norm = min(_peer_norm(mine[0], costs, norms, t), t.lone_reference_seconds_per_mib)
        bar = max(t.min_seconds_per_mib, t.lone_cost_factor * norm)
        return TopicBlame(named=tuple(mine), candidates=(mine[0].client_id,), lone_bar=bar)
    named = tuple(sorted(own, key=lambda c: -costs[_key(c)])[: t.top_suspects])
    candidates = tuple(sorted({c.client_id for c in mine}))
    return TopicBlame(named=named, candidates=candidates)


def _peer_norm(c: ClientSample, costs: dict[str, float], norms: dict[str, float], t: Thresholds) -> float:
    """The norm of the cluster's other seasoned producers for ``c``: its own (``norms``) if it is seasoned, else the
    lower median of every seasoned producer's cost (a newcomer is not among them)."""
    if _key(c) in norms:
        return norms[_key(c)]
    return statistics.median_low([costs[k] for k in norms]) if norms else t.reference_seconds_per_mib


def material_requests_per_second(cluster: ClusterSample, t: Thresholds) -> float:
    """The produce requests per second that are a material share of the cluster's request-handler capacity:
    ``material_requests_per_handler_thread`` for each of its request-handler threads (``handler_threads``). Pure."""
    return t.material_requests_per_handler_thread * handler_threads(cluster, t)


def _assumed_brokers(cluster: ClusterSample) -> int:
    """The brokers whose handler threads no series gives: the most seen at once (at least one, and at least those
    with a series) less those with one."""
    known = len(cluster.handler_threads)
    return max(1, round(cluster.brokers), known) - known


def handler_threads(cluster: ClusterSample, t: Thresholds) -> int:
    """The cluster's request-handler threads: each broker's num.io.threads where the series gives it, and
    ``handler_threads_per_broker`` (Kafka's default) for each other broker. Pure."""
    return round(sum(cluster.handler_threads.values())) + _assumed_brokers(cluster) * t.handler_threads_per_broker


def handler_threads_source(cluster: ClusterSample, t: Thresholds) -> str:
    """Where ``handler_threads`` comes from, for the evidence: "num.io.threads" (every broker's series),
    "assumed default 8" (none), or which brokers gave it and how many were assumed."""
    assumed, default = _assumed_brokers(cluster), f"assumed default {t.handler_threads_per_broker}"
    if not cluster.handler_threads:
        return default
    if not assumed:
        return "num.io.threads"
    known = ", ".join(sorted(cluster.handler_threads, key=lambda b: (len(b), b)))
    return f"num.io.threads of broker{'s' if len(cluster.handler_threads) > 1 else ''} {known}, {default} for {assumed}"


def batching_material(thread_share: float | None, requests_per_second: float | None, t: Thresholds, bar: float) -> bool:
    """Whether a poorly batching producer's cost on the brokers' shared threads is material enough to page the other
    tenants: the produce requests per second it sends (when known) at least ``bar``
    (``material_requests_per_second``: a share of the cluster's request-handler capacity), else its measured share of
    a broker thread at least ``material_thread_share``. Pure."""
    if requests_per_second is not None:
        return requests_per_second >= bar
    return thread_share is not None and thread_share >= t.material_thread_share


@dataclass(frozen=True)
class _BatchingView:
    """What the three batching ladders share: the cluster's producers, their cost per MiB and its norm, the topics'
    records per request."""

    s: Snapshot
    producers: list[ClientSample]
    costs: dict[str, float]
    norms: dict[str, float]
    rpr: dict[str, float]
    cluster_rpr: float | None
    material_rps: float  # produce requests/s that page (material_requests_per_second)
    threads: int  # the cluster's request-handler threads that bar is a share of
    threads_source: str  # where they come from (handler_threads_source)

    @classmethod
    def of(cls, s: Snapshot, t: Thresholds) -> _BatchingView:
        producers = [c for c in s.clients if c.is_producer]
        rpr = _records_per_request(s.topics)
        seasoned = [c for c in producers if c.seen_share >= t.min_seen_share]
        costs = {_key(c): seconds_per_mib(c.request_time_ratio, c.produce_bytes_per_second) for c in producers}
        norms = norms_without({_key(c): costs[_key(c)] for c in seasoned}, t.reference_seconds_per_mib)
        return cls(
            s,
            producers,
            costs,
            norms,
            rpr,
            statistics.median(rpr.values()) if rpr else None,
            material_requests_per_second(s.cluster, t),
            handler_threads(s.cluster, t),
            handler_threads_source(s.cluster, t),
        )

    def capacity(self) -> dict:
        """The paging bar's evidence: requests/s that page, and the handler threads it is a share of."""
        return {
            "material_requests_per_second": round(self.material_rps, 1),
            "cluster_handler_threads": self.threads,
            "handler_threads_source": self.threads_source,
        }

    def below(self, rate: float | None, t: Thresholds) -> str:
        """Why a finding under the bar pages nobody, for its cause; "" when it does not apply."""
        if rate is None or rate >= self.material_rps:
            return ""
        return (
            f"; at {rate:.0f} requests/s it is under {self.material_rps:.0f} "
            f"({t.material_requests_per_handler_thread:g} a request-handler thread of the cluster's {self.threads}): "
            "advice for its own tenant, not a cost on others"
        )

    def common(self, c: ClientSample | None) -> dict:
        ev: dict = {
            **self.capacity(),
            "tenant_topics_records_per_request": {
                tp.topic: round(self.rpr[tp.topic], 2)
                for tp in self.s.topics
                if c is not None and tp.tenant == c.tenant and tp.topic in self.rpr
            },
            "cluster_median_records_per_request": round(self.cluster_rpr, 2) if self.cluster_rpr else None,
        }
        if c is not None and _key(c) in self.costs:
            norm = self.norms.get(_key(c))
            ev.update(
                {
                    "thread_seconds_per_mib": round(self.costs[_key(c)], 4),
                    "cluster_norm_seconds_per_mib": round(norm, 4) if norm is not None else None,
                    "request_time_ratio": round(c.request_time_ratio, 4),
                    "produce_bytes_per_second": round(c.produce_bytes_per_second, 1),
                }
            )
        return ev


def poor_batching(s: Snapshot, t: Thresholds) -> list[Finding]:
    """Producers that send (nearly) one record per request, on the best evidence there is for each, in this order:

    1. ``client_telemetry`` (``_batching_by_telemetry``): the client pushed its own records per request (KIP-714): it
       is judged on that alone, named or cleared, whatever the brokers' figures say about others.
    2. ``topic_records_per_request`` (``_batching_by_topic``): the brokers count records and produce requests per
       topic; a tenant whose topics carry few records per request at a worthwhile rate is told so, naming a producer
       only on its own figures (``blame_topic``), else with ``client_id`` unset and its candidates listed.
    3. ``thread_time_per_mib`` (``_batching_by_thread_time``): a producer far above the cluster's norm of thread time
       per MiB (``_costly``).

    Each finding pages the other tenants only when its measured cost is material (``batching_material``)."""
    view = _BatchingView.of(s, t)
    judged: set[tuple[str, str]] = set()  # (user, client id) settled by its own telemetry, named or not
    out = _batching_by_telemetry(view, t, judged)
    out += _batching_by_topic(view, t, judged, out)
    named = {(f.user, f.client_id) for f in out if f.client_id}
    out += _batching_by_thread_time(view, t, judged | named)
    return out


def _batching_by_telemetry(view: _BatchingView, t: Thresholds, judged: set[tuple[str, str]]) -> list[Finding]:
    s, out = view.s, []
    sample_of = _quota_sample_finder(s.clients)
    for tm in s.telemetry:
        if tm.records_per_request is None:
            continue
        c = sample_of(tm)
        judged.add((tm.user, tm.client_id))
        if c is not None:
            judged.add((c.user, tm.client_id))
        rate = tm.produce_request_rate or 0.0
        if tm.records_per_request > t.telemetry_max_records_per_request or rate < t.telemetry_min_requests_per_second:
            continue
        ev = {
            **view.common(c),
            "records_per_request": round(tm.records_per_request, 2),
            "batch_size_avg_bytes": round(tm.batch_size_avg_bytes, 1) if tm.batch_size_avg_bytes is not None else None,
            "produce_requests_per_second": round(rate, 1),
            "client_software": f"{tm.software_name} {tm.software_version}".strip(),
            **_cost_now_and_at(c.request_time_ratio if c else None, rate, t.projection_factor),
        }
        out.append(
            _batching_finding(
                tm,
                ev,
                "client_telemetry",
                t,
                cause=(
                    f"the producer itself reports {tm.records_per_request:.2f} records per produce request at "
                    f"{rate:.0f} requests/s (client telemetry): linger.ms=0 and/or a small batch.size, so every "
                    "record or two costs a whole request on the brokers' network and request-handler threads"
                    + view.below(rate, t)
                ),
                material=batching_material(c.request_time_ratio if c else None, rate, t, view.material_rps),
            )
        )
    return out


def _poor_topics(s: Snapshot, rpr: dict[str, float], t: Thresholds) -> dict[str, list[TopicSample]]:
    """Per tenant, its topics with few records per produce request at a worthwhile request rate."""
    tenants: dict[str, list[TopicSample]] = {}
    for tp in s.topics:
        if (
            tp.tenant
            and tp.topic in rpr
            and (
                (
                    rpr[tp.topic] <= t.batching_max_records_per_request
                    and tp.produce_requests_per_second >= t.batching_min_requests_per_second
                )
                or (
                    rpr[tp.topic] <= t.batching_single_max_records_per_request
                    and tp.produce_requests_per_second >= t.batching_single_min_requests_per_second
                )
            )
        ):
            tenants.setdefault(tp.tenant, []).append(tp)
    return tenants


def _batching_by_topic(
    view: _BatchingView, t: Thresholds, judged: set[tuple[str, str]], so_far: list[Finding]
) -> list[Finding]:
    s, rpr, out = view.s, view.rpr, []
    for tenant, poor in sorted(_poor_topics(s, rpr, t).items()):
        if any(f.tenant == tenant for f in so_far):
            continue  # its producers' own telemetry named one: the truth wins over the counts
        msgs = sum(tp.messages_per_second for tp in poor)
        reqs = sum(tp.produce_requests_per_second for tp in poor)
        byts = sum(tp.bytes_per_second for tp in poor)
        mine = [c for c in view.producers if c.tenant == tenant and (c.user, c.client_id) not in judged]
        if not mine and any(tm.tenant == tenant and tm.records_per_request is not None for tm in s.telemetry):
            continue  # every producer of the tenant is cleared by its own telemetry
        blame = blame_topic(mine, view.costs, view.norms, t, topic_bytes_per_second=byts)
        base = {
            "poor_topics": {
                tp.topic: {
                    "records_per_request": round(rpr[tp.topic], 2),
                    "produce_requests_per_second": round(tp.produce_requests_per_second, 1),
                    "bytes_per_request": round(tp.bytes_per_second / tp.produce_requests_per_second, 1),
                }
                for tp in poor
            },
            "records_per_request": round(msgs / reqs, 2),
            "bytes_per_request": round(byts / reqs, 1),
            "produce_requests_per_second": round(reqs, 1),
        }
        cause = (
            f"tenant {tenant}'s topics {', '.join(sorted(tp.topic for tp in poor))} carry {msgs / reqs:.2f} "
            f"records per produce request at {reqs:.0f} requests/s (brokers' per-topic counts): a producer with "
            "linger.ms=0 and/or a small batch.size sends every record or two as a whole request"
        )
        if not blame.named:
            share = sum(c.request_time_ratio for c in mine) if mine else None
            # the topic's requests: the culprit may have no sensor yet
            material = batching_material(share, reqs, t, view.material_rps)
            out.append(
                Finding(
                    kind=FindingKind.POOR_BATCHING,
                    cluster=s.cluster.cluster,
                    tenant=tenant,
                    client_id="",
                    user="",
                    candidates=blame.candidates,
                    severity=FindingSeverity.WARNING if material else FindingSeverity.INFO,
                    evidence={
                        **base,
                        **view.capacity(),
                        "basis": "topic_records_per_request",
                        "client_identified": False,
                        "candidates": list(blame.candidates),
                    },
                    metrics=TOPIC_BATCHING_METRICS,
                    fix=ADVICE[FindingKind.POOR_BATCHING][2],
                    cause=cause + view.below(reqs, t) + "; which client sends them is not identified yet (Kafka "
                    f"counts requests per topic; candidates: {', '.join(blame.candidates) or 'clients not seen yet'})",
                    basis="topic_records_per_request",
                    material=material,
                )
            )
            continue
        names = tuple(c.client_id for c in blame.named)
        share = sum(c.request_time_ratio for c in blame.named)
        for c in blame.named:
            ev = {
                **view.common(c),
                **base,
                "client_identified": True,
                **_cost_now_and_at(
                    c.request_time_ratio, reqs * c.request_time_ratio / share if share else None, t.projection_factor
                ),
            }
            rate = reqs * c.request_time_ratio / share if share else reqs
            material = batching_material(c.request_time_ratio, rate, t, view.material_rps)
            why = cause + view.below(rate, t)
            if blame.lone_bar is not None:
                ev["lone_producer_bar_seconds_per_mib"] = round(blame.lone_bar, 4)
                if material and view.costs[_key(c)] < blame.lone_bar:
                    material = False  # a modest habit: it pays per MiB what the cluster's producers pay
                    why += (
                        f"; its broker thread time per MiB ({view.costs[_key(c)]:.2f} s) is below "
                        f"{blame.lone_bar:.2f} s ({t.lone_cost_factor:g}x the cluster's other producers, at most "
                        f"{t.lone_reference_seconds_per_mib:g} s/MiB): advice for its own tenant, not a cost on others"
                    )
            out.append(_batching_finding(c, ev, "topic_records_per_request", t, why, suspects=names, material=material))
    return out


def _batching_by_thread_time(view: _BatchingView, t: Thresholds, skip: set[tuple[str, str]]) -> list[Finding]:
    out = []
    for c, cost, norm in _costly(view.producers, t, lambda c: c.produce_bytes_per_second):
        if (c.user, c.client_id) in skip:
            continue
        ev = {
            **view.common(c),
            "times_the_norm": round(cost / norm, 1) if norm else None,
            **_cost_now_and_at(c.request_time_ratio, None, t.projection_factor),
        }
        ev["cluster_norm_seconds_per_mib"] = round(norm, 4)
        # Relative thread time is the weakest evidence: it pages only from a quarter of a thread (storm_thread_share);
        # on a starved machine a well-batching kafkajs producer (a send() of 20 records every 100 ms) read 5 % once
        out.append(
            _batching_finding(
                c,
                ev,
                "thread_time_per_mib",
                t,
                ADVICE[FindingKind.POOR_BATCHING][1]
                + (f" (its broker thread time per MiB is {cost / norm:.1f}x the cluster's norm)" if norm else ""),
                material=c.request_time_ratio >= t.storm_thread_share,
            )
        )
    return out


def fetches_at_most(s: Snapshot, tm: TelemetrySample | None) -> tuple[float | None, str]:
    """How many requests a second a consumer can have sent, and from what: its own pushed request rate (Java's
    ``consumer.request.rate``; librdkafka pushes none), or every consumer fetch the cluster served (no one consumer
    sends more), whichever is lower. (None, "") when neither is known. Pure."""
    known: list[tuple[float, str]] = []
    if tm is not None and tm.produce_request_rate is not None:
        known.append((tm.produce_request_rate, "client_telemetry"))
    if s.cluster.consumer_fetches_per_second is not None:
        known.append((s.cluster.consumer_fetches_per_second, "cluster_consumer_fetches"))
    if not known:
        return None, ""
    return min(known)


def polling_share(c: ClientSample | None, requests_per_second: float | None, t: Thresholds) -> float | None:
    """The share of a broker thread a consumer's polling can be charged with: its quota sensors' measured share, at
    most ``requests_per_second`` (``fetches_at_most``) times ``polling_request_thread_seconds``. A starved broker's
    inflated request times are not a cost its fetches cause. None: no sensor. Pure."""
    if c is None:
        return None
    if requests_per_second is None:
        return c.request_time_ratio
    return min(c.request_time_ratio, requests_per_second * t.polling_request_thread_seconds)


def polling_material(c: ClientSample | None, t: Thresholds, requests_per_second: float | None = None) -> bool:
    """Whether a consumer's polling costs the other tenants enough to page them: the share charged to it
    (``polling_share``: measured by its quota sensors, bounded by the fetches it can have sent) is at least
    ``storm_thread_share`` of a broker thread *and* at least ``min_seconds_per_mib`` per MiB it fetched (thread
    time spent on little data, not on a big consumer's records). No sensor: no measured cost, advice only (Kafka
    counts no fetch requests per client). A quarter of a thread, not ``material_thread_share``: a consumer's cost is
    its fetches' thread time, which a loaded broker inflates, and twice on CI's loaded 2-core machine a default
    consumer keeping up crossed 5 % (cons-good on thread time alone; the demo's payments-api-consumer, whose fetches
    return as soon as records arrive every 25 ms). Pure."""
    share = polling_share(c, requests_per_second, t)
    if c is None or share is None or share < t.storm_thread_share:
        return False
    return seconds_per_mib(share, c.fetch_bytes_per_second) >= t.min_seconds_per_mib


def _polling_bound_evidence(c: ClientSample | None, rate: float | None, source: str, t: Thresholds) -> dict:
    share = polling_share(c, rate, t)
    return {
        "thread_share_charged": round(share, 4) if share is not None else None,
        "requests_per_second_at_most": round(rate, 1) if rate is not None else None,
        "requests_per_second_from": source or None,
    }


def polling_too_often(s: Snapshot, t: Thresholds) -> list[Finding]:
    """Consumers that fetch far more often than their data needs. ``client_telemetry`` first: a consumer that waits
    inside poll() most of the time (``telemetry_min_poll_idle_ratio``: the application has nothing to do) while its
    fetches come back within ``telemetry_max_fetch_latency_seconds`` (the broker answers at once instead of waiting
    fetch.max.wait.ms for data) sends many small or empty fetches; one that pushed those metrics is judged on them
    alone. The others by ``thread_time_per_mib`` against the cluster's consumers, paging only from
    ``storm_thread_share`` of a broker thread."""
    out, judged = [], set()
    sample_of = _quota_sample_finder(s.clients)
    for tm in s.telemetry:
        if tm.poll_idle_ratio is None or tm.fetch_latency_seconds is None:
            continue
        judged.add((tm.user, tm.client_id))
        if sample_of(tm) is not None:
            judged.add((sample_of(tm).user, tm.client_id))
        if (
            tm.poll_idle_ratio < t.telemetry_min_poll_idle_ratio
            or tm.fetch_latency_seconds > t.telemetry_max_fetch_latency_seconds
        ):
            continue
        c = sample_of(tm)
        rate, source = fetches_at_most(s, tm)
        material = polling_material(c, t, rate)
        out.append(
            dataclasses.replace(
                _finding(
                    FindingKind.POLLING_TOO_OFTEN,
                    tm,
                    basis="client_telemetry",
                    severity=FindingSeverity.WARNING if material else FindingSeverity.INFO,
                    metrics=(
                        "kafka_client_telemetry_consumer_poll_idle_ratio_avg",
                        "kafka_client_telemetry_consumer_fetch_latency_avg_seconds",
                        M["client_request_time"],
                    ),
                    evidence={
                        "basis": "client_telemetry",
                        "poll_idle_ratio": round(tm.poll_idle_ratio, 3),
                        "fetch_latency_seconds": round(tm.fetch_latency_seconds, 4),
                        "client_software": f"{tm.software_name} {tm.software_version}".strip(),
                        **_cost_now_and_at(c.request_time_ratio if c else None, None, t.projection_factor),
                        **_polling_bound_evidence(c, rate, source, t),
                    },
                    cause=f"the consumer itself reports waiting in poll() {tm.poll_idle_ratio:.0%} of the time "
                    f"while its fetches return after {tm.fetch_latency_seconds * 1000:.0f} ms (client telemetry): "
                    "the broker answers each fetch at once with little or nothing (fetch.min.bytes=1, a short "
                    "fetch wait), so the consumer sends many small fetches for the data it gets",
                ),
                material=material,
            )
        )
    consumers = [
        c for c in s.clients if c.fetch_seen and c.produce_bytes_per_second == 0 and (c.user, c.client_id) not in judged
    ]
    rate, source = fetches_at_most(s, None)
    for c, cost, norm in _costly(consumers, t, lambda c: c.fetch_bytes_per_second):
        material = polling_material(c, t, rate)  # from a quarter of a thread, as poor batching on this basis
        out.append(
            dataclasses.replace(
                _finding(
                    FindingKind.POLLING_TOO_OFTEN,
                    c,
                    basis="thread_time_per_mib",
                    severity=FindingSeverity.WARNING if material else FindingSeverity.INFO,
                    evidence={
                        "basis": "thread_time_per_mib",
                        "thread_seconds_per_mib": round(cost, 4),
                        "cluster_norm_seconds_per_mib": round(norm, 4),
                        "request_time_ratio": round(c.request_time_ratio, 4),
                        "fetch_bytes_per_second": round(c.fetch_bytes_per_second, 1),
                        **_polling_bound_evidence(c, rate, source, t),
                    },
                ),
                material=material,
            )
        )
    return out


def slow_consumer_loop(s: Snapshot, t: Thresholds) -> list[Finding]:
    """Consumers whose application is the bottleneck, named from their own ``poll-idle-ratio-avg`` (client
    telemetry: Java clients, librdkafka 2.5+): at most ``slow_loop_max_poll_idle_ratio`` of their time waiting in
    poll(), while they have records to read: a group of theirs (of the client's own tenant) lags by
    ``slow_loop_min_lag_records`` or more, or, in no group with lag figures, their quota sensor fetches
    ``slow_loop_min_fetch_bytes_per_second``. A consumer with nothing to read is never named, whatever its ratio
    (an application that works between polls on something else). Warning when a group's lag grew over the window
    (it falls behind), info when it keeps up for now without headroom. It hurts its own tenant only."""
    sample_of = _quota_sample_finder(s.clients)
    out = []
    for tm in s.telemetry:
        if tm.poll_idle_ratio is None or tm.poll_idle_ratio > t.slow_loop_max_poll_idle_ratio:
            continue
        mine = [
            g
            for g in s.groups
            if tm.client_id and tm.client_id in g.client_ids and g.tenant == tm.tenant and g.lag_records is not None
        ]
        c = sample_of(tm)
        fetched = c.fetch_bytes_per_second if c is not None and c.fetch_seen else None
        if mine:
            behind = [g for g in mine if g.lag_records >= t.slow_loop_min_lag_records]
            if not behind:
                continue  # nothing to read: busy with something else, not with records
        elif fetched is None or fetched < t.slow_loop_min_fetch_bytes_per_second:
            continue
        else:
            behind = []
        growing = [g for g in behind if (g.lag_change_records or 0.0) > 0]
        groups = {
            g.group: {
                "lag_records": round(g.lag_records, 1),
                "lag_change_records_per_second": round(g.lag_change_records / g.window_seconds, 2)
                if g.lag_change_records is not None and g.window_seconds
                else None,
                "lag_seconds": round(g.lag_seconds, 1) if g.lag_seconds is not None else None,
                "committed_records_per_second": round(g.committed_records_per_second, 2)
                if g.committed_records_per_second is not None
                else None,
            }
            for g in behind
        }
        where = (
            (
                f"; its group{'s' if len(behind) > 1 else ''} {', '.join(sorted(groups))} "
                f"{'are' if len(behind) > 1 else 'is'} {sum(g.lag_records for g in behind):.0f} records behind"
                + (", and the lag grew over the window" if growing else "")
            )
            if behind
            else (f"; it fetches {fetched:.0f} bytes/s")
        )
        out.append(
            _finding(
                FindingKind.SLOW_CONSUMER_LOOP,
                tm,
                basis="client_telemetry",
                severity=FindingSeverity.WARNING if growing else FindingSeverity.INFO,
                evidence={
                    "basis": "client_telemetry",
                    "poll_idle_ratio": round(tm.poll_idle_ratio, 3),
                    "fetch_latency_seconds": round(tm.fetch_latency_seconds, 4)
                    if tm.fetch_latency_seconds is not None
                    else None,
                    "client_software": f"{tm.software_name} {tm.software_version}".strip(),
                    "groups": groups,
                    "falling_behind": bool(growing),
                    "fetch_bytes_per_second": round(fetched, 1) if fetched is not None else None,
                },
                cause=f"the consumer itself reports waiting in poll() only {tm.poll_idle_ratio:.0%} of the time "
                "(client telemetry): its application spends the rest processing records between polls, so it, not the "
                f"brokers, sets the pace{where}. Records arriving faster than it processes them pile up as lag, "
                "and a batch taking longer than max.poll.interval.ms makes its group rebalance",
            )
        )
    return out


# Errors a broker answers because of the cluster's own state, not because of what the client asked: partition
# leadership moving (a broker restarting, fenced or shutting down), replicas out of sync, group coordinators moving,
# requests timing out on a degraded broker. The 30-minute false-alarm run's rolling restart answered with these:
# LEADER_NOT_AVAILABLE (Metadata), UNKNOWN_LEADER_EPOCH and FENCED_LEADER_EPOCH (Fetch), NOT_LEADER_OR_FOLLOWER,
# NOT_ENOUGH_REPLICAS and REQUEST_TIMED_OUT (Produce), NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE (OffsetCommit,
# FindCoordinator). Not among them: UNKNOWN_TOPIC_OR_PARTITION, authorization and request errors, which a client asking
# for a topic that does not exist (the storm test's shop-storm) or that it may not use gets on a healthy cluster.
CLUSTER_STATE_ERRORS = frozenset(
    {
        "NOT_LEADER_OR_FOLLOWER",
        "LEADER_NOT_AVAILABLE",
        "UNKNOWN_LEADER_EPOCH",
        "FENCED_LEADER_EPOCH",
        "PREFERRED_LEADER_NOT_AVAILABLE",
        "NOT_ENOUGH_REPLICAS",
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        "REPLICA_NOT_AVAILABLE",
        "OFFSET_NOT_AVAILABLE",
        "REQUEST_TIMED_OUT",
        "NOT_COORDINATOR",
        "COORDINATOR_NOT_AVAILABLE",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "BROKER_NOT_AVAILABLE",
        "NOT_CONTROLLER",
        "KAFKA_STORAGE_ERROR",
    }
)


def cluster_disturbance(cl: ClusterSample) -> dict[str, float]:
    """The cluster's own state over the window that makes brokers answer with errors, worst sample of each: brokers
    out of the metadata, partitions offline, partitions under-replicated (a broker restarting or falling behind moves
    leadership and shrinks ISRs). Empty when the cluster was healthy all along. Pure."""
    return {
        name: v
        for name, v in (
            ("brokers_down", cl.brokers_down),
            ("offline_partitions", cl.offline_partitions),
            ("under_replicated_partitions", cl.under_replicated_partitions),
        )
        if v > 0
    }


def storm_errors_per_second(cl: ClusterSample) -> tuple[float, float]:
    """(errors a storm may be inferred from, errors the cluster's own state explains) per second. While the cluster
    is disturbed (``cluster_disturbance``) the errors whose codes its state causes (``CLUSTER_STATE_ERRORS``) are
    explained: every client retries through a rolling restart, good ones included, and none of them is a storm for
    it. On a healthy cluster every error counts, as errors of unknown code always do. Pure."""
    if not cluster_disturbance(cl):
        return cl.errors_per_second, 0.0
    explained = sum(v for code, v in cl.errors_by_code.items() if code in CLUSTER_STATE_ERRORS)
    return max(0.0, cl.errors_per_second - explained), explained


def request_storm(s: Snapshot, t: Thresholds) -> list[Finding]:
    """Requests fail (cluster-wide) or the client is throttled by its request quota, and the client spends broker
    thread time out of proportion to the data it moves (``_costly`` against every other client: a big client
    moving much data efficiently, or every client slowed alike by a warming-up broker, is not a storm), being either
    a quarter of a thread or busy for nothing. The failing requests are those the cluster's own state does not explain
    (``storm_errors_per_second``): while a broker is down or partitions are offline or under-replicated, its
    leadership and replication errors are no client's storm."""
    cl = s.cluster
    error_ratio = cl.errors_per_second / cl.requests_per_second if cl.requests_per_second > 0 else 0.0
    unexplained, explained = storm_errors_per_second(cl)
    storm_ratio = unexplained / cl.requests_per_second if cl.requests_per_second > 0 else 0.0
    if storm_ratio < t.storm_error_ratio and not any(
        c.request_throttle_seconds >= t.throttle_seconds for c in s.clients
    ):
        return []
    top_errors = dict(sorted(cl.errors_by_request.items(), key=lambda kv: -kv[1])[:3])
    state = {k: round(v, 1) for k, v in cluster_disturbance(cl).items()}
    out = []
    for c, cost, norm in _costly(s.clients, t, lambda c: c.bytes_per_second):
        throttled = c.request_throttle_seconds >= t.throttle_seconds
        if not (throttled or storm_ratio >= t.storm_error_ratio):
            continue
        # Busy for nothing: a client that is not a consumer (an idle long-polling consumer is polling_too_often's
        # business) using a share of a thread without moving data is retrying or re-asking, not producing.
        busy_for_nothing = not c.fetch_seen and c.bytes_per_second < t.storm_max_bytes_per_second
        if c.request_time_ratio < t.storm_thread_share and not busy_for_nothing:
            continue
        # Busy for nothing is judged on thread time alone (no request count per client exists for metadata or failing
        # requests): it pages the other tenants from ``material_thread_share`` of a broker thread, as every rule on
        # that basis does; below, it is advice for its own tenant (a default Java producer at 20 records/s was once
        # pending as a storm on a starved machine's inflated thread times).
        material = c.request_time_ratio >= t.material_thread_share
        f = _finding(
            FindingKind.REQUEST_STORM,
            c,
            severity=FindingSeverity.WARNING if material else FindingSeverity.INFO,
            evidence={
                "request_time_ratio": round(c.request_time_ratio, 4),
                "request_throttle_seconds": round(c.request_throttle_seconds, 4),
                "bytes_per_second": round(c.bytes_per_second, 1),
                "thread_seconds_per_mib": round(cost, 4),
                "cluster_norm_seconds_per_mib": round(norm, 4),
                "cluster_error_ratio": round(error_ratio, 4),
                "cluster_errors_per_second_by_request": {k: round(v, 3) for k, v in top_errors.items()},
                "unexplained_error_ratio": round(storm_ratio, 4),
                "errors_explained_by_cluster_state_per_second": round(explained, 3),
                "cluster_state": state,
            },
        )
        out.append(dataclasses.replace(f, material=material))
    return out


def throttled_by_quota(s: Snapshot, t: Thresholds) -> list[Finding]:
    out = []
    for c in s.clients:
        quotas = {
            name: v
            for name, v in (
                ("produce", c.produce_throttle_seconds),
                ("fetch", c.fetch_throttle_seconds),
                ("request", c.request_throttle_seconds),
            )
            if v >= t.throttle_seconds
        }
        if not quotas:
            continue
        out.append(
            _finding(
                FindingKind.THROTTLED_BY_QUOTA,
                c,
                severity=FindingSeverity.INFO,
                evidence={
                    "throttle_seconds_by_quota": {k: round(v, 4) for k, v in quotas.items()},
                    "produce_bytes_per_second": round(c.produce_bytes_per_second, 1),
                    "fetch_bytes_per_second": round(c.fetch_bytes_per_second, 1),
                    "request_time_ratio": round(c.request_time_ratio, 4),
                },
                cause=f"the client exceeds its {', '.join(quotas)} quota; the broker delays its responses",
            )
        )
    return out


def frequent_rebalances(s: Snapshot, t: Thresholds) -> list[Finding]:
    out = []
    for g in s.groups:
        if g.member_changes < t.rebalance_changes and g.rebalancing_share < t.rebalancing_share:
            continue
        per_hour = g.member_changes * 3600 / g.window_seconds if g.window_seconds else None
        out.append(
            Finding(
                kind=FindingKind.FREQUENT_REBALANCES,
                severity=FindingSeverity.WARNING,
                cluster=g.cluster,
                tenant=g.tenant,
                client_id="",
                user="",
                group=g.group,
                evidence={
                    "member_changes": g.member_changes,
                    "member_changes_per_hour": round(per_hour, 1) if per_hour is not None else None,
                    "rebalancing_share": round(g.rebalancing_share, 3),
                    "members": g.members,
                    "window_seconds": g.window_seconds,
                },
                metrics=(M["group_members"], "kafka_consumergroup_state"),
                cause="members join and leave the group again and again: consumers created per batch or job, "
                "processing longer than max.poll.interval.ms, or missed heartbeats (session.timeout.ms)",
                fix="keep consumers long-lived; group.instance.id=<stable id> (static membership, KIP-345); "
                "partition.assignment.strategy=cooperative-sticky (KIP-429) or group.protocol=consumer (KIP-848); "
                "max.poll.interval.ms above the longest processing time, session.timeout.ms=45000",
            )
        )
    return out


def outdated_clients(s: Snapshot, t: Thresholds) -> list[Finding]:
    """Per client software (name, version): older than the supported minimum (KIP-511 connections), or sending
    requests in deprecated API versions (KIP-896), or both in one finding. Connections held without any software name
    (``nameless_connections``) are ``unknown_software`` (``unknown_software``), not outdated: a missing name is no
    evidence of age. Kafka labels connections by software only, never by client or principal: outdated software goes
    to the tenant owning the whole cluster or to operators; unknown software also to the tenants of its candidates
    (``unknown_software``)."""
    mins = dict(t.min_versions)
    connections = {(sw.name, sw.version): sw.connections for sw in s.software if sw.connections > 0}
    deprecated: dict[tuple[str, str], dict[str, float]] = {}
    for d in s.deprecated:
        if d.requests_per_second > 0:
            apis = deprecated.setdefault((d.name, d.version), {})
            api = f"{d.request} v{d.api_version}"
            apis[api] = apis.get(api, 0.0) + d.requests_per_second
    out = []
    for name, version in sorted(set(connections) | set(deprecated)):
        old = (name, version) in connections and is_outdated(name, version, mins)
        apis = deprecated.get((name, version), {})
        if not old and not apis:
            continue
        evidence = {
            "client_software_name": name,
            "client_software_version": version,
            "connections": connections.get((name, version), 0.0),
            "minimum_version": mins.get(name),
        }
        metrics, causes, fixes = [], [], []
        if old:
            metrics.append(M["client_connections"])
            causes.append(
                "client software older than the supported minimum: known bugs, old protocol versions "
                "that Kafka 4.0 removed (KIP-896), down-conversion cost on the brokers"
            )
            fixes.append(f"upgrade {name} to {mins[name]} or later")
        if apis:
            metrics.append("kafka_broker_deprecated_requests_total")
            evidence["deprecated_requests_per_second_by_api"] = {k: round(v, 3) for k, v in sorted(apis.items())}
            causes.append(
                "the client sends requests in API versions this Kafka deprecated (KIP-896): the next major "
                "Kafka release refuses them, and the client stops working after that upgrade"
            )
            if not old:
                fixes.append(
                    f"upgrade {name} to a release that speaks the current API versions (Java 2.1+, "
                    "librdkafka 1.0+; KIP-896 lists the minimum per API); a client that skips ApiVersions "
                    "(api.version.request=false, broker.version.fallback) must stop doing so"
                )
        out.append(
            Finding(
                kind=FindingKind.OUTDATED_CLIENT,
                severity=FindingSeverity.WARNING,
                cluster=s.cluster.cluster,
                tenant=s.whole_cluster_tenant,
                client_id="",
                user="",
                evidence=evidence,
                metrics=tuple(metrics),
                cause="; ".join(causes),
                fix="; ".join(fixes),
                basis="client_software",
            )
        )
    if s.cluster.nameless_connections >= t.nameless_min_connections:
        out.extend(unknown_software(s, t))
    return out


# Clients that send no KIP-511 software name: what a nameless connection may be (docs/advisor.md).
NAMELESS_POSSIBILITIES = (
    "a Java client (kafka-clients) older than 2.4",
    "a librdkafka-based client older than 1.4, or one with api.version.request=false",
    "a client that does not implement KIP-511: kafkajs (every release to 2.2.4), older sarama releases, "
    "and other hand-written protocol clients",
)


def nameless_candidates(s: Snapshot) -> dict[str, dict[str, list[str]]]:
    """Which clients may hold the connections without a software name, per tenant: {tenant: {principal: [client
    ids]}}. Kafka labels a connection by its software only; the clients come from the quota sensors (user and
    client id, the principal mapped to its tenant first, ``TenantIndex.for_client``). A client that pushed KIP-714
    telemetry naming its software is cleared (KIP-714 clients send KIP-511 names); every other client of a tenant is a
    candidate, not a name: a librdkafka client without telemetry (kcat 2.0.2) stays one."""
    named = {(tm.user, tm.client_id) for tm in s.telemetry if tm.software_name and tm.software_name != NAMELESS}
    out: dict[str, dict[str, list[str]]] = {}
    for c in s.clients:
        if c.tenant is None or not c.client_id or (c.user, c.client_id) in named:
            continue
        out.setdefault(c.tenant, {}).setdefault(c.user, []).append(c.client_id)
    return {tenant: {u: sorted(ids) for u, ids in sorted(users.items())} for tenant, users in sorted(out.items())}


def unknown_software(s: Snapshot, t: Thresholds) -> list[Finding]:
    """Connections held without a KIP-511 software name: advice (info) that lists what they may be, never "upgrade":
    current clients (kafkajs) send no name either. Whether such a client is outdated is ``outdated_clients``' business,
    on evidence of age (deprecated request versions, KIP-896). One finding for operators (or the tenant owning the
    whole cluster) with every candidate, and one for each tenant with candidates (``nameless_candidates``), naming
    only its own clients and principals: the tenant whose principal runs kafkajs is told, not only the operators."""
    candidates = nameless_candidates(s)
    cause = (
        'connections held by client software that sends no KIP-511 name (the brokers label them "unknown"): '
        + "; or ".join(NAMELESS_POSSIBILITIES)
        + ". A missing name says nothing of the client's age: "
        "an outdated one would also show requests in deprecated API versions (kafka_broker_deprecated_requests"
        "_total, Kafka 3.7+), which this finding does not see"
    )

    def finding(tenant: str | None, of: dict[str, dict[str, list[str]]], extra: str) -> Finding:
        users = sorted({u for by_user in of.values() for u in by_user if u})
        return Finding(
            kind=FindingKind.UNKNOWN_SOFTWARE,
            severity=FindingSeverity.INFO,
            cluster=s.cluster.cluster,
            tenant=tenant,
            client_id="",
            user=users[0] if len(users) == 1 else "",
            basis="client_software",
            evidence={
                "client_software_name": NAMELESS,
                "client_software_version": NAMELESS,
                "connections_held_on_average": round(s.cluster.nameless_connections, 2),
                "possibilities": list(NAMELESS_POSSIBILITIES),
                "outdated": None,
                "candidates_by_tenant": of,
            },
            metrics=(M["client_connections"], M["client_request_time"]),
            cause=cause + extra,
            fix="nothing to upgrade on this evidence; to tell these clients apart, give each a client.id and, where "
            "the library supports it, client.software.name (Java 2.4+, librdkafka 1.4+)",
            candidates=tuple(sorted({c for by_user in of.values() for ids in by_user.values() for c in ids})),
        )

    out = [finding(s.whole_cluster_tenant, candidates, "")]
    for tenant, by_user in candidates.items():
        if tenant == s.whole_cluster_tenant:
            continue
        who = "; ".join(f"principal {u or 'ANONYMOUS'}: {', '.join(ids)}" for u, ids in by_user.items())
        out.append(
            finding(
                tenant,
                {tenant: by_user},
                f". Of your clients these did not name their software otherwise (no KIP-714 telemetry), so they may "
                f"hold them: {who}",
            )
        )
    return out


def connection_churn(s: Snapshot, t: Thresholds) -> list[Finding]:
    """Cluster-level: Kafka counts new connections per broker, not per client. The finding goes to each tenant
    with clients that could cause it (costly per byte: a reconnecting client pays ApiVersions and Metadata for
    every few records), named as suspects, and to operators with every suspect."""
    cl = s.cluster
    rate = cl.new_connections_per_second
    if rate < t.churn_new_per_second:
        return []
    lifetime = cl.open_connections / rate
    if lifetime > t.churn_max_lifetime_seconds:
        return []
    costs = {_key(c): seconds_per_mib(c.request_time_ratio, c.bytes_per_second) for c in s.clients}
    suspects = sorted(
        (
            c
            for c in s.clients
            if c.request_time_ratio >= t.churn_suspect_share and costs[_key(c)] >= t.min_seconds_per_mib
        ),
        key=lambda c: -costs[_key(c)],
    )
    by_tenant: dict[str | None, list[ClientSample]] = {None: suspects}
    for c in suspects:
        if c.tenant:
            by_tenant.setdefault(c.tenant, []).append(c)
    if s.whole_cluster_tenant:
        by_tenant.setdefault(s.whole_cluster_tenant, suspects)
    out = []
    for tenant, clients in by_tenant.items():
        names = tuple(c.client_id for c in clients[: t.top_suspects])
        out.append(
            Finding(
                kind=FindingKind.CONNECTION_CHURN,
                severity=FindingSeverity.WARNING,
                cluster=cl.cluster,
                tenant=tenant,
                client_id="",
                user="",
                suspects=names,  # correlation, not the client's own figures: no name
                evidence={
                    "new_connections_per_second": round(rate, 3),
                    "open_connections": cl.open_connections,
                    "mean_connection_lifetime_seconds": round(lifetime, 1),
                    "suspects_thread_seconds_per_mib": {
                        c.client_id: round(costs[_key(c)], 4) for c in clients[: t.top_suspects]
                    },
                },
                metrics=(
                    'kafka_broker_requests_total{request="ApiVersions"}',
                    M["client_connections"],
                    M["client_request_time"],
                ),
                cause="clients open and close connections continually (a producer or consumer created per message or "
                "per request, or connections.max.idle.ms shorter than the gap between requests); every new "
                "connection costs the broker ApiVersions, Metadata and (with SASL/TLS) a handshake",
                fix="create one producer/consumer per process and reuse it; reconnect.backoff.ms>=50, "
                "reconnect.backoff.max.ms=1000; connections.max.idle.ms above the client's request gap; "
                "broker side: max.connection.creation.rate or a per-IP connection_creation_rate quota",
            )
        )
    return out


RULES: tuple[Callable[[Snapshot, Thresholds], list[Finding]], ...] = (
    poor_batching,
    request_storm,
    polling_too_often,
    frequent_rebalances,
    outdated_clients,
    throttled_by_quota,
    connection_churn,
    slow_consumer_loop,
)


def advise(snapshot: Snapshot, thresholds: Thresholds = Thresholds()) -> list[Finding]:
    """Every rule over one cluster's snapshot. Filter by tenant afterwards (``for_tenant``)."""
    out: list[Finding] = []
    for rule in RULES:
        out.extend(rule(snapshot, thresholds))
    return out


def for_tenant(findings: Iterable[Finding], tenant: str) -> list[Finding]:
    """Only the tenant's own findings: a finding never carries another tenant's client names."""
    return [f for f in findings if f.tenant == tenant]
