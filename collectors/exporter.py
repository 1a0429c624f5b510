"""The ``/metrics`` side: the last result of every target, rebuilt into Prometheus families on each scrape.

``SnapshotStore`` holds the last completed ``TargetResult`` per target (written by collection threads). The
exporter's ``collect()`` only reads it, so a scrape never waits for a broker. A result older than two collection
intervals is not served (its samples are dropped and the target reports success 0), so Prometheus never stores a
stale value as if it were fresh.

What a round left out is counted per cause (``CutCause``: the series cap, the round's deadline) in
``kafka_health_scrape_cut_rounds_total``, exported at 0 for every target and cause from the first round so that
``increase()`` sees the first cut (the ``KafkaHealthDataDropped`` alert reads it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from collectors.types import CutCause, Sample, TargetResult, TargetStatus

SELF_LABELS = ["cluster", "collector", "target"]


class SnapshotStore:
    """Thread-safe: last result, last success time, failure counts and cut counts per target key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: dict[str, TargetResult] = {}
        self._last_success: dict[str, float] = {}
        self._failures: dict[tuple[str, str], int] = {}
        self._cuts: dict[tuple[str, CutCause], int] = {}

    def put(self, result: TargetResult) -> None:
        key = result.target.key
        with self._lock:
            self._results[key] = result
            if result.status is TargetStatus.FAILED:
                reason = str(result.reason)
                self._failures[(key, reason)] = self._failures.get((key, reason), 0) + 1
            else:
                self._last_success[key] = result.started_at + result.duration_seconds
            for cause in CutCause:
                self._cuts[(key, cause)] = self._cuts.get((key, cause), 0)
            for cut in result.cuts:
                self._cuts[(key, cut.cause)] += 1

    def forget(self, keys: Iterable[str]) -> None:
        """Drop what is kept of targets that are no longer collected (a broker unregistered from the cluster)."""
        gone = set(keys)
        with self._lock:
            for key in gone:
                self._results.pop(key, None)
                self._last_success.pop(key, None)
            self._failures = {k: v for k, v in self._failures.items() if k[0] not in gone}
            self._cuts = {k: v for k, v in self._cuts.items() if k[0] not in gone}

    def cut_rounds(self) -> dict[tuple[str, CutCause], int]:
        """Rounds of each target that a cause cut data from (every target and cause, 0 until it happens)."""
        with self._lock:
            return dict(self._cuts)

    def snapshot(self) -> tuple[dict[str, TargetResult], dict[str, float], dict[tuple[str, str], int]]:
        with self._lock:
            return dict(self._results), dict(self._last_success), dict(self._failures)


def families(samples: Iterable[Sample]) -> list[Metric]:
    """Pure: samples -> one metric family per name (label names taken from the samples)."""
    fams: dict[str, Metric] = {}
    for s in samples:
        fam = fams.get(s.name)
        if fam is None:
            fam = fams[s.name] = _family(s)
        if s.kind == "summary":  # the quantile is one of the labels: a sample of the family's own name
            fam.add_sample(s.name, dict(s.labels), s.value)
        else:
            fam.add_metric([v for _, v in s.labels], s.value)
    return list(fams.values())


def _family(s: Sample) -> Metric:
    if s.kind == "summary":
        return Metric(s.name, s.help, "summary")
    cls = CounterMetricFamily if s.kind == "counter" else GaugeMetricFamily
    return cls(s.name, s.help, labels=[n for n, _ in s.labels])


class KafkaHealthExporter:
    """A prometheus_client custom collector over a ``SnapshotStore``."""

    def __init__(self, store: SnapshotStore, *, interval_seconds: float, clock: Callable[[], float] = time.time):
        self._store = store
        self._max_age = 2 * interval_seconds
        self._clock = clock

    def collect(self) -> Iterable[Metric]:
        now = self._clock()
        results, last_success, failures = self._store.snapshot()
        samples: list[Sample] = []
        success = GaugeMetricFamily(
            "kafka_health_scrape_success",
            "1 if the last collection of the target succeeded (no_data counts as success)",
            labels=SELF_LABELS,
        )
        status = GaugeMetricFamily(
            "kafka_health_scrape_status", "1 for the target's current status", labels=SELF_LABELS + ["status"]
        )
        duration = GaugeMetricFamily(
            "kafka_health_scrape_duration_seconds", "Duration of the last collection", labels=SELF_LABELS
        )
        last_ok = GaugeMetricFamily(
            "kafka_health_scrape_last_success_timestamp_seconds", "When the target last answered", labels=SELF_LABELS
        )
        series = GaugeMetricFamily(
            "kafka_health_scrape_series", "Series the target's last collection produced", labels=SELF_LABELS
        )
        capped = GaugeMetricFamily(
            "kafka_health_scrape_series_capped",
            "1 if the per-target series cap (collection.max_series_per_target) cut series",
            labels=SELF_LABELS,
        )
        dropped = GaugeMetricFamily(
            "kafka_health_scrape_series_dropped", "Series cut by the per-target cap", labels=SELF_LABELS
        )
        fails = CounterMetricFamily(
            "kafka_health_scrape_failures", "Failed collections by reason", labels=SELF_LABELS + ["reason"]
        )
        cut_rounds = CounterMetricFamily(
            "kafka_health_scrape_cut_rounds",
            "Rounds that left data out, by cause: series_cap "
            "(collection.max_series_per_target), deadline (the round ran out of time)",
            labels=SELF_LABELS + ["cause"],
        )
        for key, r in sorted(results.items()):
            t = r.target
            lv = [t.cluster, t.collector, t.name]
            fresh = now - (r.started_at + r.duration_seconds) <= self._max_age
            state = str(r.status) if fresh else "stale"
            ok = fresh and r.status is not TargetStatus.FAILED
            success.add_metric(lv, 1.0 if ok else 0.0)
            status.add_metric(lv + [state], 1.0)
            duration.add_metric(lv, r.duration_seconds)
            if key in last_success:
                last_ok.add_metric(lv, last_success[key])
            series.add_metric(lv, float(len(r.samples)) if fresh else 0.0)
            capped.add_metric(lv, 1.0 if r.series_dropped else 0.0)
            dropped.add_metric(lv, float(r.series_dropped))
            if fresh:
                samples.extend(r.samples)
        for (key, reason), n in sorted(failures.items()):
            t = results[key].target
            fails.add_metric([t.cluster, t.collector, t.name, reason], float(n))
        for (key, cause), n in sorted(self._store.cut_rounds().items()):
            if key not in results:  # put between the two reads: counted next scrape
                continue
            t = results[key].target
            cut_rounds.add_metric([t.cluster, t.collector, t.name, str(cause)], float(n))
        yield from families(samples)
        yield from (success, status, duration, last_ok, series, capped, dropped, fails, cut_rounds)
