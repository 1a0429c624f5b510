"""The advisor on the real stack: tenant shop's misbehaving clients (zoo.py), the real collectors feeding the
stack's Prometheus, beside the real clients of test_advisor_real_clients (one run for both: conftest.py).

Findings come and go as the clients' rates move inside the window, so the shared reads wait until every expected
finding has been seen at least once; a well-configured client may be named in advice (info) in at most a quarter of
the reads, and never by a finding that pages.

The collectors and the alert engine run as ``serve --role collector,alerts`` on the port the stack's Prometheus
scrapes, so the findings also come back from Prometheus as ``kafka_client_advisor_finding`` and through the tenant
dashboard's findings table. Then the same findings through ``GET /api/v1/tenants/shop/advice`` (tenant isolation on
real data), the capacity endpoint, and the CLI.
"""

from __future__ import annotations

import dataclasses
import json
import time
from datetime import datetime, timezone

import httpx
import pytest
import yaml

from alerts.detectors import DetectorContext, noisy_clients
from alerts.rules import load_rules
from dashboards.boards.tenant import FINDINGS_SINCE
from dashboards.promql import substitute
from monitor import cli
from monitor.advisor import service
from monitor.core.prom import PrometheusSource
from monitor.core.store import Store
from monitor.core.tenancy import TenantIndex
from monitor.store.migrate import upgrade
from tests.api_fixtures import build_api, new_token
from tests.conftest import wait_until
from tests.integration.advisor.zoo import SHOP, TENANTS, WINDOW
from tests.integration.advisor.zoo import shop_good as _good

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def watched(advisor_run):
    """The config of ``serve --role collector,alerts`` watching every client (conftest.py)."""
    return advisor_run["config"]


def _names(f: dict) -> set[str]:
    return {f["client_id"], f["group"], *f["suspects"]} - {""}


@pytest.fixture(scope="module")
def advice(observed) -> dict:
    """Tenant shop's last advice document, its findings replaced by the latest copy of every finding seen in any of
    the shared reads, with ``reads`` (how many), ``good_named`` (per well-configured client, in how many reads a
    finding named it) and ``good_paged`` (the good clients a finding that pages named, in any read)."""
    return {
        **observed.shop_doc,
        "findings": list(observed.shop_seen.values()),
        "reads": observed.reads,
        "good_named": observed.shop_good_named,
        "good_paged": {k: n for k, n in observed.good_paged.items() if _good(k[0])},
    }


def test_each_misbehaving_client_gets_its_finding_and_the_good_one_none(advice):
    assert advice["clusters"] == [{"cluster": "local", "status": "ok", "message": ""}]
    by_kind = {}
    for f in advice["findings"]:
        by_kind.setdefault(f["kind"], []).append(f)
        assert f["tenant"] == "shop" and f["metrics"] and f["cause"] and f["fix"]
    # The well-configured producers and their consumers: named in at most a quarter of the reads. The cost rules
    # read broker thread time, which a starved 2-core CI machine inflates at random (a good consumer once showed
    # 4.7 % of a thread for 2.5 KB/s in one read); a rule that misjudged them would name them in most reads.
    shown = json.dumps([f for f in advice["findings"] if any(_good(n) for n in _names(f))], sort_keys=True)
    assert advice["reads"] >= 10
    assert all(k <= advice["reads"] / 4 for k in advice["good_named"].values()), (
        advice["good_named"],
        advice["reads"],
        shown,
    )
    assert not advice["good_paged"], advice["good_paged"]  # and never by a finding that pages (issue 28)
    batch = next(f for f in by_kind["poor_batching"] if f["client_id"] == "shop-batchless")
    # On its topic's absolute records per request first (issue 17); the relative rule only where those are missing
    assert batch["basis"] in ("client_telemetry", "topic_records_per_request", "thread_time_per_mib"), batch
    if batch["basis"] == "thread_time_per_mib":
        assert batch["evidence"]["thread_seconds_per_mib"] >= 5 * batch["evidence"]["cluster_norm_seconds_per_mib"]
    else:
        assert batch["evidence"]["records_per_request"] <= 5
    if batch["basis"] == "topic_records_per_request":  # the per-topic map is that basis' evidence
        assert batch["evidence"]["tenant_topics_records_per_request"]["shop.batchless"] < 2  # one record a request
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
    # held well under the 64 KiB/s it offers (16 KiB/s quota; a starved CI machine once measured 35.7 KB/s)
    assert throttled["evidence"]["produce_bytes_per_second"] < 49152
    assert not any(
        f["kind"] in ("poor_batching", "request_storm") and f["client_id"] == "shop-throttled"
        for f in advice["findings"]
    )


def _prom(stack, expr: str) -> list[dict]:
    body = httpx.get(f"{stack.layout.prometheus_url}/api/v1/query", params={"query": expr}, timeout=10).json()
    assert body["status"] == "success", body
    return body["data"]["result"]


def _key(labels: dict) -> tuple[str, str, str]:
    # Prometheus drops empty labels: a finding without a client (rebalances) has no client_id label at all.
    return labels["finding"], labels.get("client_id", ""), labels.get("group", "")


def test_a_client_is_judged_only_once_seen_for_the_whole_window(stack, advisor_run, advice):
    """The snapshot read as of 45 s after the clients started sees every client of the fixture for under half the
    2-minute window, so the cost rules skip them: a new consumer's group join and empty first fetches, and on a loaded
    CI machine a producer's slow start, once named well-behaved clients. (That they are judged later is what the
    findings of the misbehaving clients, all found by the ``advice`` fixture, show.)"""
    from datetime import timedelta

    from monitor.advisor.source import read_snapshot

    source = PrometheusSource(stack.layout.prometheus_url)
    try:
        snap = read_snapshot(
            source,
            cluster="local",
            tenants=TENANTS,
            now=advisor_run["load_started"] + timedelta(seconds=45),
            window=WINDOW,
        )
    finally:
        source.close()
    early = {c.client_id: c.seen_share for c in snap.clients if c.client_id.startswith("shop-")}
    assert {"shop-good", "shop-good-2-consumer", "shop-batchless"} <= set(early), early
    assert all(0 < v < 0.5 for v in early.values()), early


def test_findings_reach_prometheus_and_the_tenant_dashboard(stack, watched, advice):
    """The alerts role exports what it computed for KafkaClientHurtsOtherTenants; Prometheus scrapes serve."""
    expected = {
        ("poor_batching", "shop-batchless", ""),
        ("request_storm", "shop-storm", ""),
        ("throttled_by_quota", "shop-throttled", ""),
        ("frequent_rebalances", "", "shop-flappy"),
    }

    got: set[tuple[str, str, str]] = set()
    since: dict[tuple[str, str, str], float] = {}

    def exported():
        rows = _prom(stack, 'kafka_client_advisor_finding{cluster="local", tenant="shop"}')
        assert all(r["value"][1] == "1" for r in rows), rows
        last[:] = [_key(r["metric"]) for r in rows]
        got.update(last)
        # The dashboard's table, as Grafana would run it for tenant shop: one row per finding, "since" in the past.
        table = _prom(stack, substitute(FINDINGS_SINCE, {"cluster": "local", "tenant": "shop"}))
        since.update({_key(r["metric"]): float(r["value"][1]) for r in table})
        return expected <= got and expected <= set(since)

    last: list[tuple[str, str, str]] = []
    wait_until(
        exported,
        150,
        interval=5,
        what=lambda: f"kafka_client_advisor_finding {sorted(expected)} (gauge: {sorted(got)}, table: {since})",
    )
    assert not any(_good(client) for _, client, _ in last), last  # in the last read (see the first test)
    now_ms = time.time() * 1000
    assert all(now_ms - 3600_000 < v <= now_ms + 1000 for v in since.values()), since
    # Nothing of tenant ads, nor the operators-only copies, on shop's table.
    assert not _prom(stack, substitute(FINDINGS_SINCE, {"cluster": "local", "tenant": "ads"}))


def test_the_alert_names_tenant_and_client_of_findings_that_hurt_others(stack, watched, advice):
    # The advice above was read over WINDOW; the rule's own 10m window would also see clients of earlier tests on
    # this shared stack, which move the cluster norm. Same window, same findings.
    rule = next(r for r in load_rules(watched.rules) if r.name == "KafkaClientHurtsOtherTenants")
    rule = dataclasses.replace(rule, params={**rule.params, "window": WINDOW})

    named: set[tuple[str, str, str]] = set()
    observations = []

    def detected():
        source = PrometheusSource(stack.layout.prometheus_url)
        try:
            obs = noisy_clients.detect(
                rule,
                DetectorContext(
                    source=source, now=datetime.now(timezone.utc), config=watched, tenants=TenantIndex(TENANTS)
                ),
            )
        finally:
            source.close()
        observations.extend(obs)
        # a tenant-and-topic observation has no client_id (issue 28: not identified yet)
        last[:] = [(o.labels["tenant"], o.labels.get("client_id", ""), o.labels["finding"]) for o in obs]
        named.update(last)
        return ("shop", "shop-batchless", "poor_batching") in named

    last: list[tuple[str, str, str]] = []
    wait_until(
        detected,
        150,
        interval=5,
        what=lambda: f"KafkaClientHurtsOtherTenants naming shop-batchless (named: {sorted(named)})",
    )
    # In no detection: the alert pages only a material cost, and a good client's never is (issue 28)
    assert not any(_good(o.labels.get("client_id", "")) for o in observations), sorted(named)
    assert all(o.evidence["fix"] and o.evidence["metrics"] for o in observations)


def test_advice_endpoint_is_the_tenants_own_and_capacity_plans_the_real_cluster(stack, watched, advice, tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'kh.db'}")
    upgrade(store)
    app = build_api(watched, store)
    app.state.clock = lambda: datetime.now(timezone.utc)  # live: the advice is read again below
    shop, ads, op = (new_token(store, t) for t in ("shop", "ads", None))
    from fastapi.testclient import TestClient

    with TestClient(app, raise_server_exceptions=False) as client:

        def get(path, token, **params):
            return client.get(path, params=params, headers={"Authorization": f"Bearer {token}"})

        def batchless_named():
            r = get("/api/v1/tenants/shop/advice", shop, window=WINDOW)
            assert r.status_code == 200, r.text
            return any(
                f["kind"] == "poor_batching" and f["client_id"] == "shop-batchless" for f in r.json()["findings"]
            )

        wait_until(batchless_named, 120, interval=5, what="GET /api/v1/tenants/shop/advice naming shop-batchless")
        r = get("/api/v1/tenants/shop/advice", ads)
        assert r.status_code == 404 and "shop" not in r.text
        assert "shop-" not in get("/api/v1/tenants/ads/advice", ads, window=WINDOW).text

        r = get("/api/v1/clusters/local/capacity", op, window="5m", grow="shop:3", add="newco:5:7:12")
        assert r.status_code == 200, r.text
        plan, what_if = r.json()["plan"], r.json()["what_if"]
        assert plan["brokers"] == 3 and plan["disk_total_bytes"] > 0 and 1.5 < plan["replication_factor"] <= 3.01
        shop_row = next(t for t in plan["tenants"] if t["tenant"] == "shop")
        assert shop_row["bytes_in_per_second"] > 0 and shop_row["stored_bytes"] > 0
        grown = next(t for t in what_if["tenants"] if t["tenant"] == "shop")
        assert grown["bytes_in_per_second"] == pytest.approx(3 * shop_row["bytes_in_per_second"], rel=1e-3)
        assert what_if["brokers_required"] >= plan["brokers_required"]
        assert any(t["tenant"] == "newco" for t in what_if["tenants"])

        r = get("/api/v1/clusters/local/capacity", shop, window="5m")
        assert r.status_code == 200 and [t["tenant"] for t in r.json()["plan"]["tenants"]] == ["shop"]
        assert "brokers_needed" not in r.json()["plan"]
        assert get("/api/v1/clusters/local/capacity", shop, grow="ads:2").status_code == 422
    store.dispose()


def test_cli_prints_advice_and_capacity(stack, watched, advice, tmp_path, capsys):
    cfg = tmp_path / "kafka-health.yaml"
    cfg.write_text(yaml.safe_dump(watched.model_dump(mode="json", exclude_none=True)))

    def printed():
        assert cli.main(["advice", "--tenant", "shop", "--window", WINDOW, "--config", str(cfg)]) == 0
        out = capsys.readouterr().out
        return "poor_batching" in out and "shop-batchless" in out and "change:" in out

    wait_until(printed, 120, interval=5, what="kafka-health advice naming shop-batchless")
    assert cli.main(["capacity", "--config", str(cfg), "--window", "5m", "--grow", "shop:3"]) == 0
    out = capsys.readouterr().out
    assert "cluster local plan" in out and "cluster local what-if" in out and "tenant shop" in out
    assert cli.main(["advice", "--tenant", "nobody", "--config", str(cfg)]) == 1
    assert "error: --tenant: no tenant 'nobody'" in capsys.readouterr().err


def test_prometheus_down_is_unavailable_not_no_findings():
    source = PrometheusSource("http://127.0.0.1:1", timeout=2)
    now = datetime.now(timezone.utc)
    doc = service.tenant_advice(source=source, tenant=SHOP, tenants=TENANTS, now=now)
    # A tenant reads the public text, never Prometheus' address (issue 15, item 4).
    assert doc["clusters"][0]["status"] == "unavailable"
    assert doc["clusters"][0]["message"] == "metrics backend unavailable"
    assert doc["findings"] == []
    cap = service.cluster_capacity(source=source, cluster="local", tenants=TENANTS, now=now)
    assert cap["status"] == "unavailable" and cap["plan"] is None
