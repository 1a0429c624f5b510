"""Every client the advisor's stack tests watch, started once for both modules (conftest.py), each a tenant's.

Tenant ``shop`` (test_advisor_stack), confluent-kafka clients in threads of this process:

- ``shop-batchless``: a producer with linger.ms=0 and one 10-byte record per batch -> poor_batching naming it;
- group ``shop-flappy``: a consumer that joins, gets its assignment and leaves, in a loop -> frequent_rebalances;
- ``shop-reconnect``: a producer created and dropped for every record -> connection_churn with it as a suspect;
- ``shop-storm``: a producer to a topic that does not exist, auto-creation off, retry.backoff.ms at its minimum ->
  request_storm naming it (every metadata answer is UNKNOWN_TOPIC_OR_PARTITION);
- ``shop-throttled``: a producer at 64 KiB/s with a 16 KiB/s produce quota of its own -> throttled_by_quota;
- ``shop-good``, ``shop-good-2``, ``shop-good-3``: well-batching producers and their consumers (fetch.min.bytes 64 KiB,
  fetch.wait.max.ms 500, as the advice says) -> no finding names them.

Tenants ``jv3``, ``kc``, ``jv2``, ``good``, ``cons``, ``js``, ``fz`` (test_advisor_real_clients), real clients nobody
here wrote, each a process: Apache Kafka's Java producer 3.9.1 and 2.3.1 (no KIP-511 name), kcat (librdkafka 2.0.2),
kafkajs 2.2.4 and franz-go 1.22.3, badly batching and well configured, and two Java 3.9.1 consumers.

Tenant ``ads`` has no client: it sees none of shop's findings.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import yaml
from confluent_kafka import Consumer, KafkaException, Producer

from monitor.core.config import CollectionSettings, TenantConfig, TenantSelector
from monitor.loadgen import LoadGenerator, TenantLoad, ensure_topics
from monitor.serve import run
from monitor.stack import kafka as stack_kafka
from tests.harness.javaclients import JavaClient, KcatProducer
from tests.harness.polyglot import PolyglotProducer, ensure_franz, ensure_kafkajs

WINDOW = "2m"  # the advisor window of every read and of KafkaClientHurtsOtherTenants in these tests


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


REAL_NAMES = ("jv3", "kc", "jv2", "good", "cons", "js", "fz")
SHOP, ADS = _tenant("shop"), _tenant("ads", groups=False)
TENANTS = (SHOP, ADS, *(_tenant(n) for n in REAL_NAMES))

# The real clients' roles (test_advisor_real_clients)
BAD = {"jv3-producer": "jv3", "kc-kcat": "kc", "jv2-producer": "jv2", "js-nodejs-api": "js", "fz-sync": "fz"}
GOOD = ("good-java", "good-py", "cons-py", "cons-good", "good-js", "good-franz")
SLOW = "cons-slow"  # the consumer whose application is its bottleneck
# shop's misbehaving clients (test_advisor_stack): the only other clients an alert may name
SHOP_BAD = ("shop-batchless", "shop-storm", "shop-reconnect", "shop-flapper")
RATE = 200
JS_RATE = 150  # issue 28's search-nodejs-api: one awaited send() per record at 150 records/s
CONSUMED_RATE = 100  # what cons-py offers the consumers: three times what cons-slow can process

QUIET = {"logger": logging.getLogger("advisor-test-librdkafka")}
# What polling_too_often's fix advises. With librdkafka's defaults (fetch.min.bytes=1) a consumer of a topic that
# gets a batch every 100-200 ms fetches each batch alone; on a loaded CI machine that cost 5.5 times the norm per
# MiB once, and the "good" consumer was named, rightly by the rule.
GOOD_FETCH = {"fetch.min.bytes": 65536, "fetch.wait.max.ms": 500}


def shop_good(name: str) -> bool:
    return name.startswith("shop-good")


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
    """confluent-kafka with linger.ms=100, as the advice says, at ``rate`` records a second."""
    p = Producer({"bootstrap.servers": servers, "client.id": client_id, "linger.ms": 100})
    sent, start = 0, time.monotonic()
    while not stop.is_set():
        for _ in range(int((time.monotonic() - start) * rate) - sent):
            p.produce(topic, b"x" * 20)
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


def rules_file(path: Path) -> str:
    """KafkaClientHurtsOtherTenants with the tests' window: its built-in 10m would also see clients of earlier tests
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
                messages_per_second=400,
                message_bytes=10,
                producer_settings={"linger.ms": 0, "batch.num.messages": 1, "batch.size": 200},
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
    base = {"bootstrap.servers": servers}
    return [
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
        *(
            PolyglotProducer(
                kind=kind, client_id=cid, topic=topic, brokers=servers, rate=rate, mode=mode, log=tmp / log
            )
            for kind, cid, topic, rate, mode, log in (
                ("kafkajs", "js-nodejs-api", "js.events", JS_RATE, "await-each", "js-bad.log"),
                ("kafkajs", "good-js", "good.js", RATE, "batch", "js-good.log"),
                ("franz", "fz-sync", "fz.events", JS_RATE, "sync-each", "fz-bad.log"),
                ("franz", "good-franz", "good.franz", RATE, "default", "fz-good.log"),
            )
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


@contextlib.contextmanager
def running(stack, tmp: Path) -> Iterator[dict]:
    """``serve --role collector,alerts`` (in a thread) on the port the stack's Prometheus scrapes, with its own store,
    and every client above. Yields the config, the client processes, when shop's load started and when the processes
    did."""
    ensure_kafkajs(tmp / "kafkajs-install.log"), ensure_franz(tmp / "franz-build.log")  # cached after the first
    config = stack.config(tenants=TENANTS, store_url=f"sqlite:///{tmp / 'store.db'}")
    config = config.model_copy(
        update={
            "collection": CollectionSettings(interval_seconds=5),
            "rules": config.rules.model_copy(update={"files": (rules_file(tmp / "rules.yaml"),)}),
        }
    )
    servers = stack.layout.bootstrap_servers
    ensure_topics(
        servers,
        ["shop.batchless", "shop.good", "shop.good2", "shop.good3", "shop.reconnect", "shop.throttled"],
        partitions=1,
    )
    real_topics = ["jv3.events", "kc.events", "jv2.events", "good.java", "good.py"]
    ensure_topics(servers, [*real_topics, "js.events", "fz.events", "good.js", "good.franz"])
    # One partition: cons-py's ~10 requests/s then carry ~10 records each (over three partitions a topic's count
    # would fall to ~3 records per partition batch at ~30/s, which poor_batching names)
    ensure_topics(servers, ["cons.events"], partitions=1)
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
        threading.Thread(target=_throttle, args=(stack,), daemon=True, name="quota"),
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
    try:
        for th in threads:
            th.start()
        load.start()
        load_started = datetime.now(timezone.utc)
        for p in procs:
            p.start()
        yield {"config": config, "procs": procs, "load_started": load_started, "started": datetime.now(timezone.utc)}
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
