"""The advisor against real clients nobody here wrote (issues 17, 28), on the shared session stack, as a new user tried
it, in one run with test_advisor_stack's clients (zoo.py, conftest.py): about 200 small records a second from each of

- ``jv3-producer``: Apache Kafka's Java producer 3.9.1 with linger.ms=0, batch.size=1;
- ``kc-kcat``: kcat (librdkafka 2.0.2, Debian's) with linger.ms=0, batch.num.messages=1;
- ``jv2-producer``: the Java producer 2.3.1 (older than KIP-511: it sends no client software name) with linger.ms=0;
- ``good-java`` (Java 3.9.1) and ``good-py`` (confluent-kafka): linger.ms=100, as the advice says;
- kafkajs 2.2.4 (no KIP-511 name, no telemetry): ``js-nodejs-api`` awaits one send() per record at 150 records/s,
  ``good-js`` batches every 100 ms; franz-go 1.22.3: ``fz-sync`` ProduceSync per record, ``good-franz`` on defaults;

and two Java 3.9.1 consumers of tenant ``cons``'s topic (fed ~100 records/s by ``cons-py``, confluent-kafka with
linger.ms=100, on one partition): ``cons-slow`` spends 30 ms on each record between polls (at most ~33 records/s: its
application is the bottleneck), ``cons-good`` keeps up with fetch.min.bytes=65536, fetch.max.wait.ms=500.

Each producer is a tenant of its own, and every bad one is a small client on a lightly loaded cluster, under the 2 %
thread floor of the relative rule. The stack's brokers carry kafka-health's KIP-714 plugin, so the Java 3.9.1 clients
push their own metrics: the producer is named on its own records per request and batch size
(``client_telemetry``) once it has pushed them, on its topic's counts before; kcat (librdkafka 2.0.2 predates
KIP-714) and the 2.3.1 producer on the brokers' per-topic records per request (``topic_records_per_request``), all
within the shared reads' wait (300 s: one advisor window after the slowest client's start on a loaded machine). No
well-configured client is ever named by a finding that pages; advice (info) may name one in at most a quarter of the
reads (broker thread time on a starved 2-core machine is noisy). The nameless connections (the 2.3.1 client, kafkajs)
are unknown software, not outdated (the advisor and KafkaOutdatedClient's detector). The slow
consumer is named ``slow_consumer_loop`` from the poll idle ratio it pushed itself, with its group's lag; the one
keeping up never is.

Kafka 4.1 accepts the 2.3.1 client (it negotiates API versions Kafka 4 still serves: checked by hand with
tests/harness/javaclients.py, its produce requests succeed); the brokers label its connections ``unknown``.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import pytest

from alerts.detectors import DetectorContext, noisy_clients
from alerts.detectors.clients import detect_outdated_clients
from alerts.rules import load_rules
from monitor.advisor import findings
from monitor.advisor.source import read_snapshot
from monitor.core.prom import PrometheusSource
from monitor.core.tenancy import TenantIndex
from tests.conftest import wait_until
from tests.harness.polyglot import PolyglotProducer
from tests.integration.advisor.conftest import BASIS
from tests.integration.advisor.zoo import BAD, GOOD, SHOP_BAD, SLOW, TENANTS, WINDOW, shop_good

pytestmark = pytest.mark.integration
T = findings.Thresholds()


@pytest.fixture(scope="module")
def clients(advisor_run):
    """The config, client processes and start time of the shared run (conftest.py)."""
    return advisor_run


@pytest.fixture(scope="module")
def found(observed):
    """Of the shared reads: the latest copy of each (kind, client, basis) seen, how many reads, in how many a good
    client was named, which good clients a finding that pages named."""
    return {
        "findings": observed.real_seen,
        "reads": observed.reads,
        "good_named": observed.real_good_named,
        "good_paged": observed.good_paged,
        "slow_named": observed.slow_named,
        "slow_first": observed.slow_first,
        "last": observed.last,
        "after": observed.after,
    }


def test_each_badly_batching_producer_is_named_on_records_per_request(found, clients):
    procs = clients["procs"]
    assert all(p.running() for p in procs), [p.log.read_text()[-2000:] for p in procs if not p.running()]
    assert procs[0].counts()["acked"] > 0 and procs[1].counts()["acked"] > 0  # the 2.3.1 client's records land
    polyglot = [p for p in procs if isinstance(p, PolyglotProducer)]
    assert all(p.counts()["acked"] > 0 for p in polyglot), {p.client_id: p.log.read_text()[-500:] for p in polyglot}
    for client_id, tenant in BAD.items():
        f = next(
            found["findings"][("poor_batching", client_id, b)]
            for b in BASIS[client_id]
            if ("poor_batching", client_id, b) in found["findings"]
        )
        ev = f["evidence"]
        assert f["tenant"] == tenant
        assert f["basis"] == ev["basis"] and f["basis"] in BASIS[client_id], f
        if f["basis"] == "topic_records_per_request":
            # the code's own bars (the rate is what the starved machine let through: 5-19 requests/s at load ~20)
            assert ev["records_per_request"] <= T.batching_max_records_per_request, ev
            assert ev["produce_requests_per_second"] >= T.batching_single_min_requests_per_second, ev
            assert f"{tenant}.events" in ev["poor_topics"] and ev["bytes_per_request"] > 0
        else:  # what the producer pushed: one-record batches of 20 bytes (plus overhead), one per partition
            assert ev["records_per_request"] <= T.telemetry_max_records_per_request, ev
            assert ev["produce_requests_per_second"] >= T.telemetry_min_requests_per_second, ev
            assert 0 < ev["batch_size_avg_bytes"] < 200 and ev["client_software"] == "apache-kafka-java 3.9.1", ev
        if ev.get("thread_share_now") is not None:  # measured, and the 10x projection scales the measurement
            assert ev["thread_share_at_10x"] == pytest.approx(10 * ev["thread_share_now"], abs=1e-3)
            assert "of a broker thread (measured), at 10x the rate" in f["cause"]
        assert "linger.ms" in f["fix"]
    print(
        f"every finding seen {found['after']:.0f} s after the clients started, {found['reads']} reads, good clients "
        f"named {found['good_named']}"
    )
    # (found within the shared reads' wait: no assertion on time here, the bench measures it, bench/false_alarms.py)
    # No good client, of either module, is ever named in a finding that pages (issue 28), from the first read on;
    # advice (info) naming one is tolerated in a quarter of the reads (broker thread time on a starved 2-core machine
    # is noisy)
    assert not found["good_paged"], found["good_paged"]
    assert not [k for k in found["good_named"] if k[2] == "page"], found["good_named"]
    assert all(n <= found["reads"] / 4 for n in found["good_named"].values()), found


def test_clients_without_a_kip511_name_are_unknown_software_of_their_tenant_not_outdated(stack, found, clients):
    """The 2.3.1 producer and kafkajs 2.2.4 (current) send no KIP-511 name: a missing name is no evidence of age (issue
    28). The advisor lists them as unknown software with the possibilities, at info, nothing to upgrade: for the
    operators with every candidate, and for the tenant of each candidate client (its principal, else its client id,
    as the quota sensors label it), naming only that tenant's clients. The outdated-client alert says nothing of them
    (their negotiated API versions are all ones Kafka 4 serves)."""
    f = found["findings"][("unknown_software", "unknown", "client_software")]  # the only basis it has
    assert f["tenant"] is None  # the operators' copy: every candidate
    assert f["evidence"]["client_software_name"] == "unknown" and f["basis"] == "client_software"
    assert f["evidence"]["connections_held_on_average"] >= 1 and "2.4" in f["cause"] and "kafkajs" in f["cause"]
    assert f["severity"] == "info" and f["fix"].startswith("nothing to upgrade")
    assert {"js-nodejs-api", "jv2-producer"} <= set(f["candidates"]), f["candidates"]
    for tenant, client_id in (("js", "js-nodejs-api"), ("jv2", "jv2-producer")):
        mine = found["findings"][("unknown_software", f"unknown@{tenant}", "client_software")]
        assert mine["tenant"] == tenant and mine["candidates"] == [client_id] and mine["client_id"] == "", mine
        assert list(mine["evidence"]["candidates_by_tenant"]) == [tenant] and client_id in mine["cause"], mine
        assert (
            mine["severity"] == "info" and mine["fix"].startswith("nothing to upgrade") and "kafkajs" in mine["cause"]
        )
        assert not mine["hurts_other_tenants"]
    rule = next(r for r in load_rules(clients["config"].rules) if r.name == "KafkaOutdatedClient")
    source = PrometheusSource(stack.layout.prometheus_url)
    try:
        obs = detect_outdated_clients(
            rule,
            DetectorContext(
                source=source, now=datetime.now(timezone.utc), config=clients["config"], tenants=TenantIndex(TENANTS)
            ),
        )
    finally:
        source.close()
    assert not [o for o in obs if o.labels["client_software_name"] == "unknown"], obs


def test_the_alert_names_each_badly_batching_producer(stack, found, clients):
    """KafkaClientHurtsOtherTenants runs the same rules: on the test's window it names, by its own client id, each bad
    producer whose measured cost is material (>= 50 produce requests/s, issue 28); one the starved machine slowed
    below that is advice at info and pages nobody (at load ~20 on the shared 2-core machine, the 150-200 records/s
    offered came out at 6-19 requests/s for all but the 2.3.1 producer's 121). No good client is named in any
    detection, nor any client by a guess."""
    rule = next(r for r in load_rules(clients["config"].rules) if r.name == "KafkaClientHurtsOtherTenants")
    rule = dataclasses.replace(rule, params={**rule.params, "window": WINDOW})
    bad = {**BAD, "shop-batchless": "shop"}  # test_advisor_stack's one-record-per-batch producer runs beside them
    named: set[tuple[str, str]] = set()
    material: dict[str, float] = {}  # bad producer -> its produce requests/s when its finding was material

    def detected():
        source = PrometheusSource(stack.layout.prometheus_url)
        now = datetime.now(timezone.utc)
        try:
            obs = noisy_clients.detect(
                rule, DetectorContext(source=source, now=now, config=clients["config"], tenants=TenantIndex(TENANTS))
            )
            snap = read_snapshot(source, cluster="local", tenants=TENANTS, now=now, window=WINDOW)
        finally:
            source.close()
        for f in findings.advise(snap):
            if f.kind.value == "poor_batching" and f.client_id in bad:
                rate[f.client_id] = f.evidence.get("produce_requests_per_second")
                if f.hurts_other_tenants:
                    material[f.client_id] = rate[f.client_id]
        last[:] = [(o.labels["tenant"], o.labels.get("client_id", "")) for o in obs]
        every.update(last)
        named.update(pair for pair, o in zip(last, obs) if o.labels["finding"] == "poor_batching")
        return bool(material) and {(bad[c], c) for c in material} <= named

    last: list[tuple[str, str]] = []
    every: set[tuple[str, str]] = set()
    rate: dict[str, float] = {}
    wait_until(
        detected,
        40,
        interval=5,
        what=lambda: (
            f"the alert naming the material ones of {sorted(BAD)} "
            f"(named: {sorted(named)}; material: {material}; rates: {rate})"
        ),
    )
    print(f"alert named {sorted(c for _, c in named)}; produce requests/s of the bad ones {rate}")
    # In no detection: a good client is never the alert's name, nor a client by a guess (issue 28)
    assert not any(c in GOOD or shop_good(c) for _, c in every), every
    assert all(c in bad or c in SHOP_BAD for _, c in every if c), every


def test_the_consumer_whose_processing_is_its_bottleneck_is_named_from_its_poll_idle_ratio(found, clients):
    """cons-slow pushed (KIP-714) that it hardly waits in poll(): its 30 ms a record, not the brokers, set its pace, and
    its group falls behind cons-py. cons-good, reading the same records, is never named by this rule, in any read."""
    slow, good = (next(p for p in clients["procs"] if p.properties.get("client.id") == c) for c in (SLOW, "cons-good"))
    assert slow.running() and good.running(), [p.log.read_text()[-2000:] for p in (slow, good)]
    f = found["findings"][("slow_consumer_loop", SLOW, "client_telemetry")]
    ev = f["evidence"]
    tele = {
        t.client_id: (t.poll_idle_ratio, t.fetch_latency_seconds)
        for t in found["last"].telemetry
        if t.client_id.startswith("cons-")
    }
    print(
        f"slow consumer: {ev}; named in {found['slow_named']} reads, first {found['slow_first']} s after the "
        f"clients started; consumed: slow {slow.counts()}, good {good.counts()}; "
        f"(poll idle ratio, fetch latency) over the window {tele}"
    )
    assert f["tenant"] == "cons" and f["basis"] == ev["basis"] == "client_telemetry" and not f["hurts_other_tenants"]
    assert ev["poll_idle_ratio"] <= 0.1 and ev["client_software"] == "apache-kafka-java 3.9.1", ev
    assert ev["groups"][SLOW]["lag_records"] >= 1 and set(ev["groups"]) == {SLOW}, ev
    assert "max.poll.records" in f["fix"] and "max.poll.interval.ms" in f["fix"]
    assert set(found["slow_named"]) == {SLOW}, found["slow_named"]
    # the good consumer kept up with what the slow one could not (offered ~100 records/s against its ~33; the margin
    # is left to the machine: a starved cons-py offers less)
    assert good.counts().get("consumed", 0) > slow.counts().get("consumed", 0) > 0, (good.counts(), slow.counts())
