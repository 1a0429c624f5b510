"""The advisor's rules, one numbered table of cases per rule; each table has a well-configured client that must
produce no finding."""

from __future__ import annotations

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
    GroupSample,
    Snapshot,
    SoftwareSample,
    TopicSample,
)

pytestmark = pytest.mark.unit
T = Thresholds()
KIB, MIB = 1024.0, 1048576.0


def client(cid, *, tenant="shop", user="", prod=0.0, fetch=0.0, rt=0.0, pt=0.0, ft=0.0, qt=0.0, fetch_seen=None,
           seen=1.0):
    return ClientSample(cluster="c", user=user, client_id=cid, tenant=tenant, produce_bytes_per_second=prod,
                        fetch_bytes_per_second=fetch, request_time_ratio=rt, produce_throttle_seconds=pt,
                        fetch_throttle_seconds=ft, request_throttle_seconds=qt,
                        fetch_seen=fetch > 0 if fetch_seen is None else fetch_seen, seen_share=seen)


def snap(*clients, cluster=None, topics=(), groups=(), software=(), whole=None, deprecated=()):
    return Snapshot(cluster=cluster or ClusterSample(cluster="c", window_seconds=600), clients=tuple(clients),
                    topics=tuple(topics), groups=tuple(groups), software=tuple(software), whole_cluster_tenant=whole,
                    deprecated=tuple(deprecated))


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
    topics = [TopicSample("c", "shop.orders", "shop", 100.0, 100.0, 5000.0),
              TopicSample("c", "ads.clicks", "ads", 1000.0, 10.0, 5000.0)]
    f, = findings.poor_batching(snap(GOOD_PRODUCER, client("shop-tiny", prod=50 * KIB, rt=0.1), topics=topics), T)
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
    (8, [GOOD_CONSUMER, client("shop-spin", fetch=2 * KIB, rt=0.05), client("shop-x", fetch=KIB, rt=0.9, seen=0.1),
         client("shop-y", fetch=KIB, rt=0.9, seen=0.1)], ["shop-spin"]),
]


@pytest.mark.parametrize("case,clients,expected", POLLING, ids=[f"polling-{c[0]}" for c in POLLING])
def test_polling_too_often(case, clients, expected):
    found = findings.polling_too_often(snap(*clients), T)
    assert kinds_for(found, FindingKind.POLLING_TOO_OFTEN) == expected
    assert all("fetch.min.bytes" in f.fix for f in found)


def cluster(req=100.0, err=0.0, new=0.0, open_=0.0):
    return ClusterSample(cluster="c", window_seconds=600, requests_per_second=req, errors_per_second=err,
                         new_connections_per_second=new, open_connections=open_, errors_by_request={"Produce": err})


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
    (12, cluster(err=10.0), [client("shop-good", prod=40 * KIB, rt=0.3), client("shop-peer", prod=40 * KIB, rt=0.2),
                             client("shop-peer2", prod=40 * KIB, rt=0.25)], []),
    # ... while the one storming beside them is
    (13, cluster(err=10.0), [client("shop-good", prod=40 * KIB, rt=0.3), client("shop-peer", prod=40 * KIB, rt=0.2),
                             client("shop-storm", rt=0.06)], ["shop-storm"]),
]


@pytest.mark.parametrize("case,cl,clients,expected", STORMS, ids=[f"storm-{c[0]}" for c in STORMS])
def test_request_storm(case, cl, clients, expected):
    found = findings.request_storm(snap(*clients, cluster=cl), T)
    assert kinds_for(found, FindingKind.REQUEST_STORM) == expected
    assert all("retry.backoff.ms" in f.fix for f in found)


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
    return GroupSample(cluster="c", group=name, tenant="shop", members=members, member_changes=changes,
                       rebalancing_share=share, window_seconds=600)


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
    (2, [RDK_NEW], [dep("librdkafka", "2.6.1", "Produce", "2", 3.0), dep("librdkafka", "2.6.1", "Fetch", "3", 1.5)],
     [("librdkafka", "2.6.1", {"Fetch v3": 1.5, "Produce v2": 3.0}, False)]),
    # outdated and deprecated: one finding with both causes
    (3, [RDK_OLD], [dep("librdkafka", "1.5.0", "Produce", "2", 3.0)],
     [("librdkafka", "1.5.0", {"Produce v2": 3.0}, True)]),
    # software Kafka could not name (no ApiVersions): still reported by its deprecated requests
    (4, [], [dep("unknown", "unknown", "Produce", "1", 0.5)], [("unknown", "unknown", {"Produce v1": 0.5}, False)]),
    (5, [RDK_NEW], [dep("librdkafka", "2.6.1", "Produce", "2", 0.0)], []),  # none in the window
    (6, [RDK_OLD], [], [("librdkafka", "1.5.0", None, True)]),  # outdated alone, as before
]


@pytest.mark.parametrize("case,software,deprecated,expected", DEPRECATED, ids=[f"deprecated-{c[0]}" for c in DEPRECATED])
def test_outdated_clients_by_deprecated_api_versions(case, software, deprecated, expected):
    found = findings.outdated_clients(snap(software=software, deprecated=deprecated, whole="shop"), T)
    got = [(f.evidence["client_software_name"], f.evidence["client_software_version"],
            f.evidence.get("deprecated_requests_per_second_by_api"), "kafka_broker_connections" in f.metrics)
           for f in found]
    assert got == expected
    for f in found:
        assert f.tenant == "shop" and f.fix.startswith("upgrade")
        assert ("kafka_broker_deprecated_requests_total" in f.metrics) == bool(
            f.evidence.get("deprecated_requests_per_second_by_api"))
        assert ("KIP-896" in f.cause)


CHURN = [
    # (id, cluster sample, clients, expected (tenant, suspects) pairs)
    (1, cluster(new=0.2, open_=30), [GOOD_PRODUCER], []),  # 0.2 new/s: normal
    (2, cluster(new=5, open_=5000), [GOOD_PRODUCER], []),  # connections live 1000 s on average: a big fleet
    (3, cluster(new=5, open_=20), [GOOD_PRODUCER, client("shop-churn", prod=500, rt=0.05),
                                  client("ads-x", tenant="ads", prod=MIB, rt=0.01),
                                  client("shop-idle-reader", fetch=100, rt=0.001)],  # long-polling: not a suspect
     [(None, ("shop-churn",)), ("shop", ("shop-churn",))]),
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
    s = snap(GOOD_PRODUCER, client("ads-tiny", tenant="ads", prod=50 * KIB, rt=0.1),
             cluster=cluster(new=5, open_=20))
    all_ = advise(s)
    assert {f.kind for f in for_tenant(all_, "ads")} == {FindingKind.POOR_BATCHING, FindingKind.CONNECTION_CHURN}
    shop = for_tenant(all_, "shop")
    assert shop == [] and "ads-tiny" not in str([f.as_json() for f in shop])


def test_well_configured_clients_produce_no_finding_at_all():
    s = snap(GOOD_PRODUCER, GOOD_CONSUMER, client("shop-other", prod=2 * MIB, rt=0.015),
             cluster=cluster(req=200, err=1, new=0.1, open_=40), groups=[group("shop-steady", 1)],
             software=[SoftwareSample("c", "apache-kafka-java", "3.9.0", 10)], whole="shop")
    assert advise(s) == []


def test_finding_json_names_kind_client_metric_cause_and_fix():
    f, = findings.poor_batching(snap(GOOD_PRODUCER, client("shop-tiny", user="User:shop", prod=50 * KIB, rt=0.1)), T)
    doc = f.as_json()
    assert doc["kind"] == "poor_batching" and doc["client_id"] == "shop-tiny" and doc["user"] == "User:shop"
    assert doc["hurts_other_tenants"] is True and doc["metrics"] and doc["cause"] and doc["fix"]
