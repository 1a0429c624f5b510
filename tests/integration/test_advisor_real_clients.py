"""The advisor against real clients nobody here wrote (issue 17), on the shared session stack, as a new user tried it:
about 200 small records a second from each of

- ``jv3-producer``: Apache Kafka's Java producer 3.9.1 with linger.ms=0, batch.size=1;
- ``kc-kcat``: kcat (librdkafka 2.0.2, Debian's) with linger.ms=0, batch.num.messages=1;
- ``jv2-producer``: the Java producer 2.3.1 (older than KIP-511: it sends no client software name) with linger.ms=0;
- ``good-java`` (Java 3.9.1) and ``good-py`` (confluent-kafka): linger.ms=100, as the advice says;

and two Java 3.9.1 consumers of tenant ``cons``'s topic (fed ~100 records/s by ``cons-py``, confluent-kafka with
linger.ms=100, on one partition): ``cons-slow`` spends 30 ms on each record between polls (at most ~33 records/s: its
application is the bottleneck), ``cons-good`` keeps up with fetch.min.bytes=65536, fetch.max.wait.ms=500.

Each producer is a tenant of its own, and every bad one is a small client on a lightly loaded cluster, under the 2 %
thread floor of the relative rule. The stack's brokers carry kafka-health's KIP-714 plugin, so the Java 3.9.1 clients
push their own metrics: the producer is named on its own records per request and batch size
(``client_telemetry``) once it has pushed them, on its topic's counts before; kcat (librdkafka 2.0.2 predates
KIP-714) and the 2.3.1 producer on the brokers' per-topic records per request (``topic_records_per_request``), all
within one advisor window (2 minutes). The well-configured clients are never named (at most a quarter of the reads, as
in test_advisor_stack: broker thread time on a starved 2-core machine is noisy), and the 2.3.1 client's nameless
connections are found as an outdated client (the advisor's operator view and KafkaOutdatedClient's detector). The slow
consumer is named ``slow_consumer_loop`` from the poll idle ratio it pushed itself, with its group's lag; the one
keeping up never is.

Kafka 4.1 accepts the 2.3.1 client (it negotiates API versions Kafka 4 still serves: checked by hand with
tests/harness/javaclients.py, its produce requests succeed); the brokers label its connections ``unknown``.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from datetime import datetime, timezone

import pytest
from confluent_kafka import Producer

from alerts.detectors import DetectorContext, noisy_clients
from alerts.detectors.clients import detect_outdated_clients
from alerts.rules import load_rules
from monitor.advisor import findings
from monitor.advisor.source import read_snapshot
from monitor.core.config import CollectionSettings, TenantConfig, TenantSelector
from monitor.core.prom import PrometheusSource
from monitor.core.tenancy import TenantIndex
from monitor.loadgen import ensure_topics
from monitor.serve import run
from tests.conftest import wait_until
from tests.harness.javaclients import JavaClient, KcatProducer
from tests.harness.polyglot import PolyglotProducer, ensure_franz, ensure_kafkajs

pytestmark = pytest.mark.integration

NAMES = ("jv3", "kc", "jv2", "good", "cons", "js", "fz")
TENANTS = tuple(
    TenantConfig(
        name=n,
        selectors=(
            TenantSelector(
                cluster="local", topic_prefixes=(f"{n}.",), client_id_prefixes=(f"{n}-",), group_prefixes=(f"{n}-",)
            ),
        ),
    )
    for n in NAMES
)
BAD = {"jv3-producer": "jv3", "kc-kcat": "kc", "jv2-producer": "jv2", "js-nodejs-api": "js", "fz-sync": "fz"}
# The evidence each may rest on, best first: the 3.9.1 producer's own telemetry once it pushes it (the stack
# subscribes clients every 10 s; on a starved machine its first push can come after the window's figures), else its
# topic's counts, like kcat (librdkafka 2.0.2 predates KIP-714) and the 2.3.1 producer
BASIS = {
    "jv3-producer": ("client_telemetry", "topic_records_per_request"),
    "kc-kcat": ("topic_records_per_request",),
    "jv2-producer": ("topic_records_per_request",),
    "js-nodejs-api": ("topic_records_per_request",),
    "fz-sync": ("topic_records_per_request",),
}
GOOD = ("good-java", "good-py", "cons-py", "cons-good", "good-js", "good-franz")
JS_RATE = 150  # issue 28's search-nodejs-api: one awaited send() per record at 150 records/s
SLOW = "cons-slow"  # the consumer whose application is its bottleneck
WINDOW = "2m"
RATE = 200
CONSUMED_RATE = 100  # what cons-py offers the consumers: three times what cons-slow can process


def _confluent(
    stop: threading.Event, servers: str, client_id: str = "good-py", topic: str = "good.py", rate: float = RATE
) -> None:
    p = Producer({"bootstrap.servers": servers, "client.id": client_id, "linger.ms": 100})
    sent, start = 0, time.monotonic()
    while not stop.is_set():
        for _ in range(int((time.monotonic() - start) * rate) - sent):
            p.produce(topic, b"x" * 20)
            sent += 1
        p.poll(0)
        stop.wait(0.005)
    p.flush(10)


@pytest.fixture(scope="module")
def clients(stack, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("real-clients")
    ensure_kafkajs(tmp / "kafkajs-install.log"), ensure_franz(tmp / "franz-build.log")  # cached after the first
    config = stack.config(tenants=TENANTS, store_url=f"sqlite:///{tmp / 'store.db'}")
    config = config.model_copy(update={"collection": CollectionSettings(interval_seconds=5)})
    servers = stack.layout.bootstrap_servers
    ensure_topics(
        servers,
        [
            "jv3.events",
            "kc.events",
            "jv2.events",
            "good.java",
            "good.py",
            "js.events",
            "fz.events",
            "good.js",
            "good.franz",
        ],
    )
    # One partition: cons-py's ~10 requests/s then carry ~10 records each (over three partitions a topic's count
    # would fall to ~3 records per partition batch at ~30/s, which poor_batching names)
    ensure_topics(servers, ["cons.events"], partitions=1)
    base = {"bootstrap.servers": servers}
    procs = [
        JavaClient(
            version="3.9.1",
            mode="produce",
            topic="jv3.events",
            rate=RATE,
            record_bytes=20,
            log=tmp / "jv3.log",
            properties={**base, "client.id": "jv3-producer", "linger.ms": 0, "batch.size": 1},
        ),
        JavaClient(
            version="2.3.1",
            mode="produce",
            topic="jv2.events",
            rate=RATE,
            record_bytes=20,
            log=tmp / "jv2.log",
            properties={**base, "client.id": "jv2-producer", "linger.ms": 0},
        ),
        JavaClient(
            version="3.9.1",
            mode="produce",
            topic="good.java",
            rate=RATE,
            record_bytes=20,
            log=tmp / "good-java.log",
            properties={**base, "client.id": "good-java", "linger.ms": 100, "batch.size": 65536},
        ),
        KcatProducer(
            topic="kc.events",
            rate=RATE,
            record_bytes=20,
            log=tmp / "kcat.log",
            properties={**base, "client.id": "kc-kcat", "linger.ms": 0, "batch.num.messages": 1},
        ),
        # kafkajs 2.2.4 (no KIP-511 name, no telemetry) and franz-go 1.22.3: each on its defaults, good and bad
        PolyglotProducer(
            kind="kafkajs",
            client_id="js-nodejs-api",
            topic="js.events",
            brokers=servers,
            rate=JS_RATE,
            mode="await-each",
            log=tmp / "js-bad.log",
        ),
        PolyglotProducer(
            kind="kafkajs",
            client_id="good-js",
            topic="good.js",
            brokers=servers,
            rate=RATE,
            mode="batch",
            log=tmp / "js-good.log",
        ),
        PolyglotProducer(
            kind="franz",
            client_id="fz-sync",
            topic="fz.events",
            brokers=servers,
            rate=JS_RATE,
            mode="sync-each",
            log=tmp / "fz-bad.log",
        ),
        PolyglotProducer(
            kind="franz",
            client_id="good-franz",
            topic="good.franz",
            brokers=servers,
            rate=RATE,
            mode="default",
            log=tmp / "fz-good.log",
        ),
        JavaClient(
            version="3.9.1",
            mode="consume",
            topic="cons.events",
            log=tmp / "cons-slow.log",
            process_ms=30,
            properties={**base, "client.id": SLOW, "group.id": SLOW, "max.poll.records": 10},
        ),
        JavaClient(
            version="3.9.1",
            mode="consume",
            topic="cons.events",
            log=tmp / "cons-good.log",
            properties={
                **base,
                "client.id": "cons-good",
                "group.id": "cons-good",
                "fetch.min.bytes": 65536,
                "fetch.max.wait.ms": 500,
            },
        ),
    ]
    stop = threading.Event()
    threads = [
        threading.Thread(
            target=run,
            args=(config, ("collector",), "127.0.0.1", stack.layout.service_port),
            kwargs={"stop_event": stop},
            daemon=True,
            name="serve",
        ),
        threading.Thread(target=_confluent, args=(stop, servers), daemon=True, name="good-py"),
        threading.Thread(
            target=_confluent,
            args=(stop, servers, "cons-py", "cons.events", CONSUMED_RATE),
            daemon=True,
            name="cons-py",
        ),
    ]
    try:
        for th in threads:
            th.start()
        for p in procs:
            p.start()
        yield {"config": config, "procs": procs, "started": datetime.now(timezone.utc)}
    finally:
        stop.set()
        for p in procs:  # all told at once, then waited for: a batch.size=1 producer's flush can take a while
            if p.proc and p.proc.stdin:
                p.proc.stdin.close()
        for p in procs:
            p.stop(timeout=10)
        for th in threads:
            th.join(30)
        assert not any(th.is_alive() for th in threads), "client threads did not stop"


def _snapshot(stack):
    source = PrometheusSource(stack.layout.prometheus_url)
    try:
        return read_snapshot(source, cluster="local", tenants=TENANTS, now=datetime.now(timezone.utc), window=WINDOW)
    finally:
        source.close()


@pytest.fixture(scope="module")
def found(stack, clients):
    """The findings read every 5 s until each expected (kind, client, basis) has been seen: the latest copy of each,
    how many reads, and in how many a good client was named."""
    # unknown_software: the operators' copy, and one for each tenant of a client without a KIP-511 name (issue 28)
    expected = {("poor_batching", c) for c in BAD} | {
        ("unknown_software", "unknown"),
        ("unknown_software", "unknown@js"),
        ("unknown_software", "unknown@jv2"),
        ("slow_consumer_loop", SLOW),
    }
    seen: dict[tuple[str, str, str], dict] = {}
    reads, good_named, last, slow_named, slow_first = [0], {}, [None], {}, {}

    def all_found():
        snap = _snapshot(stack)
        last[0] = snap
        reads[0] += 1
        for f in findings.advise(snap):
            d = f.as_json()
            # unknown_software names software, not a client: one copy for operators, one per tenant of its candidates
            name = d["client_id"] or d["evidence"].get("client_software_name", "")
            if d["kind"] == "unknown_software" and d["tenant"]:
                name += f"@{d['tenant']}"
            seen[(d["kind"], name, d["basis"])] = d
            # a name is the client_id (suspects and candidates are not names); a page is one that hurts others
            if d["client_id"] in GOOD:
                key = (d["client_id"], d["kind"], "page" if d["hurts_other_tenants"] else "advice")
                good_named[key] = good_named.get(key, 0) + 1
            if d["kind"] == "slow_consumer_loop":  # every client it names, in any read, and when first
                slow_named[d["client_id"]] = slow_named.get(d["client_id"], 0) + 1
                slow_first.setdefault(
                    d["client_id"], round((datetime.now(timezone.utc) - clients["started"]).total_seconds())
                )
        # a good client's finding (counted in good_named, judged below) is not one expected
        return expected <= {(k, c) for k, c, b in seen if k != "poor_batching" or b in BASIS.get(c, ())}

    def what() -> str:
        s = last[0]
        topics = {
            t.topic: (round(t.messages_per_second, 1), round(t.produce_requests_per_second, 1))
            for t in (s.topics if s else ())
            if t.tenant
        }
        tele = {
            t.client_id: (t.records_per_request, t.produce_request_rate, t.poll_idle_ratio, t.fetch_latency_seconds)
            for t in (s.telemetry if s else ())
        }
        groups = {g.group: (g.client_ids, g.lag_records, g.lag_change_records) for g in (s.groups if s else ())}
        cl = {
            f"{c.user}/{c.client_id}": (
                round(c.produce_bytes_per_second),
                round(c.request_time_ratio, 4),
                round(c.seen_share, 2),
            )
            for c in (s.clients if s else ())
            if c.tenant
        }
        unnamed = {f["tenant"]: f["candidates"] for (k, c, b), f in seen.items() if k == "poor_batching" and not c}
        return (
            f"{sorted(expected)} (seen: {sorted(seen)}; topics {topics}; telemetry {tele}; groups {groups}; "
            f"clients {cl}; unnamed {unnamed}; nameless {s.cluster.nameless_connections if s else None})"
        )

    # one advisor window after the slowest client's first records: JVMs, node and the Go client take up to a minute
    # to start on the loaded 2-core machine (the 2.3.1 producer's sensor covered 0.7 of the window at 150 s)
    wait_until(all_found, 200, interval=5, what=what)
    return {
        "findings": seen,
        "reads": reads[0],
        "good_named": good_named,
        "slow_named": slow_named,
        "slow_first": slow_first,
        "last": last[0],
        "after": (datetime.now(timezone.utc) - clients["started"]).total_seconds(),
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
            assert ev["records_per_request"] <= 4.0 and ev["produce_requests_per_second"] >= 5, ev
            assert f"{tenant}.events" in ev["poor_topics"] and ev["bytes_per_request"] > 0
        else:  # what the producer pushed: one-record batches of 20 bytes (plus overhead), one per partition
            assert ev["records_per_request"] <= 5.0 and ev["produce_requests_per_second"] >= 5, ev
            assert 0 < ev["batch_size_avg_bytes"] < 200 and ev["client_software"] == "apache-kafka-java 3.9.1", ev
        if ev.get("thread_share_now") is not None:  # measured, and the 10x projection scales the measurement
            assert ev["thread_share_at_10x"] == pytest.approx(10 * ev["thread_share_now"], abs=1e-3)
            assert "of a broker thread (measured), at 10x the rate" in f["cause"]
        assert "linger.ms" in f["fix"]
    print(
        f"every finding seen {found['after']:.0f} s after the clients started, {found['reads']} reads, good clients "
        f"named {found['good_named']}"
    )
    # Within one advisor window of the clients' start (plus a scrape or two)
    assert found["after"] <= 200
    # No good client is ever named in a finding that pages (issue 28), from the first read on; advice (info) naming
    # one is tolerated in a quarter of the reads (broker thread time on a starved 2-core machine is noisy)
    assert not [k for k in found["good_named"] if k[2] == "page"], found["good_named"]
    assert all(n <= found["reads"] / 4 for n in found["good_named"].values()), found


def test_the_pre_kip511_client_is_unknown_software_not_called_outdated(stack, found, clients):
    """The 2.3.1 producer sends no KIP-511 name, as kafkajs (current) does not either: a missing name is no evidence
    of age (issue 28). The advisor lists it as unknown software with the possibilities, at info; the outdated-client
    alert says nothing of it (its negotiated API versions are all ones Kafka 4 serves)."""
    f = found["findings"][("unknown_software", "unknown", "client_software")]  # the only basis it has
    assert f["tenant"] is None  # Kafka cannot name its tenant: operators are told
    assert f["evidence"]["client_software_name"] == "unknown" and f["basis"] == "client_software"
    assert f["evidence"]["connections_held_on_average"] >= 1 and "2.4" in f["cause"] and "kafkajs" in f["cause"]
    assert f["severity"] == "info" and f["fix"].startswith("nothing to upgrade")
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
            if f.kind.value == "poor_batching" and f.client_id in BAD:
                rate[f.client_id] = f.evidence.get("produce_requests_per_second")
                if f.hurts_other_tenants:
                    material[f.client_id] = rate[f.client_id]
        last[:] = [(o.labels["tenant"], o.labels.get("client_id", "")) for o in obs]
        every.update(last)
        named.update(pair for pair, o in zip(last, obs) if o.labels["finding"] == "poor_batching")
        return bool(material) and {(BAD[c], c) for c in material} <= named

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
    assert not any(c in GOOD for _, c in every), every
    assert all(c in BAD for _, c in every if c), every


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
    assert found["slow_first"][SLOW] <= 165  # within one advisor window of its start, as the others
    # the good consumer kept up with what the slow one could not
    assert good.counts().get("consumed", 0) > 2 * slow.counts().get("consumed", 0) > 0, (good.counts(), slow.counts())
