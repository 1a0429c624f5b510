"""The advisor's rules, one numbered table of cases per rule; each table has a well-configured client that must
produce no finding."""

from __future__ import annotations

import dataclasses

import pytest

from monitor.advisor import findings
from monitor.advisor.findings import (
    Thresholds,
    advise,
    for_tenant,
    norms_without,
    seconds_per_mib,
)
from monitor.advisor.types import (
    ClientSample,
    ClusterSample,
    DeprecatedSample,
    FindingKind,
    FindingSeverity,
    GroupSample,
    Snapshot,
    SoftwareSample,
    TelemetrySample,
    TopicSample,
)

pytestmark = pytest.mark.unit
T = Thresholds()
KIB, MIB = 1024.0, 1048576.0


def client(
    cid, *, tenant="shop", user="", prod=0.0, fetch=0.0, rt=0.0, pt=0.0, ft=0.0, qt=0.0, fetch_seen=None, seen=1.0
):
    return ClientSample(
        cluster="c",
        user=user,
        client_id=cid,
        tenant=tenant,
        produce_bytes_per_second=prod,
        fetch_bytes_per_second=fetch,
        request_time_ratio=rt,
        produce_throttle_seconds=pt,
        fetch_throttle_seconds=ft,
        request_throttle_seconds=qt,
        fetch_seen=fetch > 0 if fetch_seen is None else fetch_seen,
        seen_share=seen,
    )


def snap(*clients, cluster=None, topics=(), groups=(), software=(), whole=None, deprecated=()):
    return Snapshot(
        cluster=cluster or ClusterSample(cluster="c", window_seconds=600),
        clients=tuple(clients),
        topics=tuple(topics),
        groups=tuple(groups),
        software=tuple(software),
        whole_cluster_tenant=whole,
        deprecated=tuple(deprecated),
    )


def kinds_for(found, kind):
    return sorted(f.client_id or f.group for f in found if f.kind is kind)


# A well-batched producer: 1 MiB/s for 1% of a thread (0.01 s/MiB); the reference a peerless client is held to.
GOOD_PRODUCER = client("shop-good", prod=MIB, rt=0.01)
GOOD_CONSUMER = client("shop-reader", fetch=MIB, rt=0.01)


def test_cost_per_mib_and_the_norm_exclude_the_client_itself():
    assert seconds_per_mib(0.5, MIB) == pytest.approx(0.5)
    assert seconds_per_mib(0.1, 0) == pytest.approx(0.1 * 1024)  # floor of 1 KiB/s
    assert norms_without({"a": 1.0, "b": 3.0, "c": 100.0}, 9.0) == {"a": 3.0, "b": 1.0, "c": 1.0}  # lower median
    assert norms_without({"a": 1.0, "b": 3.0, "c": 5.0, "d": 0.0}, 9.0)["d"] == 3.0
    assert norms_without({"a": 1.0}, 9.0) == {"a": 9.0}


@pytest.mark.parametrize("seed", range(20))
def test_norms_without_equal_the_lower_median_of_the_others(seed):
    import random
    import statistics

    rnd = random.Random(seed)
    values = {str(i): float(rnd.choice([rnd.randint(0, 5), rnd.random()])) for i in range(rnd.randint(2, 9))}
    got = norms_without(values, 9.0)
    for k in values:
        assert got[k] == statistics.median_low([v for j, v in values.items() if j != k]), (values, k)


BATCHING = [
    # (id, clients, expected client ids with poor_batching)
    (1, [GOOD_PRODUCER], []),
    (2, [GOOD_PRODUCER, client("shop-tiny", prod=50 * KIB, rt=0.10)], ["shop-tiny"]),  # 2 s/MiB vs 0.01
    (3, [client("shop-tiny", prod=50 * KIB, rt=0.10)], ["shop-tiny"]),  # alone: held to the reference 0.02
    (4, [GOOD_PRODUCER, client("shop-idle", prod=100, rt=0.01)], []),  # under 2% of a thread: not worth it
    (5, [GOOD_PRODUCER, client("shop-ok", prod=MIB, rt=0.04)], []),  # 0.04 s/MiB: under the 0.05 floor
    (6, [client("a", prod=MIB, rt=0.3), client("b", prod=MIB, rt=0.3)], []),  # all alike: none far from the norm
    (7, [GOOD_PRODUCER, client("shop-reader", fetch=10 * KIB, rt=0.2)], []),  # a consumer: not a batching case
]


@pytest.mark.parametrize("case,clients,expected", BATCHING, ids=[f"batching-{c[0]}" for c in BATCHING])
def test_poor_batching(case, clients, expected):
    found = findings.poor_batching(snap(*clients), T)
    assert kinds_for(found, FindingKind.POOR_BATCHING) == expected
    for f in found:
        assert f.evidence["thread_seconds_per_mib"] >= T.cost_factor * f.evidence["cluster_norm_seconds_per_mib"]
        assert "linger.ms" in f.fix and "batch.size" in f.fix and f.tenant == "shop"
        assert "kafka_client_request_time_ratio" in f.metrics


def test_poor_batching_carries_records_per_request_of_the_tenants_topics():
    topics = [
        TopicSample("c", "shop.orders", "shop", 100.0, 100.0, 5000.0),
        TopicSample("c", "ads.clicks", "ads", 1000.0, 10.0, 5000.0),
    ]
    (f,) = findings.poor_batching(snap(GOOD_PRODUCER, client("shop-tiny", prod=50 * KIB, rt=0.1), topics=topics), T)
    assert f.evidence["tenant_topics_records_per_request"] == {"shop.orders": 1.0}
    assert f.evidence["cluster_median_records_per_request"] == 50.5


POLLING = [
    (1, [GOOD_CONSUMER], []),
    (2, [GOOD_CONSUMER, client("shop-spin", fetch=2 * KIB, rt=0.05)], ["shop-spin"]),  # 25 s/MiB
    (3, [GOOD_CONSUMER, client("shop-empty", fetch=0, rt=0.05, fetch_seen=True)], ["shop-empty"]),  # empty fetches
    (4, [GOOD_CONSUMER, client("shop-admin", fetch=0, rt=0.05, fetch_seen=False)], []),  # never fetched: not polling
    (5, [GOOD_CONSUMER, client("shop-spin", fetch=2 * KIB, rt=0.01)], []),  # cheap: under 2% of a thread
    # A consumer in its first seconds (group join, empty fetches before data flows) is not judged yet...
    (6, [GOOD_CONSUMER, client("shop-new", fetch=0, rt=0.09, fetch_seen=True, seen=0.2)], []),
    (7, [GOOD_CONSUMER, client("shop-new", fetch=0, rt=0.09, fetch_seen=True, seen=0.6)], []),
    # ...and is, once it has been seen for (nearly) the whole window
    (9, [GOOD_CONSUMER, client("shop-new", fetch=0, rt=0.09, fetch_seen=True, seen=0.9)], ["shop-new"]),
    # a young client does not set the norm either: with it gone the spinning one is held to GOOD_CONSUMER
    (
        8,
        [
            GOOD_CONSUMER,
            client("shop-spin", fetch=2 * KIB, rt=0.05),
            client("shop-x", fetch=KIB, rt=0.9, seen=0.1),
            client("shop-y", fetch=KIB, rt=0.9, seen=0.1),
        ],
        ["shop-spin"],
    ),
]


@pytest.mark.parametrize("case,clients,expected", POLLING, ids=[f"polling-{c[0]}" for c in POLLING])
def test_polling_too_often(case, clients, expected):
    found = findings.polling_too_often(snap(*clients), T)
    assert kinds_for(found, FindingKind.POLLING_TOO_OFTEN) == expected
    assert all("fetch.min.bytes" in f.fix for f in found)


def cluster(req=100.0, err=0.0, new=0.0, open_=0.0):
    return ClusterSample(
        cluster="c",
        window_seconds=600,
        requests_per_second=req,
        errors_per_second=err,
        new_connections_per_second=new,
        open_connections=open_,
        errors_by_request={"Produce": err},
    )


STORMS = [
    (1, cluster(), [GOOD_PRODUCER], []),
    (2, cluster(err=10.0), [client("shop-storm", prod=KIB, rt=0.5)], ["shop-storm"]),  # 10% errors, half a thread
    (3, cluster(), [client("shop-storm", prod=KIB, rt=0.5, qt=0.2)], ["shop-storm"]),  # throttled by request quota
    (4, cluster(), [client("shop-busy", prod=KIB, rt=0.5)], []),  # busy but no errors, not throttled
    (5, cluster(err=10.0), [client("shop-calm", prod=KIB, rt=0.1)], []),  # errors, but a small share of a thread
    # Busy for nothing (retried metadata lookups of a missing topic): 5% of a thread, no bytes, while requests fail.
    (6, cluster(err=10.0), [client("shop-storm", rt=0.05)], ["shop-storm"]),
    (7, cluster(), [client("shop-storm", rt=0.05)], []),  # the same without errors or throttling
    (8, cluster(err=10.0), [client("shop-idle-reader", rt=0.05, fetch_seen=True)], []),  # a consumer: not a storm
    (9, cluster(err=10.0), [client("shop-quiet", rt=0.01)], []),  # below min_thread_share
    (10, cluster(err=10.0), [client("shop-small", prod=2 * KIB, rt=0.05)], []),  # moves records: batching's case
    (11, cluster(err=10.0), [client("shop-big", prod=64 * MIB, rt=0.5)], []),  # half a thread, but for 64 MiB/s
    # A warming-up broker makes every client's requests slow alike: a quarter of a thread, but not out of line
    (
        12,
        cluster(err=10.0),
        [
            client("shop-good", prod=40 * KIB, rt=0.3),
            client("shop-peer", prod=40 * KIB, rt=0.2),
            client("shop-peer2", prod=40 * KIB, rt=0.25),
        ],
        [],
    ),
    # ... while the one storming beside them is
    (
        13,
        cluster(err=10.0),
        [
            client("shop-good", prod=40 * KIB, rt=0.3),
            client("shop-peer", prod=40 * KIB, rt=0.2),
            client("shop-storm", rt=0.06),
        ],
        ["shop-storm"],
    ),
]


@pytest.mark.parametrize("case,cl,clients,expected", STORMS, ids=[f"storm-{c[0]}" for c in STORMS])
def test_request_storm(case, cl, clients, expected):
    found = findings.request_storm(snap(*clients, cluster=cl), T)
    assert kinds_for(found, FindingKind.REQUEST_STORM) == expected
    assert all("retry.backoff.ms" in f.fix for f in found)


@pytest.mark.parametrize("share,pages", [(0.03, False), (0.049, False), (0.05, True), (0.3, True)])
def test_a_storm_on_thread_time_alone_pages_only_from_the_material_thread_share(share, pages):
    """Busy for nothing rests on thread time alone, which a starved machine inflates: from 2 % of a thread it is a
    finding, but it pages the other tenants only from ``material_thread_share`` (5 %), as every rule on that basis;
    below, it is info advice for its own tenant."""
    (found,) = findings.request_storm(snap(client("shop-storm", rt=share), cluster=cluster(err=10.0)), T)
    assert found.client_id == "shop-storm"
    assert found.hurts_other_tenants is pages
    assert found.severity is (FindingSeverity.WARNING if pages else FindingSeverity.INFO)


THROTTLED = [
    (1, GOOD_PRODUCER, None),
    (2, client("shop-fast", prod=MIB, pt=0.3), {"produce": 0.3}),
    (3, client("shop-fast", fetch=MIB, ft=0.05, qt=0.002), {"fetch": 0.05, "request": 0.002}),
    (4, client("shop-fast", prod=MIB, pt=0.0005), None),  # under 1 ms: noise
]


@pytest.mark.parametrize("case,c,expected", THROTTLED, ids=[f"throttled-{c[0]}" for c in THROTTLED])
def test_throttled_by_quota(case, c, expected):
    found = findings.throttled_by_quota(snap(c), T)
    if expected is None:
        assert found == []
    else:
        assert [f.evidence["throttle_seconds_by_quota"] for f in found] == [expected]
        assert found[0].client_id == "shop-fast" and "producer_byte_rate" in found[0].fix


def group(name, changes, share=0.0, members=1.0):
    return GroupSample(
        cluster="c",
        group=name,
        tenant="shop",
        members=members,
        member_changes=changes,
        rebalancing_share=share,
        window_seconds=600,
    )


REBALANCES = [
    (1, group("shop-steady", 0), []),
    (2, group("shop-steady", 2), []),  # a deploy: two changes
    (3, group("shop-flappy", 12), ["shop-flappy"]),
    (4, group("shop-stuck", 0, share=0.5), ["shop-stuck"]),  # stuck rebalancing half the window
]


@pytest.mark.parametrize("case,g,expected", REBALANCES, ids=[f"rebalance-{c[0]}" for c in REBALANCES])
def test_frequent_rebalances(case, g, expected):
    found = findings.frequent_rebalances(snap(groups=[g]), T)
    assert kinds_for(found, FindingKind.FREQUENT_REBALANCES) == expected
    for f in found:
        assert f.group == g.group and f.evidence["member_changes_per_hour"] == g.member_changes * 6
        assert "group.instance.id" in f.fix


SOFTWARE = [
    (1, SoftwareSample("c", "librdkafka", "2.6.1", 4), "shop", []),
    (2, SoftwareSample("c", "apache-kafka-java", "2.3.1", 2), "shop", [("apache-kafka-java", "shop")]),
    (3, SoftwareSample("c", "apache-kafka-java", "2.3.1", 2), None, [("apache-kafka-java", None)]),  # shared cluster
    (4, SoftwareSample("c", "apache-kafka-java", "2.3.1", 0), "shop", []),  # gone
    (5, SoftwareSample("c", "sarama", "1.0.0", 3), "shop", []),  # no known minimum: not our call
]


@pytest.mark.parametrize("case,sw,whole,expected", SOFTWARE, ids=[f"software-{c[0]}" for c in SOFTWARE])
def test_outdated_clients(case, sw, whole, expected):
    found = findings.outdated_clients(snap(software=[sw], whole=whole), T)
    assert [(f.evidence["client_software_name"], f.tenant) for f in found] == expected


def dep(name, version, request, api, rps):
    return DeprecatedSample("c", name, version, request, api, rps)


RDK_OLD = SoftwareSample("c", "librdkafka", "1.5.0", 2)  # below librdkafka's 1.9.0 minimum
RDK_NEW = SoftwareSample("c", "librdkafka", "2.6.1", 2)
DEPRECATED = [
    # (id, software, deprecated samples, expected [(name, version, deprecated APIs or None, connection-based)])
    (1, [RDK_NEW], [], []),
    # a current client sending deprecated versions (api.version.request=false): a finding for its APIs alone
    (
        2,
        [RDK_NEW],
        [dep("librdkafka", "2.6.1", "Produce", "2", 3.0), dep("librdkafka", "2.6.1", "Fetch", "3", 1.5)],
        [("librdkafka", "2.6.1", {"Fetch v3": 1.5, "Produce v2": 3.0}, False)],
    ),
    # outdated and deprecated: one finding with both causes
    (
        3,
        [RDK_OLD],
        [dep("librdkafka", "1.5.0", "Produce", "2", 3.0)],
        [("librdkafka", "1.5.0", {"Produce v2": 3.0}, True)],
    ),
    # software Kafka could not name (no ApiVersions): still reported by its deprecated requests
    (4, [], [dep("unknown", "unknown", "Produce", "1", 0.5)], [("unknown", "unknown", {"Produce v1": 0.5}, False)]),
    (5, [RDK_NEW], [dep("librdkafka", "2.6.1", "Produce", "2", 0.0)], []),  # none in the window
    (6, [RDK_OLD], [], [("librdkafka", "1.5.0", None, True)]),  # outdated alone, as before
]


@pytest.mark.parametrize(
    "case,software,deprecated,expected", DEPRECATED, ids=[f"deprecated-{c[0]}" for c in DEPRECATED]
)
def test_outdated_clients_by_deprecated_api_versions(case, software, deprecated, expected):
    found = findings.outdated_clients(snap(software=software, deprecated=deprecated, whole="shop"), T)
    got = [
        (
            f.evidence["client_software_name"],
            f.evidence["client_software_version"],
            f.evidence.get("deprecated_requests_per_second_by_api"),
            "kafka_broker_connections" in f.metrics,
        )
        for f in found
    ]
    assert got == expected
    for f in found:
        assert f.tenant == "shop" and f.fix.startswith("upgrade")
        assert ("kafka_broker_deprecated_requests_total" in f.metrics) == bool(
            f.evidence.get("deprecated_requests_per_second_by_api")
        )
        assert "KIP-896" in f.cause


CHURN = [
    # (id, cluster sample, clients, expected (tenant, suspects) pairs)
    (1, cluster(new=0.2, open_=30), [GOOD_PRODUCER], []),  # 0.2 new/s: normal
    (2, cluster(new=5, open_=5000), [GOOD_PRODUCER], []),  # connections live 1000 s on average: a big fleet
    (
        3,
        cluster(new=5, open_=20),
        [
            GOOD_PRODUCER,
            client("shop-churn", prod=500, rt=0.05),
            client("ads-x", tenant="ads", prod=MIB, rt=0.01),
            client("shop-idle-reader", fetch=100, rt=0.001),
        ],  # long-polling: not a suspect
        [(None, ("shop-churn",)), ("shop", ("shop-churn",))],
    ),
    (4, cluster(new=5, open_=20), [GOOD_PRODUCER], [(None, ())]),  # operators still learn of it
]


@pytest.mark.parametrize("case,cl,clients,expected", CHURN, ids=[f"churn-{c[0]}" for c in CHURN])
def test_connection_churn(case, cl, clients, expected):
    found = findings.connection_churn(snap(*clients, cluster=cl), T)
    assert sorted(((f.tenant, f.suspects) for f in found), key=str) == sorted(expected, key=str)
    for f in found:
        lifetime = cl.open_connections / cl.new_connections_per_second
        assert f.evidence["mean_connection_lifetime_seconds"] == pytest.approx(lifetime)


def test_a_tenant_never_sees_another_tenants_clients():
    s = snap(GOOD_PRODUCER, client("ads-tiny", tenant="ads", prod=50 * KIB, rt=0.1), cluster=cluster(new=5, open_=20))
    all_ = advise(s)
    assert {f.kind for f in for_tenant(all_, "ads")} == {FindingKind.POOR_BATCHING, FindingKind.CONNECTION_CHURN}
    shop = for_tenant(all_, "shop")
    assert shop == [] and "ads-tiny" not in str([f.as_json() for f in shop])


def test_well_configured_clients_produce_no_finding_at_all():
    s = snap(
        GOOD_PRODUCER,
        GOOD_CONSUMER,
        client("shop-other", prod=2 * MIB, rt=0.015),
        cluster=cluster(req=200, err=1, new=0.1, open_=40),
        groups=[group("shop-steady", 1)],
        software=[SoftwareSample("c", "apache-kafka-java", "3.9.0", 10)],
        whole="shop",
    )
    assert advise(s) == []


def test_finding_json_names_kind_client_metric_cause_and_fix():
    # a quarter of a thread and more: relative thread time alone pages from there (issue 28)
    (f,) = findings.poor_batching(snap(GOOD_PRODUCER, client("shop-tiny", user="User:shop", prod=50 * KIB, rt=0.3)), T)
    doc = f.as_json()
    assert doc["kind"] == "poor_batching" and doc["client_id"] == "shop-tiny" and doc["user"] == "User:shop"
    assert doc["hurts_other_tenants"] is True and doc["metrics"] and doc["cause"] and doc["fix"]


# ------------------------------------------------------------------ evidence first (issue 17): telemetry, topics


def telemetry(cid, *, tenant="shop", user="", **fields):
    return TelemetrySample(
        cluster="c",
        user=user,
        client_id=cid,
        tenant=tenant,
        software_name="apache-kafka-java",
        software_version="3.9.1",
        **fields,
    )


def topic(name, msgs, reqs, tenant="shop", byts=None):
    return TopicSample("c", name, tenant, msgs, reqs, byts if byts is not None else msgs * 70.0)


def batching(*clients, topics=(), tele=()):
    s = dataclasses.replace(snap(*clients, topics=topics), telemetry=tuple(tele))
    return findings.poor_batching(s, T)


def test_a_tenant_batching_one_record_per_request_is_told_whatever_the_others_do():
    """200 records/s in 200 requests/s: 1.0 record per request, at 200 >= 20 requests/s. The producer uses 1.5% of
    a thread, under the 2% floor of the relative rule, and every other producer of the cluster batches as badly (the
    norm would hide it): found on the absolute per-topic counts anyway."""
    bad = client("shop-java", prod=14000.0, rt=0.015)  # 0.015 / (14000/1048576) = 1.1235 s/MiB
    others = [client(f"ads-{i}", tenant="ads", prod=14000.0, rt=0.015) for i in range(3)]
    (f,) = (
        x
        for x in batching(
            bad, *others, topics=[topic("shop.t", 200.0, 200.0), topic("ads.t", 600.0, 600.0, tenant="ads")]
        )
        if x.tenant == "shop"
    )
    assert not findings.poor_batching(snap(bad, *others), T)  # the relative rule alone: nothing (floor, norm)
    assert (f.client_id, f.basis, f.evidence["basis"]) == (
        "shop-java",
        "topic_records_per_request",
        "topic_records_per_request",
    )
    ev = f.evidence
    assert ev["records_per_request"] == 1.0 and ev["produce_requests_per_second"] == 200.0
    assert ev["bytes_per_request"] == 70.0
    assert ev["poor_topics"] == {
        "shop.t": {"records_per_request": 1.0, "produce_requests_per_second": 200.0, "bytes_per_request": 70.0}
    }
    assert ev["thread_seconds_per_mib"] == pytest.approx(1.1235, abs=1e-4)
    # measured: 1.5% of a thread for its 200 requests/s = 0.075 ms a request; 10x the records at one a request:
    # 2000 requests/s at 0.075 ms = 15% of a thread
    assert ev["thread_share_now"] == 0.015 and ev["thread_ms_per_request"] == 0.075
    assert ev["thread_share_at_10x"] == 0.15
    assert "1.5% of a broker thread" in f.cause and "10x the rate with the same batching 15.0%" in f.cause
    assert "linger.ms" in f.fix and "kafka_topic_produce_requests_total" in f.metrics
    # ads is told too, about its own topic; its three producers cost alike, so the per-topic counts name none of
    # them (issue 28): one tenant-and-topic finding, the three listed as candidates
    (ads,) = findings.poor_batching(snap(bad, *others, topics=[topic("ads.t", 600.0, 600.0, tenant="ads")]), T)
    assert (ads.tenant, ads.client_id, ads.candidates) == ("ads", "", ("ads-0", "ads-1", "ads-2"))
    assert ads.evidence["client_identified"] is False and "not identified yet" in ads.cause


BATCHING_TOPICS = [
    # (id, topics, expected): the well-batching producer of the same tenant is never the one named
    (1, [topic("shop.t", 200.0, 200.0)], ["shop-java"]),
    (2, [topic("shop.t", 800.0, 200.0)], ["shop-java"]),  # 4.0 records per request: still "close to one"
    (3, [topic("shop.t", 900.0, 200.0)], []),  # 4.5: batching some
    # under 20 requests/s records arrive further apart than any usual linger.ms: one or two a request whatever the
    # producer's settings (the healthy demo producers: 1.7-2.3 at 7-9 requests/s), so nothing is told
    (4, [topic("shop.t", 30.0, 19.0)], []),
    (7, [topic("shop.t", 20.0, 20.0)], ["shop-java"]),  # 20: told before it does harm
    (8, [topic("shop.t", 17.2, 7.5)], []),  # a healthy demo producer (linger.ms=20) on the false-alarm bench
    (9, [topic("shop.t", 12.4, 7.4)], []),  # the other one: 1.7 records a request
    # ... but every record its own request is told from 5 requests/s (a kcat starved to 12.6/s: 1.0)
    (10, [topic("shop.t", 12.6, 12.6)], ["shop-java"]),
    (11, [topic("shop.t", 4.0, 4.0)], []),
    (5, [topic("shop.t", 4000.0, 100.0)], []),  # 40 records per request
    (6, [topic("ads.t", 200.0, 200.0, tenant="ads")], ["ads"]),  # ads has no producer sample: the tenant is told
]
# shop-java costs 1.1235 s/MiB; beside a shop producer at 0.2 s/MiB (a fifth: it batches better) its own cost is
# 5.6x its norm and it is named; beside one at 0.5 s/MiB (2.2x) the counts cannot say which of the two sends the
# one-record requests: nobody is named, both are candidates (issue 28)
SIDE = [(0.2 * 14000.0 / MIB, ["shop-java"], ()), (0.5 * 14000.0 / MIB, [""], ("shop-java", "shop-side"))]


@pytest.mark.parametrize("rt,named,candidates", SIDE, ids=["side-0.2", "side-0.5"])
def test_only_a_producer_whose_own_cost_stands_out_is_named(rt, named, candidates):
    side = client("shop-side", prod=14000.0, rt=rt)
    found = batching(client("shop-java", prod=14000.0, rt=0.015), side, topics=[topic("shop.t", 200.0, 200.0)])
    assert sorted(f.client_id for f in found) == named
    assert all(f.candidates == candidates for f in found)


@pytest.mark.parametrize("case,topics,expected", BATCHING_TOPICS, ids=[f"topics-{c[0]}" for c in BATCHING_TOPICS])
def test_poor_batching_by_records_per_request(case, topics, expected):
    good = client("shop-good", prod=MIB, rt=0.01)  # 0.01 s/MiB: under the 0.05 floor of a suspect
    bad = client("shop-java", prod=14000.0, rt=0.015)
    found = batching(good, bad, topics=topics)
    assert sorted(f.client_id or f.tenant for f in found) == expected
    assert all(f.basis == "topic_records_per_request" for f in found)
    if case == 6:  # no client to measure: the counts, and no thread figures
        assert found[0].client_id == "" and found[0].evidence["records_per_request"] == 1.0
        assert "thread_share_now" not in found[0].evidence


def test_telemetry_decides_for_the_client_that_pushes_it():
    """A producer reporting 1.1 records per request at 180 requests/s is named on that, with its batch size; one
    reporting 30 is cleared even where its tenant's topic counts and its thread time would name it."""
    bad = client("shop-bad", prod=14000.0, rt=0.015)
    cleared = client("shop-kip714", prod=14000.0, rt=0.3)  # costly per MiB, but says it batches 30 a request
    tele = [
        telemetry("shop-bad", records_per_request=1.1, batch_size_avg_bytes=95.0, produce_request_rate=180.0),
        telemetry("shop-kip714", records_per_request=30.0, batch_size_avg_bytes=2100.0, produce_request_rate=7.0),
    ]
    found = batching(GOOD_PRODUCER, bad, cleared, topics=[topic("shop.t", 200.0, 200.0)], tele=tele)
    assert [(f.client_id, f.basis) for f in found] == [("shop-bad", "client_telemetry")]
    ev = found[0].evidence
    assert (ev["records_per_request"], ev["batch_size_avg_bytes"], ev["produce_requests_per_second"]) == (
        1.1,
        95.0,
        180.0,
    )
    # 1.5% of a thread over 180 requests/s: 0.0833 ms each; at 10x, 15%
    assert ev["thread_ms_per_request"] == pytest.approx(0.0833, abs=1e-4) and ev["thread_share_at_10x"] == 0.15
    assert ev["client_software"] == "apache-kafka-java 3.9.1"
    assert "kafka_client_telemetry_producer_records_per_request_avg" in found[0].metrics
    # The same producer below the rate worth telling (3 < 5 requests/s): nothing, telemetry still decides
    slow = [telemetry("shop-bad", records_per_request=1.0, produce_request_rate=3.0)]
    assert not batching(bad, tele=slow)
    # Telemetry without a quota sensor for the client: named, with no thread figures rather than invented ones
    (f,) = batching(tele=[telemetry("shop-x", records_per_request=1.0, produce_request_rate=50.0)])
    assert f.client_id == "shop-x" and f.evidence["thread_share_now"] is None and "% of a broker" not in f.cause


def test_telemetry_counts_a_requests_batches_and_joins_the_principal_to_the_quota_sensor():
    """What a Java 3.9.1 producer with batch.size=1 pushed on the stack: 3.0 records per request (one single-record
    batch per partition of its broker) in 88-byte batches at 14 requests/s: named (<= 5 at >= 5/s). Its telemetry
    says user ANONYMOUS, its quota sensor user "": still one client, with its measured thread share, and the
    per-topic rule does not name it a second time."""
    tele = [
        telemetry(
            "jv3-producer",
            tenant="jv3",
            user="ANONYMOUS",
            records_per_request=3.0,
            batch_size_avg_bytes=88.0,
            produce_request_rate=14.0,
        )
    ]
    sample = client("jv3-producer", tenant="jv3", prod=9322.0, rt=0.0186)
    found = batching(sample, topics=[topic("jv3.t", 116.8, 116.8, tenant="jv3")], tele=tele)
    assert [(f.client_id, f.basis) for f in found] == [("jv3-producer", "client_telemetry")]
    assert found[0].evidence["thread_share_now"] == 0.0186 and found[0].evidence["thread_share_at_10x"] == 0.186
    # linger.ms=100 at the same rate measured 38-41 records per request: cleared, also by its topic
    tele = [dataclasses.replace(tele[0], records_per_request=38.5, produce_request_rate=6.5)]
    assert not batching(sample, topics=[topic("jv3.t", 116.8, 116.8, tenant="jv3")], tele=tele)


def test_thread_time_is_the_last_resort_and_says_so():
    (f,) = batching(GOOD_PRODUCER, client("shop-tiny", prod=50 * KIB, rt=0.10))  # no topic counts, no telemetry
    assert f.basis == "thread_time_per_mib" and f.evidence["times_the_norm"] == 204.8  # 2.048 s/MiB vs 0.01
    assert f.evidence["thread_share_at_10x"] == 1.0 and "10.0% of a broker thread" in f.cause


POLLING_TELEMETRY = [
    # (id, poll idle ratio, fetch latency s, named)
    (1, 0.97, 0.004, True),  # waits in poll 97% of the time, fetches answered in 4 ms: empty fetches
    (4, 0.49, 0.0004, True),  # measured: Java 3.9.1 keeping up with fetch.max.wait.ms=0
    (2, 0.97, 0.5, False),  # the broker waits fetch.max.wait.ms for data: as advised
    (3, 0.3, 0.004, False),  # busy processing (or catching up): fetches are not the problem
]


@pytest.mark.parametrize(
    "case,idle,latency,named", POLLING_TELEMETRY, ids=[f"polling-telemetry-{c[0]}" for c in POLLING_TELEMETRY]
)
def test_polling_too_often_from_the_consumers_own_telemetry(case, idle, latency, named):
    # shop-spin also costs 25 s/MiB against the good consumer's 0.01: telemetry decides anyway
    s = dataclasses.replace(
        snap(GOOD_CONSUMER, client("shop-spin", fetch=2 * KIB, rt=0.05)),
        telemetry=(telemetry("shop-spin", poll_idle_ratio=idle, fetch_latency_seconds=latency),),
    )
    found = findings.polling_too_often(s, T)
    assert [f.client_id for f in found] == (["shop-spin"] if named else [])
    for f in found:
        assert f.basis == "client_telemetry" and f.evidence["poll_idle_ratio"] == idle
        assert "fetch.min.bytes" in f.fix


NAMELESS = [
    # (id, connections without a software name held on average, whole-cluster tenant, expected tenants)
    # a pre-2.4 Java producer: one connection per broker, all along; operators, and shop, whose producer pushed no
    # telemetry naming its software, so it is a candidate (issue 28)
    (1, 3.0, None, [None, "shop"]),
    (2, 1.0, "shop", ["shop"]),  # the cluster is shop's: shop is told, once
    (3, 0.3, None, []),  # new connections of a churning client, unnamed only until their ApiVersions
]


@pytest.mark.parametrize("case,held,whole,expected", NAMELESS, ids=[f"nameless-{c[0]}" for c in NAMELESS])
def test_connections_without_a_software_name_are_unknown_software_not_outdated(case, held, whole, expected):
    """A missing KIP-511 name is no evidence of age (kafkajs 2.2.4, current, sends none): "unknown software" at info,
    the possibilities listed, and no upgrade advice (issue 28)."""
    s = snap(
        GOOD_PRODUCER, whole=whole, cluster=ClusterSample(cluster="c", window_seconds=600, nameless_connections=held)
    )
    found = [f for f in findings.outdated_clients(s, T)]
    assert [f.tenant for f in found] == expected
    for f in found:
        assert f.kind is FindingKind.UNKNOWN_SOFTWARE and f.severity is FindingSeverity.INFO
        assert f.basis == "client_software" and f.evidence["client_software_name"] == "unknown"
        assert "older than 2.4" in f.cause and "1.4" in f.cause and "kafkajs" in f.cause
        assert f.fix.startswith("nothing to upgrade") and not f.hurts_other_tenants
