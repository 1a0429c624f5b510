"""``AlertService``: the alert engine as a component of ``kafka-health serve`` (the one place that wires it).

Each cycle (every ``config.rules.evaluation_interval_seconds``, in its own thread):
  0. renew or take the lease (``alerts.lease``); a standby stops here and looks again a quarter interval later;
  1. read ``now`` once; load instances and active silences from the store (a takeover starts from them: a firing
     alert is not paged again, a pending one keeps its ``active_at``);
  2. ``Engine.evaluate`` against Prometheus' HTTP API;
  3. in ONE transaction, fenced by the lease's epoch (``Lease.fence``, its first statement): save instances,
     enqueue their notifications in the outbox, upsert heartbeats;
  4. deliver due outbox rows (claimed ``FOR UPDATE SKIP LOCKED``, the lease checked right before each send, the claim
     held at most ``policy.hold_seconds`` by a frozen engine; retries,
     backoff, dead letters);
  5. export its own health into ``registry`` (``kafka_health_*``), and every pending or firing instance with its
     labels (``kafka_health_alert_instance``, ``alerts.exported``: what the dashboards show beside ``ALERTS``); the
     client advisor's findings, computed by KafkaClientHurtsOtherTenants during step 2, are exported there too
     (``kafka_client_advisor_finding``).
A failing cycle is logged and counted, never fatal: the next cycle tries again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from alerts import repo
from alerts.detectors import Detector
from alerts.detectors.registry import builtin_detectors
from alerts.engine import CycleResult, Engine, RuleHealth
from alerts.exported import ActiveAlerts
from alerts.lease import STANDBY_POLLS_PER_INTERVAL, Deposed, Lease
from alerts.mute import Silencer
from alerts.notify import (
    AlertmanagerNotifier,
    DeliveryPolicy,
    DeliveryReport,
    Notifier,
    WebhookNotifier,
    alertmanager_index,
    deliver_due,
    enqueue_notifications,
)
from alerts.rules import load_rules
from monitor.advisor.exported import FindingsBoard
from monitor.core.config import Config
from monitor.core.errors import KafkaHealthError
from monitor.core.prom import PrometheusSource, Source, prometheus_source
from monitor.core.store import Store
from monitor.core.tenancy import FixedTenants, Tenants
from monitor.core.times import utc_now

log = logging.getLogger(__name__)


class _Metrics:
    def __init__(self, registry: CollectorRegistry):
        self.duration = Histogram(
            "kafka_health_alert_evaluation_duration_seconds",
            "Duration of one alert evaluation cycle",
            registry=registry,
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.cycles = Counter(
            "kafka_health_alert_evaluations_total", "Alert evaluation cycles", ["result"], registry=registry
        )
        self.rule_health = Gauge(
            "kafka_health_alert_rule_health",
            "1 for the rule's current health (ok, err, nodata)",
            ["rule", "health"],
            registry=registry,
        )
        self.rule_duration = Gauge(
            "kafka_health_alert_rule_duration_seconds", "Last evaluation time of each rule", ["rule"], registry=registry
        )
        self.active = Gauge("kafka_health_alerts", "Alert instances by state", ["state"], registry=registry)
        self.queue = Gauge(
            "kafka_health_alert_notification_queue_depth", "Notifications waiting in the outbox", registry=registry
        )
        self.dead = Gauge(
            "kafka_health_alert_dead_letters", "Notifications that could not be delivered", registry=registry
        )
        self.sent = Counter(
            "kafka_health_alert_notifications_total", "Notification delivery attempts", ["result"], registry=registry
        )
        self.last = Gauge(
            "kafka_health_alert_last_evaluation_timestamp_seconds", "End of the last good cycle", registry=registry
        )
        self.active_engine = Gauge(
            "kafka_health_alert_engine_active",
            "1 while this engine holds the lease (evaluates and notifies), 0 on standby",
            registry=registry,
        )
        self.lease_epoch = Gauge(
            "kafka_health_alert_engine_lease_epoch", "The lease epoch this engine last saw", registry=registry
        )
        self.deposed = Counter(
            "kafka_health_alert_engine_deposed_total",
            "Writes refused because the lease had passed to another engine",
            registry=registry,
        )


class AlertService:
    name = "alerts"

    def __init__(
        self,
        config: Config,
        *,
        store: Store,
        registry: CollectorRegistry,
        source: Source | None = None,
        notifier_for: Callable[[str], Notifier] | None = None,
        clock: Callable[[], datetime] = utc_now,
        detectors: dict[str, Detector] | None = None,
        policy: DeliveryPolicy = DeliveryPolicy(),
        resolved_retention: timedelta = timedelta(days=7),
        tenants: Tenants | None = None,
    ):
        self.config = config
        # The live tenant set (serve passes monitor.tenants.live.LiveTenants): attribution, routing and webhooks
        # follow a tenant created or deleted through the API from the next cycle on.
        self.tenants = tenants or FixedTenants(config.tenants)
        self.store = store
        self.rules = load_rules(config.rules)  # ConfigError now, not at 3 a.m.
        # The client advisor's findings, a by-product of KafkaClientHurtsOtherTenants' evaluation, on /metrics.
        self.findings = FindingsBoard(max_age_seconds=max(3 * config.rules.evaluation_interval_seconds, 60.0))
        registry.register(self.findings)
        self.engine = Engine(config, self.rules, detectors or builtin_detectors(findings=self.findings))
        self.source = source or prometheus_source(config.prometheus)
        self._notifier_for = notifier_for or self._default_notifier
        self._notifiers: dict[str, Notifier] = {}
        self.clock = clock
        self.policy = policy
        self.resolved_retention = resolved_retention
        self.metrics = _Metrics(registry)
        self.active_alerts = ActiveAlerts()  # the instances themselves, labelled like ALERTS, for Grafana
        registry.register(self.active_alerts)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_ok: float | None = None  # time.monotonic() of the last good cycle
        self.last_result: CycleResult | None = None
        self.lease = Lease(store, interval_seconds=config.rules.evaluation_interval_seconds)
        self.role = "starting"  # active | standby, what /readyz reports

    def _default_notifier(self, target: str) -> Notifier:
        if target not in self._notifiers:
            index = alertmanager_index(target)
            if index is not None:
                self._notifiers[target] = AlertmanagerNotifier.from_settings(self.config.alertmanager, index=index)
            else:
                self._notifiers[target] = WebhookNotifier(target)
        return self._notifiers[target]

    # ---------------------------------------------------------------------------------------- component

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="alert-engine", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        try:
            self.lease.release()
        except KafkaHealthError as exc:  # the lease then expires by itself
            log.warning("alert engine lease not released: %s", exc)
        if isinstance(self.source, PrometheusSource):
            self.source.close()

    def ready(self) -> bool:
        """True while cycles succeed: the last good one is at most three intervals (or a minute) old."""
        interval = self.config.rules.evaluation_interval_seconds
        return self._last_ok is not None and time.monotonic() - self._last_ok < max(3 * interval, 60.0)

    def _loop(self) -> None:
        interval = self.config.rules.evaluation_interval_seconds
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                self.run_once()
            except Exception:  # a bug in one cycle must not kill the engine; it shows in metrics
                log.exception("alert cycle failed")
                self.metrics.cycles.labels("error").inc()
            wait = interval / STANDBY_POLLS_PER_INTERVAL if self.role == "standby" else interval
            self._stop.wait(max(0.0, wait - (time.monotonic() - t0)))

    # ---------------------------------------------------------------------------------------- one cycle

    def run_once(self, now: datetime | None = None) -> CycleResult | None:
        """One evaluation + delivery cycle at ``now`` (default: the clock). Never raises for expected failures."""
        if not self._take_lease():
            return None
        now = now or self.clock()
        t0 = time.perf_counter()
        try:
            result = self.evaluate(now)
        except Deposed as exc:
            self._stand_by(str(exc))
            return None
        except KafkaHealthError as exc:
            log.error("alert evaluation failed: %s", exc)
            self.metrics.cycles.labels("error").inc()
            return None
        self.deliver(now)
        self.metrics.duration.observe(time.perf_counter() - t0)
        self.metrics.cycles.labels("ok").inc()
        self.metrics.last.set(now.timestamp())
        self._last_ok = time.monotonic()
        return result

    def _take_lease(self) -> bool:
        """Renew or take the lease; False on standby (ready: a standby is a healthy member of the pair)."""
        try:
            decision = self.lease.acquire()
        except KafkaHealthError as exc:  # the store does not answer: hold nothing, write nothing
            log.error("alert engine lease: %s", exc)
            self.role = "standby"
            self.metrics.active_engine.set(0)
            return False
        self.metrics.lease_epoch.set(decision.epoch)
        if not decision.held:
            if self.role == "active":
                self._stand_by(f"the lease is held by another engine (epoch {decision.epoch})")
            self.role = "standby"
            self._last_ok = time.monotonic()
            return False
        self.role = "active"
        self.metrics.active_engine.set(1)
        return True

    def _stand_by(self, why: str) -> None:
        log.warning("alert engine %s stands by: %s", self.lease.holder, why)
        self.metrics.deposed.inc()
        self.metrics.active_engine.set(0)
        self.active_alerts.publish([])  # the active engine exports the instances now
        self.role = "standby"

    def _follow_tenants(self) -> None:
        current = self.tenants.current()
        if current is not self.config.tenants:
            self.config = self.config.model_copy(update={"tenants": current})
            self.engine.use_tenants(self.config, self.tenants.index())

    def evaluate(self, now: datetime) -> CycleResult:
        self._follow_tenants()
        with self.store.session() as s:
            prev = repo.load_instances(session=s)
            silencer = Silencer(repo.active_silences(now, session=s), now)
        result = self.engine.evaluate(
            prev,
            self.source,
            now,
            silences=silencer,
            resend_seconds=max(60.0, self.config.rules.evaluation_interval_seconds),
        )
        with self.store.session() as s:
            self.lease.fence(s)  # first: a deposed engine writes nothing of this cycle
            repo.save_instances(result.instances, result.deleted, session=s)
            enqueue_notifications(result.notifications, self.config, now=now, session=s)
            for cluster, ok in result.data_ok.items():
                repo.upsert_heartbeat(cluster, now, ok, result.detail.get(cluster, ""), session=s)
            repo.prune_resolved(now - self.resolved_retention, session=s)
        self._export(result)
        self.last_result = result
        return result

    def deliver(self, now: datetime) -> DeliveryReport:
        try:
            report = deliver_due(self.store, self._notifier_for, now=now, policy=self.policy, lease=self.lease)
        except Deposed as exc:
            self._stand_by(str(exc))
            return DeliveryReport()
        except KafkaHealthError as exc:
            log.error("notification delivery failed: %s", exc)
            return DeliveryReport()
        self.metrics.sent.labels("delivered").inc(report.delivered)
        self.metrics.sent.labels("failed").inc(report.failed)
        with self.store.session() as s:
            self.metrics.queue.set(repo.outbox_depth(session=s))
            self.metrics.dead.set(repo.dead_letter_count(session=s))
        return report

    def _export(self, result: CycleResult) -> None:
        for rule, st in result.rules.items():
            for h in RuleHealth:
                self.metrics.rule_health.labels(rule, h.value).set(1 if st.health is h else 0)
            self.metrics.rule_duration.labels(rule).set(st.duration_seconds)
        counts: dict[str, int] = {"pending": 0, "firing": 0, "resolved": 0}
        for inst in result.instances.values():
            counts[inst.state.value] = counts.get(inst.state.value, 0) + 1
        for state, n in counts.items():
            self.metrics.active.labels(state).set(n)
        self.active_alerts.publish(result.instances.values())
