"""The advisor's service against an in-memory Prometheus: a cluster Prometheus holds nothing for is ``no_data`` (never
``ok`` with no findings, never a plan of zeros saying "disks full now"), a failing one ``unavailable``, a partial one
a plan with the missing inputs named; and the CLI's text for each."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from monitor.advisor import service
from monitor.advisor.cli import format_advice, format_capacity
from monitor.core.config import TenantConfig, TenantSelector
from monitor.core.errors import QueryError
from monitor.core.prom import InstantSample
from tests.harness.fake_source import FakeSource

pytestmark = pytest.mark.unit
NOW = datetime(2025, 3, 3, 12, 0, tzinfo=timezone.utc)
TENANTS = (
    TenantConfig(
        name="shop",
        selectors=(
            TenantSelector(
                cluster="local", topic_prefixes=("shop.",), client_id_prefixes=("shop-",), group_prefixes=("shop-",)
            ),
        ),
    ),
)


def prometheus(
    series: dict[str, list[InstantSample]] | None = None, fail: bool = False, now: datetime = NOW
) -> FakeSource:
    """Answers each query with the samples of the first metric name it contains; [] (no data) otherwise; asked at
    ``now`` only (the time it is given, never the clock); instant queries only."""
    return FakeSource(
        series,
        {"": AssertionError("the advisor reads instant queries only")},
        at=now,
        fail=QueryError("Prometheus unreachable at http://fake: ConnectError") if fail else None,
    )


def per_broker(value: float) -> list[InstantSample]:
    return [InstantSample({"broker": b}, value) for b in ("1", "2", "3")]


def advice(source: FakeSource) -> dict:
    return service.tenant_advice(source=source, tenant=TENANTS[0], tenants=TENANTS, now=NOW)


def capacity(source: FakeSource, **kw) -> dict:
    return service.cluster_capacity(source=source, cluster="local", tenants=TENANTS, now=NOW, **kw)


def test_no_series_for_the_cluster_is_no_data_not_ok():
    source = prometheus()
    doc = advice(source)
    assert source.seen  # Prometheus was asked, and answered: nothing
    assert doc["findings"] == []
    [cluster] = doc["clusters"]
    assert cluster["status"] == "no_data", cluster  # was "ok": "no findings" read as "all good"
    for empty in ("kafka_broker_requests_total", "kafka_client_", "kafka_topic_", "kafka_consumergroup_"):
        assert empty in cluster["message"], cluster["message"]
    assert "local" in cluster["message"] and "10m" in cluster["message"]
    text = format_advice(doc)
    assert "cluster local: NO DATA:" in text and "nothing was checked" in text


def test_consumer_groups_alone_are_still_no_data_but_their_finding_is_kept():
    flappy = {"kafka_consumergroup_members": [InstantSample({"group": "shop-flappy"}, 6.0)]}
    doc = advice(prometheus(flappy))
    [cluster] = doc["clusters"]
    assert cluster["status"] == "no_data"
    assert "kafka_client_" in cluster["message"] and "kafka_consumergroup_" not in cluster["message"]
    assert [f["kind"] for f in doc["findings"]] == ["frequent_rebalances"]  # changes(...) = 6 >= 3


def test_broker_series_make_the_cluster_ok():
    doc = advice(prometheus({"kafka_broker_requests_total": [InstantSample({}, 40.0)]}))
    assert doc["clusters"] == [{"cluster": "local", "status": "ok", "message": ""}]
    assert format_advice(doc).splitlines()[-1] == "  no findings"


def test_failing_prometheus_is_unavailable_and_distinct_from_no_data():
    doc = advice(prometheus(fail=True))
    # Tenants read this answer: the generic message, not the operator's detail (which names Prometheus' URL).
    assert doc["clusters"][0] == {"cluster": "local", "status": "unavailable", "message": "metrics backend unavailable"}
    cap = capacity(prometheus(fail=True))
    assert cap["status"] == "unavailable" and cap["plan"] is None
    assert "UNAVAILABLE" in format_capacity(cap)


def test_capacity_without_series_is_no_data_not_a_plan_of_zeros():
    cap = capacity(prometheus(), scenario=service.parse_scenario(["shop:3"]))
    # was: status ok, brokers 0, disk_full_in_seconds 0.0 ("full now"), brokers_required 1
    assert cap["status"] == "no_data" and cap["plan"] is None and cap["what_if"] is None
    assert "kafka_host_filesystem_size_bytes" in cap["message"] and "kafka_topic_bytes_in_total" in cap["message"]
    assert format_capacity(cap).startswith("cluster local: NO DATA: ")


def test_capacity_with_brokers_but_no_disk_size_names_what_is_missing():
    # Partitions, leaders and thread idle per broker, topics of shop; the host collector's filesystem series absent.
    source = prometheus(
        {
            "kafka_broker_partitions": per_broker(100.0),
            "kafka_broker_leader_partitions": per_broker(34.0),
            "kafka_broker_request_handler_idle_ratio": per_broker(0.6),
            "kafka_broker_network_processor_avg_idle_ratio": per_broker(0.65),
            "kafka_topic_bytes_in_total": [InstantSample({"topic": "shop.orders"}, 1e6)],
            "kafka_topic_log_size_bytes": [InstantSample({"topic": "shop.orders"}, 50e9)],
            "kafka_topic_partitions": [InstantSample({"topic": "shop.orders"}, 30.0)],
            "kafka_topic_replicas": [InstantSample({"topic": "shop.orders"}, 90.0)],
        }
    )
    cap = capacity(source)
    assert cap["status"] == "ok" and "kafka_host_filesystem_size_bytes" in cap["message"]
    p = cap["plan"]
    assert p["brokers"] == 3 and list(p["missing"]) == ["disk_size"]
    assert p["disk_full_in_seconds"] is None  # unknown, not 0.0 ("full now")
    assert "disk" not in p["brokers_needed"] and p["brokers_needed"]["leaders"] == 1  # 102 leaders
    assert p["handler_headroom"] == pytest.approx(2.0)
    text = format_capacity(cap)
    assert "80% full unknown" in text and "missing a broker's log-dir filesystem size" in text
    # A tenant's view: its own row, no cluster totals (nor the list of missing cluster inputs).
    own = capacity(source, only_tenant="shop")["plan"]
    assert set(own) == {"cluster", "replication_factor", "tenants"} and own["tenants"][0]["tenant"] == "shop"


def test_the_endpoints_serve_no_data_as_it_is(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from monitor.advisor import views
    from monitor.core.store import Store
    from monitor.store.migrate import upgrade
    from tests.api_fixtures import NOW as API_NOW
    from tests.api_fixtures import build_api, make_config, new_token

    monkeypatch.setattr(views, "_source", lambda config: prometheus(now=API_NOW))
    store = Store(f"sqlite:///{tmp_path / 'kh.db'}")
    upgrade(store)
    app = build_api(make_config(), store)
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            auth = {"Authorization": f"Bearer {new_token(store, None)}"}
            r = client.get("/api/v1/tenants/acme/advice", headers=auth)
            assert r.status_code == 200, r.text
            assert {c["cluster"]: c["status"] for c in r.json()["clusters"]} == {
                "acme-only": "no_data",
                "shared": "no_data",
            }
            r = client.get("/api/v1/clusters/shared/capacity", headers=auth, params={"grow": "acme:2"})
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["status"] == "no_data" and body["plan"] is None and body["what_if"] is None
            assert "no broker series" in body["message"]
    finally:
        store.dispose()


def test_a_principals_request_time_tagged_by_client_id_alone_joins_its_byte_rates():
    """Byte quotas per user, the request quota per client id: Kafka tags the two halves of one client apart
    (seen on the secured demo stack: payments-batch-import's request time had user="", its bytes user=payments-app)."""
    from monitor.advisor.source import attribute_request_sensors

    fields = {
        "request_time_ratio": {("", "pay-bulk"): 0.15, ("", "shared-id"): 0.1, ("", "anon"): 0.01},
        "produce_bytes_per_second": {
            ("payments-app", "pay-bulk"): 50_000.0,
            ("a", "shared-id"): 1.0,
            ("b", "shared-id"): 1.0,
        },
        "fetch_bytes_per_second": {},
        "request_throttle_seconds": {("", "pay-bulk"): 0.0},
    }
    shares = {("", "pay-bulk"): 0.25, ("", "shared-id"): 1.0}
    out, seen = attribute_request_sensors(fields, shares)
    assert out["request_time_ratio"] == {("payments-app", "pay-bulk"): 0.15, ("", "shared-id"): 0.1, ("", "anon"): 0.01}
    assert out["request_throttle_seconds"] == {("payments-app", "pay-bulk"): 0.0}
    assert out["produce_bytes_per_second"] == fields["produce_bytes_per_second"]
    assert seen == {("payments-app", "pay-bulk"): 0.25, ("", "shared-id"): 1.0}
