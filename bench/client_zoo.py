"""The client zoo of bench/false_alarms.py (issue 28, item 4): real clients of five libraries beside the demo load,
each a tenant of its own (topic ``<tenant>.events``, client id ``<tenant>-app``), at realistic rates.

Good, well configured or on their *defaults* at a modest rate (none may ever be named by an alert):

- ``javadef``: Java 3.9.1 on its defaults (linger.ms=0 in 3.9), 20 records/s; ``javacons``: a Java 3.9.1 consumer
  on its defaults, reading ``pydef.events``;
- ``pygood``: confluent-kafka, linger.ms=100, 200 records/s; ``pydef``: confluent-kafka on its defaults
  (librdkafka's linger.ms=5), 100 records/s;
- ``kcatdef``: kcat (librdkafka 2.0.2) on its defaults, 50 records/s;
- ``jsgood``: kafkajs 2.2.4 sending what 100 ms gathered in one send(), 200 records/s; ``jsdef``: kafkajs awaiting
  each send(), the library's plain usage, at 20 records/s;
- ``franzdef``: franz-go 1.22.3 on its defaults, 200 records/s.

Bad, one record a request (each must be named, by its own client id): ``badjv3`` (Java 3.9.1, linger.ms=0,
batch.size=1), ``badjv2`` (Java 2.3.1, linger.ms=0, no KIP-511 name), ``badkc`` (kcat, batch.num.messages=1),
``badjs`` (kafkajs awaiting each send(), four at a time, issue 28's search-nodejs-api), ``badfz`` (franz-go
ProduceSync per record), and the demo story's ``payments-batch-import`` (monitor/demo/story.py).

A light zoo (issue 28: the first one, 15 clients with 5 JVMs and the bad ones at 150-200 records/s, loaded 2 cores to
28-129 by itself, and the starved brokers served 0-24 requests/s of what was offered). As the advisor's stack test
(tests/integration/test_advisor_stack.py): the bad producers ask for the leader's acknowledgement alone (acks=1, the
2.3.1 client's default; one record a request is the habit judged, not the acks) at 30 records/s (60 for the 2.3.1
one, whose records share requests once it is slowed), and one JVM fewer (a well-configured Java producer at 200/s:
the stack test has one; the Java producer and consumer on their defaults stay).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from confluent_kafka import Producer

from monitor.advisor.findings import advise
from monitor.advisor.source import read_snapshot
from monitor.core.config import TenantConfig, TenantSelector
from monitor.core.prom import PrometheusSource
from monitor.demo.story import BAD_CLIENT, DEMO_LOAD, STORY_WINDOW
from monitor.loadgen import LoadGenerator, ensure_topics
from tests.harness.javaclients import JavaClient, KcatProducer
from tests.harness.polyglot import PolyglotProducer

GOOD = ("javadef", "javacons", "pygood", "pydef", "kcatdef", "jsgood", "jsdef", "franzdef")
BAD = ("badjv3", "badjv2", "badkc", "badjs", "badfz")
STORY_BAD = BAD_CLIENT.client_id  # payments-batch-import, of the demo's tenant payments
BAD_RATE = 30  # records/s of the bad producers whose settings force one record a request (the 2.3.1 one: twice)


def good_client_ids() -> set[str]:
    """The zoo's good clients and the demo's own producers and consumers."""
    demo = {c for load in DEMO_LOAD for c in (load.client_id, f"{load.client_id}-consumer")}
    return {client_id(t) for t in GOOD} | demo


def bad_client_ids() -> set[str]:
    return {client_id(t) for t in BAD} | {STORY_BAD}


def client_id(tenant: str) -> str:
    return f"{tenant}-app"


def tenants() -> tuple[TenantConfig, ...]:
    return tuple(
        TenantConfig(
            name=n,
            selectors=(
                TenantSelector(
                    cluster="local", topic_prefixes=(f"{n}.",), client_id_prefixes=(f"{n}-",), group_prefixes=(f"{n}-",)
                ),
            ),
        )
        for n in (*GOOD, *BAD)
    )


def _confluent(stop: threading.Event, servers: str, tenant: str, rate: float, settings: dict) -> None:
    p = Producer({"bootstrap.servers": servers, "client.id": client_id(tenant), **settings})
    sent, start = 0, time.monotonic()
    while not stop.is_set():
        for _ in range(int((time.monotonic() - start) * rate) - sent):
            try:
                p.produce(f"{tenant}.events", b"x" * 100)
                sent += 1
            except BufferError:
                break  # the local queue is full (a broker restarting): the application waits
        p.poll(0)
        stop.wait(0.005)
    p.flush(10)


def _processes(servers: str, logs: Path) -> list[JavaClient | KcatProducer | PolyglotProducer]:
    def props(tenant: str, **extra: object) -> dict[str, object]:
        return {"bootstrap.servers": servers, "client.id": client_id(tenant), **extra}

    def java(tenant: str, version: str, rate: float, **extra: object) -> JavaClient:
        return JavaClient(
            version=version,
            mode="produce",
            topic=f"{tenant}.events",
            rate=rate,
            record_bytes=100,
            log=logs / f"{tenant}.log",
            properties=props(tenant, **extra),
        )

    def poly(tenant: str, kind: str, mode: str, rate: float, **extra) -> PolyglotProducer:
        return PolyglotProducer(
            kind=kind,
            client_id=client_id(tenant),
            topic=f"{tenant}.events",
            brokers=servers,
            rate=rate,
            mode=mode,
            record_bytes=100,
            log=logs / f"{tenant}.log",
            **extra,
        )

    return [
        java("javadef", "3.9.1", 20),
        JavaClient(
            version="3.9.1",
            mode="consume",
            topic="pydef.events",
            log=logs / "javacons.log",
            properties=props("javacons", **{"group.id": "javacons-app"}),
        ),
        KcatProducer(
            topic="kcatdef.events", rate=50, record_bytes=100, log=logs / "kcatdef.log", properties=props("kcatdef")
        ),
        poly("jsgood", "kafkajs", "batch", 200),
        poly("jsdef", "kafkajs", "await-each", 20),
        poly("franzdef", "franz", "default", 200),
        java("badjv3", "3.9.1", BAD_RATE, **{"linger.ms": 0, "batch.size": 1, "acks": 1}),
        java("badjv2", "2.3.1", 2 * BAD_RATE, **{"linger.ms": 0}),  # acks=1: 2.3's default
        KcatProducer(
            topic="badkc.events",
            rate=BAD_RATE,
            record_bytes=20,
            log=logs / "badkc.log",
            properties=props("badkc", **{"linger.ms": 0, "batch.num.messages": 1, "acks": 1}),
        ),
        poly("badjs", "kafkajs", "await-each", BAD_RATE, acks=1, concurrency=4),
        poly("badfz", "franz", "sync-each", BAD_RATE, acks=1),
    ]


@contextlib.contextmanager
def running(servers: str, logs: Path) -> Iterator[dict[str, float]]:
    """Every client of the zoo, started now; yields each client id's start (time.monotonic())."""
    ensure_topics(servers, [f"{t}.events" for t in (*GOOD, *BAD) if t != "javacons"])
    procs = _processes(servers, logs)
    stop = threading.Event()
    threads = [
        threading.Thread(
            target=_confluent, args=(stop, servers, "pygood", 200, {"linger.ms": 100}), daemon=True, name="pygood"
        ),
        threading.Thread(target=_confluent, args=(stop, servers, "pydef", 100, {}), daemon=True, name="pydef"),
    ]
    story = LoadGenerator(servers, [BAD_CLIENT])
    started: dict[str, float] = {}
    try:
        for th in threads:
            th.start()
            started[client_id(th.name)] = time.monotonic()
        for p in procs:
            p.start()
            started[str(p.properties["client.id"])] = time.monotonic()
        story.start()
        started[STORY_BAD] = time.monotonic()
        yield started
    finally:
        stop.set()
        story.stop()
        for p in procs:
            p.stop(timeout=10)
        for th in threads:
            th.join(15)


class Blame:
    """Who the alerts and the advisor named, and when, against who is good and who is bad."""

    def __init__(self, good: set[str], bad: set[str], started: dict[str, float]):
        self.good, self.bad, self.started = good, bad, started
        self.good_alerts: dict[str, int] = {}  # "rule{client_id} state" -> cycles
        self.good_pages: dict[str, int] = {}  # "kind client_id" of advisor findings that page -> reads
        self.other: set[str] = set()  # named by an alert, neither good nor bad (a new client of the demo?)
        self.finding_at: dict[str, float] = {}  # bad client -> seconds from its start to the first finding naming it
        self.pending_at: dict[str, float] = {}
        self.firing_at: dict[str, float] = {}
        self.requests: dict[str, float] = {}  # bad client -> its produce requests/s in the last finding naming it
        self.reads = 0

    def _since(self, cid: str, now: float) -> float:
        return now - self.started.get(cid, now)

    def alerts(self, instances, now: float) -> None:
        """One evaluation cycle's alert instances (pending and firing)."""
        for inst in instances:
            cid = inst.labels.get("client_id", "")
            if not cid or inst.state.value not in ("pending", "firing"):
                continue
            if cid in self.good:
                key = f"{inst.rule}{{client_id={cid}}} {inst.state.value}"
                self.good_alerts[key] = self.good_alerts.get(key, 0) + 1
            elif cid in self.bad:
                self.pending_at.setdefault(cid, self._since(cid, now))
                if inst.state.value == "firing":
                    self.firing_at.setdefault(cid, self._since(cid, now))
            else:
                self.other.add(f"{inst.rule}{{client_id={cid}}}")

    def advice(self, prometheus_url: str, tenants, now: float) -> None:
        """The advisor's findings on the demo's window, as its endpoint would give them."""
        from datetime import datetime, timezone

        source = PrometheusSource(prometheus_url)
        try:
            snap = read_snapshot(
                source, cluster="local", tenants=tenants, now=datetime.now(timezone.utc), window=STORY_WINDOW
            )
        except Exception as exc:  # noqa: BLE001 - a failed read is skipped and counted, the bench goes on
            print(f"  advisor read failed: {exc!r}", flush=True)
            return
        finally:
            source.close()
        self.reads += 1
        for f in advise(snap):
            if f.client_id in self.good and f.hurts_other_tenants:
                key = f"{f.kind.value} {f.client_id}"
                self.good_pages[key] = self.good_pages.get(key, 0) + 1
            elif f.client_id in self.bad and f.kind.value == "poor_batching":
                self.finding_at.setdefault(f.client_id, self._since(f.client_id, now))
                self.requests[f.client_id] = float(f.evidence.get("produce_requests_per_second") or 0.0)

    def report(self) -> tuple[list[str], bool]:
        def t(d: dict[str, float], cid: str) -> str:
            return f"{d[cid]:.0f} s" if cid in d else "never"

        lines = [
            f"alerts naming a good client (pending or firing, cycles): {sum(self.good_alerts.values())}"
            + "".join(f"\n  {n:4d}  {k}" for k, n in sorted(self.good_alerts.items())),
            f"advisor findings that page naming a good client ({self.reads} reads): {sum(self.good_pages.values())}"
            + "".join(f"\n  {n:4d}  {k}" for k, n in sorted(self.good_pages.items())),
            "time to name each bad client (from its start): finding / alert pending / alert firing; requests/s",
        ]
        for cid in sorted(self.bad):
            rate = f"{self.requests[cid]:.1f}" if cid in self.requests else "-"
            lines.append(
                f"  {cid:24s} {t(self.finding_at, cid):>7s} / {t(self.pending_at, cid):>7s} / "
                f"{t(self.firing_at, cid):>7s}; {rate}"
            )
        if self.other:
            lines.append("alerts naming other clients: " + ", ".join(sorted(self.other)))
        return lines, not self.good_alerts and not self.good_pages
