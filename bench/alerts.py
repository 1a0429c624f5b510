"""Evaluation cost of one alert-engine cycle for a large cluster, on synthetic data; and, with --latency, detection
latency on the real stack against equivalent Prometheus alerting rules.

    .venv/bin/python bench/alerts.py [--brokers 100] [--cycles 30]
    .venv/bin/python bench/alerts.py --latency [--reps 3] [--dir /tmp/alerts-bench] [--port-base 21000]

--latency: the local stack (started, or reused if running in --dir), the real collectors scraped by its Prometheus,
the alert engine with the built-in catalog evaluated every 15 s (the default), and Strimzi-style rules (`> 0 for
10s`) loaded into the same Prometheus (evaluated every 5 s). Scenarios, each repeated --reps times: a broker killed
(SIGKILL; restarted between repetitions), and once a broker's log dir on a 128 MiB tmpfs filled at ~0.5 MiB/s
(needs root; the engine's disk detector with a 2 min window as in the e2e test, against `predict_linear` over the
same window and Strimzi's "less than 15 % free"; the free space left when each fired is printed too: it is what an
early warning buys). Prints, per alert, the median seconds from the fault to firing in
the engine and in Prometheus, and their ratio.

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
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alerts.detectors import builtin_detectors  # noqa: E402
from alerts.engine import Engine  # noqa: E402
from alerts.inputs import M  # noqa: E402
from alerts.prom import Sample, Series  # noqa: E402
from alerts.rules import builtin_variant, load_rules  # noqa: E402
from monitor.config import parse_config  # noqa: E402


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
            return [Sample({"__name__": m, "cluster": "big"}, 100) for m in M.values()]
        if "vector(1)" in expr:
            return [Sample({}, 1.0)]
        if M["topic_size"] in expr and "last_over_time" in expr:
            return [Sample({"cluster": "big", "broker": b, "topic": t}, 1)
                    for i, t in enumerate(self.topics) for b in self.brokers[i % 7::7][:3]]
        if M["topic_size"] in expr:
            return [Sample({"cluster": "big", "topic": t}, 1e9) for t in self.topics]
        if M["group_lag_seconds"] in expr:
            return [Sample({"cluster": "big", "group": g, "topic": self.topics[i % len(self.topics)]}, 30.0)
                    for i, g in enumerate(self.groups)]
        if 'broker="' in expr:  # per-broker client detail
            return [Sample({"user": f"u{i}", "client_id": f"t{i % 20}-client{i}"}, self.rng.random())
                    for i in range(20)]
        if M["client_connections"] in expr:
            return [Sample({"cluster": "big", "broker": b, "client_software_name": "apache-kafka-java",
                            "client_software_version": "2.4.0" if int(b) % 50 == 0 else "3.7.0"}, 5)
                    for b in self.brokers]
        out = []
        for i, b in enumerate(self.brokers):
            v = self._broker_value(expr, i)
            # threshold rules return only violating series, as Prometheus does
            if (" > " in expr and v <= 0) or (" < " in expr and v >= 0.5) or (" == 0" in expr and v != 0):
                continue
            out.append(Sample({"cluster": "big", "broker": b}, v))
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
            return [series({"cluster": "big", "group": g, "topic": self.topics[i % len(self.topics)]},
                           lambda k, i=i: 100 + (k * 10 if i % 9 == 0 else 0)) for i, g in enumerate(self.groups)]
        if M["topic_messages_in"] in expr:
            return [series({"cluster": "big", "topic": t}, lambda k: 10.0) for t in self.topics]
        if M["group_members"] in expr:
            return [series({"cluster": "big", "group": g}, lambda k: 1.0) for g in self.groups]
        if M["group_committed_offset"] in expr:
            return []
        if M["fs_size"] in expr and M["fs_avail"] not in expr:  # filesystem sizes: constant
            return [series({"cluster": "big", "broker": b, "path": "/data"}, lambda k: 2e12) for b in self.brokers]
        if M["fs_size"] in expr:  # used bytes: sawtooth on most, growth on a few
            return [series({"cluster": "big", "broker": b, "path": "/data"},
                           lambda k, i=i: 5e11 + (k * 4e9 if i % 25 == 0 else (k % 30) * 1e9)) for i, b in
                    enumerate(self.brokers)]
        if M["request_latency"] in expr:
            return [series({"cluster": "big", "broker": b, "request": "Produce"},
                           lambda k, i=i: 0.3 if (i == 5 and k > n - 20) else 0.05 + 0.001 * math.sin(k))
                    for i, b in enumerate(self.brokers)]
        if M["response_queue_size"] in expr:
            return [series({"cluster": "big", "broker": b}, lambda k, i=i: 80.0 if i % 33 == 0 else 2.0)
                    for i, b in enumerate(self.brokers)]
        if M["network_processor_idle"] in expr:
            return [series({"cluster": "big", "broker": b}, lambda k: 0.9 - 0.005 * k) for b in self.brokers]
        return []


def config(tenants: int):
    lines = ["clusters:", "  - name: big", "    bootstrap_servers: localhost:9092", "tenants:"]
    for t in range(tenants):
        lines += [f"  - name: tenant{t}", f"    selectors: [{{cluster: big, topic_prefixes: [t{t}.],",
                  f"                 client_id_prefixes: [t{t}-], group_prefixes: [t{t}.]}}]",
                  f"    contract: {{storage_budget_bytes: {int(5e11)}}}"]
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

# Strimzi's kafka rules (packaging/examples/metrics/prometheus-install/prometheus-rules.yaml) on our metric names.
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
"""

# (engine alert, Prometheus alert) per scenario
PAIRS = {
    "broker killed": [("KafkaBrokerUnreachable", "PromBrokerDown"),
                      ("KafkaUnderReplicatedPartitions", "PromUnderReplicatedPartitions"),
                      ("KafkaOfflinePartitions", "PromOfflinePartitions")],
    "log dir filling": [("KafkaDiskFullRisk", "PromDiskFullPredicted"), ("KafkaDiskFullRisk", "PromRunningOutOfSpace")],
}

# The disk detector over 2 minutes, as in tests/e2e/test_alert_disk_fault.py (the default window is 6 h).
FAST_DISK_RULE = builtin_variant("KafkaDiskFullRisk", for_="10s", window="2m", min_points=5)


class Watch:
    """First time each alert is seen firing after ``t0``: the engine's (its own loop thread, as `serve --role
    alerts` runs it) and Prometheus' (polled every second)."""

    def __init__(self, stack, svc, names: set[str], prom_names: set[str], t0: float, prom_labels: dict | None = None):
        import threading

        self.stack, self.svc, self.t0 = stack, svc, t0
        self.prom_labels = prom_labels or {}  # e.g. only the victim broker's filesystem
        self.names, self.prom_names = names, prom_names
        self.first: dict[str, float] = {}
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._engine, daemon=True),
                        threading.Thread(target=self._prom, daemon=True)]
        for th in self.threads:
            th.start()

    def _engine(self):
        from alerts.models import AlertState

        interval = self.svc.config.rules.evaluation_interval_seconds
        while not self.stop.is_set():
            t = time.monotonic()
            r = self.svc.run_once()
            for i in (r.instances.values() if r else ()):
                if i.rule in self.names and i.state is AlertState.FIRING:
                    self.first.setdefault(i.rule, time.monotonic() - self.t0)
            self.stop.wait(max(0.0, interval - (time.monotonic() - t)))

    def _prom(self):
        import httpx

        while not self.stop.is_set():
            try:
                alerts = httpx.get(f"{self.stack.layout.prometheus_url}/api/v1/alerts", timeout=5).json()
                for a in alerts["data"]["alerts"]:
                    if (a["labels"]["alertname"] in self.prom_names and a["state"] == "firing"
                            and all(a["labels"].get(k) == v for k, v in self.prom_labels.items())):
                        self.first.setdefault(a["labels"]["alertname"], time.monotonic() - self.t0)
            except Exception:  # noqa: BLE001 - a slow answer is a missed poll, not a failed bench
                pass
            self.stop.wait(1.0)

    def wait(self, timeout: float) -> dict[str, float]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not (self.names | self.prom_names) <= set(self.first):
            time.sleep(1.0)
        self.stop.set()
        for th in self.threads:
            th.join(30)
        return dict(self.first)


def _prom_quiet(stack, names: set[str], timeout: float = 180.0, labels: dict | None = None) -> None:
    """Wait until none of ``names`` (with ``labels``) is pending or firing in Prometheus (the previous repetition
    is over)."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alerts = httpx.get(f"{stack.layout.prometheus_url}/api/v1/alerts", timeout=5).json()["data"]["alerts"]
        if not [a for a in alerts if a["labels"]["alertname"] in names
                and all(a["labels"].get(k) == v for k, v in (labels or {}).items())]:
            return
        time.sleep(2.0)


def latency(args) -> int:
    import shutil
    import signal
    import tempfile
    import threading

    import httpx
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from prometheus_client import CollectorRegistry

    from alerts.service import AlertService
    from monitor import serve
    from monitor.config import RulesSettings, TenantConfig, TenantSelector
    from monitor.stack import Stack, StackLayout
    from monitor.stack.faults import small_log_dir
    from monitor.store import Store
    from monitor.store.migrate import upgrade

    stack = Stack(StackLayout(dir=args.dir, port_base=args.port_base), log=lambda *_: None)
    already_up = all(s.healthy for s in stack.status())
    if not already_up:
        print(f"starting the stack in {args.dir} ...", flush=True)
        stack.up(timeout=240)
    L = stack.layout
    tmp = Path(tempfile.mkdtemp(prefix="alerts-latency-"))
    (tmp / "disk-rule.yaml").write_text(FAST_DISK_RULE)
    rules_file = L.prometheus_rules_dir / "strimzi-style.yml"
    rules_file.write_text(STRIMZI_STYLE_RULES)
    httpx.post(f"{L.prometheus_url}/-/reload", timeout=10).raise_for_status()
    tenant = TenantConfig(name="bench", selectors=(TenantSelector(cluster="local", topic_prefixes=("bench.",)),))
    config = stack.config(tenants=(tenant,))
    config = config.model_copy(update={"rules": RulesSettings(files=(str(tmp / "disk-rule.yaml"),))})

    def fresh_store(name: str) -> Store:  # each repetition starts with no instances
        store = Store(f"sqlite:///{tmp / name}.db")
        upgrade(store)
        return store

    victim = L.broker_ids[-1]
    admin = AdminClient({"bootstrap.servers": L.bootstrap_servers})
    for t in (NewTopic("bench.rf1", num_partitions=1, replica_assignment=[[victim]]),
              NewTopic("bench.rf3", num_partitions=3, replication_factor=3)):
        for f in admin.create_topics([t]).values():
            try:
                f.result(60)
            except Exception as exc:  # noqa: BLE001 - reused stack
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise
    stop = threading.Event()
    collector = threading.Thread(target=serve.run, args=(config, ("collector",), "127.0.0.1", L.service_port),
                                 kwargs={"stop_event": stop}, daemon=True)
    collector.start()
    results: dict[str, list[tuple[str, str, float | None, float | None]]] = {}
    try:
        time.sleep(20)  # a few scrapes, so every series exists before the first fault
        for rep in range(args.reps):
            names = {e for e, _ in PAIRS["broker killed"]}
            prom = {p for _, p in PAIRS["broker killed"]}
            _prom_quiet(stack, prom)
            svc = AlertService(config, store=fresh_store(f"kill-{rep}"), registry=CollectorRegistry())
            svc.run_once()  # the engine's state before the fault
            t0 = time.monotonic()
            stack.procs.signal(L.node_name(victim), signal.SIGKILL)
            first = Watch(stack, svc, names, prom, t0).wait(240)
            for e, p in PAIRS["broker killed"]:
                results.setdefault("broker killed", []).append((e, p, first.get(e), first.get(p)))
            print(f"  broker killed #{rep + 1}: " + ", ".join(f"{k} {v:.0f}s" for k, v in sorted(first.items())),
                  flush=True)
            stack.procs.stop(L.node_name(victim))
            stack.up(timeout=240)
        if args.disk and os.geteuid() == 0:
            prom = {p for _, p in PAIRS["log dir filling"]}
            _prom_quiet(stack, {"PromBrokerDown", "PromUnderReplicatedPartitions", "PromOfflinePartitions"})
            with small_log_dir(stack, victim, 128):
                # predict_linear's 2 min range must not straddle the move from the root filesystem to the tmpfs
                time.sleep(130)
                _prom_quiet(stack, prom, labels={"broker": str(victim)})
                # a fresh client: librdkafka once crashed here in a client that had lived through the broker restarts
                admin = AdminClient({"bootstrap.servers": L.bootstrap_servers})
                admin.create_topics([NewTopic("bench.fill", num_partitions=1, replica_assignment=[[victim]])])[
                    "bench.fill"].result(60)
                svc = AlertService(config, store=fresh_store("disk"), registry=CollectorRegistry())
                producer = Producer({"bootstrap.servers": L.bootstrap_servers, "linger.ms": 50})
                payload = os.urandom(64 * 1024)
                t0 = time.monotonic()
                watch = Watch(stack, svc, {"KafkaDiskFullRisk"}, prom, t0, prom_labels={"broker": str(victim)})
                free_at: dict[str, float] = {}
                while time.monotonic() - t0 < 400 and not ({"KafkaDiskFullRisk"} | prom) <= set(watch.first):
                    fs = os.statvfs(L.log_dir(victim))
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
                print("  free space when each fired: " + ", ".join(
                    f"{k} {v:.0%}" for k, v in sorted(free_at.items(), key=lambda kv: -kv[1])), flush=True)
                producer.flush(10)
                admin.delete_topics(["bench.fill"])["bench.fill"].result(60)
            for e, p in PAIRS["log dir filling"]:
                results.setdefault("log dir filling", []).append((e, p, first.get(e), first.get(p)))
            print("  log dir filling: " + ", ".join(f"{k} {v:.0f}s" for k, v in sorted(first.items())), flush=True)
    finally:
        stop.set()
        collector.join(15)
        rules_file.unlink(missing_ok=True)
        try:
            httpx.post(f"{L.prometheus_url}/-/reload", timeout=10)
        except httpx.HTTPError:
            pass
        if not already_up:
            stack.down()
        shutil.rmtree(tmp, ignore_errors=True)

    def med(xs):
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    fmt = lambda v: f"{v:7.0f}s" if v is not None else "  never"  # noqa: E731
    print(f"\ndetection latency, fault -> firing (median of {args.reps} for the broker, 1 for the disk; engine every "
          f"{config.rules.evaluation_interval_seconds:.0f}s with its own `for`, Prometheus every "
          f"{L.scrape_interval_seconds}s with `for: 10s`)")
    print(f"  {'scenario':<16} {'engine alert':<32} {'engine':>8} {'Prometheus rule':<30} {'Prom':>8} {'ratio':>6}")
    for scenario, rows in results.items():
        for e, p in dict.fromkeys((e, p) for e, p, _, _ in rows):
            me = med([x for a, b, x, _ in rows if (a, b) == (e, p)])
            mp = med([y for a, b, _, y in rows if (a, b) == (e, p)])
            ratio = f"{me / mp:5.2f}x" if me and mp else "   n/a"
            print(f"  {scenario:<16} {e:<32} {fmt(me)} {p:<30} {fmt(mp)} {ratio}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", action="store_true", help="detection latency on the real stack (see above)")
    ap.add_argument("--reps", type=int, default=3)
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
    print(f"alert engine, one cycle: {args.brokers} brokers, {args.topics} topics, {args.groups} groups, 20 tenants, "
          f"{len(rules)} rules, {args.cycles} cycles (synthetic in-memory Prometheus)")
    results = {}
    for name, eng in (("threshold rules only (baseline)", threshold_only), ("full catalog", full)):
        src = SyntheticSource(args.brokers, args.topics, args.groups)
        times, qpc, firing = run(eng, src, args.cycles)
        med = statistics.median(times)
        p90 = sorted(times)[int(0.9 * (len(times) - 1))]
        results[name] = med
        print(f"  {name:<34} median {med * 1000:8.1f} ms   p90 {p90 * 1000:8.1f} ms   "
              f"queries/cycle {qpc:6.1f}   firing instances {firing}")
    ratio = results["full catalog"] / results["threshold rules only (baseline)"]
    print(f"  ratio full / baseline: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
