"""The advisor on the real stack: real misbehaving clients, the real collectors feeding the stack's Prometheus.

- ``shop-batchless``: a producer with linger.ms=0 and one 10-byte record per batch -> poor_batching naming it;
- group ``shop-flappy``: a consumer that joins, gets its assignment and leaves, in a loop -> frequent_rebalances;
- ``shop-reconnect``: a producer created and dropped for every record -> connection_churn with it as a suspect;
- ``shop-storm``: a producer to a topic that does not exist, auto-creation off, retry.backoff.ms at its minimum ->
  request_storm naming it (every metadata answer is UNKNOWN_TOPIC_OR_PARTITION);
- ``shop-throttled``: a producer at 64 KiB/s with a 16 KiB/s produce quota of its own -> throttled_by_quota;
- ``shop-good``: a producer with linger.ms=200 at the same record rate, and its consumer -> no finding names it.

The collectors and the alert engine run as ``serve --role collector,alerts`` on the port the stack's Prometheus
scrapes, so the findings also come back from Prometheus as ``kafka_client_advisor_finding`` and through the tenant
dashboard's findings table. Then the same findings through ``GET /api/v1/tenants/shop/advice`` (tenant isolation on
real data), the capacity endpoint, and the CLI.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from datetime import datetime, timezone

import httpx
import pytest
import yaml
from confluent_kafka import Consumer, KafkaException, Producer

from alerts.detectors import DetectorContext, noisy_clients
from alerts.prom import PrometheusSource
from alerts.rules import load_rules
from monitor import cli
from monitor.advisor import service
from dashboards.boards.tenant import FINDINGS_SINCE
from dashboards.promql import substitute
from monitor.config import CollectionSettings, TenantConfig, TenantSelector
from monitor.stack import kafka as stack_kafka
from monitor.loadgen import LoadGenerator, TenantLoad, ensure_topics
from monitor.serve import run
from monitor.store.base import Store
from monitor.tenancy import TenantIndex
from monitor.store.migrate import upgrade
from tests.api_fixtures import build_api, new_token
from tests.conftest import wait_until

pytestmark = pytest.mark.integration

TENANTS = (
    TenantConfig(name="shop", selectors=(TenantSelector(cluster="local", topic_prefixes=("shop.",),
                                                        client_id_prefixes=("shop-",), group_prefixes=("shop-",)),)),
    TenantConfig(name="ads", selectors=(TenantSelector(cluster="local", topic_prefixes=("ads.",),
                                                       client_id_prefixes=("ads-",)),)),
)
WINDOW = "2m"
QUIET = {"logger": __import__("logging").getLogger("advisor-test-librdkafka")}


def _flapper(stop: threading.Event, servers: str) -> None:
    """Join group shop-flappy, wait for the assignment, leave; again and again."""
    while not stop.is_set():
        assigned = threading.Event()
        c = Consumer({"bootstrap.servers": servers, "group.id": "shop-flappy", "client.id": "shop-flapper",
                      "auto.offset.reset": "latest", **QUIET})
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
        p = Producer({"bootstrap.servers": servers, "client.id": "shop-storm", "allow.auto.create.topics": False,
                      "retry.backoff.ms": 1, "retry.backoff.max.ms": 1, "message.timeout.ms": 10000, **QUIET})
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


def _throttle(stack, stop: threading.Event) -> None:
    """A produce quota of 16 KiB/s for client id shop-throttled only (the stack's default quota never throttles)."""
    L = stack.layout
    stack_kafka.set_client_quota(L, stack_kafka.require_java(), L.logs_dir / "advisor-quota.log",
                                 client_id="shop-throttled", quota="producer_byte_rate=16384")


def _rules_file(path) -> str:
    """KafkaClientHurtsOtherTenants with the test's window: its built-in 10m would also see clients of earlier tests
    on this shared stack, which move the cluster norm."""
    from alerts.rules import BUILTIN

    spec = next(r for r in yaml.safe_load(BUILTIN.read_text())["rules"] if r["name"] == "KafkaClientHurtsOtherTenants")
    path.write_text(yaml.safe_dump({"rules": [{**spec, "params": {**spec["params"], "window": WINDOW}}]}))
    return str(path)


@pytest.fixture(scope="module")
def watched(stack, tmp_path_factory):
    """``serve --role collector,alerts`` (in a thread) on the port the stack's Prometheus scrapes, with its own store,
    and the clients."""
    tmp = tmp_path_factory.mktemp("advisor")
    config = stack.config(tenants=TENANTS, store_url=f"sqlite:///{tmp / 'store.db'}")
    config = config.model_copy(update={"collection": CollectionSettings(interval_seconds=5),
                                       "rules": config.rules.model_copy(update={"files": (_rules_file(
                                           tmp / "rules.yaml"),)})})
    servers = stack.layout.bootstrap_servers
    ensure_topics(servers, ["shop.batchless", "shop.good", "shop.reconnect", "shop.throttled"], partitions=1)
    stop = threading.Event()
    threads = [threading.Thread(target=run, args=(config, ("collector", "alerts"), "127.0.0.1",
                                                  stack.layout.service_port),
                                kwargs={"stop_event": stop}, daemon=True, name="serve")]
    threads += [threading.Thread(target=f, args=(stop, servers), daemon=True, name=f.__name__)
                for f in (_flapper, _reconnector, _stormer)]
    threads.append(threading.Thread(target=_throttle, args=(stack, stop), daemon=True, name="quota"))
    load = LoadGenerator(servers, [
        TenantLoad("shop", ("shop.batchless",), "shop-batchless", "shop-batchless-readers", messages_per_second=400,
                   message_bytes=10, producer_settings={"linger.ms": 0, "batch.num.messages": 1, "batch.size": 200}),
        TenantLoad("shop", ("shop.good",), "shop-good", "shop-good-readers", messages_per_second=400,
                   message_bytes=100, producer_settings={"linger.ms": 200, "batch.size": 262144}),
        # 64 KiB/s in well-filled batches against a 16 KiB/s quota: throttled, but not a costly client.
        TenantLoad("shop", ("shop.throttled",), "shop-throttled", "shop-throttled-readers", messages_per_second=64,
                   message_bytes=1024, producer_settings={"linger.ms": 100}),
    ])
    for th in threads:
        th.start()
    load.start()
    try:
        yield config
    finally:
        stop.set()
        load.stop()
        for th in threads:
            th.join(30)
        assert not any(th.is_alive() for th in threads), "client threads did not stop"


def _advice(stack) -> dict:
    source = PrometheusSource(stack.layout.prometheus_url)
    try:
        return service.tenant_advice(source=source, tenant=TENANTS[0], tenants=TENANTS,
                                     now=datetime.now(timezone.utc), window=WINDOW)
    finally:
        source.close()


def _names(f: dict) -> set[str]:
    return {f["client_id"], f["group"], *f["suspects"]} - {""}


@pytest.fixture(scope="module")
def advice(stack, watched) -> dict:
    expected = {("poor_batching", "shop-batchless"), ("frequent_rebalances", "shop-flappy"),
                ("connection_churn", "shop-reconnect"), ("request_storm", "shop-storm"),
                ("throttled_by_quota", "shop-throttled")}

    def all_found():
        doc = _advice(stack)
        found = {(f["kind"], n) for f in doc["findings"] for n in _names(f)}
        return doc if expected <= found else None

    return wait_until(all_found, 150, interval=5, what=f"findings {sorted(expected)}")


def test_each_misbehaving_client_gets_its_finding_and_the_good_one_none(advice):
    assert advice["clusters"] == [{"cluster": "local", "status": "ok", "message": ""}]
    by_kind = {}
    for f in advice["findings"]:
        by_kind.setdefault(f["kind"], []).append(f)
        assert f["tenant"] == "shop" and f["metrics"] and f["cause"] and f["fix"]
        shown = json.dumps(f, sort_keys=True)
        assert "shop-good" not in _names(f), shown  # the well-configured producer ...
        assert "shop-good-readers" not in _names(f) and "shop-good-consumer" not in _names(f), shown  # ... consumer
    batch = next(f for f in by_kind["poor_batching"] if f["client_id"] == "shop-batchless")
    assert batch["evidence"]["thread_seconds_per_mib"] >= 5 * batch["evidence"]["cluster_norm_seconds_per_mib"]
    assert batch["evidence"]["tenant_topics_records_per_request"]["shop.batchless"] < 2  # one record per request
    assert "linger.ms" in batch["fix"]
    flappy = next(f for f in by_kind["frequent_rebalances"] if f["group"] == "shop-flappy")
    assert flappy["evidence"]["member_changes"] >= 3
    churn = by_kind["connection_churn"][0]
    assert churn["evidence"]["new_connections_per_second"] >= 1
    storm = next(f for f in by_kind["request_storm"] if f["client_id"] == "shop-storm")
    assert storm["evidence"]["cluster_error_ratio"] >= 0.05
    assert "Metadata" in storm["evidence"]["cluster_errors_per_second_by_request"]  # UNKNOWN_TOPIC_OR_PARTITION
    assert storm["evidence"]["bytes_per_second"] < 1024 and "retry.backoff.ms" in storm["fix"]
    throttled = next(f for f in by_kind["throttled_by_quota"] if f["client_id"] == "shop-throttled")
    assert throttled["evidence"]["throttle_seconds_by_quota"]["produce"] >= 0.001
    assert throttled["evidence"]["produce_bytes_per_second"] < 32768  # held near its 16 KiB/s quota
    assert not any(f["kind"] in ("poor_batching", "request_storm") and f["client_id"] == "shop-throttled"
                   for f in advice["findings"])


def _prom(stack, expr: str) -> list[dict]:
    body = httpx.get(f"{stack.layout.prometheus_url}/api/v1/query", params={"query": expr}, timeout=10).json()
    assert body["status"] == "success", body
    return body["data"]["result"]


def _key(labels: dict) -> tuple[str, str, str]:
    # Prometheus drops empty labels: a finding without a client (rebalances) has no client_id label at all.
    return labels["finding"], labels.get("client_id", ""), labels.get("group", "")


def test_findings_reach_prometheus_and_the_tenant_dashboard(stack, watched, advice):
    """The alerts role exports what it computed for KafkaClientHurtsOtherTenants; Prometheus scrapes serve."""
    expected = {("poor_batching", "shop-batchless", ""), ("request_storm", "shop-storm", ""),
                ("throttled_by_quota", "shop-throttled", ""), ("frequent_rebalances", "", "shop-flappy")}

    def exported():
        rows = _prom(stack, 'kafka_client_advisor_finding{cluster="local", tenant="shop"}')
        got = {_key(r["metric"]) for r in rows}
        return (rows, got) if expected <= got else None

    rows, got = wait_until(exported, 120, interval=5, what=f"kafka_client_advisor_finding {sorted(expected)}")
    assert all(r["value"][1] == "1" for r in rows)
    assert not any(client.startswith("shop-good") for _, client, _ in got), got
    # The dashboard's table, as Grafana would run it for tenant shop: one row per finding, "since" in the past.
    def table():
        rows = _prom(stack, substitute(FINDINGS_SINCE, {"cluster": "local", "tenant": "shop"}))
        return {_key(r["metric"]): float(r["value"][1]) for r in rows}

    since = table()
    assert expected <= set(since), since
    now_ms = time.time() * 1000
    assert all(now_ms - 3600_000 < v <= now_ms + 1000 for v in since.values()), since
    # Nothing of tenant ads, nor the operators-only copies, on shop's table.
    assert not _prom(stack, substitute(FINDINGS_SINCE, {"cluster": "local", "tenant": "ads"}))


def test_the_alert_names_tenant_and_client_of_findings_that_hurt_others(stack, watched, advice):
    # The advice above was read over WINDOW; the rule's own 10m window would also see clients of earlier tests on
    # this shared stack, which move the cluster norm. Same window, same findings.
    rule = next(r for r in load_rules(watched.rules) if r.name == "KafkaClientHurtsOtherTenants")
    rule = dataclasses.replace(rule, params={**rule.params, "window": WINDOW})

    def detected():
        source = PrometheusSource(stack.layout.prometheus_url)
        try:
            obs = noisy_clients.detect(rule, DetectorContext(source=source, now=datetime.now(timezone.utc),
                                                             config=watched, tenants=TenantIndex(TENANTS)))
        finally:
            source.close()
        named = {(o.labels["tenant"], o.labels["client_id"], o.labels["finding"]) for o in obs}
        return (obs, named) if ("shop", "shop-batchless", "poor_batching") in named else None

    obs, named = wait_until(detected, 60, interval=5, what="KafkaClientHurtsOtherTenants naming shop-batchless")
    assert not any(client.startswith("shop-good") for _, client, _ in named), named
    assert all(o.evidence["fix"] and o.evidence["metrics"] for o in obs)
