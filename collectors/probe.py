"""The end-to-end probe: records produced with ``acks=all`` to one partition led by each broker and consumed back,
outside the collector's scrape path.

    Probe (per cluster, two threads)                                 ProbeSeries ──(ProbeExporter.collect)──> /metrics
      sender:   metadata ─ plan (collectors.probe_plan) ─ create/add/elect        ^
                produce one record per owned partition per tick ─ delivery ─ Ledger ─ Observations
      receiver: assign the owned partitions at their end offsets, consume ─┘

``collectors.probe_plan`` decides (placement, results); this module is the shell around confluent-kafka: an
AdminClient, a Producer and a Consumer built from the cluster's client settings (``ClusterConfig.client_settings``:
SASL_SSL where the cluster is secured, secrets never logged), run by threads of the collector process. The records
are tiny (a run id and a sequence number) and the consumer never commits: its group (the topic's name) holds no
offsets, so no lag series or lag alert ever names it.

Series (docs/metrics.md): ``kafka_probe_produce_latency_seconds`` and ``kafka_probe_roundtrip_latency_seconds``
(histograms), ``kafka_probe_messages_total{result=ok|error|lost}``, each with ``cluster`` and ``broker`` (the
partition's preferred leader), and ``kafka_health_probe_up{cluster}``. Their state lives in ``ProbeSeries``, not in
the clients, so a broker restart or a replaced client loses no series and resets no counter.

What the probe's own health means: ``kafka_health_probe_up`` is 0 while the probe cannot run (its clients not yet
built, a refused login, a missing ACL, its topic not creatable, a thread dead), and records refused for
authorization are not counted as errors: a probe without rights is not a cluster outage. A cluster that does not
answer (timeouts, brokers down) leaves it at 1: then its records are lost, which is the outage's signal.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from collectors.probe_plan import (
    Ledger,
    PartitionView,
    ProbeMeasurement,
    ProbePlacement,
    Result,
    plan,
    replication_factor,
)
from monitor.core.config import ClusterConfig

log = logging.getLogger(__name__)

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0)
PLAN_SECONDS = 30.0  # metadata re-read and placement fixed this often (brokers joining, leaders moved)
RETRY_SECONDS = 5.0  # after a failed set-up step
ELECT_BACKOFF_SECONDS = 600.0  # after an election refused for lack of Alter on the cluster
ADMIN_TIMEOUT = 10.0
MIN_INSYNC_REPLICAS = 2
# The records are read back within seconds: an hour of them is plenty to look at, and segments that roll hourly let
# retention delete them (a segment is deleted only once closed), so the topic holds about two hours on disk.
TOPIC_CONFIG = {"retention.ms": "3600000", "segment.ms": "3600000"}
CLIENT_ID = "kafka-health-probe"
# librdkafka error names that mean the probe itself cannot run (not that the cluster is down).
REFUSED = frozenset(
    {
        "TOPIC_AUTHORIZATION_FAILED",
        "GROUP_AUTHORIZATION_FAILED",
        "CLUSTER_AUTHORIZATION_FAILED",
        "SASL_AUTHENTICATION_FAILED",
        "_AUTHENTICATION",
        "_SSL",
    }
)


class ProbeSeries:
    """The probe's series of one cluster, thread-safe: cumulative counters and histograms per broker."""

    def __init__(self, cluster: str):
        self.cluster = cluster
        self._lock = threading.Lock()
        self._hist: dict[tuple[str, int], list[float]] = {}  # (kind, broker) -> bucket counts + [sum, count]
        self._results: dict[tuple[int, str], int] = {}
        self._up = False
        self.reason = "not started"

    def ensure(self, brokers: Iterable[int]) -> None:
        """Zero series for these brokers, so a rate over them exists from the probe's first record."""
        with self._lock:
            for b in brokers:
                for kind in ("produce", "roundtrip"):
                    self._hist.setdefault((kind, b), [0.0] * (len(BUCKETS) + 2))
                for r in Result:
                    self._results.setdefault((b, str(r)), 0)

    def record(self, observations: Iterable[ProbeMeasurement]) -> None:
        observations = list(observations)
        if not observations:
            return
        self.ensure({o.broker for o in observations})
        with self._lock:
            for o in observations:
                if o.kind == "result":
                    self._results[(o.broker, str(o.result))] += 1
                    continue
                h = self._hist[(o.kind, o.broker)]
                for i, le in enumerate(BUCKETS):
                    if o.seconds <= le:
                        h[i] += 1
                h[-2] += o.seconds
                h[-1] += 1

    def set_up(self, up: bool, reason: str = "") -> None:
        with self._lock:
            if up != self._up or reason != self.reason:
                (log.info if up else log.warning)(
                    "probe of %s: %s", self.cluster, "running" if up else f"cannot run: {reason}"
                )
            self._up, self.reason = up, reason

    @property
    def up(self) -> bool:
        with self._lock:
            return self._up

    def results(self) -> dict[tuple[int, str], int]:
        with self._lock:
            return dict(self._results)

    def families(self, *, running: bool = True) -> list[Metric]:
        with self._lock:
            hist, results, up = {k: list(v) for k, v in self._hist.items()}, dict(self._results), self._up
        labels = ["cluster", "broker"]
        produce = HistogramMetricFamily(
            "kafka_probe_produce_latency_seconds",
            "Probe records: send to acknowledgement by all in-sync replicas (acks=all)",
            labels=labels,
        )
        roundtrip = HistogramMetricFamily(
            "kafka_probe_roundtrip_latency_seconds", "Probe records: send to consumed back", labels=labels
        )
        for (kind, broker), h in sorted(hist.items()):
            buckets = [(str(le), h[i]) for i, le in enumerate(BUCKETS)] + [("+Inf", h[-1])]
            (produce if kind == "produce" else roundtrip).add_metric(
                [self.cluster, str(broker)], buckets, sum_value=h[-2]
            )
        messages = CounterMetricFamily(
            "kafka_probe_messages",
            "Probe records by result: ok (consumed back within "
            "the deadline), error (produce failed), lost (not back within the deadline)",
            labels=labels + ["result"],
        )
        for (broker, result), n in sorted(results.items()):
            messages.add_metric([self.cluster, str(broker), result], float(n))
        health = GaugeMetricFamily(
            "kafka_health_probe_up",
            "1 while the end-to-end probe runs; 0: it cannot (its records then say nothing about the cluster)",
            labels=["cluster"],
        )
        health.add_metric([self.cluster], 1.0 if up and running else 0.0)
        return [produce, roundtrip, messages, health]


class ProbeExporter:
    """A prometheus_client custom collector over the probes' series."""

    def __init__(self, probes: Sequence[Probe]):
        self._probes = list(probes)

    def collect(self):
        for probe in self._probes:
            yield from probe.series.families(running=probe.running)


def _error_name(err) -> str:
    try:
        return err.name()
    except Exception:  # noqa: BLE001 - not a KafkaError
        return type(err).__name__


def _exception_name(exc: BaseException) -> str:
    arg = exc.args[0] if getattr(exc, "args", None) else None
    return _error_name(arg) if arg is not None and hasattr(arg, "name") else type(exc).__name__


class Probe:
    """The probe of one cluster: ``start()``, ``stop()``; its series in ``series``. ``clock`` is monotonic."""

    def __init__(self, cluster: ClusterConfig, *, clock: Callable[[], float] = time.monotonic):
        self.cluster = cluster
        self.settings = cluster.probe
        self.topic = cluster.probe.topic
        self.series = ProbeSeries(cluster.name)
        self._clock = clock
        self._ledger = Ledger(cluster.probe.deadline_seconds)
        self._lock = threading.Lock()  # the ledger
        self._run = uuid.uuid4().hex[:12]
        self._seq = 0
        self._owners: dict[int, int] = {}  # partition -> broker, from the last plan
        self._assigned: set[int] = set()  # partitions the consumer reads from their end: safe to produce to
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._elect_after = 0.0
        self._login_error: tuple[float, str] | None = None  # (when, what) librdkafka last said about login or TLS
        self._last_ok = 0.0  # when a record was last acknowledged

    # --- lifecycle ---------------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return bool(self._threads) and all(t.is_alive() for t in self._threads)

    def start(self) -> None:
        if self._threads:
            return
        self._threads = [
            threading.Thread(
                target=self._guard, args=(self._send_loop,), daemon=True, name=f"probe-send-{self.cluster.name}"
            ),
            threading.Thread(
                target=self._guard, args=(self._receive_loop,), daemon=True, name=f"probe-receive-{self.cluster.name}"
            ),
            threading.Thread(
                target=self._guard, args=(self._place_loop,), daemon=True, name=f"probe-place-{self.cluster.name}"
            ),
        ]
        for t in self._threads:
            t.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout)

    def _guard(self, loop: Callable[[], None]) -> None:
        try:
            loop()
        except Exception as exc:  # a bug: the probe says it cannot run rather than dying silently
            log.exception("probe of %s failed", self.cluster.name)
            self.series.set_up(False, f"{type(exc).__name__}: {exc}")
            self._stop.set()

    def _client_settings(self, extra: dict) -> dict:
        return {
            **self.cluster.client_settings(),
            "client.id": CLIENT_ID,
            "error_cb": self._on_error,
            "logger": _QUIET,
            **extra,
        }

    def _on_error(self, err) -> None:
        """librdkafka's client-level errors. A refused login or TLS handshake is only said here, and also happens for
        a moment while a broker restarts: it counts once no record was acknowledged for a deadline after it (see
        ``_login_refused``)."""
        name = _error_name(err)
        if name in REFUSED:
            now, seen = self._clock(), self._login_error
            first = seen[0] if seen is not None and seen[0] > self._last_ok else now  # since the last acknowledgement
            self._login_error = (first, f"{name}: {err.str() if hasattr(err, 'str') else err}")

    def _refused(self, name: str) -> None:
        """The cluster refused the probe something its ACLs should allow."""
        user = self.cluster.security.get("sasl.username")
        who = f"User:{user}" if isinstance(user, str) else "the monitoring principal"
        self.series.set_up(
            False,
            f"{name}: {who} needs ACLs allowing Create, Alter, Describe, Write and Read on "
            f"topic {self.topic} and Read on group {self.topic} (docs/configuration.md)",
        )

    def _login_refused(self, now: float) -> None:
        seen = self._login_error
        if seen is not None and seen[0] > self._last_ok and now - seen[0] >= self.settings.deadline_seconds:
            self.series.set_up(False, seen[1])

    # --- placement ---------------------------------------------------------------------------------------------
    def _metadata(self, admin) -> tuple[list[int], dict[int, PartitionView] | None]:
        # DescribeTopics, not a Metadata request naming the topic: librdkafka lets that one auto-create the topic
        # (auto.create.topics.enable), with the broker's default placement and settings.
        from confluent_kafka import TopicCollection

        brokers = sorted(
            n.id for n in admin.describe_cluster(request_timeout=ADMIN_TIMEOUT).result(ADMIN_TIMEOUT + 5).nodes
        )
        try:
            t = admin.describe_topics(TopicCollection([self.topic]), request_timeout=ADMIN_TIMEOUT)[self.topic].result(
                ADMIN_TIMEOUT + 5
            )
        except Exception as exc:
            name = _exception_name(exc)
            if name == "UNKNOWN_TOPIC_OR_PART":
                return brokers, None
            if name in REFUSED:
                raise _Refused(name) from None
            raise
        return brokers, {
            p.id: PartitionView(tuple(r.id for r in p.replicas), p.leader.id if p.leader else -1) for p in t.partitions
        }

    def _apply(self, admin, p: ProbePlacement, now: float) -> None:
        from confluent_kafka import ElectionType, TopicPartition
        from confluent_kafka.admin import NewPartitions, NewTopic

        if p.create:
            rf = replication_factor(len(p.create))
            new = NewTopic(
                self.topic,
                num_partitions=len(p.create),
                replica_assignment=[list(r) for r in p.create],
                config={"min.insync.replicas": str(min(MIN_INSYNC_REPLICAS, rf)), **TOPIC_CONFIG},
            )
            for f in admin.create_topics([new], request_timeout=ADMIN_TIMEOUT).values():
                _result(f, ok_if=("TOPIC_ALREADY_EXISTS",))
            log.info(
                "probe of %s: topic %s created, preferred leaders %s",
                self.cluster.name,
                self.topic,
                [r[0] for r in p.create],
            )
        if p.add:
            total = len(p.owners)
            for f in admin.create_partitions(
                [NewPartitions(self.topic, total, [list(r) for r in p.add])], request_timeout=ADMIN_TIMEOUT
            ).values():
                _result(f)
            log.info("probe of %s: partitions added for brokers %s", self.cluster.name, [r[0] for r in p.add])
        if p.elect and now >= self._elect_after:
            tps = [TopicPartition(self.topic, part) for part in p.elect]
            try:
                # no request_timeout: confluent-kafka 2.16.1's elect_leaders raises SystemError for any keyword
                answers = admin.elect_leaders(ElectionType.PREFERRED, tps).result(ADMIN_TIMEOUT + 5)
            except Exception as exc:  # noqa: BLE001 - a probe measuring another leader is still a probe
                name = _exception_name(exc)
                if name == "CLUSTER_AUTHORIZATION_FAILED":
                    self._elect_after = now + ELECT_BACKOFF_SECONDS
                    # info, not a warning: Kafka gives the leadership back itself (auto.leader.rebalance.enable)
                    log.info(
                        "probe of %s: partitions %s are led by another broker than their own and cannot "
                        "be given back: electing preferred leaders needs Alter on the cluster (docs/"
                        "configuration.md); Kafka's auto.leader.rebalance will",
                        self.cluster.name,
                        p.elect,
                    )
                else:
                    log.info("probe of %s: preferred-leader election not done: %s", self.cluster.name, name)
            else:
                failed = {tp.partition: str(e) for tp, e in answers.items() if e is not None}
                log.info(
                    "probe of %s: preferred leaders elected for partitions %s%s",
                    self.cluster.name,
                    sorted(set(p.elect) - set(failed)),
                    f" (not for {failed})" if failed else "",
                )

    def _place(self, admin, now: float) -> str:
        """Read the metadata and fix the placement: "placed", "refused" (the probe may not), or "failed" (the
        cluster did not answer: the last owners are kept)."""
        try:
            brokers, topic = self._metadata(admin)
            p = plan(brokers, topic)
            if p.changes:
                self._apply(admin, p, now)
        except _Refused as exc:
            self._refused(str(exc))
            return "refused"
        except Exception as exc:  # noqa: BLE001 - timeouts, brokers down: the cluster's trouble, tried again
            name = _exception_name(exc)
            if name in REFUSED:
                self._refused(name)
                return "refused"
            # info: a cluster that does not answer is told by the records lost, every 5 s a warning would add nothing
            log.info("probe of %s: placement not read: %s: %s", self.cluster.name, name, exc)
            return "failed"
        self._owners = dict(p.owners)
        self.series.ensure(self._owners.values())
        return "placed"

    # --- the loops ---------------------------------------------------------------------------------------------
    def _place_loop(self) -> None:
        """The placement, on a thread of its own: its Admin calls wait up to ``ADMIN_TIMEOUT`` for a broker that is
        down or frozen, and while they waited on the send loop (as they did) nothing was sent to the healthy brokers
        and no record was counted lost, so a frozen broker's lost records reached Prometheus up to 15 s late (CI:
        ``test_probe_frozen_broker_fails_its_partition_within_the_deadline`` saw none 45 s after the SIGSTOP)."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(self._client_settings({}))
        while not self._stop.is_set():
            placed = self._place(admin, self._clock())
            if placed == "placed":
                self.series.set_up(True)
            self._stop.wait(PLAN_SECONDS if placed == "placed" else RETRY_SECONDS)

    def _send_loop(self) -> None:
        from confluent_kafka import Producer

        producer = Producer(
            self._client_settings(
                {
                    "acks": "all",
                    "linger.ms": 0,
                    "enable.idempotence": False,
                    "message.timeout.ms": int(self.settings.deadline_seconds * 1000),
                }
            )
        )
        interval = 1.0 / self.settings.messages_per_second
        next_tick = self._clock()
        try:
            while not self._stop.is_set():
                now = self._clock()
                if now >= next_tick:
                    self._produce(producer, now)
                    next_tick += interval
                    if next_tick < now:  # fell behind (a stalled machine): no burst to catch up
                        next_tick = now + interval
                with self._lock:
                    lost = self._ledger.expire(self._clock())
                self.series.record(lost)
                self._login_refused(self._clock())
                producer.poll(max(0.0, min(0.05, next_tick - self._clock())))
        finally:
            producer.flush(1.0)

    def _produce(self, producer, now: float) -> None:
        for partition, broker in sorted(self._owners.items()):
            if partition not in self._assigned:
                continue
            self._seq += 1
            key = self._seq
            with self._lock:
                self._ledger.sent(key, broker, now)
            try:
                producer.produce(
                    self.topic,
                    f"{self._run}:{key}".encode(),
                    partition=partition,
                    on_delivery=lambda err, _msg, key=key: self._delivered(key, err),
                )
            except BufferError:  # the local queue is full (brokers gone for long): the deadline counts it lost
                pass

    def _delivered(self, key: int, err) -> None:
        if err is not None and _error_name(err) in REFUSED:
            self._refused(_error_name(err))
            with self._lock:
                self._ledger.forget(key)  # not counted: not the cluster's fault
            return
        with self._lock:
            seen = self._ledger.delivered(key, self._clock(), None if err is None else _error_name(err))
        if err is None:
            self._last_ok = self._clock()
            if not self.series.up and self.series.reason.startswith(tuple(REFUSED)):
                self.series.set_up(True)  # the ACL was granted, the password fixed meanwhile
        self.series.record(seen)

    def _receive_loop(self) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer(
            self._client_settings(
                {
                    "group.id": self.topic,
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "auto.offset.reset": "latest",
                }
            )
        )
        assigned: dict[int, int] = {}
        try:
            while not self._stop.is_set():
                self._assign(consumer, assigned)
                msg = consumer.poll(0.2)  # returns with the first record: consume(n) would wait for n or the timeout
                if msg is not None:
                    self._received(msg)
        finally:
            consumer.close()

    def _received(self, msg) -> None:
        err = msg.error()
        if err is not None:
            if _error_name(err) in REFUSED:
                self._refused(_error_name(err))
            return
        run, _, key = (msg.value() or b"").decode(errors="replace").partition(":")
        if run != self._run or not key.isdigit():
            return  # an earlier run's record, or another probe's on the same topic
        with self._lock:
            seen = self._ledger.consumed(int(key), self._clock())
        self.series.record(seen)

    def _assign(self, consumer, assigned: dict[int, int]) -> None:
        """Read the owned partitions from their current end, so that no record sent after is missed."""
        from confluent_kafka import TopicPartition

        wanted = set(self._owners) - set(assigned)
        if not wanted:
            return
        for partition in sorted(wanted):
            try:
                _, high = consumer.get_watermark_offsets(TopicPartition(self.topic, partition), timeout=5.0)
            except Exception as exc:  # noqa: BLE001 - tried again next time round
                log.info("probe of %s: partition %d not read yet: %s", self.cluster.name, partition, exc)
                continue
            assigned[partition] = high
        consumer.assign([TopicPartition(self.topic, p, off) for p, off in sorted(assigned.items())])
        self._assigned = set(assigned)


class _Refused(Exception):
    pass


def _result(future, ok_if: tuple[str, ...] = ()):
    try:
        return future.result(ADMIN_TIMEOUT + 5)
    except Exception as exc:
        name = _exception_name(exc)
        if name in ok_if:
            return None
        if name in REFUSED:
            raise _Refused(name) from None
        raise


# librdkafka's own log lines (connection refused to a stopped broker, again and again) stay out of the service's
# log: the probe's series say it better, and errors still reach error_cb.
_QUIET = logging.getLogger("kafka_health.collectors.probe.librdkafka")
_QUIET.propagate = False
_QUIET.addHandler(logging.NullHandler())


def build_probes(
    clusters: Iterable[ClusterConfig], *, runs_here: Callable[[str], bool] = lambda _c: True
) -> list[Probe]:
    """One probe per cluster whose probe is enabled and which this collector process runs (its shard)."""
    return [Probe(c) for c in clusters if c.probe.enabled and runs_here(c.name)]
