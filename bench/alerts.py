"""Evaluation cost of one alert-engine cycle for a large cluster, on synthetic data; and, with --latency, detection
latency on the real stack against equivalent Prometheus alerting rules.

    .venv/bin/python bench/alerts.py [--brokers 100] [--cycles 30]
    .venv/bin/python bench/alerts.py --latency [--reps 3] [--scenarios kill,sigstop,restart,rolling,disk,lag,slow,flood]
                                               [--dir D] [--port-base 21000]

--latency: the local stack (started, or reused if running in --dir), the real collectors in their own process
scraped by its Prometheus, the alert engine with the built-in catalog evaluated every 15 s (the default), and
Strimzi-style rules (`for: 10s`) loaded into the same Prometheus (evaluated every 5 s). Each scenario's fault is
started at t0; the bench records when each alert is first seen firing, on the broker (or group) the fault hits, and
whom the engine's first firing instance names. Scenarios (--reps each, except the disk, run once):

- kill: a broker SIGKILLed (restarted between repetitions): broker unreachable, under-replicated and offline
  partitions, against Strimzi's rules;
- disk: a broker's log dir on a 128 MiB tmpfs filled at 0.5 MiB/s (needs root): the disk detector on a 2 min
  window, against `predict_linear` over the same window and Strimzi's "less than 15 % free"; prints the free space
  left when each fired (what an early warning buys);
- lag: a consumer group that consumed, committed and left while production goes on (40 messages/s): Burrow-style
  STOP on a 1 min window, against Strimzi's `kafka_consumergroup_lag > 1000`;
- slow: a consumer in a network namespace behind `tc netem` (1 Mbit/s, 50 ms; needs root and iproute2) reading
  25 MB with big fetches: the response-queue backlog detector on a 3 min window, against a response-queue-size
  threshold (Strimzi has none);
- flood: 24 producers with linger 0 and one 16-byte record per request at a broker on one request handler thread:
  request-handler saturation at idle < 0.3, against the same threshold as a plain rule (Strimzi has none);
- sigstop: a broker hung (SIGSTOP, its JVM frozen, its ports still open; continued and restarted between
  repetitions): broker unreachable against Strimzi's broker-down rule;
- restart: a controlled restart of one broker (SIGTERM, wait for the process to exit, start it, wait until it is
  registered again), and rolling: the same for all three brokers in turn, the next once every partition is back in
  sync. Both are routine work: the bench counts every alert the engine raises while they run and for 2 minutes
  after (firing instances and firing notifications; the watchdog aside; pending ones as near misses), and the
  Strimzi-style rules that fire in Prometheus meanwhile.

The rule variants (shorter windows and `for`, the thresholds the e2e tests use) are in VARIANTS below. Prints, per
alert, the median seconds from the fault to firing in the engine and in Prometheus, their ratio, how many
repetitions fired within the wait, and whom the engine named.

Feeds the full catalog (threshold rules + every detector + no-data check + attribution to 20 tenants) from an
in-memory source shaped like Prometheus' answers for N brokers (range queries: 120 points per series), and prints
the median and p90 wall time of ``Engine.evaluate`` per cycle, the queries per cycle, and the same for the threshold
rules alone as the baseline (ratio = what the Python detectors cost on top). Prometheus' own query time is not in
these figures: multiply queries per cycle by your Prometheus' latency.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alerts.detectors.registry import builtin_detectors
from alerts.engine import Engine
from alerts.rules import builtin_variant, load_rules
from monitor.core.config import parse_config
from monitor.core.metric_names import PHASE_RESPONSE_SEND, M
from monitor.core.prom import InstantSample, Series


class SyntheticSource:
    """Answers by the metric named in the query; values make a few brokers unhealthy so every path runs."""

    def __init__(self, brokers: int, topics: int, groups: int, points: int = 120, seed: int = 7):
        self.brokers = [str(b) for b in range(brokers)]
        self.topics = [f"t{i % 20}.topic{i}" for i in range(topics)]
        self.groups = [f"t{i % 20}.group{i}" for i in range(groups)]
        self.points = points
        self.rng = random.Random(seed)
        self.queries = 0
        self._cache: dict = {}

    def _broker_value(self, expr: str, b: int) -> float:
        bad = b % 17 == 0
        if M["request_handler_idle"] in expr or M["network_processor_idle"] in expr:
            return 0.1 if bad else 0.7
        if M["broker_up"] in expr:
            return 0.0 if b == 3 else 1.0
        if "vector(1)" in expr:
            return 1.0
        return 3.0 if bad else 0.0

    def query(self, expr, at):
        self.queries += 1
        if expr.startswith("count by (__name__, cluster)"):
            return [InstantSample({"__name__": m, "cluster": "big"}, 100) for m in M.values()]
        if "vector(1)" in expr:
            return [InstantSample({}, 1.0)]
        if M["topic_size"] in expr and "last_over_time" in expr:
            return [
                InstantSample({"cluster": "big", "broker": b, "topic": t}, 1)
                for i, t in enumerate(self.topics)
                for b in self.brokers[i % 7 :: 7][:3]
            ]
        if M["topic_size"] in expr:
            return [InstantSample({"cluster": "big", "topic": t}, 1e9) for t in self.topics]
        if M["group_lag_seconds"] in expr:
            return [
                InstantSample({"cluster": "big", "group": g, "topic": self.topics[i % len(self.topics)]}, 30.0)
                for i, g in enumerate(self.groups)
            ]
        if 'broker="' in expr:  # per-broker client detail
            return [
                InstantSample({"user": f"u{i}", "client_id": f"t{i % 20}-client{i}"}, self.rng.random())
                for i in range(20)
            ]
        if M["client_connections"] in expr:
            return [
                InstantSample(
                    {
                        "cluster": "big",
                        "broker": b,
                        "client_software_name": "apache-kafka-java",
                        "client_software_version": "2.4.0" if int(b) % 50 == 0 else "3.7.0",
                    },
                    5,
                )
                for b in self.brokers
            ]
        out = []
        for i, b in enumerate(self.brokers):
            v = self._broker_value(expr, i)
            # threshold rules return only violating series, as Prometheus does
            if (" > " in expr and v <= 0) or (" < " in expr and v >= 0.5) or (" == 0" in expr and v != 0):
                continue
            out.append(InstantSample({"cluster": "big", "broker": b}, v))
        return out

    def query_range(self, expr, start, end, step):
        self.queries += 1
        # Generated once per query and window length, so the figures measure the engine, not this generator.
        key = (expr, end.timestamp() - start.timestamp())
        if key not in self._cache:
            self._cache[key] = self._generate(expr, start, end)
        return self._cache[key]

    def _generate(self, expr, start, end):
        n = self.points
        t0 = start.timestamp()
        dt = (end.timestamp() - t0) / (n - 1)
        times = tuple(t0 + i * dt for i in range(n))

        def series(labels, f):
            return Series(labels, times, tuple(f(i) for i in range(n)))

        if M["group_lag"] in expr:
            return [
                series(
                    {"cluster": "big", "group": g, "topic": self.topics[i % len(self.topics)]},
                    lambda k, i=i: 100 + (k * 10 if i % 9 == 0 else 0),
                )
                for i, g in enumerate(self.groups)
            ]
        if M["topic_messages_in"] in expr:
            return [series({"cluster": "big", "topic": t}, lambda k: 10.0) for t in self.topics]
        if M["group_members"] in expr:
            return [series({"cluster": "big", "group": g}, lambda k: 1.0) for g in self.groups]
        if M["group_committed_offset"] in expr:
            return []
        if M["fs_size"] in expr and M["fs_avail"] not in expr:  # filesystem sizes: constant
            return [series({"cluster": "big", "broker": b, "path": "/data"}, lambda k: 2e12) for b in self.brokers]
        if M["fs_size"] in expr:  # used bytes: sawtooth on most, growth on a few
            return [
                series(
                    {"cluster": "big", "broker": b, "path": "/data"},
                    lambda k, i=i: 5e11 + (k * 4e9 if i % 25 == 0 else (k % 30) * 1e9),
                )
                for i, b in enumerate(self.brokers)
            ]
        if M["request_latency"] in expr:
            return [
                series(
                    {"cluster": "big", "broker": b, "request": "Produce"},
                    lambda k, i=i: 0.3 if (i == 5 and k > n - 20) else 0.05 + 0.001 * math.sin(k),
                )
                for i, b in enumerate(self.brokers)
            ]
        if M["response_queue_size"] in expr:
            return [
                series({"cluster": "big", "broker": b}, lambda k, i=i: 80.0 if i % 33 == 0 else 2.0)
                for i, b in enumerate(self.brokers)
            ]
        if M["network_processor_idle"] in expr:
            return [series({"cluster": "big", "broker": b}, lambda k: 0.9 - 0.005 * k) for b in self.brokers]
        return []


def config(tenants: int):
    lines = ["clusters:", "  - name: big", "    bootstrap_servers: localhost:9092", "tenants:"]
    for t in range(tenants):
        lines += [
            f"  - name: tenant{t}",
            f"    selectors: [{{cluster: big, topic_prefixes: [t{t}.],",
            f"                 client_id_prefixes: [t{t}-], group_prefixes: [t{t}.]}}]",
            f"    contract: {{storage_budget_bytes: {int(5e11)}}}",
        ]
    return parse_config("\n".join(lines))


def run(engine: Engine, source: SyntheticSource, cycles: int) -> tuple[list[float], float, int]:
    now = datetime(2026, 11, 22, tzinfo=timezone.utc)
    prev: dict = {}
    times = []
    source.queries = 0
    firing = 0
    for c in range(cycles):
        t0 = time.perf_counter()
        result = engine.evaluate(prev, source, now + timedelta(seconds=15 * c))
        times.append(time.perf_counter() - t0)
        prev = result.instances
        firing = sum(1 for i in prev.values() if i.state.value == "firing")
    return times, source.queries / cycles, firing


# ------------------------------------------------------------------------------------------ detection latency

# Strimzi's rules (packaging/examples/metrics/prometheus-install/prometheus-rules.yaml: the kafka group, and
# TooLargeConsumerGroupLag of the kafka-exporter group) on our metric names. Strimzi has no rule for the network or
# request-handler threads; the last two are the usual threshold on the same JMX value, at the engine's threshold.
STRIMZI_STYLE_RULES = """
groups:
  - name: strimzi-style
    rules:
      - alert: PromBrokerDown
        expr: kafka_cluster_broker_up == 0
        for: 10s
      - alert: PromUnderReplicatedPartitions
        expr: kafka_broker_under_replicated_partitions > 0
        for: 10s
      - alert: PromOfflinePartitions
        expr: sum by (cluster) (kafka_topic_offline_partitions) > 0
        for: 10s
      - alert: PromRunningOutOfSpace
        expr: kafka_host_filesystem_avail_bytes * 100 / kafka_host_filesystem_size_bytes < 15
        for: 10s
      - alert: PromDiskFullPredicted
        expr: predict_linear(kafka_host_filesystem_avail_bytes[2m], 21600) < 0
        for: 10s
      - alert: PromConsumerGroupLag
        expr: kafka_consumergroup_lag > 1000
        for: 10s
      - alert: PromResponseQueueSize
        expr: max by (cluster, broker) (kafka_broker_response_queue_size) > 50
        for: 10s
      - alert: PromRequestHandlerIdle
        expr: avg by (cluster, broker) (kafka_broker_request_handler_idle_ratio) < 0.3
        for: 10s
"""

SCENARIOS = {  # key: (title, [(engine alert, Prometheus alert)])
    "kill": (
        "broker killed",
        [
            ("KafkaBrokerUnreachable", "PromBrokerDown"),
            ("KafkaUnderReplicatedPartitions", "PromUnderReplicatedPartitions"),
            ("KafkaOfflinePartitions", "PromOfflinePartitions"),
        ],
    ),
    "sigstop": ("broker hung", [("KafkaBrokerUnreachable", "PromBrokerDown")]),
    "restart": ("controlled restart", []),  # routine work: pages counted, not timed (Bench.restart)
    "rolling": ("rolling restart", []),
    "disk": (
        "log dir filling",
        [("KafkaDiskFullRisk", "PromDiskFullPredicted"), ("KafkaDiskFullRisk", "PromRunningOutOfSpace")],
    ),
    "lag": ("group stopped", [("KafkaConsumerGroupLag", "PromConsumerGroupLag")]),
    "slow": ("slow reader", [("KafkaResponseQueueBacklog", "PromResponseQueueSize")]),
    "flood": ("tiny produces", [("KafkaRequestHandlerSaturation", "PromRequestHandlerIdle")]),
}

# Rule variants, as in the e2e tests (tests/e2e/), so one repetition waits for a short window, not hours. Each is
# the built-in rule with its thresholds unchanged unless said:
VARIANTS = {
    # the disk detector over 2 minutes (the default window is 6 h)
    "disk": builtin_variant("KafkaDiskFullRisk", for_="10s", window="2m", min_points=5),
    # Burrow's evaluation over a 1-minute window (default 10 min)
    "lag": builtin_variant("KafkaConsumerGroupLag", window="1m"),
    # the backlog's trend over 3 minutes (default 15) and sockets over 1 (default 2), `for` 20 s (default 2 min)
    "slow": builtin_variant("KafkaResponseQueueBacklog", for_="20s", window="3m", socket_window="1m"),
    # idle below 0.3 (default 0.2: a flood driven from Python on 2 shared cores holds the handlers at 0.15-0.45
    # idle; see FLOOD_IDLE_THRESHOLD in tests/e2e/test_alert_client_faults.py), `for` 20 s (default 5 min)
    "flood": builtin_variant("KafkaRequestHandlerSaturation", for_="20s", threshold=0.3),
}
VICTIM = {"kill": 3, "sigstop": 3, "restart": 3, "disk": 3, "slow": 2, "flood": 1}
WATCHDOG = "KafkaHealthWatchdog"  # the broker each fault hits
TENANT = "bench"  # topics, groups and client ids prefixed "bench."/"bench-"


def _match(labels: dict, want: dict) -> bool:
    return all(labels.get(k) == v for k, v in want.items())


class _Observer:
    """The engine on its own loop thread (as `serve --role alerts` runs it, on a fresh store) and Prometheus' alerts
    polled every second; each cycle's result goes to ``engine_cycle``, each poll's alerts to ``prometheus_alerts``."""

    def __init__(self, stack, svc):
        import threading

        self.stack, self.svc = stack, svc
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._engine, daemon=True),
            threading.Thread(target=self._prom, daemon=True),
        ]
        for th in self.threads:
            th.start()

    def engine_cycle(self, result) -> None:
        raise NotImplementedError

    def prometheus_alerts(self, alerts: list[dict]) -> None:
        raise NotImplementedError

    def _engine(self):
        interval = self.svc.config.rules.evaluation_interval_seconds
        while not self.stop.is_set():
            t = time.monotonic()
            r = self.svc.run_once()
            if r is not None:
                self.engine_cycle(r)
            self.stop.wait(max(0.0, interval - (time.monotonic() - t)))

    def _prom(self):
        import httpx

        while not self.stop.is_set():
            try:
                alerts = httpx.get(f"{self.stack.layout.prometheus_url}/api/v1/alerts", timeout=5).json()
                self.prometheus_alerts(alerts["data"]["alerts"])
            except Exception:  # noqa: BLE001 - a slow answer is a missed poll, not a failed bench
                pass
            self.stop.wait(1.0)

    def halt(self) -> None:
        self.stop.set()
        for th in self.threads:
            th.join(30)


class Watch(_Observer):
    """First time each alert is seen firing (with ``labels``) after ``t0``, in the engine and in Prometheus. Keeps
    the evidence of the engine's first firing instance, to check whom it blames."""

    def __init__(
        self,
        stack,
        svc,
        names: set[str],
        prom_names: set[str],
        t0: float,
        labels: dict | None = None,
        prom_labels: dict | None = None,
    ):
        self.t0 = t0
        self.labels = labels or {}
        self.prom_labels = self.labels if prom_labels is None else prom_labels
        self.names, self.prom_names = names, prom_names
        self.first: dict[str, float] = {}
        self.evidence: dict[str, dict] = {}
        self.firing: list[dict] = []  # labels of every firing instance of the watched rules, matching or not
        super().__init__(stack, svc)

    def engine_cycle(self, result) -> None:
        from alerts.types import AlertState

        for i in result.instances.values():
            if i.rule in self.names and i.state is AlertState.FIRING:
                self.firing.append(dict(i.labels))
                if _match(i.labels, self.labels) and i.rule not in self.first:
                    self.first[i.rule] = time.monotonic() - self.t0
                    self.evidence[i.rule] = {**i.labels, **i.evidence}

    def prometheus_alerts(self, alerts: list[dict]) -> None:
        for a in alerts:
            if (
                a["labels"]["alertname"] in self.prom_names
                and a["state"] == "firing"
                and _match(a["labels"], self.prom_labels)
            ):
                self.first.setdefault(a["labels"]["alertname"], time.monotonic() - self.t0)

    def wait(self, timeout: float, *, grace: float | None = None, until=None) -> dict[str, float]:
        """Until every alert fired or ``timeout``; with ``grace``, at most that long after the engine's alerts all
        fired (a Prometheus rule that never fires must not hold the bench for the whole timeout); ``until()`` true
        also stops it (the fault is over, e.g. the disk is nearly full)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not (self.names | self.prom_names) <= set(self.first):
            if until is not None and until():
                break
            if grace is not None and self.names <= set(self.first):
                deadline = min(deadline, self.t0 + max(self.first[n] for n in self.names) + grace)
            time.sleep(1.0)
        self.halt()
        return dict(self.first)


class Pages(_Observer):
    """Everything the engine raises while routine work runs, the watchdog aside: firing instances, firing
    notifications (what reaches Alertmanager and webhooks), and pending instances (near misses); and the
    Strimzi-style rules firing in Prometheus meanwhile."""

    def __init__(self, stack, svc, before):
        from alerts.types import AlertState

        # what already fired before the work began (e.g. an unclean election's 30 min keep_firing_for after the
        # crash scenarios) is not the work's doing
        self.before = {
            self._key(i.labels) for i in (before.instances.values() if before else ()) if i.state is AlertState.FIRING
        }
        self.firing: set[tuple] = set()
        self.pending: set[tuple] = set()
        self.notified: list[tuple] = []
        self.prom: set[tuple] = set()
        super().__init__(stack, svc)

    @staticmethod
    def _key(labels: dict) -> tuple:
        return tuple(sorted((k, v) for k, v in labels.items() if k in ("alertname", "broker", "topic", "tenant")))

    def engine_cycle(self, result) -> None:
        from alerts.types import AlertState, Decision

        for i in result.instances.values():
            key = self._key(i.labels)
            if i.rule == WATCHDOG or key in self.before:
                continue
            if i.state is AlertState.FIRING:
                self.firing.add(key)
            elif i.state is AlertState.PENDING:
                self.pending.add(key)
        self.notified += [
            self._key(n.instance.labels)
            for n in result.notifications
            if n.decision is Decision.NOTIFY_FIRING
            and n.instance.rule != WATCHDOG
            and self._key(n.instance.labels) not in self.before
        ]

    def prometheus_alerts(self, alerts: list[dict]) -> None:
        self.prom |= {
            self._key(a["labels"])
            for a in alerts
            if a["labels"]["alertname"].startswith("Prom") and a["state"] == "firing"
        }

    def finish(self, seconds: float) -> None:
        self.stop.wait(seconds)
        self.halt()


class Bench:
    """The stack, the collectors, the Prometheus rules and the engine's config shared by every scenario."""

    def __init__(self, args, stack, config, tmp: Path, link, collector: subprocess.Popen):
        self.args, self.stack, self.config, self.tmp, self.link = args, stack, config, tmp, link
        self.collector = collector  # the collectors' process (its log: tmp/collector.log)
        self.L = stack.layout
        self.results: dict[str, list[tuple[str, str, float | None, float | None]]] = {}
        self.blamed: dict[str, list[str]] = {}
        self.notes: list[str] = []
        self.routine: dict[str, list[dict]] = {}  # restart / rolling: what each repetition raised

    # ------------------------------------------------------------------ helpers
    def service(self, name: str):
        from prometheus_client import CollectorRegistry

        from alerts.component import AlertService
        from monitor.core.store import Store
        from monitor.store.migrate import upgrade

        store = Store(f"sqlite:///{self.tmp / name}.db")  # each repetition starts with no instances
        upgrade(store)
        return AlertService(self.config, store=store, registry=CollectorRegistry())

    def quiet(self, key: str, labels: dict, timeout: float = 300.0, *, while_waiting=None) -> None:
        """Wait until neither the engine (a scratch instance on a fresh store) nor Prometheus holds the scenario's
        alerts pending or firing with ``labels``: the previous repetition is over, so the next one times a fault
        from its start. ``while_waiting`` runs once per check (e.g. keep a healthy reader polling)."""
        import httpx

        from alerts.types import AlertState

        names = {e for e, _ in SCENARIOS[key][1]}
        prom = {p for _, p in SCENARIOS[key][1]}
        svc = self.service(f"quiet-{key}-{time.monotonic_ns()}")
        deadline = time.monotonic() + timeout
        while True:
            r = svc.run_once()
            busy = {
                i.rule
                for i in (r.instances.values() if r else ())
                if i.rule in names and _match(i.labels, labels) and i.state in (AlertState.PENDING, AlertState.FIRING)
            }
            alerts = httpx.get(f"{self.L.prometheus_url}/api/v1/alerts", timeout=5).json()["data"]["alerts"]
            busy |= {
                a["labels"]["alertname"]
                for a in alerts
                if a["labels"]["alertname"] in prom and _match(a["labels"], labels)
            }
            if not busy:
                return
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"{SCENARIOS[key][0]}: {sorted(busy)} still active {timeout:.0f}s after the last "
                    "repetition's fault was removed"
                )
            if while_waiting:
                while_waiting()
            time.sleep(5.0)

    def settled(self, expr: str, while_waiting, timeout: float = 600.0) -> None:
        """Until the PromQL condition ``expr`` holds (returns a series), running ``while_waiting`` meanwhile."""
        import httpx

        deadline = time.monotonic() + timeout
        while not httpx.get(f"{self.L.prometheus_url}/api/v1/query", params={"query": expr}, timeout=5).json()["data"][
            "result"
        ]:
            if time.monotonic() > deadline:
                raise SystemExit(f"not settled within {timeout:.0f}s: {expr}")
            while_waiting()
            time.sleep(2.0)

    def record(self, key: str, first: dict[str, float], watch: Watch | None = None, blame: str | None = None) -> None:
        for e, p in SCENARIOS[key][1]:
            self.results.setdefault(key, []).append((e, p, first.get(e), first.get(p)))
        named = ""
        if watch is not None and blame is not None:
            ev = next(iter(watch.evidence.values()), {})
            who = f"{blame}={ev.get(blame)} tenant={ev.get('tenant')}" if ev else "-"
            self.blamed.setdefault(key, []).append(who)
            named = f"; {who}"
        print(
            f"  {SCENARIOS[key][0]} #{len(self.results[key]) // len(SCENARIOS[key][1])}: "
            + ", ".join(f"{k} {v:.0f}s" for k, v in sorted(first.items()))
            + named,
            flush=True,
        )

    def create_topic(self, name: str, assignment: list[list[int]]) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.L.bootstrap_servers})  # fresh: see the disk scenario
        for f in admin.create_topics(
            [NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment)], operation_timeout=30
        ).values():
            try:
                f.result(60)
            except Exception as exc:  # reused stack
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise

    def delete_topic(self, name: str) -> None:
        """A scenario's bulk data goes with it: a reused stack's broker must still fit the disk scenario's tmpfs."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.L.bootstrap_servers})
        try:
            admin.delete_topics([name], operation_timeout=30)[name].result(60)
        except Exception as exc:  # not there is fine
            if "UNKNOWN_TOPIC" not in str(exc):
                raise

    # ------------------------------------------------------------------ scenarios
    def kill(self) -> None:
        import signal

        from tests.harness.faults import controlled_restart, delete_group, group_coordinated_by

        victim = VICTIM["kill"]
        self.create_topic("bench.rf1", [[victim]])
        self.create_topic("bench.rf3", [[1, 2, 3], [2, 3, 1], [3, 1, 2]])
        names, prom = ({e for e, _ in SCENARIOS["kill"][1]}, {p for _, p in SCENARIOS["kill"][1]})
        log = self.tmp / "collector.log"
        for rep in range(self.args.reps):
            self.quiet("kill", {})
            # The victim coordinates a consumer group, as a real broker coordinates a share of them: describing that
            # group once aborted the collector (librdkafka#4605), and the broker-down alerts lost their data.
            group = group_coordinated_by(
                self.L.bootstrap_servers, victim, prefix=f"bench.coordinated-{rep}-", topic="bench.rf3"
            )
            crashes = log.read_text(errors="replace").count("Admin client process died")
            svc = self.service(f"kill-{rep}")
            svc.run_once()  # the engine's state before the fault
            t0 = time.monotonic()
            self.stack.procs.signal(self.L.node_name(victim), signal.SIGKILL)
            watch = Watch(self.stack, svc, names, prom, t0)
            self.record("kill", watch.wait(240))
            controlled_restart(self.stack, victim)  # waits until the dead JVM's ports are closed, then starts it
            crashes = log.read_text(errors="replace").count("Admin client process died") - crashes
            self.notes.append(
                f"broker killed #{rep + 1}: it coordinated group {group}; Admin client process "
                f"crashes (a fresh one each time): {crashes}; collector process "
                f"{'alive' if self.collector.poll() is None else 'DEAD'}; the engine's cause: "
                f"{watch.evidence.get('KafkaBrokerUnreachable', {}).get('cause')}"
            )
            delete_group(self.L.bootstrap_servers, group)
        self.delete_topic("bench.rf1")  # a replication-factor-1 topic makes any restart an outage (it pages)

    def sigstop(self) -> None:
        """The victim's JVM frozen: its ports still accept connections, it answers nothing, and it stops
        heartbeating, which the controller sees as it sees a crash."""
        import signal

        victim = VICTIM["sigstop"]
        labels = {"broker": str(victim)}
        self.create_topic("bench.rf3", [[1, 2, 3], [2, 3, 1], [3, 1, 2]])
        for rep in range(self.args.reps):
            self.quiet("kill", {})
            svc = self.service(f"sigstop-{rep}")
            svc.run_once()
            t0 = time.monotonic()
            self.stack.procs.signal(self.L.node_name(victim), signal.SIGSTOP)
            try:
                watch = Watch(self.stack, svc, {"KafkaBrokerUnreachable"}, {"PromBrokerDown"}, t0, labels=labels)
                self.record("sigstop", watch.wait(240, grace=60), watch, blame="cause")
            finally:
                from tests.harness.faults import controlled_restart

                controlled_restart(self.stack, victim)  # SIGCONT first, then a controlled shutdown and a start

    def restart(self) -> None:
        from tests.harness.faults import controlled_restart

        self._routine("restart", lambda: [controlled_restart(self.stack, VICTIM["restart"])])

    def rolling(self) -> None:
        from tests.harness.faults import rolling_restart

        self._routine("rolling", lambda: rolling_restart(self.stack))

    def _routine(self, key: str, work) -> None:
        """Routine work that must page nobody: every alert raised while it runs and for 2 minutes after (the
        longest `for` a restart could complete: under-replication's 60 s, scrape failures' 2 min from their start)."""
        from tests.harness.faults import in_sync

        self.create_topic("bench.rf3", [[1, 2, 3], [2, 3, 1], [3, 1, 2]])  # min.insync.replicas 2 (the stack's)
        for rep in range(self.args.reps):
            self.quiet("kill", {})
            deadline = time.monotonic() + 180
            while not in_sync(self.L.bootstrap_servers) and time.monotonic() < deadline:
                time.sleep(2.0)
            svc = self.service(f"{key}-{rep}")
            pages = Pages(self.stack, svc, svc.run_once())
            took = work()
            pages.finish(120)
            row = {
                "took": took,
                "firing": sorted(pages.firing),
                "notified": pages.notified,
                "pending": sorted(pages.pending),
                "prom": sorted(pages.prom),
            }
            self.routine.setdefault(key, []).append(row)
            print(
                f"  {SCENARIOS[key][0]} #{rep + 1}: restarts took {', '.join(f'{x:.0f}s' for x in took)}; engine "
                f"firing {row['firing']}, notifications {len(row['notified'])}, pending {row['pending']}; "
                f"already firing before, left out: {sorted(pages.before)}; "
                f"Prometheus rules firing {row['prom']}",
                flush=True,
            )

    def disk(self) -> None:
        from confluent_kafka import Producer

        from tests.harness.faults import small_log_dir

        if os.geteuid() != 0:
            self.notes.append("log dir filling: skipped (a tmpfs needs root)")
            return
        victim = VICTIM["disk"]
        prom = {p for _, p in SCENARIOS["disk"][1]}
        labels = {"broker": str(victim)}
        self.quiet("kill", {})
        with small_log_dir(self.stack, victim, 128):
            # predict_linear's 2 min range must not straddle the move from the root filesystem to the tmpfs
            time.sleep(130)
            self.quiet("disk", labels)
            # a fresh client: librdkafka once crashed here in a client that had lived through the broker restarts
            self.create_topic("bench.fill", [[victim]])
            svc = self.service("disk")
            producer = Producer({"bootstrap.servers": self.L.bootstrap_servers, "linger.ms": 50})
            payload = os.urandom(64 * 1024)
            t0 = time.monotonic()
            watch = Watch(self.stack, svc, {"KafkaDiskFullRisk"}, prom, t0, labels=labels)
            free_at: dict[str, float] = {}
            while time.monotonic() - t0 < 400 and not ({"KafkaDiskFullRisk"} | prom) <= set(watch.first):
                fs = os.statvfs(self.L.log_dir(victim))
                free = fs.f_bavail / fs.f_blocks
                for name in watch.first:
                    free_at.setdefault(name, free)
                if free < 0.08:  # never really fill it: the broker would stop
                    time.sleep(1.0)
                    continue
                for _ in range(4):  # 256 KiB every 0.5 s: a steady 0.5 MiB/s
                    producer.produce("bench.fill", payload)
                producer.poll(0)
                time.sleep(0.5)
            first = watch.wait(0)
            fs = os.statvfs(self.L.log_dir(victim))
            for name in first:  # the last to fire ended the loop before its turn
                free_at.setdefault(name, fs.f_bavail / fs.f_blocks)
            producer.flush(10)
            self.delete_topic("bench.fill")
        self.record("disk", first)
        print(
            "  free space when each fired: "
            + ", ".join(f"{k} {v:.0%}" for k, v in sorted(free_at.items(), key=lambda kv: -kv[1])),
            flush=True,
        )

    def lag(self) -> None:
        """A group consumes everything, commits and leaves while production goes on (40 messages/s): the fault
        starts when it leaves. The engine's STOP needs its window to hold only the member-less past; Strimzi's rule
        needs 1,000 messages of lag (25 s at this rate)."""
        from confluent_kafka import Consumer

        from tests.harness.faults import delete_group
        from tests.harness.producer import SteadyProducer

        self.create_topic("bench.lag", [[1, 2, 3], [2, 3, 1], [3, 1, 2]])
        servers = self.L.bootstrap_servers
        for rep in range(self.args.reps):
            group = f"bench.lag-{rep}-{os.getpid()}"
            labels = {"group": group}
            feed = SteadyProducer(servers, "bench.lag").start()  # ~40 records/s
            try:
                consumer = Consumer(
                    {
                        "bootstrap.servers": servers,
                        "group.id": group,
                        "client.id": "bench-lag",
                        "auto.offset.reset": "latest",
                        "enable.auto.commit": False,
                    }
                )
                consumer.subscribe(["bench.lag"])
                t_end = time.monotonic() + 60  # consume for a while, caught up: a healthy group
                got = 0
                while time.monotonic() < t_end:
                    msg = consumer.poll(0.5)
                    if msg is not None and not msg.error():
                        got += 1
                        if got % 50 == 0:
                            consumer.commit(asynchronous=False)
                consumer.commit(asynchronous=False)
                svc = self.service(f"lag-{rep}")
                svc.run_once()
                consumer.close()  # the group stops: no member, no commits
                t0 = time.monotonic()
                # STOP is the status of this fault; another one firing first is reported apart (a false status)
                watch = Watch(
                    self.stack,
                    svc,
                    {"KafkaConsumerGroupLag"},
                    {"PromConsumerGroupLag"},
                    t0,
                    labels={**labels, "status": "STOP"},
                    prom_labels=labels,
                )
                self.record("lag", watch.wait(300, grace=120), watch, blame="lag_seconds")
                others = sorted({lbl.get("status", "") for lbl in watch.firing if _match(lbl, labels)} - {"STOP"})
                if others:
                    self.notes.append(f"group stopped #{rep + 1}: the engine also raised {', '.join(others)}")
            finally:
                feed.stop()
            delete_group(servers, group)
        self.delete_topic("bench.lag")

    def slow(self) -> None:
        """A consumer in a network namespace whose link is cut to 1 Mbit/s with 50 ms delay, reading 25 MB from the
        start with big fetches and a 4 KiB receive buffer: its responses sit in the broker's socket buffers and
        the response send time climbs. The fault starts when the reader starts; between repetitions the link is
        fast again and a healthy reader polls until nothing is active."""
        from tests.harness.faults import SLOW_READER, fill_topic

        if self.link is None:
            self.notes.append("slow reader: skipped (needs root and iproute2 for a network namespace)")
            return
        victim = VICTIM["slow"]
        labels = {"broker": str(victim)}
        self.create_topic("bench.slow", [[victim]])
        fill_topic(self.L.bootstrap_servers, "bench.slow", 2500, 10_000, "bench-filler")  # 25 MB to read
        for rep in range(self.args.reps):
            if rep:
                # The detector compares the response send time at the end of its 3 min window with the start: the
                # next repetition starts once the whole window is back to fast sends, or its "before" is the last
                # repetition's fault. A healthy reader refills the broker's send-time histogram meanwhile, and is
                # closed before the next fault: its librdkafka keeps fetching in the background, and a hundred
                # fast sends a second dilute the slow reader's few slow ones out of the p99 (see docs/alerts.md).
                healthy = _Reader(self.L.bootstrap_servers, "bench.slow")
                self.quiet("slow", labels, while_waiting=healthy.poll)
                self.settled(
                    f'max_over_time(max({M["request_latency"]}{{broker="{victim}",'
                    f'phase="{PHASE_RESPONSE_SEND}",quantile="0.99"}})[3m:15s]) < 0.25',
                    healthy.poll,
                )
                healthy.close()
            svc = self.service(f"slow-{rep}")
            svc.run_once()
            self.link.slow(delay_ms=50, rate="1mbit")
            t0 = time.monotonic()
            self.link.popen(
                [
                    sys.executable,
                    "-c",
                    SLOW_READER,
                    self.L.client_bootstrap_servers,
                    "bench.slow",
                    "bench-slow-reader",
                    f"bench.slow-{rep}-{os.getpid()}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            watch = Watch(self.stack, svc, {"KafkaResponseQueueBacklog"}, {"PromResponseQueueSize"}, t0, labels=labels)
            self.record("slow", watch.wait(300, grace=60), watch, blame="slow_client")
            self.link.stop_processes()
            self.link.fast()
        self.delete_topic("bench.slow")

    def flood(self) -> None:
        """24 producers (2 processes) with linger 0 and one 16-byte record per request, at a broker on one request
        handler thread. The fault starts with the producers."""
        from tests.harness.faults import fewer_io_threads, tiny_produce_flood

        victim = VICTIM["flood"]
        labels = {"broker": str(victim)}
        others = [b for b in self.L.broker_ids if b != victim]
        self.create_topic("bench.flood", [[victim] + others] * 4)  # led by the victim, replicated
        with fewer_io_threads(self.stack, victim, 1):
            for rep in range(self.args.reps):
                self.quiet("flood", labels)
                svc = self.service(f"flood-{rep}")
                svc.run_once()
                t0 = time.monotonic()
                with tiny_produce_flood(self.L.bootstrap_servers, "bench.flood", "bench-flood"):
                    watch = Watch(
                        self.stack,
                        svc,
                        {"KafkaRequestHandlerSaturation"},
                        {"PromRequestHandlerIdle"},
                        t0,
                        labels=labels,
                    )
                    first = watch.wait(300, grace=60)
                self.record("flood", first, watch, blame="busy_client")
        self.delete_topic("bench.flood")


class _Reader:
    """A healthy consumer on loopback polling often, so a broker's send-time histogram (a decaying reservoir)
    fills with fast sends after the slow reader is gone."""

    def __init__(self, servers: str, topic: str):
        from confluent_kafka import Consumer

        self.c = Consumer(
            {
                "bootstrap.servers": servers,
                "group.id": "bench.healthy",
                "client.id": "bench-healthy",
                "auto.offset.reset": "latest",
                "fetch.wait.max.ms": 10,
            }
        )
        self.c.subscribe([topic])

    def poll(self) -> None:
        for _ in range(25):
            self.c.poll(0.2)

    def close(self) -> None:
        self.c.close()


def latency(args) -> int:
    import shutil
    import tempfile

    import httpx

    from monitor.core.config import (
        CollectionSettings,
        RulesSettings,
        TenantConfig,
        TenantSelector,
    )
    from monitor.stack import Stack, StackLayout
    from tests.harness import slow_link
    from tests.harness.engine import running_collectors

    keys = [k for k in args.scenarios.split(",") if k]
    unknown = sorted(set(keys) - set(SCENARIOS))
    if unknown:
        raise SystemExit(f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")
    if not args.disk:
        keys = [k for k in keys if k != "disk"]
    link = None
    if "slow" in keys and slow_link.available() is None:
        # before the stack: its brokers listen on the host side of the link (StackLayout.client_listener_host)
        n = (args.port_base // 10) % 250
        link = slow_link.SlowLink(f"kh{args.port_base}", f"10.232.{n}.1", f"10.232.{n}.2").create()
    stack = Stack(
        StackLayout(dir=args.dir, port_base=args.port_base, client_listener_host=link.host_addr if link else None),
        log=lambda *_: None,
    )
    already_up = all(s.healthy for s in stack.status())
    if already_up and link is not None:
        print("the stack in --dir is already up: restarting it so its brokers listen on the slow link", flush=True)
        stack.down()
        already_up = False
    tmp = Path(tempfile.mkdtemp(prefix="alerts-latency-"))
    L = stack.layout
    rules_file = L.prometheus_rules_dir / "strimzi-style.yml"
    try:
        if not already_up:
            print(f"starting the stack in {args.dir} ...", flush=True)
            stack.up(timeout=240)
        rules_file.write_text(STRIMZI_STYLE_RULES)
        httpx.post(f"{L.prometheus_url}/-/reload", timeout=10).raise_for_status()
        files = []
        for key, text in VARIANTS.items():
            (tmp / f"{key}-rule.yaml").write_text(text)
            files.append(str(tmp / f"{key}-rule.yaml"))
        tenant = TenantConfig(
            name=TENANT,
            selectors=(
                TenantSelector(
                    cluster="local",
                    topic_prefixes=("bench.",),
                    group_prefixes=("bench.",),
                    client_id_prefixes=("bench-",),
                ),
            ),
        )
        config = stack.config(tenants=(tenant,), store_url=f"sqlite:///{tmp / 'unused.db'}")
        config = config.model_copy(
            update={"rules": RulesSettings(files=tuple(files)), "collection": CollectionSettings(interval_seconds=5)}
        )
        # The collectors in their own process, as `serve --role collector` runs beside the engine in production.
        with running_collectors(config, tmp) as collector:
            bench = Bench(args, stack, config, tmp, link, collector)
            time.sleep(30)  # a few scrapes, so every series exists before the first fault
            for key in keys:
                print(f"{SCENARIOS[key][0]} ...", flush=True)
                getattr(bench, key)()
    finally:
        rules_file.unlink(missing_ok=True)
        try:
            httpx.post(f"{L.prometheus_url}/-/reload", timeout=10)
        except httpx.HTTPError:
            pass
        if not already_up:
            stack.down()
        if link is not None:
            link.destroy()
        shutil.rmtree(tmp, ignore_errors=True)

    def med(xs):
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    fmt = lambda v: f"{v:7.0f}s" if v is not None else "  never"  # noqa: E731 - a one-line formatter for the table
    print(
        f"\ndetection latency, fault -> firing (median of {args.reps}, 1 for the disk; engine every "
        f"{config.rules.evaluation_interval_seconds:.0f}s with its own `for`, Prometheus every "
        f"{L.scrape_interval_seconds}s with `for: 10s`; never = not within the wait)"
    )
    print(f"  {'scenario':<16} {'engine alert':<31} {'engine':>8} {'Prometheus rule':<30} {'Prom':>8} {'ratio':>6}")
    for key, rows in bench.results.items():
        for e, p in dict.fromkeys((e, p) for e, p, _, _ in rows):
            xs = [x for a, b, x, _ in rows if (a, b) == (e, p)]
            ys = [y for a, b, _, y in rows if (a, b) == (e, p)]
            me, mp = med(xs), med(ys)
            ratio = f"{me / mp:5.2f}x" if me and mp else "   n/a"
            fired = (
                f"  (engine fired {len(xs) - xs.count(None)}/{len(xs)}, "
                f"Prometheus {len(ys) - ys.count(None)}/{len(ys)})"
            )
            print(f"  {SCENARIOS[key][0]:<16} {e:<31} {fmt(me)} {p:<30} {fmt(mp)} {ratio}{fired}")
    for key, rows in bench.routine.items():
        fired = [len(r["firing"]) for r in rows]
        notified = [len(r["notified"]) for r in rows]
        prom = [len([a for a in r["prom"] if dict(a).get("alertname") == "PromBrokerDown"]) for r in rows]
        print(
            f"  {SCENARIOS[key][0]:<18} engine: firing {fired}, notifications {notified} (per repetition); "
            f"Prometheus PromBrokerDown firing {prom}; all Prometheus rules: "
            f"{sorted({dict(a)['alertname'] for r in rows for a in r['prom']})}"
        )
        for r in rows:
            if r["firing"] or r["pending"]:
                print(f"    engine raised: firing {r['firing']}, pending {r['pending']}")
    for key, who in bench.blamed.items():
        print(f"  {SCENARIOS[key][0]}, the engine's first firing instance: {'; '.join(who)}")
    for note in bench.notes:
        print(f"  {note}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", action="store_true", help="detection latency on the real stack (see above)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument(
        "--scenarios", default=",".join(SCENARIOS), help=f"comma-separated, from {','.join(SCENARIOS)} (default: all)"
    )
    ap.add_argument("--no-disk", dest="disk", action="store_false", help="skip the log-dir scenario")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/kafka-health-alerts-bench"))
    ap.add_argument("--port-base", type=int, default=21000)
    ap.add_argument("--brokers", type=int, default=100)
    ap.add_argument("--topics", type=int, default=2000)
    ap.add_argument("--groups", type=int, default=500)
    ap.add_argument("--cycles", type=int, default=30)
    args = ap.parse_args()
    if args.latency:
        return latency(args)
    cfg = config(20)
    rules = load_rules(cfg.rules)
    full = Engine(cfg, rules, builtin_detectors())
    threshold_only = Engine(cfg, [r for r in rules if r.kind != "detector"], builtin_detectors())
    print(
        f"alert engine, one cycle: {args.brokers} brokers, {args.topics} topics, {args.groups} groups, 20 tenants, "
        f"{len(rules)} rules, {args.cycles} cycles (synthetic in-memory Prometheus)"
    )
    results = {}
    for name, eng in (("threshold rules only (baseline)", threshold_only), ("full catalog", full)):
        src = SyntheticSource(args.brokers, args.topics, args.groups)
        times, qpc, firing = run(eng, src, args.cycles)
        med = statistics.median(times)
        p90 = sorted(times)[int(0.9 * (len(times) - 1))]
        results[name] = med
        print(
            f"  {name:<34} median {med * 1000:8.1f} ms   p90 {p90 * 1000:8.1f} ms   "
            f"queries/cycle {qpc:6.1f}   firing instances {firing}"
        )
    ratio = results["full catalog"] / results["threshold rules only (baseline)"]
    print(f"  ratio full / baseline: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
