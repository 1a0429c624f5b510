"""Small, steady client load for the demo and the tests: one producer and one consumer group per tenant.

Real confluent-kafka clients, so brokers see real requests from real client ids (and the per-client quota sensors,
request rates and consumer lag that kafka-health reports have something to show). Bounded by design: a fixed rate,
threads that stop when asked.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from monitor.core.errors import StackError

log = logging.getLogger(__name__)
_QUIET = logging.getLogger("kafka_health.loadgen.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


@dataclass(frozen=True)
class TenantLoad:
    tenant: str
    topics: tuple[str, ...]
    client_id: str  # producer client id; the consumer uses client_id + "-consumer"
    group: str | None  # None: a producer alone
    messages_per_second: float = 20.0
    message_bytes: int = 512
    producer_settings: dict = field(default_factory=dict)  # e.g. linger.ms, batch.size for a badly batching client
    consumer_settings: dict = field(default_factory=dict)  # e.g. fetch.min.bytes, fetch.wait.max.ms


Connection = str | dict[str, str]  # bootstrap servers, or confluent-kafka settings (SASL_SSL: they hold a password)


def connection_settings(conn: Connection) -> dict[str, str]:
    return {"bootstrap.servers": conn} if isinstance(conn, str) else dict(conn)


def ensure_topics(
    conn: Connection, topics: list[str], *, partitions: int = 3, replication: int = 3, timeout: float = 30.0
) -> None:
    """Create the topics that do not exist yet and wait until each partition has a leader.

    A cluster that does not answer or refuses a topic raises ``StackError`` (one line for the CLI): confluent-kafka's
    ``KafkaException`` stops at this seam."""
    settings = connection_settings(conn)
    bootstrap = settings["bootstrap.servers"]  # messages name the servers, never the settings (a password)
    admin = AdminClient({**settings, "logger": _QUIET})
    try:
        existing = set(admin.list_topics(timeout=min(10.0, timeout)).topics)
        new = [
            NewTopic(t, num_partitions=partitions, replication_factor=replication) for t in topics if t not in existing
        ]
        if not new:
            return
        for topic, fut in admin.create_topics(new, operation_timeout=timeout).items():
            try:
                fut.result(timeout)
            except KafkaException as exc:
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise StackError(f"could not create topic {topic} on {bootstrap}: {kafka_reason(exc)}") from exc
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # metadata propagates to all brokers asynchronously
            md = admin.list_topics(timeout=min(10.0, timeout)).topics
            if all(
                t in md and md[t].partitions and all(p.leader >= 0 for p in md[t].partitions.values()) for t in topics
            ):
                return
            time.sleep(0.2)
    except KafkaException as exc:
        raise StackError(f"Kafka at {bootstrap} did not answer: {kafka_reason(exc)}") from exc


def kafka_reason(exc: KafkaException) -> str:
    """``KafkaError{code=_TRANSPORT,val=-195,str="..."}`` -> its message and code name."""
    err = exc.args[0] if exc.args else None
    if isinstance(err, KafkaError):
        return f"{err.str()} ({err.name()})"
    return str(exc)


class LoadGenerator:
    """``conn`` creates the topics (an admin on a secured cluster); ``tenant_conns`` are the connections each
    tenant's clients use (their principal's SASL settings), by tenant name; a tenant not in it uses ``conn``."""

    def __init__(self, conn: Connection, loads: list[TenantLoad], *, tenant_conns: dict[str, Connection] | None = None):
        self.conn = connection_settings(conn)
        self.tenant_conns = {t: connection_settings(c) for t, c in (tenant_conns or {}).items()}
        self.loads = loads
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.clients = sum(2 if load.group else 1 for load in loads)  # producers and consumers it runs
        self.produced = {load.tenant: 0 for load in loads}
        self.consumed = {load.tenant: 0 for load in loads}

    def start(self) -> None:
        ensure_topics(self.conn, [t for load in self.loads for t in load.topics])
        for load in self.loads:
            for target in (self._produce, self._consume) if load.group else (self._produce,):
                th = threading.Thread(
                    target=target, args=(load,), name=f"load-{load.tenant}-{target.__name__}", daemon=True
                )
                th.start()
                self._threads.append(th)

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        for th in self._threads:
            th.join(timeout)

    def _conn_of(self, load: TenantLoad) -> dict[str, str]:
        return self.tenant_conns.get(load.tenant, self.conn)

    def _produce(self, load: TenantLoad) -> None:
        producer = Producer(
            {
                **self._conn_of(load),
                "client.id": load.client_id,
                "linger.ms": 20,
                "logger": _QUIET,
                **load.producer_settings,
            }
        )
        payload = b"x" * load.message_bytes
        interval = 1.0 / load.messages_per_second
        i = 0
        next_at = time.monotonic()
        while not self._stop.is_set():
            topic = load.topics[i % len(load.topics)]
            try:
                producer.produce(topic, payload, key=str(i).encode())
                self.produced[load.tenant] += 1
            except BufferError:
                producer.poll(0.5)
            producer.poll(0)
            i += 1
            next_at += interval
            delay = next_at - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            else:
                next_at = time.monotonic()
        producer.flush(5)

    def _consume(self, load: TenantLoad) -> None:
        consumer = Consumer(
            {
                **self._conn_of(load),
                "group.id": load.group,
                "client.id": f"{load.client_id}-consumer",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
                "logger": _QUIET,
                **load.consumer_settings,
            }
        )
        consumer.subscribe(list(load.topics))
        try:
            while not self._stop.is_set():
                msg = consumer.poll(0.5)
                if msg is not None and not msg.error():
                    self.consumed[load.tenant] += 1
        finally:
            consumer.close()
