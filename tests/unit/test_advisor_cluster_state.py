"""Blame with evidence (issue 28) on the 30-minute false-alarm run's two defects (bench/false_alarms.py, run at 05:37
UTC on d92e215, a rolling restart at 15 minutes, load 28-129 on 2 cores):

- ``request_storm`` named every client retrying through the rolling restart, good ones included (javagood-app,
  franzdef-app, payments-api-consumer): the cluster's error ratio read 0.31-0.61, and the starved brokers' thread
  times were inflated 10-100x. Those errors were the cluster's own (leadership moving, replicas out of sync).
- ``polling_too_often`` paged the default confluent-kafka consumer payments-api-consumer (poll idle 0.99, no fetch
  waiting) with ``thread_share_now`` 1.10: more than a whole broker thread, while every consumer of the cluster
  together sent about 39 fetches a second.

The clients' figures are the advisor's reading at 06:00:09 UTC (the alerts' evidence in the run's log); the cluster's
state and error codes come from the run's Prometheus data (broker 3 out of the metadata 05:58-06:01, 65 partitions
under-replicated at worst, 38.8 consumer fetches/s). Each case that must change fails on the code before the fix.
"""

from __future__ import annotations

import dataclasses

import pytest

from alerts.detectors.noisy_clients import observation_for
from monitor.advisor import findings
from monitor.advisor.findings import Thresholds
from monitor.advisor.types import ClientSample, ClusterSample, FindingSeverity, Snapshot, TelemetrySample
from tests.unit import test_advisor_blame as blame
from tests.unit.test_advisor_findings import client

pytestmark = pytest.mark.unit
T = Thresholds()
WINDOW = 600.0


# Named as storms at 06:00:09 (and javagood-app at 05:51), with the figures the alerts carried: the good clients
# first, then bad producers whose real fault is poor batching (poor_batching names them; a storm they are not).
NAMED_IN_THE_RUN = (
    client("franzdef-app", tenant="franzdef", prod=9592.5, rt=1.2754),  # franz-go defaults: 139 s/MiB
    client("javagood-app", tenant="javagood", prod=12135.5, rt=0.5927),  # Java, well configured: 51 s/MiB
    client(
        "payments-api-consumer", tenant="payments", rt=0.3707, fetch_seen=True
    ),  # confluent-kafka defaults: no bytes
    client("badjs-app", tenant="badjs", prod=123.5, rt=0.9862),
    client("badjv3-app", tenant="badjv3", prod=13649.0, rt=1.0633),
    client("payments-batch-import", tenant="payments", prod=65.5, rt=0.2307),
)
GOOD = {"franzdef-app", "javagood-app", "payments-api-consumer"}
# The rest of the zoo, inflated alike: their lower median is the run's norm at 06:00:09, 9.1 s/MiB.
PEERS = tuple(
    client(cid, tenant=cid.split("-")[0], prod=prod, rt=rt)
    for cid, prod, rt in (
        ("search-frontend", 14000.0, 0.12),
        ("pygood-app", 9500.0, 0.082),
        ("jsgood-app", 6400.0, 0.056),
        ("kcatdef-app", 8900.0, 0.078),
        ("javadef-app", 15000.0, 0.134),
        ("pydef-app", 13000.0, 0.115),
        ("jsdef-app", 9400.0, 0.083),
    )
)

# The errors the brokers answered in that window, by request (the alerts' evidence: Metadata 6.5, Fetch 3.981,
# Produce 2.478 a second, ratio 0.31) and by code (the run's kafka_broker_request_errors_total{error}), plus the
# idempotent producers' out-of-sequence answers the restart left, which no cluster state explains.
RESTART_ERRORS = {
    "LEADER_NOT_AVAILABLE": 6.5,
    "UNKNOWN_LEADER_EPOCH": 3.7,
    "FENCED_LEADER_EPOCH": 0.281,
    "NOT_LEADER_OR_FOLLOWER": 2.1,
    "NOT_ENOUGH_REPLICAS": 0.278,
    "REQUEST_TIMED_OUT": 0.1,
    "OUT_OF_ORDER_SEQUENCE_NUMBER": 0.3,
}
ROLLING_RESTART = ClusterSample(
    cluster="c",
    window_seconds=WINDOW,
    requests_per_second=42.4,
    errors_per_second=sum(RESTART_ERRORS.values()),
    errors_by_request={"Metadata": 6.5, "Fetch": 3.981, "Produce": 2.478, "OffsetCommit": 0.3},
    errors_by_code=RESTART_ERRORS,
    brokers_down=1.0,
    under_replicated_partitions=65.0,
    consumer_fetches_per_second=38.8,
)


def named(s: Snapshot) -> set[str]:
    return {f.client_id for f in findings.request_storm(s, T)}


def test_a_rolling_restart_names_no_client_as_a_storm():
    """Before the fix: all six named (the good three among them), the error ratio 0.31 being read as theirs."""
    s = Snapshot(cluster=ROLLING_RESTART, clients=NAMED_IN_THE_RUN + PEERS)
    assert findings.cluster_disturbance(ROLLING_RESTART) == {"brokers_down": 1.0, "under_replicated_partitions": 65.0}
    assert named(s) == set()
    # The same errors on a cluster that was healthy all along are not explained: the rule reads them as before.
    healthy_state = dataclasses.replace(ROLLING_RESTART, brokers_down=0.0, under_replicated_partitions=0.0)
    assert GOOD <= named(dataclasses.replace(s, cluster=healthy_state))


@pytest.mark.parametrize(
    "state",
    [{"brokers_down": 1.0}, {"under_replicated_partitions": 3.0}, {"offline_partitions": 2.0}],
    ids=["broker-down", "under-replicated", "offline"],
)
def test_each_state_of_the_cluster_explains_its_leadership_errors(state):
    cl = dataclasses.replace(ROLLING_RESTART, **{"brokers_down": 0.0, "under_replicated_partitions": 0.0, **state})
    assert named(Snapshot(cluster=cl, clients=NAMED_IN_THE_RUN + PEERS)) == set()


def test_a_storm_on_a_healthy_cluster_is_still_named_alone():
    """The same clients at the thread times a healthy cluster gives them, and one client asking again and again for
    a topic that does not exist (UNKNOWN_TOPIC_OR_PARTITION, no backoff): it alone is named, and pages."""
    calm = tuple(dataclasses.replace(c, request_time_ratio=c.request_time_ratio / 50) for c in NAMED_IN_THE_RUN + PEERS)
    storm = client("stormer-app", tenant="storm", rt=0.3)
    healthy = ClusterSample(
        cluster="c",
        window_seconds=WINDOW,
        requests_per_second=400.0,
        errors_per_second=30.0,
        errors_by_request={"Metadata": 30.0},
        errors_by_code={"UNKNOWN_TOPIC_OR_PARTITION": 30.0},
        consumer_fetches_per_second=60.0,
    )
    (f,) = findings.request_storm(Snapshot(cluster=healthy, clients=(*calm, storm)), T)
    assert (f.client_id, f.hurts_other_tenants) == ("stormer-app", True)
    assert f.evidence["unexplained_error_ratio"] == f.evidence["cluster_error_ratio"] == 0.075
    # its errors are not the cluster's: a storm during a restart is still seen, beside the explained errors
    during = dataclasses.replace(
        ROLLING_RESTART,
        requests_per_second=ROLLING_RESTART.requests_per_second + 30.0,
        errors_per_second=ROLLING_RESTART.errors_per_second + 30.0,
        errors_by_code={**RESTART_ERRORS, "UNKNOWN_TOPIC_OR_PARTITION": 30.0},
    )
    (f,) = findings.request_storm(Snapshot(cluster=during, clients=(*calm, storm)), T)
    assert f.client_id == "stormer-app" and f.evidence["errors_explained_by_cluster_state_per_second"] == 12.959


# payments-api-consumer as its telemetry and quota sensors read when it paged (05:59-06:00).
DEFAULT_CONSUMER = dataclasses.replace(
    blame.DEFAULT_CONSUMER, software_version="2.16.1-rdkafka-2.16.0", poll_idle_ratio=0.99, fetch_latency_seconds=0.0
)


def polling(tm: TelemetrySample, sensor: ClientSample, cl: ClusterSample):
    (f,) = findings.polling_too_often(Snapshot(cluster=cl, clients=(sensor,), telemetry=(tm,)), T)
    return f


def test_a_default_consumer_is_not_charged_with_a_starved_brokers_thread_time():
    """Before the fix it paged, charged with 1.10 of a broker thread. Every consumer of the cluster together sent 38.8
    fetches a second: at 1 ms of thread each (a fetch's cost on a broker that is not starved) that is 3.9 % of a
    thread, advice for its own tenant."""
    sensor = client("payments-api-consumer", tenant="payments", rt=1.0974, fetch_seen=True)
    f = polling(DEFAULT_CONSUMER, sensor, ROLLING_RESTART)
    assert (f.severity, f.hurts_other_tenants) == (FindingSeverity.INFO, False)
    assert f.evidence["thread_share_now"] == 1.0974 and f.evidence["thread_share_charged"] == 0.0388
    assert f.evidence["requests_per_second_from"] == "cluster_consumer_fetches"
    assert observation_for(f, rule_for_seconds=600.0, window=WINDOW) is None


@pytest.mark.parametrize(
    "pushed_rate,cluster_fetches,pages",
    [
        (None, 2000.0, True),  # a spinning consumer: the cluster served 2,000 fetches/s, enough for its 30 %
        (None, None, True),  # the brokers export no fetch count: its measured share stands, as before
        (40.0, 2000.0, False),  # a Java consumer pushed its own 40 requests/s: 4 % at most, whatever else fetched
        (400.0, 2000.0, True),  # ... and 400 requests/s: its 30 % is within what they could take
    ],
)
def test_polling_pages_only_for_a_share_its_own_requests_can_take(pushed_rate, cluster_fetches, pages):
    tm = dataclasses.replace(DEFAULT_CONSUMER, fetch_latency_seconds=0.0004, produce_request_rate=pushed_rate)
    sensor = client("payments-api-consumer", tenant="payments", fetch=200.0, rt=0.3)
    cl = ClusterSample(cluster="c", window_seconds=WINDOW, consumer_fetches_per_second=cluster_fetches)
    f = polling(tm, sensor, cl)
    assert f.hurts_other_tenants is pages
