"""Item 1 of the tenant boundary: a broker-scoped alert copied to each tenant on the broker carries only that
tenant's clients (and the peers and groups they are at), plus anonymous aggregates; the operator copy keeps all.

The engine-level tests run the real built-in catalog on an in-memory source where two tenants' clients share
broker 1 and check every byte of each tenant's instances, annotations and notification payloads.
"""

import json
from datetime import datetime, timezone

import pytest

from alerts.attribution import OTHER_TENANT, Attributor, redact_evidence, redact_labels
from alerts.detectors.registry import builtin_detectors
from alerts.engine import Engine, Notification
from alerts.notify import payload
from alerts.rules import load_rules
from alerts.types import AlertState, Decision, Instance, Severity
from monitor.core.config import parse_config
from monitor.core.metric_names import PHASE_RESPONSE_SEND, M
from monitor.core.prom import InstantSample, Series
from monitor.core.tenancy import TenantIndex
from tests.harness.fake_source import FakeSource

pytestmark = pytest.mark.unit
T0 = datetime(2026, 11, 22, 0, 0, tzinfo=timezone.utc)

CONFIG = parse_config("""
clusters:
  - name: c1
    bootstrap_servers: localhost:9092
tenants:
  - name: shop
    selectors: [{cluster: c1, topic_prefixes: [orders.], client_id_prefixes: [shop-], principals: ["User:shop-svc"],
                 group_prefixes: [shop.]}]
  - name: ads
    selectors: [{cluster: c1, topic_prefixes: [clicks.], principals: ["User:ads-svc"], group_prefixes: [ads.]}]
""")

# What identifies each tenant's clients: client ids, principals, consumer groups, peer addresses. ads' clients are
# owned by their principal only (their client ids match no prefix), the harder case.
SECRETS = {
    "shop": ["shop-batcher", "shop-reader", "shop-svc", "shop.billing", "10.1.0.7"],
    "ads": ["clicker-9f3a", "tracker-77b1", "ads-svc", "ads.tracking", "10.2.0.9"],
}


def _client(user, client_id, ratio, rate):
    return ({"user": user, "client_id": client_id}, ratio, rate)


CLIENTS = [
    _client("shop-svc", "shop-batcher", 0.10, 5e6),
    _client("shop-svc", "shop-reader", 0.05, 1e6),
    _client("ads-svc", "clicker-9f3a", 0.50, 1e4),
    _client("ads-svc", "tracker-77b1", 0.30, 2e4),
]


def _source() -> FakeSource:
    bk = {"cluster": "c1", "broker": "1"}
    ts = tuple(T0.timestamp() - 30 * (29 - i) for i in range(30))
    backlog = M["client_socket_backlog"]
    instant = {
        # both tenants have partitions on broker 1: each gets a copy of broker 1's alerts
        f"last_over_time({M['topic_size']}": [
            InstantSample({"cluster": "c1", "broker": "1", "topic": "orders.eu"}, 3),
            InstantSample({"cluster": "c1", "broker": "1", "topic": "clicks.raw"}, 1),
        ],
        M["request_handler_idle"]: [InstantSample(bk, 0.05)],  # KafkaRequestHandlerSaturation fires
        M["client_request_time"]: [InstantSample(lbl, ratio) for lbl, ratio, _ in CLIENTS],
        M["client_fetch_rate"]: [InstantSample(lbl, rate) for lbl, _, rate in CLIENTS],
        # per broker and peer, as the detector reads them for all brokers at once
        f"sum_over_time({backlog}": [
            InstantSample({**bk, "peer": "10.2.0.9"}, 24 * 200_000.0),
            InstantSample({**bk, "peer": "10.1.0.7"}, 20 * 50_000.0),
        ],
        f"count_over_time({backlog}": [
            InstantSample({**bk, "peer": "10.2.0.9"}, 24),
            InstantSample({**bk, "peer": "10.1.0.7"}, 20),
        ],
        M["group_member_info"]: [
            InstantSample(
                {"client_host": "10.2.0.9", "client_id": "tracker-77b1", "group": "ads.tracking", "tenant": "ads"}, 1
            ),
            InstantSample(
                {"client_host": "10.1.0.7", "client_id": "shop-reader", "group": "shop.billing", "tenant": "shop"}, 1
            ),
        ],
    }
    ranges = {  # KafkaResponseQueueBacklog fires: the queue is backed up and network threads lost idle time
        M["response_queue_size"]: [Series(bk, ts, (120.0,) * 30)],
        M["network_processor_idle"]: [Series(bk, ts, (0.9,) * 15 + (0.4,) * 15)],
        f'phase="{PHASE_RESPONSE_SEND}"': [],
    }
    return FakeSource(instant, ranges, present=M.values())


def _evaluate(config=CONFIG):
    engine = Engine(config, load_rules(config.rules), builtin_detectors())
    return engine.evaluate({}, _source(), T0)


def _copies(result, rule):
    return {i.labels.get("tenant"): i for i in result.instances.values() if i.rule == rule}


@pytest.mark.parametrize("rule", ["KafkaRequestHandlerSaturation", "KafkaResponseQueueBacklog"])
def test_each_tenants_copy_of_a_shared_broker_alert_holds_no_byte_of_the_other_tenants_clients(rule):
    result = _evaluate()
    copies = _copies(result, rule)
    assert set(copies) == {"shop", "ads"}
    for tenant, other in (("shop", "ads"), ("ads", "shop")):
        inst = copies[tenant]
        # what the API answers (labels, annotations, evidence) and what the outbox sends to its webhooks
        sent = payload(Notification(inst, Decision.NOTIFY_FIRING))
        seen = json.dumps([inst.labels, inst.annotations, inst.evidence, sent], default=str)
        leaked = [s for s in SECRETS[other] if s in seen]
        assert leaked == [], f"{tenant}'s copy of {rule} names {other}'s {leaked}"


def test_a_tenants_copy_keeps_its_own_clients_and_counts_the_others():
    copies = _copies(_evaluate(), "KafkaRequestHandlerSaturation")
    shop, ads = copies["shop"].evidence, copies["ads"].evidence
    # the three busiest per byte are ads' two and shop-batcher... ranked by thread time per byte
    assert [c["client_id"] for c in ads["clients"]] == ["clicker-9f3a", "tracker-77b1"]
    assert ads["other_clients"] == 1 and ads["busy_client"] == "clicker-9f3a"
    assert [c["client_id"] for c in shop["clients"]] == ["shop-reader"]
    assert shop["other_clients"] == 2 and shop["busy_client"] is None and shop["busy_client_other_tenant"] is True
    # ads' two use 0.8 of the 0.95 thread time all clients on the broker use
    assert shop["other_clients_share"] == pytest.approx(0.8 / 0.95, abs=1e-3)
    assert shop["all_clients"] == ads["all_clients"] == 4


def test_a_tenants_copy_of_a_slow_reader_keeps_only_the_peers_its_own_clients_are_at():
    copies = _copies(_evaluate(), "KafkaResponseQueueBacklog")
    shop, ads = copies["shop"].evidence, copies["ads"].evidence
    assert [p["peer"] for p in ads["slow_peers"]] == ["10.2.0.9"] and ads["slow_client"] == "tracker-77b1"
    assert ads["slow_client_detail"]["groups"] == ["ads.tracking"]
    assert [p["peer"] for p in shop["slow_peers"]] == ["10.1.0.7"] and shop["other_slow_peers"] == 1
    assert shop["slow_client"] is None and "slow_client_detail" not in shop


def test_the_operator_copy_keeps_every_client():
    # a cluster no tenant uses: one copy, operators only, with the whole evidence
    config = parse_config("""
clusters: [{name: c1, bootstrap_servers: "localhost:9092"}, {name: c2, bootstrap_servers: "localhost:9093"}]
tenants:
  - name: shop
    selectors: [{cluster: c2, topic_prefixes: [orders.], client_id_prefixes: [shop-]}]
""")
    copies = _copies(_evaluate(config), "KafkaRequestHandlerSaturation")
    assert set(copies) == {None}
    evidence = copies[None].evidence
    assert [c["client_id"] for c in evidence["clients"]] == ["clicker-9f3a", "tracker-77b1", "shop-reader"]
    assert "other_clients" not in evidence


# ------------------------------------------------------------------------------------------ the pure redaction

ATTRIBUTOR = Attributor(CONFIG, TenantIndex(CONFIG.tenants))
SHOP = ATTRIBUTOR.owners_of("c1", "shop")


def rec(client_id, user="", ratio=None, **more):
    out = {"client_id": client_id, "user": user, **more}
    if ratio is not None:
        out["request_time_ratio"] = ratio
    return out


REDACTION_CASES = [
    # (no, evidence, shop's copy of it)
    # 1. evidence naming no client passes unchanged
    (
        1,
        {"value": 0.05, "expr": "avg(x) < 0.2", "threshold": 0.2},
        {"value": 0.05, "expr": "avg(x) < 0.2", "threshold": 0.2},
    ),
    # 2. shop keeps its client (by client-id prefix); ads' (by principal) become a count and a share of the
    #    broker's thread time (all_clients_request_time_ratio), which stays: it is anonymous
    (
        2,
        {
            "clients": [rec("clicker-9f3a", "ads-svc", 0.5), rec("shop-a", "", 0.1)],
            "all_clients_request_time_ratio": 0.8,
            "all_clients": 5,
        },
        {
            "clients": [rec("shop-a", "", 0.1)],
            "other_clients": 1,
            "other_clients_request_time_ratio": 0.5,
            "other_clients_share": 0.625,
            "all_clients_request_time_ratio": 0.8,
            "all_clients": 5,
        },
    ),
    # 3. without the broker's total, the share is of the clients listed
    (
        3,
        {"clients": [rec("clicker-9f3a", "ads-svc", 0.3), rec("shop-a", "", 0.1)]},
        {
            "clients": [rec("shop-a", "", 0.1)],
            "other_clients": 1,
            "other_clients_request_time_ratio": 0.3,
            "other_clients_share": 0.75,
        },
    ),
    # 4. a client nobody is known to own is not shop's (fail closed); nor one whose stamp disagrees with the index
    (4, {"clients": [rec("anonymous-1"), rec("shop-x", "", tenant="ads")]}, {"clients": [], "other_clients": 2}),
    # 5. a client id both tenants use (librdkafka's default): shop's record stays, ads' goes, and the bare name is
    #    ambiguous, so it is not shop's to see; shop's own record is not scrubbed for sharing the id
    (
        5,
        {"busy_client": "rdkafka", "clients": [rec("rdkafka", "ads-svc"), rec("rdkafka", "shop-svc")]},
        {
            "busy_client": None,
            "busy_client_other_tenant": True,
            "clients": [rec("rdkafka", "shop-svc")],
            "other_clients": 1,
        },
    ),
    # 6. slow peers: an address is shop's when a client of shop is there (the others at it are counted); an address
    #    with only ads' clients, or with no known client, is someone else's
    (
        6,
        {
            "slow_peers": [
                {"peer": "10.0.0.1", "clients": [rec("shop-a", group="shop.g"), rec("x", group="ads.g", tenant="ads")]},
                {"peer": "10.0.0.2", "clients": [rec("y", group="ads.g", tenant="ads")]},
                {"peer": "10.0.0.3", "clients": []},
            ]
        },
        {
            "slow_peers": [{"peer": "10.0.0.1", "clients": [rec("shop-a", group="shop.g")], "other_clients": 1}],
            "other_slow_peers": 2,
        },
    ),
    # 7. the slow client of another tenant: its name goes, its detail too
    (
        7,
        {
            "slow_client": "tracker-77b1",
            "slow_client_detail": {
                "client_id": "tracker-77b1",
                "user": "ads-svc",
                "peer": "10.2.0.9",
                "groups": ["ads.tracking"],
            },
        },
        {"slow_client": None, "slow_client_other_tenant": True},
    ),
    # 8. and shop's own slow client stays whole
    (
        8,
        {
            "slow_client": "shop-r",
            "slow_client_detail": {"client_id": "shop-r", "user": "", "peer": "10.1.0.7", "groups": ["shop.billing"]},
        },
        {
            "slow_client": "shop-r",
            "slow_client_detail": {"client_id": "shop-r", "user": "", "peer": "10.1.0.7", "groups": ["shop.billing"]},
        },
    ),
    # 9. suspects (bare client ids) and figures keyed by them
    (
        9,
        {
            "suspects": ["shop-a", "clicker-9f3a"],
            "suspects_thread_seconds_per_mib": {"shop-a": 1.0, "clicker-9f3a": 9.0},
        },
        {"suspects": ["shop-a"], "other_suspects": 1, "suspects_thread_seconds_per_mib": {"shop-a": 1.0}},
    ),
    # 10. a new detector's list of client records under a key nobody taught the redaction: redacted by its shape
    (
        10,
        {"noisiest": [{"principal": "ads-svc", "bytes": 9}, {"principal": "shop-svc", "bytes": 1}]},
        {"noisiest": [{"principal": "shop-svc", "bytes": 1}], "other_noisiest": 1},
    ),
    # 11. what the vocabulary cannot know (text, a map keyed by client id) is scrubbed of every identifier taken out
    (
        11,
        {
            "clients": [rec("clicker-9f3a", "ads-svc")],
            "note": "clicker-9f3a (user ads-svc) sends 1-byte batches",
            "per_client": {"clicker-9f3a": 3},
        },
        {
            "clients": [],
            "other_clients": 1,
            "note": f"{OTHER_TENANT} (user {OTHER_TENANT}) sends 1-byte batches",
            "per_client": {},
        },
    ),
]


@pytest.mark.parametrize("no,evidence,expected", REDACTION_CASES, ids=[f"case{c[0]}" for c in REDACTION_CASES])
def test_redact_evidence(no, evidence, expected):
    assert redact_evidence(evidence, "shop", SHOP) == expected


def test_the_alerts_own_client_is_the_tenants_even_where_its_client_id_names_nobody():
    # KafkaClientHurtsOtherTenants of ads (which owns principals only): the suspect it is about is ads' client
    labels = {"cluster": "c1", "tenant": "ads", "client_id": "clicker-9f3a", "user": ""}
    owners = ATTRIBUTOR.owners_of("c1", "ads", subject=labels)
    got = redact_evidence({"suspects": ["clicker-9f3a", "other-1"]}, "ads", owners)
    assert got == {"suspects": ["clicker-9f3a"], "other_suspects": 1}


LABEL_CASES = [
    # (no, labels of an alert shared by the broker's tenants, shop's copy of them)
    (1, {"cluster": "c1", "broker": "1"}, {"cluster": "c1", "broker": "1"}),
    (
        2,
        {"cluster": "c1", "client_id": "shop-a", "user": "shop-svc"},
        {"cluster": "c1", "client_id": "shop-a", "user": "shop-svc"},
    ),
    (
        3,
        {"cluster": "c1", "client_id": "clicker-9f3a", "user": "ads-svc"},
        {"cluster": "c1", "client_id": OTHER_TENANT, "user": OTHER_TENANT},
    ),
    (4, {"cluster": "c1", "group": "ads.tracking"}, {"cluster": "c1", "group": OTHER_TENANT}),
    (
        5,
        {"cluster": "c1", "group": "shop.billing", "peer": "10.1.0.7"},
        {"cluster": "c1", "group": "shop.billing", "peer": OTHER_TENANT},
    ),
]


@pytest.mark.parametrize("no,labels,expected", LABEL_CASES, ids=[f"case{c[0]}" for c in LABEL_CASES])
def test_redact_labels(no, labels, expected):
    assert redact_labels(labels, "shop", SHOP) == expected


def test_a_resolved_instance_stored_whole_by_an_older_version_is_confined_at_the_next_cycle():
    whole = {
        "clients": [rec("clicker-9f3a", "ads-svc", 0.5, tenant="ads"), rec("shop-a", "shop-svc", 0.1, tenant="shop")],
        "busy_client": "clicker-9f3a",
    }
    labels = {
        "alertname": "KafkaRequestHandlerSaturation",
        "cluster": "c1",
        "broker": "3",
        "severity": "warning",
        "tenant": "shop",
    }
    old = Instance(
        rule="KafkaRequestHandlerSaturation",
        labels=labels,
        state=AlertState.RESOLVED,
        severity=Severity.WARNING,
        evidence=whole,
        active_at=T0,
        fired_at=T0,
        resolved_at=T0,
    )
    engine = Engine(CONFIG, load_rules(CONFIG.rules), builtin_detectors())
    result = engine.evaluate({old.fingerprint: old}, _source(), T0)
    kept = result.instances[old.fingerprint]
    assert kept.state is AlertState.RESOLVED
    assert kept.evidence["clients"] == [rec("shop-a", "shop-svc", 0.1, tenant="shop")]
    assert not [s for s in SECRETS["ads"] if s in json.dumps(kept.evidence)]
