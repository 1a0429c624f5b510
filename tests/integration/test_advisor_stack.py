"""The client advisor on the real stack: one zoo of real clients of four libraries, misbehaving and well-configured,
started once on the shared session stack, the real collectors feeding the stack's Prometheus, read over one advisor
window (2 minutes).

Tenant ``shop``, confluent-kafka (librdkafka) clients in threads of this process:

- ``shop-batchless``: a producer with linger.ms=0 and one 10-byte record per batch, on three partitions ->
  poor_batching naming it, its cost material (the alert names it);
- group ``shop-flappy``: a consumer that joins, gets its assignment and leaves, in a loop -> frequent_rebalances;
- ``shop-reconnect``: a producer created and dropped for every record -> connection_churn with it as a suspect;
- ``shop-storm``: a producer to a topic that does not exist, auto-creation off, retry.backoff.ms at its minimum ->
  request_storm naming it (every metadata answer is UNKNOWN_TOPIC_OR_PARTITION);
- ``shop-throttled``: a producer at 64 KiB/s with a 16 KiB/s produce quota of its own -> throttled_by_quota;
- ``shop-good``, ``shop-good-2`` and ``shop-good-3``: producers with linger.ms=100-200, and their consumers
  (fetch.min.bytes 64 KiB, fetch.wait.max.ms 500, as the advice says) -> no finding names them.

Tenants ``jv3``, ``kc``, ``jv2``, ``good``, ``cons``, ``js``, ``fz`` (issues 17 and 28): real clients nobody here
wrote, each a process, of 20-byte records (the well-configured ones: 500 bytes, kafkajs and franz-go 2 KiB, see
``GOOD_BYTES``):

- ``jv3-producer``: Apache Kafka's Java producer 3.9.1 with linger.ms=0, batch.size=1;
- ``kc-kcat``: kcat (librdkafka 2.0.2, Debian's) with linger.ms=0, batch.num.messages=1;
- ``jv2-producer``: the Java producer 2.3.1 (older than KIP-511: it sends no client software name) with linger.ms=0;
- ``js-nodejs-api``: kafkajs 2.2.4 (no KIP-511 name, no telemetry) awaiting one send() per record, as issue 28's
  search-nodejs-api (four at a time); ``fz-sync``: franz-go 1.22.3, ProduceSync per record;
- ``good-java`` (Java 3.9.1) and ``good-py`` (confluent-kafka): linger.ms=100, as the advice says; ``good-js``
  (kafkajs, a send() of its records every 100 ms) and ``good-franz`` (franz-go on its defaults);

and two Java 3.9.1 consumers of tenant ``cons``'s topic (fed ~100 records/s by ``cons-py``, confluent-kafka with
linger.ms=100, on one partition): ``cons-slow`` spends 30 ms on each record between polls (at most ~33 records/s: its
application is the bottleneck), ``cons-good`` keeps up with fetch.min.bytes=65536, fetch.max.wait.ms=500.

Tenant ``ads`` has no client: it sees none of shop's findings.

Why one zoo, and why these rates. The two sets used to run as two modules, each starting its clients and waiting its
own window. Together on one loaded 2-core machine the first merges starved the brokers: the one-record-per-request
producers offered 150-400 records/s each, waited for every in-sync replica, and reached 0-7 requests/s, under the 5
the rules judge (a one-record request is acknowledged only after the followers' next fetch, and a connection's
requests are served one after another). Here the bad producers ask for the leader's acknowledgement alone
(``acks=1``, the default of the 2.3.1 client; the habit judged, one record a request, is the same) and offer what the
rules need with a margin: 30 records/s for the ones whose settings force one record a request (batch.size=1,
batch.num.messages=1, an awaited send, ProduceSync), 60 for the 2.3.1 producer (its records share requests once it is
slowed: it must stay at <= 4 a request at >= 20 requests/s), 400 over three partitions for shop-batchless (its cost
must be material for the alert: 5 produce requests/s for each of the cluster's 24 request-handler threads, 120; the
100 it offered before is no more than a default producer sends at 100 records/s, which pages nobody). js-nodejs-api
awaits each send() in four concurrent loops, as a service handling four requests at a time (still one record a
request): one loop's awaited sends reached 3-6 a second on the loaded machine. The well-configured clients keep
their defaults (every in-sync replica).

The collectors and the alert engine run as ``serve --role collector,alerts`` on the port the stack's Prometheus
scrapes, so the findings also come back from Prometheus as ``kafka_client_advisor_finding`` and through the tenant
dashboard's findings table. Then the same findings through ``GET /api/v1/tenants/shop/advice`` (tenant isolation on
real data), the capacity endpoint, and the CLI.

Findings come and go as the clients' rates move inside the window, so one series of reads (every 5 s, at least 10)
waits until each expected finding has been seen at least once. Every read is judged from the first one on (issue 28:
"including the first minute"): no good client is named by a finding that pages, in any read; advice (info) naming
one is tolerated in at most a quarter of the reads (broker thread time on a starved 2-core machine is noisy).

Kafka 4.1 accepts the 2.3.1 client (it negotiates API versions Kafka 4 still serves: checked by hand with
tests/harness/javaclients.py, its produce requests succeed); the brokers label its connections ``unknown``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest
import yaml
from confluent_kafka import Consumer, KafkaException, Producer

from alerts.detectors import DetectorContext, noisy_clients
from alerts.detectors.clients import detect_outdated_clients
from alerts.rules import load_rules
from dashboards.boards.tenant import FINDINGS_SINCE
from dashboards.promql import substitute
from monitor import cli
from monitor.advisor import findings, service
from monitor.advisor.source import read_snapshot
from monitor.core.config import CollectionSettings, TenantConfig, TenantSelector
from monitor.core.prom import PrometheusSource
from monitor.core.store import Store
from monitor.core.tenancy import TenantIndex
from monitor.loadgen import LoadGenerator, TenantLoad, ensure_topics
from monitor.serve import run
from monitor.stack import kafka as stack_kafka
from monitor.store.migrate import upgrade
from tests.api_fixtures import build_api, new_token
from tests.conftest import wait_until
from tests.harness.javaclients import JavaClient, KcatProducer
from tests.harness.polyglot import PolyglotProducer, ensure_franz, ensure_kafkajs

# loads_machine: the zoo of real clients (five JVMs, kafkajs, franz-go, kcat, librdkafka) keeps 2 cores at load 35;
# beside the own-stack tests of scripts/test.sh's background chain shop-batchless's batching went unjudged (CI)
pytestmark = [pytest.mark.integration, pytest.mark.loads_machine]


def _tenant(name: str, *, groups: bool = True) -> TenantConfig:
    return TenantConfig(
        name=name,
        selectors=(
            TenantSelector(
                cluster="local",
                topic_prefixes=(f"{name}.",),
                client_id_prefixes=(f"{name}-",),
                group_prefixes=(f"{name}-",) if groups else (),
            ),
        ),
    )


SHOP = _tenant("shop")
TENANTS = (SHOP, _tenant("ads", groups=False), *(_tenant(n) for n in ("jv3", "kc", "jv2", "good", "cons", "js", "fz")))
WINDOW = "2m"
STARTED: dict[str, datetime] = {}  # when shop's load ("load") and the real clients ("clients") started
QUIET = {"logger": logging.getLogger("advisor-test-librdkafka")}
# What polling_too_often's fix advises. With librdkafka's defaults (fetch.min.bytes=1) a consumer of a topic that
# gets a batch every 100-200 ms fetches each batch alone; on a loaded CI machine that cost 5.5 times the norm per
# MiB once, and the "good" consumer was named, rightly by the rule.
GOOD_FETCH = {"fetch.min.bytes": 65536, "fetch.wait.max.ms": 500}

# The real clients' roles
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
SHOP_BAD = ("shop-batchless", "shop-storm", "shop-reconnect", "shop-flapper")  # the only shop clients a page may name
SLOW = "cons-slow"  # the consumer whose application is its bottleneck
RATE = 200  # the well-configured producers
ONE_A_REQUEST_RATE = 30  # the producers whose settings force one record a request (see the module's docstring)
JV2_RATE = 60  # the 2.3.1 producer: its records share requests once it is slowed
BATCHLESS_RATE = 400  # shop-batchless: its cost must be material (>= 120 requests/s on 3 brokers), with a margin
# The well-configured real producers' records (the bad ones' are 20 bytes). The thread-time rules judge a client
# against the lower median of the other producers' broker thread time per MiB: with 20-byte records the well-batching
# producers cost 12-60 s/MiB (a request costs what it costs, whatever it carries), the median sat among them, and
# shop-batchless (50 s/MiB) was no longer 5x above it (named by nobody: a tenant-and-topic finding). Records of a few
# hundred bytes are what real applications send, and keep the norm on the well-batching side.
GOOD_BYTES = 500
# kafkajs and franz-go on their defaults put fewer records in a request than a linger.ms=100 producer (good.js ~7,
# good.franz ~2.7 at 200 records/s), so at 500 bytes they cost 3-5 times more per MiB (0.17 and 0.25 s/MiB against
# 0.02-0.07 for the librdkafka and Java ones, ci32). Seasoned producers were then nine that batch and seven that do
# not, the lower median of shop-batchless's peers was the eighth cheapest, kafkajs, and shop-batchless (0.6 s/MiB)
# stood at 3.5x it, under the rules' 5x, in every read of a full-suite run (ci30-ci32; it passed alone). Records of
# 2 KiB, as services sending JSON documents do, put the two at the others' cost per MiB and leave the norm with the
# producers that batch: the habit the rules judge is the same.
POLYGLOT_GOOD_BYTES = 2048
CONSUMED_RATE = 100  # what cons-py offers the consumers: three times what cons-slow can process


def _good(name: str) -> bool:
    return name.startswith("shop-good") or name in GOOD


def _flapper(stop: threading.Event, servers: str) -> None:
    """Join group shop-flappy, wait for the assignment, leave; again and again."""
    while not stop.is_set():
        assigned = threading.Event()
        c = Consumer(
            {
                "bootstrap.servers": servers,
                "group.id": "shop-flappy",
                "client.id": "shop-flapper",
                "auto.offset.reset": "latest",
                **QUIET,
            }
        )
        c.subscribe(["shop.good"], on_assign=lambda *_: assigned.set())
        for _ in range(40):
            c.poll(0.2)
            if assigned.is_set() or stop.is_set():
                break
        stop.wait(1.0)  # a member for a moment, so the collectors' samples see it
        c.close()
        stop.wait(2.0)


def _reconnector(stop: threading.Event, servers: str) -> None:
    """A new producer for every record: connect, ApiVersions, Metadata, Produce, close."""
    while not stop.is_set():
        p = Producer({"bootstrap.servers": servers, "client.id": "shop-reconnect", **QUIET})
        p.produce("shop.reconnect", b"r")
        p.flush(5)
        del p
        stop.wait(0.1)


def _stormer(stop: threading.Event, servers: str) -> None:
    """Produce to ``shop.missing``, which does not exist, with auto-creation off and retry.backoff.ms at its minimum:
    librdkafka re-asks for the topic's metadata at once, again and again, and every answer is an error. It gives up on
    the topic after topic.metadata.propagation.max.ms (30 s); like a crash-looping application, a new producer
    then starts over."""
    while not stop.is_set():
        p = Producer(
            {
                "bootstrap.servers": servers,
                "client.id": "shop-storm",
                "allow.auto.create.topics": False,
                "retry.backoff.ms": 1,
                "retry.backoff.max.ms": 1,
                "message.timeout.ms": 10000,
                **QUIET,
            }
        )
        started = time.monotonic()
        while not stop.is_set() and time.monotonic() - started < 15:
            try:
                p.produce("shop.missing", b"s")
            except (BufferError, KafkaException):
                pass  # the topic is known to be missing now: the application keeps trying
            p.poll(0)
            stop.wait(0.01)
        p.purge()
        p.flush(0)


def _confluent(stop: threading.Event, servers: str, client_id: str, topic: str, rate: float) -> None:
    """confluent-kafka with linger.ms=100, as the advice says, at ``rate`` records of GOOD_BYTES a second."""
    p = Producer({"bootstrap.servers": servers, "client.id": client_id, "linger.ms": 100})
    sent, start = 0, time.monotonic()
    while not stop.is_set():
        for _ in range(int((time.monotonic() - start) * rate) - sent):
            p.produce(topic, b"x" * GOOD_BYTES)
            sent += 1
        p.poll(0)
        stop.wait(0.005)
    p.flush(10)


def _throttle(stack) -> None:
    """A produce quota of 16 KiB/s for client id shop-throttled only (the stack's default quota never throttles)."""
    L = stack.layout
    stack_kafka.set_client_quota(
        L,
        stack_kafka.require_java(),
        L.logs_dir / "advisor-quota.log",
        client_id="shop-throttled",
        quota="producer_byte_rate=16384",
    )


def _rules_file(path: Path) -> str:
    """KafkaClientHurtsOtherTenants with the test's window: its built-in 10m would also see clients of earlier tests
    on this shared stack, which move the cluster norm."""
    from alerts.rules import BUILTIN

    spec = next(r for r in yaml.safe_load(BUILTIN.read_text())["rules"] if r["name"] == "KafkaClientHurtsOtherTenants")
    path.write_text(yaml.safe_dump({"rules": [{**spec, "params": {**spec["params"], "window": WINDOW}}]}))
    return str(path)


def _shop_load(servers: str) -> LoadGenerator:
    return LoadGenerator(
        servers,
        [
            TenantLoad(
                "shop",
                ("shop.batchless",),
                "shop-batchless",
                "shop-batchless-readers",
                messages_per_second=BATCHLESS_RATE,
                message_bytes=10,
                producer_settings={"linger.ms": 0, "batch.num.messages": 1, "batch.size": 200, "acks": 1},
            ),
            TenantLoad(
                "shop",
                ("shop.good",),
                "shop-good",
                "shop-good-readers",
                messages_per_second=400,
                message_bytes=100,
                producer_settings={"linger.ms": 200, "batch.size": 262144},
                consumer_settings=GOOD_FETCH,
            ),
            # Full batches of some KiB each. Not compressed: the load's payload is one repeated byte, which lz4 shrinks
            # twentyfold, and a client moving 2 KB/s in 200-byte requests does cost the broker much per MiB.
            TenantLoad(
                "shop",
                ("shop.good2",),
                "shop-good-2",
                "shop-good-2-readers",
                messages_per_second=400,
                message_bytes=200,
                producer_settings={"linger.ms": 100, "batch.size": 131072},
                consumer_settings=GOOD_FETCH,
            ),
            TenantLoad(
                "shop",
                ("shop.good3",),
                "shop-good-3",
                "shop-good-3-readers",
                messages_per_second=200,
                message_bytes=500,
                producer_settings={"linger.ms": 200, "batch.size": 262144},
                consumer_settings=GOOD_FETCH,
            ),
            # 64 KiB/s in well-filled batches against a 16 KiB/s quota: throttled, but not a costly client.
            TenantLoad(
                "shop",
                ("shop.throttled",),
                "shop-throttled",
                "shop-throttled-readers",
                messages_per_second=64,
                message_bytes=1024,
                producer_settings={"linger.ms": 100},
            ),
        ],
    )


def _real_clients(servers: str, tmp: Path) -> list[JavaClient | KcatProducer | PolyglotProducer]:
    """The processes, the Java producers first (jv3, then jv2: the first test reads their counts)."""
    base = {"bootstrap.servers": servers}
    java = (  # (version, topic, client id, records/s, settings)
        ("3.9.1", "jv3.events", "jv3-producer", ONE_A_REQUEST_RATE, {"linger.ms": 0, "batch.size": 1, "acks": 1}),
        ("2.3.1", "jv2.events", "jv2-producer", JV2_RATE, {"linger.ms": 0}),  # acks=1: 2.3's default
        ("3.9.1", "good.java", "good-java", RATE, {"linger.ms": 100, "batch.size": 65536}),
    )
    size = {"good-java": GOOD_BYTES}
    polyglot = (  # kafkajs 2.2.4 and franz-go 1.22.3: (kind, client id, topic, records/s, style, settings)
        ("kafkajs", "js-nodejs-api", "js.events", ONE_A_REQUEST_RATE, "await-each", {"acks": 1, "concurrency": 4}),
        ("kafkajs", "good-js", "good.js", RATE, "batch", {"record_bytes": POLYGLOT_GOOD_BYTES}),  # on its defaults
        ("franz", "fz-sync", "fz.events", ONE_A_REQUEST_RATE, "sync-each", {"acks": 1}),
        ("franz", "good-franz", "good.franz", RATE, "default", {"record_bytes": POLYGLOT_GOOD_BYTES}),  # its defaults
    )
    return [
        *(
            JavaClient(
                version=version,
                mode="produce",
                topic=topic,
                rate=rate,
                record_bytes=size.get(cid, 20),
                log=tmp / f"{cid}.log",
                properties={**base, "client.id": cid, **settings},
            )
            for version, topic, cid, rate, settings in java
        ),
        KcatProducer(
            topic="kc.events",
            rate=ONE_A_REQUEST_RATE,
            record_bytes=20,
            log=tmp / "kcat.log",
            properties={**base, "client.id": "kc-kcat", "linger.ms": 0, "batch.num.messages": 1, "acks": 1},
        ),
        *(
            PolyglotProducer(
                kind=kind,
                client_id=cid,
                topic=topic,
                brokers=servers,
                rate=rate,
                mode=mode,
                log=tmp / f"{cid}.log",
                **extra,
            )
            for kind, cid, topic, rate, mode, extra in polyglot
        ),
        JavaClient(
            version="3.9.1",
            mode="consume",
            topic="cons.events",
            log=tmp / "cons-slow.log",
            process_ms=30,
            # 100 records a poll: 3 s of work between polls. Its poll idle ratio must stay under 0.1, and on a starved
            # machine a poll() that hands over buffered records still takes tens of ms (10 a poll read 0.095)
            properties={**base, "client.id": SLOW, "group.id": SLOW, "max.poll.records": 100},
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


@pytest.fixture(scope="module")
def zoo(stack, tmp_path_factory):
    """``serve --role collector,alerts`` (in a thread) on the port the stack's Prometheus scrapes, with its own store,
    and every client above, started once. Yields the config, the client processes and when they started."""
    tmp = tmp_path_factory.mktemp("advisor")
    ensure_kafkajs(tmp / "kafkajs-install.log"), ensure_franz(tmp / "franz-build.log")  # cached after the first
    config = stack.config(tenants=TENANTS, store_url=f"sqlite:///{tmp / 'store.db'}")
    config = config.model_copy(
        update={
            "collection": CollectionSettings(interval_seconds=5),
            "rules": config.rules.model_copy(update={"files": (_rules_file(tmp / "rules.yaml"),)}),
        }
    )
    servers = stack.layout.bootstrap_servers
    # One partition: cons-py's ~10 requests/s then carry ~10 records each (over three partitions a topic's count
    # would fall to ~3 records per partition batch at ~30/s, which poor_batching names)
    ensure_topics(
        servers,
        ["shop.good", "shop.good2", "shop.good3", "shop.reconnect", "shop.throttled", "cons.events"],
        partitions=1,
    )
    ensure_topics(
        servers,
        [
            "shop.batchless",
            "jv3.events",
            "kc.events",
            "jv2.events",
            "good.java",
            "good.py",
            "js.events",
            "fz.events",
            "good.js",
        ]
        + ["good.franz"],
    )
    procs = _real_clients(servers, tmp)
    stop = threading.Event()
    threads = [
        threading.Thread(
            target=run,
            args=(config, ("collector", "alerts"), "127.0.0.1", stack.layout.service_port),
            kwargs={"stop_event": stop},
            daemon=True,
            name="serve",
        ),
        *(
            threading.Thread(target=f, args=(stop, servers), daemon=True, name=f.__name__)
            for f in (_flapper, _reconnector, _stormer)
        ),
        threading.Thread(
            target=_confluent, args=(stop, servers, "good-py", "good.py", RATE), daemon=True, name="good-py"
        ),
        threading.Thread(
            target=_confluent,
            args=(stop, servers, "cons-py", "cons.events", CONSUMED_RATE),
            daemon=True,
            name="cons-py",
        ),
    ]
    load = _shop_load(servers)
    # The quota first, before any client: kafka-configs is a JVM, and beside the zoo's five starting JVMs on a loaded
    # machine it took minutes, so shop-throttled ran unthrottled for most of the window (57.9 KB/s measured)
    _throttle(stack)
    try:
        for th in threads:
            th.start()
        load.start()
        STARTED["load"] = datetime.now(timezone.utc)
        # Then the processes: cons-py's records are waiting when cons-slow first polls (a consumer that starts on an
        # empty topic idles in poll() until they come, and its window's poll idle ratio says so for two minutes)
        for p in procs:
            p.start()
        STARTED["clients"] = datetime.now(timezone.utc)
        yield {"config": config, "procs": procs}
    finally:
        stop.set()
        load.stop()
        for p in procs:  # all told at once, then waited for: a batch.size=1 producer's flush can take a while
            if p.proc and p.proc.stdin:
                p.proc.stdin.close()
        for p in procs:
            p.stop(timeout=10)
        for th in threads:
            th.join(30)
        assert not any(th.is_alive() for th in threads), "client threads did not stop"


@pytest.fixture(scope="module")
def watched(zoo):
    """The config of ``serve --role collector,alerts`` watching every client."""
    return zoo["config"]


@pytest.fixture(scope="module")
def clients(zoo):
    """The config and the client processes."""
    return zoo


def _names(f: dict) -> set[str]:
    return {f["client_id"], f["group"], *f["suspects"]} - {""}


def _since(what: str) -> int:
    return round((datetime.now(timezone.utc) - STARTED[what]).total_seconds())


# What the reads wait for. Tenant shop: every misbehaving client found by its own finding
SHOP_EXPECTED = {
    ("poor_batching", "shop-batchless"),
    ("frequent_rebalances", "shop-flappy"),
    ("connection_churn", "shop-reconnect"),
    ("request_storm", "shop-storm"),
    ("throttled_by_quota", "shop-throttled"),
}
# The real clients: unknown_software for the operators, and one for each tenant of a client without a KIP-511 name
# (issue 28)
REAL_EXPECTED = {("poor_batching", c) for c in BAD} | {
    ("unknown_software", "unknown"),
    ("unknown_software", "unknown@js"),
    ("unknown_software", "unknown@jv2"),
    ("slow_consumer_loop", SLOW),
}


class _Reads:
    """What every read saw: tenant shop's advice document (as ``GET .../advice`` answers) and every tenant's findings
    from one snapshot of the same moment."""

    def __init__(self, stack):
        self.stack = stack
        self.reads = 0
        self.shop_doc: dict = {}
        self.shop_seen: dict[tuple, dict] = {}
        self.shop_good_named: dict[str, int] = {}
        self.seen: dict[tuple[str, str, str], dict] = {}
        self.good_named: dict[tuple[str, str, str], int] = {}
        self.slow_named: dict[str, int] = {}
        self.slow_first: dict[str, int] = {}
        self.last = None
        self.real_after: int | None = None  # seconds from the real clients' start to the read that found them all

    def read(self) -> bool:
        source = PrometheusSource(self.stack.layout.prometheus_url)
        now = datetime.now(timezone.utc)
        try:
            doc = service.tenant_advice(source=source, tenant=SHOP, tenants=TENANTS, now=now, window=WINDOW)
            snap = read_snapshot(source, cluster="local", tenants=TENANTS, now=now, window=WINDOW)
        finally:
            source.close()
        self.reads += 1
        self.shop_doc, self.last = doc, snap
        for name in {n for f in doc["findings"] for n in _names(f) if _good(n)}:
            self.shop_good_named[name] = self.shop_good_named.get(name, 0) + 1
        for f in doc["findings"]:
            self.shop_seen[(f["kind"], f["client_id"], f["group"], tuple(f["suspects"]))] = f
        for f in findings.advise(snap):
            d = f.as_json()
            # unknown_software names software, not a client: one copy for operators, one per tenant of its candidates
            name = d["client_id"] or d["evidence"].get("client_software_name", "")
            if d["kind"] == "unknown_software" and d["tenant"]:
                name += f"@{d['tenant']}"
            self.seen[(d["kind"], name, d["basis"])] = d
            # a name is the client_id (suspects and candidates are not names); a page is one that hurts others
            if _good(d["client_id"]):
                key = (d["client_id"], d["kind"], "page" if d["hurts_other_tenants"] else "advice")
                self.good_named[key] = self.good_named.get(key, 0) + 1
            if d["kind"] == "slow_consumer_loop":  # every client it names, in any read, and when first
                self.slow_named[d["client_id"]] = self.slow_named.get(d["client_id"], 0) + 1
                self.slow_first.setdefault(d["client_id"], _since("clients"))
        shop_found = {(kind, n) for (kind, *_), f in self.shop_seen.items() for n in _names(f)}
        # a good client's finding (counted in good_named, judged by the tests) is not one expected
        real_found = {(k, c) for k, c, b in self.seen if k != "poor_batching" or b in BASIS.get(c, ())}
        if REAL_EXPECTED <= real_found and self.real_after is None:
            self.real_after = _since("clients")
        # at least 10 reads, so "named in at most a quarter of the reads" means something even when every finding
        # came early (CI saw all of them within 6 reads)
        return SHOP_EXPECTED <= shop_found and REAL_EXPECTED <= real_found and self.reads >= 10

    def what(self) -> str:
        s = self.last
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
        unnamed = {f["tenant"]: f["candidates"] for (k, c, b), f in self.seen.items() if k == "poor_batching" and not c}
        return (
            f"{sorted(SHOP_EXPECTED | REAL_EXPECTED)} (shop seen: {sorted(self.shop_seen)}; seen: {sorted(self.seen)}; "
            f"topics {topics}; telemetry {tele}; groups {groups}; clients {cl}; unnamed {unnamed}; "
            f"nameless {s.cluster.nameless_connections if s else None}; reads {self.reads})"
        )


@pytest.fixture(scope="module")
def observed(stack, zoo) -> _Reads:
    """The findings read every 5 s until every expected finding of both sets has been seen (at least 10 reads): cost
    findings need their clients seen for the whole 2-minute window first, and the JVMs, node and the Go client take
    up to a minute to start on the loaded 2-core machine."""
    reads = _Reads(stack)
    wait_until(reads.read, 300, interval=5, what=reads.what)
    return reads


@pytest.fixture(scope="module")
def advice(observed) -> dict:
    """Tenant shop's last advice document, its findings replaced by the latest copy of every finding seen in any read,
    with ``reads`` (how many) and ``good_named`` (per well-configured client, in how many reads a finding named it)."""
    return {
        **observed.shop_doc,
        "findings": list(observed.shop_seen.values()),
        "reads": observed.reads,
        "good_named": observed.shop_good_named,
    }


@pytest.fixture(scope="module")
def found(observed) -> dict:
    """Every tenant's findings: the latest copy of each (kind, client, basis) seen, how many reads, and in how many a
    good client was named, by kind and whether the finding pages."""
    return {
        "findings": observed.seen,
        "reads": observed.reads,
        "good_named": observed.good_named,
        "slow_named": observed.slow_named,
        "slow_first": observed.slow_first,
        "last": observed.last,
        "after": observed.real_after,
    }


# ------------------------------------------------------------------ tenant shop


def test_each_misbehaving_client_gets_its_finding_and_the_good_one_none(advice, found):
    assert advice["clusters"] == [{"cluster": "local", "status": "ok", "message": ""}]
    by_kind = {}
    for f in advice["findings"]:
        by_kind.setdefault(f["kind"], []).append(f)
        assert f["tenant"] == "shop" and f["metrics"] and f["cause"] and f["fix"]
    # The well-configured producers and their consumers: named in at most a quarter of the reads. The cost rules
    # read broker thread time, which a starved 2-core CI machine inflates at random (a good consumer once showed
    # 4.7 % of a thread for 2.5 KB/s in one read); a rule that misjudged them would name them in most reads.
    shown = json.dumps([f for f in advice["findings"] if any(_good(n) for n in _names(f))], sort_keys=True)
    assert advice["reads"] >= 10
    # a string, not a tuple: pytest shortens a tuple's repr and CI's log lost the evidence once (stop 41)
    assert all(k <= advice["reads"] / 4 for k in advice["good_named"].values()), (
        f"{advice['good_named']} in {advice['reads']} reads: {shown}"
    )
    # ... and never by a finding that pages, in any read (issue 28)
    assert not [k for k in found["good_named"] if k[2] == "page" and k[0].startswith("shop-")], found["good_named"]
    batch = next(f for f in by_kind["poor_batching"] if f["client_id"] == "shop-batchless")
    # On its topic's absolute records per request first (issue 17); the relative rule only where those are missing
    assert batch["basis"] in ("client_telemetry", "topic_records_per_request", "thread_time_per_mib"), batch
    if batch["basis"] == "thread_time_per_mib":
        assert batch["evidence"]["thread_seconds_per_mib"] >= 5 * batch["evidence"]["cluster_norm_seconds_per_mib"]
    else:
        assert batch["evidence"]["records_per_request"] <= 5
    if batch["basis"] == "topic_records_per_request":  # the per-topic map is that basis' evidence
        assert batch["evidence"]["tenant_topics_records_per_request"]["shop.batchless"] < 2  # one record a request
    assert "linger.ms" in batch["fix"]
    flappy = next(f for f in by_kind["frequent_rebalances"] if f["group"] == "shop-flappy")
    assert flappy["evidence"]["member_changes"] >= 3
    churn = by_kind["connection_churn"][0]
    assert churn["evidence"]["new_connections_per_second"] >= 1
    storm = next(f for f in by_kind["request_storm"] if f["client_id"] == "shop-storm")
    assert storm["evidence"]["cluster_error_ratio"] >= 0.05
    assert "Metadata" in storm["evidence"]["cluster_errors_per_second_by_request"]  # UNKNOWN_TOPIC_OR_PARTITION
    assert storm["evidence"]["bytes_per_second"] < 1024 and "retry.backoff.ms" in storm["fix"]
    throttled = next(f for f in by_kind["throttled_by_quota"] if f["client_id"] == "shop-throttled")
    assert throttled["evidence"]["throttle_seconds_by_quota"]["produce"] >= 0.001
    # held well under the 64 KiB/s it offers (16 KiB/s quota; a starved CI machine once measured 35.7 KB/s)
    assert throttled["evidence"]["produce_bytes_per_second"] < 49152
    assert not any(
        f["kind"] in ("poor_batching", "request_storm") and f["client_id"] == "shop-throttled"
        for f in advice["findings"]
    )


def _prom(stack, expr: str) -> list[dict]:
    body = httpx.get(f"{stack.layout.prometheus_url}/api/v1/query", params={"query": expr}, timeout=10).json()
    assert body["status"] == "success", body
    return body["data"]["result"]


def _key(labels: dict) -> tuple[str, str, str]:
    # Prometheus drops empty labels: a finding without a client (rebalances) has no client_id label at all.
    return labels["finding"], labels.get("client_id", ""), labels.get("group", "")


def test_a_client_is_judged_only_once_seen_for_the_whole_window(stack, zoo, advice):
    """The snapshot read as of 45 s after the clients started sees every client of the fixture for under half the
    2-minute window, so the cost rules skip them: a new consumer's group join and empty first fetches, and on a loaded
    CI machine a producer's slow start, once named well-behaved clients. (That they are judged later is what the
    findings of the misbehaving clients, all found by the ``advice`` fixture, show.)"""
    source = PrometheusSource(stack.layout.prometheus_url)
    try:
        snap = read_snapshot(
            source, cluster="local", tenants=TENANTS, now=STARTED["load"] + timedelta(seconds=45), window=WINDOW
        )
    finally:
        source.close()
    # this module's shop clients: other modules' (the lag crash's shop-crash-*) ran before on the shared stack
    ours = ("shop-good", "shop-batchless", "shop-throttled", *SHOP_BAD)
    early = {c.client_id: c.seen_share for c in snap.clients if c.client_id.startswith(ours)}
    assert {"shop-good", "shop-good-2-consumer", "shop-batchless"} <= set(early), early
    assert all(0 < v < 0.5 for v in early.values()), early


def test_findings_reach_prometheus_and_the_tenant_dashboard(stack, watched, advice):
    """The alerts role exports what it computed for KafkaClientHurtsOtherTenants; Prometheus scrapes serve."""
    expected = {
        ("poor_batching", "shop-batchless", ""),
        ("request_storm", "shop-storm", ""),
        ("throttled_by_quota", "shop-throttled", ""),
        ("frequent_rebalances", "", "shop-flappy"),
    }

    got: set[tuple[str, str, str]] = set()
    since: dict[tuple[str, str, str], float] = {}

    def exported():
        rows = _prom(stack, 'kafka_client_advisor_finding{cluster="local", tenant="shop"}')
        assert all(r["value"][1] == "1" for r in rows), rows
        last[:] = [_key(r["metric"]) for r in rows]
        got.update(last)
        # The dashboard's table, as Grafana would run it for tenant shop: one row per finding, "since" in the past.
        table = _prom(stack, substitute(FINDINGS_SINCE, {"cluster": "local", "tenant": "shop"}))
        since.update({_key(r["metric"]): float(r["value"][1]) for r in table})
        return expected <= got and expected <= set(since)

    last: list[tuple[str, str, str]] = []
    wait_until(
        exported,
        150,
        interval=5,
        what=lambda: f"kafka_client_advisor_finding {sorted(expected)} (gauge: {sorted(got)}, table: {since})",
    )
    assert not any(_good(client) for _, client, _ in last), last  # in the last read (see the first test)
    now_ms = time.time() * 1000
    assert all(now_ms - 3600_000 < v <= now_ms + 1000 for v in since.values()), since
    # Nothing of tenant ads, nor the operators-only copies, on shop's table.
    assert not _prom(stack, substitute(FINDINGS_SINCE, {"cluster": "local", "tenant": "ads"}))


def test_the_alert_names_tenant_and_client_of_findings_that_hurt_others(stack, watched, advice):
    # The advice above was read over WINDOW; the rule's own 10m window would also see clients of earlier tests on
    # this shared stack, which move the cluster norm. Same window, same findings.
    rule = next(r for r in load_rules(watched.rules) if r.name == "KafkaClientHurtsOtherTenants")
    rule = dataclasses.replace(rule, params={**rule.params, "window": WINDOW})

    named: set[tuple[str, str, str]] = set()
    observations = []

    def detected():
        source = PrometheusSource(stack.layout.prometheus_url)
        try:
            obs = noisy_clients.detect(
                rule,
                DetectorContext(
                    source=source, now=datetime.now(timezone.utc), config=watched, tenants=TenantIndex(TENANTS)
                ),
            )
        finally:
            source.close()
        observations.extend(obs)
        # a tenant-and-topic observation has no client_id (issue 28: not identified yet)
        last[:] = [(o.labels["tenant"], o.labels.get("client_id", ""), o.labels["finding"]) for o in obs]
        named.update(last)
        return ("shop", "shop-batchless", "poor_batching") in named

    last: list[tuple[str, str, str]] = []
    wait_until(
        detected,
        150,
        interval=5,
        what=lambda: f"KafkaClientHurtsOtherTenants naming shop-batchless (named: {sorted(named)})",
    )
    # No good client in any detection (issue 28; this test once checked only the last one)
    assert not any(_good(client) for _, client, _ in named), named
    assert all(o.evidence["fix"] and o.evidence["metrics"] for o in observations)


def test_advice_endpoint_is_the_tenants_own_and_capacity_plans_the_real_cluster(stack, watched, advice, tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'kh.db'}")
    upgrade(store)
    app = build_api(watched, store)
    app.state.clock = lambda: datetime.now(timezone.utc)  # live: the advice is read again below
    shop, ads, op = (new_token(store, t) for t in ("shop", "ads", None))
    from fastapi.testclient import TestClient

    with TestClient(app, raise_server_exceptions=False) as client:

        def get(path, token, **params):
            return client.get(path, params=params, headers={"Authorization": f"Bearer {token}"})

        def batchless_named():
            r = get("/api/v1/tenants/shop/advice", shop, window=WINDOW)
            assert r.status_code == 200, r.text
            return any(
                f["kind"] == "poor_batching" and f["client_id"] == "shop-batchless" for f in r.json()["findings"]
            )

        wait_until(batchless_named, 120, interval=5, what="GET /api/v1/tenants/shop/advice naming shop-batchless")
        r = get("/api/v1/tenants/shop/advice", ads)
        assert r.status_code == 404 and "shop" not in r.text
        assert "shop-" not in get("/api/v1/tenants/ads/advice", ads, window=WINDOW).text

        r = get("/api/v1/clusters/local/capacity", op, window="5m", grow="shop:3", add="newco:5:7:12")
        assert r.status_code == 200, r.text
        plan, what_if = r.json()["plan"], r.json()["what_if"]
        assert plan["brokers"] == 3 and plan["disk_total_bytes"] > 0 and 1.5 < plan["replication_factor"] <= 3.01
        shop_row = next(t for t in plan["tenants"] if t["tenant"] == "shop")
        assert shop_row["bytes_in_per_second"] > 0 and shop_row["stored_bytes"] > 0
        grown = next(t for t in what_if["tenants"] if t["tenant"] == "shop")
        assert grown["bytes_in_per_second"] == pytest.approx(3 * shop_row["bytes_in_per_second"], rel=1e-3)
        assert what_if["brokers_required"] >= plan["brokers_required"]
        assert any(t["tenant"] == "newco" for t in what_if["tenants"])

        r = get("/api/v1/clusters/local/capacity", shop, window="5m")
        assert r.status_code == 200 and [t["tenant"] for t in r.json()["plan"]["tenants"]] == ["shop"]
        assert "brokers_needed" not in r.json()["plan"]
        assert get("/api/v1/clusters/local/capacity", shop, grow="ads:2").status_code == 422
    store.dispose()


def test_cli_prints_advice_and_capacity(stack, watched, advice, tmp_path, capsys):
    cfg = tmp_path / "kafka-health.yaml"
    cfg.write_text(yaml.safe_dump(watched.model_dump(mode="json", exclude_none=True)))

    def printed():
        assert cli.main(["advice", "--tenant", "shop", "--window", WINDOW, "--config", str(cfg)]) == 0
        out = capsys.readouterr().out
        return "poor_batching" in out and "shop-batchless" in out and "change:" in out

    wait_until(printed, 120, interval=5, what="kafka-health advice naming shop-batchless")
    assert cli.main(["capacity", "--config", str(cfg), "--window", "5m", "--grow", "shop:3"]) == 0
    out = capsys.readouterr().out
    assert "cluster local plan" in out and "cluster local what-if" in out and "tenant shop" in out
    assert cli.main(["advice", "--tenant", "nobody", "--config", str(cfg)]) == 1
    assert "error: --tenant: no tenant 'nobody'" in capsys.readouterr().err


def test_prometheus_down_is_unavailable_not_no_findings():
    source = PrometheusSource("http://127.0.0.1:1", timeout=2)
    now = datetime.now(timezone.utc)
    doc = service.tenant_advice(source=source, tenant=SHOP, tenants=TENANTS, now=now)
    # A tenant reads the public text, never Prometheus' address (issue 15, item 4).
    assert doc["clusters"][0]["status"] == "unavailable"
    assert doc["clusters"][0]["message"] == "metrics backend unavailable"
    assert doc["findings"] == []
    cap = service.cluster_capacity(source=source, cluster="local", tenants=TENANTS, now=now)
    assert cap["status"] == "unavailable" and cap["plan"] is None


# ------------------------------------------------------------------ the real clients of four libraries


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
        f"every finding seen {found['after']} s after the clients started, {found['reads']} reads, good clients "
        f"named {found['good_named']}"
    )
    # When: printed above, not asserted (a wall-clock bound is the machine's, not the advisor's: the merged zoo on the
    # shared 2-core machine at load 28-83 found its last finding 201-231 s after the JVMs were started, where the
    # real clients alone took up to 200). The reads' wait (300 s) bounds it; bench/false_alarms.py measures it.
    assert found["after"] is not None
    # No good client (of these tenants or of shop) is ever named in a finding that pages (issue 28), from the first
    # read on; advice (info) naming one is tolerated in a quarter of the reads (broker thread time on a starved 2-core
    # machine is noisy)
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
    producer whose measured cost is material (>= 5 produce requests/s a request-handler thread: 120 on the stack's 3
    brokers, issue 28); one under it (the real clients offer 30-60 records/s) or that the starved machine slowed
    below it is advice at info and pages nobody (at load ~20 on the shared 2-core machine, the 150-200 records/s
    offered came out at 6-19 requests/s for all but the 2.3.1 producer's 121). No good client is named in any
    detection, nor any client by a guess."""
    rule = next(r for r in load_rules(clients["config"].rules) if r.name == "KafkaClientHurtsOtherTenants")
    rule = dataclasses.replace(rule, params={**rule.params, "window": WINDOW})
    bad = {**BAD, "shop-batchless": "shop"}  # shop's one-record-per-request producer runs beside them
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
        150,
        interval=5,
        what=lambda: (
            f"the alert naming the material ones of {sorted(bad)} "
            f"(named: {sorted(named)}; material: {material}; rates: {rate})"
        ),
    )
    print(f"alert named {sorted(c for _, c in named)}; produce requests/s of the bad ones {rate}")
    # In no detection: a good client is never the alert's name, nor a client by a guess (issue 28)
    assert not any(_good(c) for _, c in every), every
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
    # when: printed above, not asserted (the same reason as the producers': 195-231 s in the merged zoo at load 28-83,
    # its poll idle ratio 0.07-0.095 against the 0.1 bar while the starved brokers answered fetches in 0.5-0.95 s)
    assert SLOW in found["slow_first"]
    # the good consumer kept up with what the slow one could not
    assert good.counts().get("consumed", 0) > 2 * slow.counts().get("consumed", 0) > 0, (good.counts(), slow.counts())
