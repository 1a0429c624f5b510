"""One run of every client in zoo.py for both advisor modules, and one series of reads of the advice they share.

Each module used to start its own clients and wait an advisor window for them (test_advisor_stack ~118 s of setup,
test_advisor_real_clients ~97 s, more under load): now they run together once, and every assertion of both modules
reads the findings of the same reads.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from monitor.advisor import findings, service
from monitor.advisor.source import read_snapshot
from monitor.core.prom import PrometheusSource
from tests.conftest import wait_until
from tests.integration.advisor import zoo

# What the reads wait for: every misbehaving client of both modules found by its own finding
SHOP_EXPECTED = {
    ("poor_batching", "shop-batchless"),
    ("frequent_rebalances", "shop-flappy"),
    ("connection_churn", "shop-reconnect"),
    ("request_storm", "shop-storm"),
    ("throttled_by_quota", "shop-throttled"),
}
# The evidence each real bad producer may rest on, best first: the 3.9.1 producer's own telemetry once it pushes it
# (the stack subscribes clients every 10 s; on a starved machine its first push can come after the window's figures),
# else its topic's counts, like kcat (librdkafka 2.0.2 predates KIP-714) and the 2.3.1 producer
BASIS = {
    "jv3-producer": ("client_telemetry", "topic_records_per_request"),
    "kc-kcat": ("topic_records_per_request",),
    "jv2-producer": ("topic_records_per_request",),
    "js-nodejs-api": ("topic_records_per_request",),
    "fz-sync": ("topic_records_per_request",),
}
# unknown_software: the operators' copy, and each copy for the tenant of a client without a KIP-511 name (issue 28)
REAL_EXPECTED = {("poor_batching", c) for c in zoo.BAD} | {
    ("unknown_software", "unknown"),
    ("unknown_software", "unknown@js"),
    ("unknown_software", "unknown@jv2"),
    ("slow_consumer_loop", zoo.SLOW),
}


@pytest.fixture(scope="package")
def advisor_run(stack, tmp_path_factory):
    with zoo.running(stack, tmp_path_factory.mktemp("advisor")) as run:
        yield run


def _names(f: dict) -> set[str]:
    return {f["client_id"], f["group"], *f["suspects"]} - {""}


class _Reads:
    """What every read saw. ``shop_*``: the tenant shop's advice document (as ``GET .../advice`` answers); ``real_*``:
    the findings of every tenant from one snapshot."""

    def __init__(self, stack, run: dict):
        self.stack, self.run = stack, run
        self.reads = 0
        self.shop_doc: dict = {}
        self.shop_seen: dict[tuple, dict] = {}
        self.shop_good_named: dict[str, int] = {}
        self.real_seen: dict[tuple[str, str, str], dict] = {}
        self.real_good_named: dict[tuple[str, str, str], int] = {}
        # every (client, kind) a finding that pages (hurts other tenants) named, in any read, of a good client
        self.good_paged: dict[tuple[str, str], int] = {}
        self.slow_named: dict[str, int] = {}
        self.slow_first: dict[str, int] = {}
        self.last = None
        self.after = 0  # seconds from the clients' start to the read that found everything

    def since_start(self) -> int:
        return round((datetime.now(timezone.utc) - self.run["started"]).total_seconds())

    def read(self) -> bool:
        source = PrometheusSource(self.stack.layout.prometheus_url)
        now = datetime.now(timezone.utc)
        try:
            doc = service.tenant_advice(source=source, tenant=zoo.SHOP, tenants=zoo.TENANTS, now=now, window=zoo.WINDOW)
            snap = read_snapshot(source, cluster="local", tenants=zoo.TENANTS, now=now, window=zoo.WINDOW)
        finally:
            source.close()
        self.reads += 1
        self.shop_doc, self.last = doc, snap
        for name in {n for f in doc["findings"] for n in _names(f) if zoo.shop_good(n)}:
            self.shop_good_named[name] = self.shop_good_named.get(name, 0) + 1
        for f in doc["findings"]:
            self.shop_seen[(f["kind"], f["client_id"], f["group"], tuple(f["suspects"]))] = f
        for f in findings.advise(snap):
            d = f.as_json()
            # unknown_software names software, not a client: one copy for operators, one per tenant of its candidates
            name = d["client_id"] or d["evidence"].get("client_software_name", "")
            if d["kind"] == "unknown_software" and d["tenant"]:
                name += f"@{d['tenant']}"
            self.real_seen[(d["kind"], name, d["basis"])] = d
            # a name is the client_id (suspects and candidates are not names); a page is one that hurts others
            good = d["client_id"] in zoo.GOOD or zoo.shop_good(d["client_id"])
            if good and d["hurts_other_tenants"]:
                self.good_paged[(d["client_id"], d["kind"])] = self.good_paged.get((d["client_id"], d["kind"]), 0) + 1
            if d["client_id"] in zoo.GOOD:
                key = (d["client_id"], d["kind"], "page" if d["hurts_other_tenants"] else "advice")
                self.real_good_named[key] = self.real_good_named.get(key, 0) + 1
            if d["kind"] == "slow_consumer_loop":  # every client it names, in any read, and when first
                self.slow_named[d["client_id"]] = self.slow_named.get(d["client_id"], 0) + 1
                self.slow_first.setdefault(d["client_id"], self.since_start())
        shop_found = {(kind, n) for (kind, *_), f in self.shop_seen.items() for n in _names(f)}
        # a good client's finding (counted in real_good_named, judged by the tests) is not one expected
        real_found = {(k, c) for k, c, b in self.real_seen if k != "poor_batching" or b in BASIS.get(c, ())}
        # at least 10 reads, so "named in at most a quarter of the reads" means something even when every finding
        # came early (CI saw all of them within 6 reads)
        return SHOP_EXPECTED <= shop_found and REAL_EXPECTED <= real_found and self.reads >= 10

    def what(self) -> str:
        s = self.last
        topics = {
            t.topic: (round(t.messages_per_second, 1), round(t.produce_requests_per_second, 1))
            for t in (s.topics if s else ())
            if t.tenant
        }
        tele = {
            t.client_id: (t.records_per_request, t.produce_request_rate, t.poll_idle_ratio, t.fetch_latency_seconds)
            for t in (s.telemetry if s else ())
        }
        groups = {g.group: (g.client_ids, g.lag_records, g.lag_change_records) for g in (s.groups if s else ())}
        cl = {
            f"{c.user}/{c.client_id}": (
                round(c.produce_bytes_per_second),
                round(c.request_time_ratio, 4),
                round(c.seen_share, 2),
            )
            for c in (s.clients if s else ())
            if c.tenant
        }
        unnamed = {
            f["tenant"]: f["candidates"] for (k, c, b), f in self.real_seen.items() if k == "poor_batching" and not c
        }
        return (
            f"{sorted(SHOP_EXPECTED | REAL_EXPECTED)} (shop seen: {sorted(self.shop_seen)}; seen: "
            f"{sorted(self.real_seen)}; topics {topics}; telemetry {tele}; groups {groups}; clients {cl}; unnamed "
            f"{unnamed}; nameless {s.cluster.nameless_connections if s else None}; reads {self.reads})"
        )


@pytest.fixture(scope="package")
def observed(stack, advisor_run) -> _Reads:
    """The advice read every 5 s until every expected finding of both modules has been seen (at least 10 reads): cost
    findings need their clients seen for the whole 2-minute window first, and the JVMs, node and the Go client take
    up to a minute to start on the loaded 2-core machine. Fails the tests that use it otherwise."""
    reads = _Reads(stack, advisor_run)
    wait_until(reads.read, 300, interval=5, what=reads.what)
    reads.after = reads.since_start()
    return reads
