"""A background producer feeding one topic at a steady rate, for the e2e tests and benches that need a topic to grow
while something else happens (a group crashes, stops, catches up).

    with SteadyProducer(servers, "orders.rf3"):   # ~40 records/s of 100 bytes
        ...
    feed = SteadyProducer(servers, topic).start()
    ...
    feed.stop()                                     # idempotent: also safe in a finally after an early stop
"""

from __future__ import annotations

import threading


class SteadyProducer:
    """``records`` records of ``size`` bytes every ``every`` seconds from a daemon thread (confluent-kafka,
    ``linger.ms`` 5), until ``stop``: then what is buffered is flushed (at most 10 s)."""

    def __init__(self, servers: str, topic: str, *, records: int = 20, every: float = 0.5, size: int = 100):
        from confluent_kafka import Producer

        self.topic, self.records, self.every, self.payload = topic, records, every, b"x" * size
        self._producer = Producer({"bootstrap.servers": servers, "linger.ms": 5})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"produce-{topic}")

    def _run(self) -> None:
        while not self._stop.is_set():
            for _ in range(self.records):
                self._producer.produce(self.topic, self.payload)
            self._producer.poll(0)
            self._stop.wait(self.every)
        self._producer.flush(10)

    def start(self) -> SteadyProducer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(20)

    def __enter__(self) -> SteadyProducer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
