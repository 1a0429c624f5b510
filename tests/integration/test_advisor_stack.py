"""The advisor on the real stack: real misbehaving clients, the real collectors feeding the stack's Prometheus.

- ``shop-batchless``: a producer with linger.ms=0 and one 10-byte record per batch -> poor_batching naming it;
- group ``shop-flappy``: a consumer that joins, gets its assignment and leaves, in a loop -> frequent_rebalances;
- ``shop-reconnect``: a producer created and dropped for every record -> connection_churn with it as a suspect;
- ``shop-storm``: a producer to a topic that does not exist, auto-creation off, retry.backoff.ms at its minimum ->
  request_storm naming it (every metadata answer is UNKNOWN_TOPIC_OR_PARTITION);
- ``shop-throttled``: a producer at 64 KiB/s with a 16 KiB/s produce quota of its own -> throttled_by_quota;
- ``shop-good``: a producer with linger.ms=200 at the same record rate, and its consumer (fetch.min.bytes 64 KiB,
  fetch.wait.max.ms 500, as the advice says) -> no finding names it;
  ``shop-good-2`` and ``shop-good-3``, two more well-batching producers: most clients of a real cluster behave, and
  with three of five producers misbehaving the "norm of the others" would sit between good and bad.

Findings come and go as the clients' rates move inside the window, so each test waits until every expected finding
has been seen at least once, and checks that a well-configured client was named in at most a quarter of the reads.

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
from alerts.rules import load_rules
from dashboards.boards.tenant import FINDINGS_SINCE
from dashboards.promql import substitute
from monitor import cli
from monitor.advisor import service
from monitor.core.config import CollectionSettings, TenantConfig, TenantSelector
from monitor.core.prom import PrometheusSource
from monitor.core.store import Store
from monitor.core.tenancy import TenantIndex
from monitor.loadgen import LoadGenerator, TenantLoad, ensure_topics
from monitor.serve import run
from monitor.stack import kafka as stack_kafka
from monitor.store.migrate import upgrade
from tests.api_fixtures import build_api, new_token
from tests.conftest import wait_until

pytestmark = pytest.mark.integration

TENANTS = (
    TenantConfig(
        name="shop",
        selectors=(
            TenantSelector(
                cluster="local", topic_prefixes=("shop.",), client_id_prefixes=("shop-",), group_prefixes=("shop-",)
            ),
        ),
    ),
    TenantConfig(
        name="ads", selectors=(TenantSelector(cluster="local", topic_prefixes=("ads.",), client_id_prefixes=("ads-",)),)
    ),
)
WINDOW = "2m"
STARTED: dict[str, datetime] = {}  # when the fixture's clients started
QUIET = {"logger": __import__("logging").getLogger("advisor-test-librdkafka")}
# What polling_too_often's fix advises. With librdkafka's defaults (fetch.min.bytes=1) a consumer of a topic that
# gets a batch every 100-200 ms fetches each batch alone; on a loaded CI machine that cost 5.5 times the norm per
# MiB once, and the "good" consumer was named, rightly by the rule.
GOOD_FETCH = {"fetch.min.bytes": 65536, "fetch.wait.max.ms": 500}


def _flapper(stop: threading.Event, servers: str) -> None:
    """Join group shop-flappy, wait for the assignment, leave; again and again."""
    while not stop.is_set():
        assigned = threading.Event()
        c = Consumer(
            {
                "bootstrap.servers": servers,
                "group.id": "shop-flappy",
                "client.id": "shop-flapper",
                "auto.offset.reset": "latest",
                **QUIET,
            }
        )
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
        p = Producer(
            {
                "bootstrap.servers": servers,
                "client.id": "shop-storm",
                "allow.auto.create.topics": False,
                "retry.backoff.ms": 1,
                "retry.backoff.max.ms": 1,
                "message.timeout.ms": 10000,
                **QUIET,
            }
        )
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
    stack_kafka.set_client_quota(
        L,
        stack_kafka.require_java(),
        L.logs_dir / "advisor-quota.log",
        client_id="shop-throttled",
        quota="producer_byte_rate=16384",
    )


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
    config = config.model_copy(
        update={
            "collection": CollectionSettings(interval_seconds=5),
            "rules": config.rules.model_copy(update={"files": (_rules_file(tmp / "rules.yaml"),)}),
        }
    )
    servers = stack.layout.bootstrap_servers
    ensure_topics(
        servers,
        ["shop.batchless", "shop.good", "shop.good2", "shop.good3", "shop.reconnect", "shop.throttled"],
        partitions=1,
    )
    stop = threading.Event()
    threads = [
        threading.Thread(
            target=run,
            args=(config, ("collector", "alerts"), "127.0.0.1", stack.layout.service_port),
            kwargs={"stop_event": stop},
            daemon=True,
            name="serve",
        )
    ]
    threads += [
        threading.Thread(target=f, args=(stop, servers), daemon=True, name=f.__name__)
        for f in (_flapper, _reconnector, _stormer)
    ]
    threads.append(threading.Thread(target=_throttle, args=(stack, stop), daemon=True, name="quota"))
    load = LoadGenerator(
        servers,
        [
            TenantLoad(
                "shop",
                ("shop.batchless",),
                "shop-batchless",
                "shop-batchless-readers",
                messages_per_second=400,
                message_bytes=10,
                producer_settings={"linger.ms": 0, "batch.num.messages": 1, "batch.size": 200},
            ),
            TenantLoad(
                "shop",
                ("shop.good",),
                "shop-good",
                "shop-good-readers",
                messages_per_second=400,
                message_bytes=100,
                producer_settings={"linger.ms": 200, "batch.size": 262144},
                consumer_settings=GOOD_FETCH,
            ),
            # Full batches of some KiB each. Not compressed: the load's payload is one repeated byte, which lz4 shrinks
            # twentyfold, and a client moving 2 KB/s in 200-byte requests does cost the broker much per MiB.
            TenantLoad(
                "shop",
                ("shop.good2",),
                "shop-good-2",
                "shop-good-2-readers",
                messages_per_second=400,
                message_bytes=200,
                producer_settings={"linger.ms": 100, "batch.size": 131072},
                consumer_settings=GOOD_FETCH,
            ),
            TenantLoad(
                "shop",
                ("shop.good3",),
                "shop-good-3",
                "shop-good-3-readers",
                messages_per_second=200,
                message_bytes=500,
                producer_settings={"linger.ms": 200, "batch.size": 262144},
                consumer_settings=GOOD_FETCH,
            ),
            # 64 KiB/s in well-filled batches against a 16 KiB/s quota: throttled, but not a costly client.
            TenantLoad(
                "shop",
                ("shop.throttled",),
                "shop-throttled",
                "shop-throttled-readers",
                messages_per_second=64,
                message_bytes=1024,
                producer_settings={"linger.ms": 100},
            ),
        ],
    )
    for th in threads:
        th.start()
    load.start()
    STARTED["load"] = datetime.now(timezone.utc)
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
        return service.tenant_advice(
            source=source, tenant=TENANTS[0], tenants=TENANTS, now=datetime.now(timezone.utc), window=WINDOW
        )
    finally:
        source.close()


def _names(f: dict) -> set[str]:
    return {f["client_id"], f["group"], *f["suspects"]} - {""}


def _good(name: str) -> bool:
    return name.startswith("shop-good")


@pytest.fixture(scope="module")
def advice(stack, watched) -> dict:
    """The advice, read every 5 s until each expected finding has been seen: the last document, its findings replaced
    by the latest copy of every finding seen in any read, with ``reads`` (how many) and ``good_named`` (per
    well-configured client, in how many reads a finding named it)."""
    expected = {
        ("poor_batching", "shop-batchless"),
        ("frequent_rebalances", "shop-flappy"),
        ("connection_churn", "shop-reconnect"),
        ("request_storm", "shop-storm"),
        ("throttled_by_quota", "shop-throttled"),
    }
    seen: dict[tuple, dict] = {}
    reads, good_named = [0], {}

    def all_found():
        doc = _advice(stack)
        reads[0] += 1
        for name in {n for f in doc["findings"] for n in _names(f) if _good(n)}:
            good_named[name] = good_named.get(name, 0) + 1
        for f in doc["findings"]:
            seen[(f["kind"], f["client_id"], f["group"], tuple(f["suspects"]))] = f
        found = {(kind, n) for (kind, *_), f in seen.items() for n in _names(f)}
        # at least 10 reads, so "named in at most a quarter of the reads" means something even when every finding
        # came early (CI saw all of them within 6 reads)
        return (
            {**doc, "findings": list(seen.values()), "reads": reads[0], "good_named": good_named}
            if expected <= found and reads[0] >= 10
            else None
        )

    # Cost findings need their clients seen for the whole 2-minute window first.
    return wait_until(all_found, 300, interval=5, what=lambda: f"findings {sorted(expected)} (seen: {sorted(seen)})")


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


def test_a_client_is_judged_only_once_seen_for_the_whole_window(stack, watched, advice):
    """The snapshot read as of 45 s after the clients started sees every client of the fixture for under half the
    2-minute window, so the cost rules skip them: a new consumer's group join and empty first fetches, and on a loaded
    CI machine a producer's slow start, once named well-behaved clients. (That they are judged later is what the
    findings of the misbehaving clients, all found by the ``advice`` fixture, show.)"""
    from datetime import timedelta

    from monitor.advisor.source import read_snapshot

    source = PrometheusSource(stack.layout.prometheus_url)
    try:
        snap = read_snapshot(
            source, cluster="local", tenants=TENANTS, now=STARTED["load"] + timedelta(seconds=45), window=WINDOW
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
    # In the detection that named shop-batchless (at most a quarter of the reads may misjudge a good client on a
    # loaded machine: see the first test)
    assert not any(_good(client) for _, client, _ in last), last
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
    doc = service.tenant_advice(source=source, tenant=TENANTS[0], tenants=TENANTS, now=now)
    # A tenant reads the public text, never Prometheus' address (issue 15, item 4).
    assert doc["clusters"][0]["status"] == "unavailable"
    assert doc["clusters"][0]["message"] == "metrics backend unavailable"
    assert doc["findings"] == []
    cap = service.cluster_capacity(source=source, cluster="local", tenants=TENANTS, now=now)
    assert cap["status"] == "unavailable" and cap["plan"] is None
