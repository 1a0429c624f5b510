"""Real faults: a broker frozen (SIGSTOP), a broker killed (SIGKILL), a closed Jolokia port, malformed transport output.

Each: the target is marked failed within its timeout, every other target keeps reporting, nothing raises, and the
target recovers by itself once the broker is back. Every test restores the broker so the session stack stays usable.
"""

from __future__ import annotations

import signal
import socket
import time

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from collectors.component import CollectionService
from collectors.types import TargetStatus
from monitor.core.config import BrokerTarget
from tests.conftest import wait_until

pytestmark = pytest.mark.e2e

# Long enough for a healthy broker's jmxquery JVM on a loaded 2-core machine, short enough to keep the test quick.
TIMEOUT = 15.0  # jmxquery starts a JVM per call: on a loaded 2-core machine that alone can take 5-8 s


def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def jmx_service(stack, *, extra_brokers=(), transport: str = "jolokia"):
    """The JMX collector of the stack (plus any extra, broken broker targets) over ``transport`` with the stack's
    JMX credentials (the session stack is secured: jmxquery cannot log in, see test_profiles.py for it), with a
    short per-target timeout."""
    cfg = stack.config()
    cluster = cfg.clusters[0]
    jmx = cluster.jmx.model_copy(update={"transport": transport, "timeout_seconds": TIMEOUT})
    cluster = cluster.model_copy(update={"jmx": jmx, "brokers": cluster.brokers + tuple(extra_brokers)})
    # An interval longer than the timeout: results older than two intervals are served as stale, and a healthy
    # broker's result must still be fresh when the frozen one finally times out.
    cfg = cfg.model_copy(
        update={"clusters": (cluster,), "collection": cfg.collection.model_copy(update={"interval_seconds": 30})}
    )
    from collectors.catalog import TenantLookup
    from collectors.jmx import JmxCollector
    from collectors.transports.jmxquery import JmxQueryTransport
    from collectors.transports.jolokia import JolokiaTransport

    t = JolokiaTransport() if transport == "jolokia" else JmxQueryTransport()
    collector = JmxCollector(
        cluster, transport=t, controller_transport=t, tenants=TenantLookup(None, "local"), max_series=100000
    )
    registry = CollectorRegistry()
    return CollectionService(cfg, registry=registry, collectors=[collector]), registry


def statuses(results):
    return {r.target.name: r for r in results}


def test_frozen_broker_times_out_others_report_and_it_recovers(stack):
    closed = unused_port()
    svc, registry = jmx_service(stack, extra_brokers=[BrokerTarget(id=9, jolokia=f"http://127.0.0.1:{closed}/jolokia")])
    stack.procs.signal("broker-2", signal.SIGSTOP)
    try:
        start = time.monotonic()
        results = statuses(svc.collect_once(timeout=TIMEOUT + 10))
        elapsed = time.monotonic() - start
        frozen, refused = results["broker-2"], results["broker-9"]
        assert frozen.status is TargetStatus.FAILED and str(frozen.reason) == "timeout"
        assert frozen.duration_seconds < TIMEOUT + 2 and elapsed < TIMEOUT + 5
        assert refused.status is TargetStatus.FAILED and str(refused.reason) == "unreachable"
        assert refused.duration_seconds < TIMEOUT
        for name in ("broker-1", "broker-3"):
            assert results[name].status is TargetStatus.OK, (name, results[name].status, results[name].message)
        text = generate_latest(registry).decode()
        assert 'kafka_health_scrape_success{cluster="local",collector="jmx",target="broker-2"} 0.0' in text
        assert 'kafka_health_scrape_success{cluster="local",collector="jmx",target="broker-1"} 1.0' in text
        assert 'kafka_jvm_heap_used_bytes{broker="3",cluster="local"}' in text
        assert 'kafka_jvm_heap_used_bytes{broker="2"' not in text
    finally:
        stack.procs.signal("broker-2", signal.SIGCONT)
    try:

        def recovered():
            return statuses(svc.collect_once(timeout=TIMEOUT + 10))["broker-2"].status is TargetStatus.OK

        wait_until(recovered, timeout=60, interval=0.5, what="broker-2 JMX to answer again after SIGCONT")
        assert 'kafka_jvm_heap_used_bytes{broker="2",cluster="local"}' in generate_latest(registry).decode()
    finally:
        svc.stop()


def test_killed_broker_is_unreachable_others_report_and_it_recovers_after_restart(stack):
    svc, registry = jmx_service(stack)
    stack.procs.signal("broker-3", signal.SIGKILL)
    try:
        wait_until(lambda: stack.procs.owned_pid("broker-3") is None, timeout=10, interval=0.1, what="broker-3 to die")
        results = statuses(svc.collect_once(timeout=TIMEOUT + 10))
        dead = results["broker-3"]
        assert dead.status is TargetStatus.FAILED and str(dead.reason) == "unreachable", dead.message
        assert dead.duration_seconds < TIMEOUT
        assert results["broker-1"].status is TargetStatus.OK and results["broker-2"].status is TargetStatus.OK
        text = generate_latest(registry).decode()
        assert (
            'kafka_health_scrape_failures_total{cluster="local",collector="jmx",reason="unreachable",'
            'target="broker-3"} 1.0'
        ) in text
    finally:
        stack.up(timeout=180)  # starts only what is missing: broker-3
    try:

        def recovered():
            return statuses(svc.collect_once(timeout=TIMEOUT + 10))["broker-3"].status is TargetStatus.OK

        wait_until(recovered, timeout=60, interval=0.5, what="broker-3 JMX after restart")
    finally:
        svc.stop()


class _FlakyJolokia:
    """An HTTP endpoint posing as a broker's Jolokia agent: garbage answers until ``heal()``, then it relays every
    request to a real broker's agent (the broker "returns")."""

    def __init__(self, upstream: str):
        import http.server
        import threading
        import urllib.request

        self.healed = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if outer.healed.is_set():
                    auth = {"Authorization": self.headers["Authorization"]} if self.headers["Authorization"] else {}
                    req = urllib.request.Request(
                        upstream + "/", data=body, headers={"Content-Type": "application/json", **auth}
                    )
                    with urllib.request.urlopen(req, timeout=10) as r:
                        answer = r.read()
                else:
                    answer = b'[{"status": 200, "value": {"Count": 1\x00, unterminated'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jolokia"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def heal(self):
        self.healed.set()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_malformed_transport_output_fails_that_target_only_and_it_recovers(stack):
    """The bulk transport against a real cluster plus one endpoint answering garbage: that target fails as
    ``malformed`` (not timeout, not no-data), the real brokers keep reporting, and once the endpoint answers properly
    again the target recovers without a restart."""
    upstream = stack.config().clusters[0].brokers[0].jolokia
    flaky = _FlakyJolokia(upstream=upstream.rstrip("/"))
    svc, registry = jmx_service(stack, extra_brokers=[BrokerTarget(id=8, jolokia=flaky.url)], transport="jolokia")
    try:
        results = statuses(svc.collect_once(timeout=TIMEOUT + 10))
        bad = results["broker-8"]
        assert bad.status is TargetStatus.FAILED and str(bad.reason) == "malformed", (bad.status, bad.message)
        assert "invalid JSON" in bad.message and bad.duration_seconds < TIMEOUT
        for name in ("broker-1", "broker-2", "broker-3"):
            assert results[name].status is TargetStatus.OK, (name, results[name].status, results[name].message)
        text = generate_latest(registry).decode()
        assert 'kafka_health_scrape_success{cluster="local",collector="jmx",target="broker-8"} 0.0' in text
        assert (
            'kafka_health_scrape_failures_total{cluster="local",collector="jmx",reason="malformed",'
            'target="broker-8"} 1.0'
        ) in text
        assert 'kafka_jvm_heap_used_bytes{broker="2",cluster="local"}' in text
        assert 'kafka_jvm_heap_used_bytes{broker="8"' not in text

        flaky.heal()
        healed = statuses(svc.collect_once(timeout=TIMEOUT + 10))["broker-8"]
        assert healed.status is TargetStatus.OK, (healed.status, healed.message)
        text = generate_latest(registry).decode()
        assert 'kafka_health_scrape_success{cluster="local",collector="jmx",target="broker-8"} 1.0' in text
        assert 'kafka_jvm_heap_used_bytes{broker="8",cluster="local"}' in text
    finally:
        svc.stop()
        flaky.close()
