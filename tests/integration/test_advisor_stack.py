"""The advisor on the real stack: real misbehaving clients, the real collectors feeding the stack's Prometheus.

- ``shop-batchless``: a producer with linger.ms=0 and one 10-byte record per batch -> poor_batching naming it;
- group ``shop-flappy``: a consumer that joins, gets its assignment and leaves, in a loop -> frequent_rebalances;
- ``shop-reconnect``: a producer created and dropped for every record -> connection_churn with it as a suspect;
- ``shop-good``: a producer with linger.ms=200 at the same record rate, and its consumer -> no finding names it.

Then the same findings through ``GET /api/v1/tenants/shop/advice`` (tenant isolation on real data), the capacity
endpoint, and the CLI.
"""

from __future__ import annotations

import dataclasses
import threading
from datetime import datetime, timezone

import pytest
import yaml
from confluent_kafka import Consumer, Producer

from alerts.detectors import DetectorContext, noisy_clients
from alerts.prom import PrometheusSource
from alerts.rules import load_rules
from monitor import cli
from monitor.advisor import service
from monitor.config import CollectionSettings, TenantConfig, TenantSelector
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


@pytest.fixture(scope="module")
def watched(stack):
    """Collectors (as ``serve --role collector``, in a thread) feeding the stack's Prometheus, and the clients."""
    config = stack.config(tenants=TENANTS).model_copy(update={"collection": CollectionSettings(interval_seconds=5)})
    servers = stack.layout.bootstrap_servers
    ensure_topics(servers, ["shop.batchless", "shop.good", "shop.reconnect"], partitions=1)
    stop = threading.Event()
    threads = [threading.Thread(target=run, args=(config, ("collector",), "127.0.0.1", stack.layout.service_port),
                                kwargs={"stop_event": stop}, daemon=True, name="collectors")]
    threads += [threading.Thread(target=f, args=(stop, servers), daemon=True, name=f.__name__)
                for f in (_flapper, _reconnector)]
    load = LoadGenerator(servers, [
        TenantLoad("shop", ("shop.batchless",), "shop-batchless", "shop-batchless-readers", messages_per_second=400,
                   message_bytes=10, producer_settings={"linger.ms": 0, "batch.num.messages": 1, "batch.size": 200}),
        TenantLoad("shop", ("shop.good",), "shop-good", "shop-good-readers", messages_per_second=400,
                   message_bytes=100, producer_settings={"linger.ms": 200, "batch.size": 262144}),
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
                ("connection_churn", "shop-reconnect")}

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
        assert "shop-good" not in _names(f), f  # the well-configured producer ...
        assert "shop-good-readers" not in _names(f) and "shop-good-consumer" not in _names(f), f  # ... and consumer
    batch = next(f for f in by_kind["poor_batching"] if f["client_id"] == "shop-batchless")
    assert batch["evidence"]["thread_seconds_per_mib"] >= 5 * batch["evidence"]["cluster_norm_seconds_per_mib"]
    assert batch["evidence"]["tenant_topics_records_per_request"]["shop.batchless"] < 2  # one record per request
    assert "linger.ms" in batch["fix"]
    flappy = next(f for f in by_kind["frequent_rebalances"] if f["group"] == "shop-flappy")
    assert flappy["evidence"]["member_changes"] >= 3
    churn = by_kind["connection_churn"][0]
    assert churn["evidence"]["new_connections_per_second"] >= 1


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
