"""Blame with evidence (issue 28), on the pure deciders: a client is named only on its own figures, a finding pages
the other tenants only above a material measured cost, and a connection without a KIP-511 name is not "outdated".

The scenarios are the ones a new user met on ``make demo`` plus a kafkajs service (issue 28's "Why"): tenant search's
well-batching ``search-frontend`` (linger.ms=200) was named for ``search-nodejs-api``'s one-record requests in the
first minute, because the culprit's quota sensors were not there yet; the demo's default confluent-kafka consumers
(poll idle 0.91, fetches answered in 18 ms because data arrives every 25 ms) were paged for polling too often.
Each case below fails on the code before the fix.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest

from alerts.detectors.noisy_clients import observation_for
from alerts.state import advance
from alerts.types import AlertState, Rule, Scope, Severity, fingerprint
from monitor.advisor import findings
from monitor.advisor.findings import Thresholds, blame_topic
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

pytestmark = pytest.mark.unit
T = Thresholds()
WINDOW = 120.0  # the demo's advisor window (2m) and its story alert's for (30 s)
FOR = 30.0


def producer(cid, tenant, *, prod, rt, seen=1.0):
    return ClientSample(
        cluster="c",
        user=f"User:{tenant}-app",
        client_id=cid,
        tenant=tenant,
        produce_bytes_per_second=prod,
        request_time_ratio=rt,
        seen_share=seen,
    )


def consumer(cid, tenant, *, fetch, rt):
    return ClientSample(
        cluster="c",
        user="",
        client_id=cid,
        tenant=tenant,
        fetch_bytes_per_second=fetch,
        request_time_ratio=rt,
        fetch_seen=True,
    )


def topic(name, tenant, msgs, reqs):
    return TopicSample("c", name, tenant, msgs, reqs, msgs * 100.0)


# The demo's producers: linger.ms=200 at ~40 records/s of ~100 bytes, ~5 requests/s (0.001 of a thread, 0.26 s/MiB),
# and payments' batch importer, one record a request at ~150/s (0.03, 2.1 s/MiB: 8x).
FRONTEND = producer("search-frontend", "search", prod=4000.0, rt=0.001)
PAYMENTS_API = producer("payments-api", "payments", prod=4000.0, rt=0.001)
BATCH_IMPORT = producer("payments-batch-import", "payments", prod=15000.0, rt=0.03)
TOPICS = (topic("payments.events", "payments", 190.0, 160.0), topic("search.queries", "search", 190.0, 181.0))


def nodejs(seen, rt=0.03):
    """search-nodejs-api: kafkajs, one awaited send() per record at 150 records/s; no telemetry (kafkajs has no
    KIP-714); its quota sensors exist from its first request, and cover ``seen`` of the window."""
    return producer("search-nodejs-api", "search", prod=15000.0, rt=rt, seen=seen)


STACK_THREADS = {"1": 4.0, "2": 4.0, "3": 4.0}  # num.io.threads of the stack's brokers (monitor/stack/kafka.py)


def snapshot(*clients, telemetry=(), topics=TOPICS, brokers=3.0, threads=STACK_THREADS):
    """On 3 brokers of 4 request-handler threads, as the stack, the demo and the false-alarm bench where these
    figures were measured: 12 threads, so a poor batcher pages from 120 produce requests/s (10 a thread)."""
    return Snapshot(
        cluster=ClusterSample(cluster="c", window_seconds=WINDOW, brokers=brokers, handler_threads=dict(threads)),
        clients=tuple(clients),
        topics=tuple(topics),
        telemetry=tuple(telemetry),
    )


def batching(s):
    return {(f.tenant, f.client_id): f for f in findings.poor_batching(s, T)}


BLAME = [
    # (id, search's producers, expected named in search, expected candidates of an unnamed search finding)
    # 1. the first minute: the culprit's sensors are 10 s old; the costliest *known* producer is the good one
    (1, [FRONTEND, nodejs(0.1)], [], ("search-frontend", "search-nodejs-api")),
    # 2. the culprit's sensors not there at all yet: the topic's counts alone; the good producer is no culprit
    (2, [FRONTEND], [], ("search-frontend",)),
    # 3. a window later: its own figures (2.1 s/MiB, 8x the demo producers' 0.26) name it, and only it
    (3, [FRONTEND, nodejs(1.0)], ["search-nodejs-api"], ()),
    # 4. two producers of one tenant costing alike: the counts cannot say which one
    (
        4,
        [FRONTEND, dataclasses.replace(nodejs(1.0), request_time_ratio=0.002)],
        [],
        ("search-frontend", "search-nodejs-api"),
    ),
]


@pytest.mark.parametrize("case,search,named,candidates", BLAME, ids=[f"blame-{c[0]}" for c in BLAME])
def test_a_topic_level_finding_names_a_client_only_on_its_own_figures(case, search, named, candidates):
    found = batching(snapshot(*search, PAYMENTS_API, BATCH_IMPORT))
    mine = {cid: f for (tenant, cid), f in found.items() if tenant == "search"}
    assert sorted(cid for cid in mine if cid) == named
    if candidates:
        f = mine[""]
        assert f.candidates == candidates and f.evidence["client_identified"] is False
        assert f.basis == "topic_records_per_request" and "search.queries" in f.evidence["poor_topics"]
        assert "not identified yet" in f.cause
    else:
        assert "" not in mine
    # payments' importer is named on its own figures throughout; its well-batching neighbour never
    assert ("payments", "payments-batch-import") in found and ("payments", "payments-api") not in found


def test_blame_topic_keeps_a_newcomer_as_candidate_and_names_a_lone_producer():
    costs = {"\x00a": 2.0, "\x00b": 0.5}
    old, new = (
        ClientSample(cluster="c", user="", client_id=c, tenant="t", produce_bytes_per_second=1.0, seen_share=s)
        for c, s in (("a", 1.0), ("b", 0.2))
    )
    assert blame_topic([old, new], costs, {"\x00a": 1.0}, T) == findings.TopicBlame((), ("a", "b"))
    # alone all window, its topic's counts are its own
    assert blame_topic([old], costs, {"\x00a": 1.0}, T).named == (old,)


def _rule():
    return Rule(
        name="KafkaClientHurtsOtherTenants",
        severity=Severity.WARNING,
        scope=Scope.TENANT,
        kind="detector",
        for_seconds=FOR,
    )


def test_one_page_by_name_the_tenant_and_topic_alert_never_fires_before_the_name_arrives():
    """Minute by minute through the engine's own state step: the first minute's tenant-and-topic observation
    (no client_id) waits for + one window; the named one arrives at 2.5 minutes, the unnamed clears while pending
    (no page), the named fires after its for. Before the fix the first minute fired for search-frontend."""
    t0 = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)
    rule, instances, fired = _rule(), {}, []
    timeline = [
        (0, nodejs(0.1)),
        (30, nodejs(0.3)),
        (60, nodejs(0.5)),
        (90, nodejs(0.8)),
        (150, nodejs(1.0)),
        (180, nodejs(1.0)),
        (210, nodejs(1.0)),
    ]
    for second, js in timeline:
        now = t0 + timedelta(seconds=second)
        obs = {}
        for f in findings.advise(snapshot(FRONTEND, js, PAYMENTS_API, BATCH_IMPORT)):
            ob = observation_for(f, rule_for_seconds=FOR, window=WINDOW)
            if ob is not None and ob.labels["tenant"] == "search":
                obs[fingerprint(rule.name, ob.labels)] = ob
        for fp in set(instances) | set(obs):
            ob = obs.get(fp)
            inst = advance(instances.get(fp), ob, now, rule, ob.labels if ob else None)
            if inst is None:
                instances.pop(fp, None)
                continue
            if inst.state is AlertState.FIRING and inst.fired_at == now:
                fired.append((second, inst.labels.get("client_id"), inst.labels.get("topic")))
            instances[fp] = inst
        named = {i.labels.get("client_id") for i in instances.values()}
        assert "search-frontend" not in named, (second, named)
    assert fired == [(180, "search-nodejs-api", None)], fired


DEFAULT_CONSUMER = TelemetrySample(
    cluster="c",
    user="",
    client_id="payments-api-consumer",
    tenant="payments",
    software_name="confluent-kafka-python",
    software_version="2.6.1",
    poll_idle_ratio=0.91,
    fetch_latency_seconds=0.018,
)
SPINNER = dataclasses.replace(
    DEFAULT_CONSUMER, client_id="payments-spin", poll_idle_ratio=0.97, fetch_latency_seconds=0.0004
)

POLLING = [
    # (id, telemetry, its quota sensor's (fetch bytes/s, thread share), expected (client, severity, pages))
    # 1. confluent-kafka defaults keeping up with a record every 25 ms: fetches wait for data, nothing to say
    (1, DEFAULT_CONSUMER, (4000.0, 0.002), []),
    # 2. fetch.max.wait.ms=0 spinning on an idle topic at 30% of a thread: named, and it pages
    (2, SPINNER, (200.0, 0.3), [("payments-spin", FindingSeverity.WARNING, True)]),
    # 3. the same habit at 0.2% of a thread: advice for its own tenant, no page
    (3, SPINNER, (200.0, 0.002), [("payments-spin", FindingSeverity.INFO, False)]),
    # 4. a big consumer fetching 20 MiB/s whose fetches find data at once: thread time spent on data, no page
    (4, SPINNER, (20 * 1048576.0, 0.3), [("payments-spin", FindingSeverity.INFO, False)]),
    # 5. at 6% of a thread (what a loaded broker made of a default consumer keeping up): advice, no page
    (5, SPINNER, (200.0, 0.06), [("payments-spin", FindingSeverity.INFO, False)]),
]


@pytest.mark.parametrize("case,tm,sensor,expected", POLLING, ids=[f"polling-{c[0]}" for c in POLLING])
def test_polling_pages_only_above_a_material_cost(case, tm, sensor, expected):
    c = consumer(tm.client_id, "payments", fetch=sensor[0], rt=sensor[1])
    found = findings.polling_too_often(snapshot(c, telemetry=[tm], topics=()), T)
    assert [(f.client_id, f.severity, f.hurts_other_tenants) for f in found] == expected
    pages = [observation_for(f, rule_for_seconds=FOR, window=WINDOW) for f in found]
    assert [p is not None for p in pages] == [e[2] for e in expected]


def test_a_finding_below_the_material_cost_pages_nobody_and_a_guess_is_no_label():
    base = Finding(
        kind=FindingKind.POOR_BATCHING,
        severity=FindingSeverity.WARNING,
        cluster="c",
        tenant="search",
        client_id="search-nodejs-api",
        user="User:search-app",
        evidence={},
        metrics=(),
        cause="",
        fix="",
    )
    assert observation_for(base, rule_for_seconds=FOR, window=WINDOW).labels["client_id"] == "search-nodejs-api"
    assert observation_for(dataclasses.replace(base, material=False), rule_for_seconds=FOR, window=WINDOW) is None
    # a suspect (connection churn's correlation) is never a label
    churn = dataclasses.replace(base, kind=FindingKind.CONNECTION_CHURN, client_id="", suspects=("search-frontend",))
    assert observation_for(churn, rule_for_seconds=FOR, window=WINDOW) is None
    unnamed = dataclasses.replace(
        base,
        client_id="",
        user="",
        candidates=("a", "b"),
        evidence={
            "poor_topics": {
                "search.queries": {"produce_requests_per_second": 181.0},
                "search.clicks": {"produce_requests_per_second": 5},
            }
        },
    )
    ob = observation_for(unnamed, rule_for_seconds=FOR, window=WINDOW)
    assert ob.labels == {"cluster": "c", "tenant": "search", "finding": "poor_batching", "topic": "search.queries"}
    assert ob.for_seconds == FOR + WINDOW and ob.evidence["candidates"] == ["a", "b"]


def test_a_default_producer_at_a_modest_rate_is_advice_for_its_tenant_not_a_page():
    """A Java 3.x producer on its defaults (linger.ms=0) at 30 records/s sends 30 one-record requests a second: worth
    telling its tenant (linger.ms), not worth paging the others (under 120 requests/s on 3 brokers)."""
    lone = producer("shop-default", "shop", prod=3000.0, rt=0.003)
    (f,) = findings.poor_batching(snapshot(lone, topics=[topic("shop.t", "shop", 30.0, 30.0)]), T)
    assert (f.client_id, f.severity, f.hurts_other_tenants) == ("shop-default", FindingSeverity.INFO, False)
    assert observation_for(f, rule_for_seconds=FOR, window=WINDOW) is None
    # the same habit at 150 records/s pages, by name
    busy = dataclasses.replace(lone, produce_bytes_per_second=15000.0, request_time_ratio=0.015)
    (f,) = findings.poor_batching(snapshot(busy, topics=[topic("shop.t", "shop", 150.0, 150.0)]), T)
    assert f.client_id == "shop-default" and f.hurts_other_tenants


def test_a_consumer_far_above_the_norm_by_thread_time_alone_pages_only_from_a_quarter_of_a_thread():
    """No telemetry: the relative rule names it, and pages only from storm_thread_share, as for producers (the
    real-client stack test saw cons-good, fetch.min.bytes=65536, keeping up, over 5 % of a thread once on CI's loaded
    machine before its telemetry came, and page the other tenants)."""
    reader = consumer("payments-reader", "payments", fetch=1048576.0, rt=0.01)
    for rt, pages in ((0.03, False), (0.06, False), (0.24, False), (0.3, True)):
        (f,) = findings.polling_too_often(
            snapshot(reader, consumer("payments-spin", "payments", fetch=2048.0, rt=rt), topics=()), T
        )
        assert (f.client_id, f.hurts_other_tenants) == ("payments-spin", pages)


def test_unknown_software_goes_to_the_tenant_of_its_principal_with_no_upgrade_advice():
    """Issue 28's kafkajs service (principal User:search-app, no KIP-511 name, no KIP-714 telemetry) beside payments'
    librdkafka client that pushed telemetry naming its software: the nameless connections are unknown software for
    the operators and for tenant search (its principal's), naming search-nodejs-api as a candidate, at info, with
    nothing to upgrade; payments, cleared by its own telemetry, hears nothing of it. Before: operators only."""
    search = producer("search-nodejs-api", "search", prod=3000.0, rt=0.01)
    payments = producer("payments-api", "payments", prod=50_000.0, rt=0.01)
    told = dataclasses.replace(
        TelemetrySample(cluster="c", user=payments.user, client_id="payments-api", tenant="payments"),
        software_name="confluent-kafka-python",
        software_version="2.6.1",
    )
    s = Snapshot(
        cluster=ClusterSample(cluster="c", window_seconds=WINDOW, nameless_connections=3.0),
        clients=(search, payments),
        telemetry=(told,),
    )
    found = findings.advise(s)
    unknown = [f for f in found if f.kind is FindingKind.UNKNOWN_SOFTWARE]
    assert [f.tenant for f in unknown] == [None, "search"]
    assert not [f for f in found if f.kind is FindingKind.OUTDATED_CLIENT]
    mine = unknown[1]
    assert mine.candidates == ("search-nodejs-api",) and mine.client_id == "" and mine.user == "User:search-app"
    assert mine.evidence["candidates_by_tenant"] == {"search": {"User:search-app": ["search-nodejs-api"]}}
    assert "kafkajs" in mine.cause and "search-nodejs-api" in mine.cause and "payments" not in str(mine.as_json())
    assert mine.severity is FindingSeverity.INFO and not mine.hurts_other_tenants
    assert all(f.fix.startswith("nothing to upgrade") for f in unknown)
    assert not [f for f in findings.for_tenant(found, "payments") if f.kind is FindingKind.UNKNOWN_SOFTWARE]


MIB = 1048576.0


def _peers(norm, n, tenant="peer"):
    """``n`` seasoned producers of other tenants, each at ``norm`` s/MiB of broker thread time (50 kB/s each)."""
    return [producer(f"{tenant}-{i}", f"{tenant}{i}", prod=50_000.0, rt=norm * 50_000.0 / MIB) for i in range(n)]


def _lone(cid, *, rpr, reqs, bytes_per_request, prod, rt):
    """A tenant's only producer and its one topic, as bench/false_alarms.py's alerts logged them."""
    tenant = cid.removesuffix("-app")
    tp = TopicSample("c", f"{tenant}.events", tenant, rpr * reqs, reqs, bytes_per_request * reqs)
    return producer(cid, tenant, prod=prod, rt=rt), tp


# The 15-minute false-alarm run of cec6668 (load 4-42): both reads that paged each default producer, each with the
# cluster norm the advisor read beside it. (client, rpr, requests/s, bytes/request, produced B/s, thread share, norm)
DEFAULTS = [
    ("pydef-app", 1.83, 80.8, 261.4, 24044.1, 0.1019, 6.9377),  # confluent-kafka defaults (linger.ms=5), 100 rec/s
    ("pydef-app", 1.70, 72.8, 246.8, 22431.8, 0.057, 3.0539),
    ("franzdef-app", 3.37, 59.1, 428.0, 30136.7, 0.0298, 1.2432),  # franz-go defaults, 200 records/s
    ("franzdef-app", 3.27, 61.2, 417.5, 29822.0, 0.0306, 1.4679),
]


@pytest.mark.parametrize("cid,rpr,reqs,bpr,prod,rt,norm", DEFAULTS, ids=[f"{d[0]}-{d[6]}" for d in DEFAULTS])
def test_a_lone_default_producer_costing_what_its_peers_cost_is_advice_not_a_page(cid, rpr, reqs, bpr, prod, rt, norm):
    """Each is its tenant's only producer, so its topic's counts are its own (few records a request at 59-81
    requests/s, over the material 50), but per MiB it costs the brokers less than the cluster's other producers
    (0.6-0.9x): named for its own tenant at info, paging nobody. Before: a page (52 alert cycles in that run)."""
    lone, tp = _lone(cid, rpr=rpr, reqs=reqs, bytes_per_request=bpr, prod=prod, rt=rt)
    (f,) = findings.poor_batching(snapshot(lone, *_peers(norm, 4), topics=[tp]), T)
    assert (f.client_id, f.basis) == (cid, "topic_records_per_request")
    assert (f.severity, f.hurts_other_tenants) == (FindingSeverity.INFO, False)
    assert observation_for(f, rule_for_seconds=FOR, window=WINDOW) is None
    assert f.evidence["cluster_norm_seconds_per_mib"] == pytest.approx(norm, rel=1e-3)
    assert f.evidence["thread_seconds_per_mib"] < f.evidence["lone_producer_bar_seconds_per_mib"]


# One-record producers, each its tenant's only one: (cost s/MiB, the others' norm, where measured)
ONE_RECORD = [
    (17.0143, 6.4448, "false-alarm run, badjv2-app (Java 2.3.1), 1.03 records a request"),
    (10.9595, 3.0653, "false-alarm run, badjv2-app, a later read"),
    (9.5293, 10.7661, "the first, heavier zoo: the starved brokers' norm above the culprit's own cost"),
    (112.0, 150.0, "the stack test's cheapest one-record producer beside costlier one-record peers"),
]


@pytest.mark.parametrize("cost,norm,where", ONE_RECORD, ids=[f"{c[0]}-{c[1]}" for c in ONE_RECORD])
@pytest.mark.parametrize("bad_peers", [0, 8])
def test_a_lone_one_record_producer_pages_even_among_many_poorly_batching_peers(cost, norm, where, bad_peers):
    """The norm it is held to is bounded (lone_reference_seconds_per_mib): eight peers at 150 s/MiB, or a starved
    cluster whose norm exceeds its own cost, do not hide it. A bar of 2x the peers' norm alone misses every case
    with bad peers. At 200 one-record requests/s, over the 120 that are material on 3 brokers; measured at 59.9
    (badjv2-app offered 60 records/s), the same producer is told at info: half the bar, 5 requests/s a handler
    thread, is no cost on the other tenants."""
    scale = 200.0 / 59.9
    prod = 13622.3 * scale
    lone, tp = _lone("bad-app", rpr=1.03, reqs=200.0, bytes_per_request=173.0, prod=prod, rt=cost * prod / MIB)
    peers = _peers(norm, 4) + _peers(150.0, bad_peers, tenant="onerec")
    (f,) = [f for f in findings.poor_batching(snapshot(lone, *peers, topics=[tp]), T) if f.tenant == "bad"]
    assert (f.client_id, f.severity, f.hurts_other_tenants) == ("bad-app", FindingSeverity.WARNING, True)
    assert observation_for(f, rule_for_seconds=FOR, window=WINDOW).labels["client_id"] == "bad-app"
    assert f.evidence["material_requests_per_second"] == 120.0 and f.evidence["cluster_handler_threads"] == 12
    slow, tp = _lone("bad-app", rpr=1.03, reqs=59.9, bytes_per_request=173.0, prod=13622.3, rt=cost * 13622.3 / MIB)
    (f,) = [f for f in findings.poor_batching(snapshot(slow, *peers, topics=[tp]), T) if f.tenant == "bad"]
    assert (f.client_id, f.severity, f.hurts_other_tenants) == ("bad-app", FindingSeverity.INFO, False)
    assert "under 120 (10 a request-handler thread of the cluster's 12)" in f.cause


# The default confluent-kafka producer on a quiet machine (the 20-minute false-alarm run of f84dd81, load 4.7 after
# 17:05): linger.ms=5 gathered nothing at 100 records/s over 3 partitions, one record a request by every figure the
# brokers give, and it paged in 21 alert cycles. Records a request, requests/s, s/MiB and the norm are the run's
# (docs/advisor.md); its bytes a request and produced bytes/s are estimated from the loaded run's reads of the same
# client (DEFAULTS: 112 bytes a record plus 56 a request; quota-sensor bytes 1.19x the topic's).
# (client, rpr, requests/s, bytes/request, produced B/s, thread share, norm)
QUIET_DEFAULTS = [
    ("pydef-app", 1.05, 96.0, 174.0, 19877.0, 1.91 * 19877.0 / MIB, 0.84),  # 2.3x the norm
    ("pydef-app", 1.08, 93.0, 177.4, 19633.0, 3.13 * 19633.0 / MIB, 1.36),  # 2.3x the norm
]


@pytest.mark.parametrize(
    "cid,rpr,reqs,bpr,prod,rt,norm", QUIET_DEFAULTS, ids=[f"{d[0]}-{d[2]}" for d in QUIET_DEFAULTS]
)
def test_a_default_producer_sending_one_record_a_request_at_a_modest_rate_is_advice_not_a_page(
    cid, rpr, reqs, bpr, prod, rt, norm
):
    """Its tenant's only producer, one record a request at 93-96 requests/s, 2.3x the others' cost per MiB: over the
    lone producer's cost bar and the 50 requests/s that were material, so it paged (fails on 8baade5). That is 8 produce
    requests/s for each of the stack's 12 request-handler threads (3 brokers of 4), under the 10 that are a material
    share of them (120 requests/s): named for its own tenant at info, paging nobody."""
    lone, tp = _lone(cid, rpr=rpr, reqs=reqs, bytes_per_request=bpr, prod=prod, rt=rt)
    (f,) = findings.poor_batching(snapshot(lone, *_peers(norm, 4), topics=[tp]), T)
    assert (f.client_id, f.basis) == (cid, "topic_records_per_request")
    assert f.evidence["thread_seconds_per_mib"] >= f.evidence["lone_producer_bar_seconds_per_mib"]  # by cost: a culprit
    assert (f.severity, f.hurts_other_tenants) == (FindingSeverity.INFO, False)
    assert observation_for(f, rule_for_seconds=FOR, window=WINDOW) is None
    assert "linger.ms" in f.fix and f"at {reqs:.0f} requests/s it is under 120" in f.cause


def test_the_paging_bar_is_a_share_of_the_clusters_request_handler_threads():
    """10 produce requests/s a handler thread: the same one-record producer at 100 requests/s pages one broker of
    Kafka's default 8 (12.5 a thread) and not the stack's 3 brokers of 4 (8.3), and a broker restarting does not
    lower the bar (the source reads the most brokers seen over the window, each broker's most threads). Brokers not
    known: one, of 8."""
    lone, tp = _lone("one-app", rpr=1.0, reqs=100.0, bytes_per_request=170.0, prod=20000.0, rt=0.2)
    for brokers, threads, bar, pages in (
        (1.0, {}, 80.0, True),
        (0.0, {}, 80.0, True),
        (3.0, STACK_THREADS, 120.0, False),
        (3.0, {}, 240.0, False),
        (6.0, {}, 480.0, False),
    ):
        (f,) = findings.poor_batching(snapshot(lone, topics=[tp], brokers=brokers, threads=threads), T)
        assert (f.evidence["material_requests_per_second"], f.hurts_other_tenants) == (bar, pages), brokers
    assert findings.material_requests_per_second(
        ClusterSample(cluster="c", window_seconds=WINDOW, brokers=3.0), Thresholds(handler_threads_per_broker=16)
    ) == pytest.approx(480.0)


def test_each_brokers_own_handler_threads_make_the_bar_and_only_brokers_without_them_count_kafkas_default():
    """Production brokers often run num.io.threads 16-32. Broker 1 runs 16 (its kafka_broker_request_handler_threads)
    and brokers 2 and 3 have no series (the principal lacks DescribeConfigs on the cluster): 16 + 8 + 8 = 32
    threads, a bar of 320 requests/s, so a one-record producer at 300 requests/s, which pages three brokers assumed
    at 8 (240), is advice here; the evidence says where the threads came from. Fails before the series was read
    (ClusterSample had no handler threads: every broker was assumed at 8)."""
    lone, tp = _lone("one-app", rpr=1.0, reqs=300.0, bytes_per_request=170.0, prod=60000.0, rt=0.6)
    cases = (
        ({"1": 16.0}, 32, 320.0, False, "num.io.threads of broker 1, assumed default 8 for 2"),
        ({}, 24, 240.0, True, "assumed default 8"),
        ({"1": 16.0, "2": 16.0, "3": 32.0}, 64, 640.0, False, "num.io.threads"),
        # a broker seen over the window beyond the most at once (replaced): counted with its own threads
        ({"1": 4.0, "2": 4.0, "3": 4.0, "4": 4.0}, 16, 160.0, True, "num.io.threads"),
    )
    for threads, total, bar, pages, source in cases:
        (f,) = findings.poor_batching(snapshot(lone, topics=[tp], threads=threads), T)
        ev = f.evidence
        assert (ev["cluster_handler_threads"], ev["material_requests_per_second"]) == (total, bar), threads
        assert (ev["handler_threads_source"], f.hurts_other_tenants) == (source, pages), threads
    (f,) = findings.poor_batching(snapshot(lone, topics=[tp], threads={"1": 16.0}), T)
    assert "at 300 requests/s it is under 320 (10 a request-handler thread of the cluster's 32)" in f.cause
