"""KafkaShareGroupLag (alerts/detectors/share.py, issue 29 item 4) through the real Engine with the shipped rule on
an in-memory source: a stalled or member-less share group with records waiting fires after the shipped ``for``, for
its tenant, naming its client; consuming and idle ones never; stalled then no_members stays one alert."""

from datetime import datetime, timedelta, timezone

import pytest

from alerts.detectors.registry import builtin_detectors
from alerts.detectors.share import Member, alerting_groups
from alerts.engine import Engine
from alerts.rules import load_rules
from alerts.types import AlertState
from monitor.core.config import parse_config
from monitor.core.metric_names import M
from monitor.core.prom import InstantSample
from tests.harness.fake_source import FakeSource

pytestmark = pytest.mark.unit
T0 = datetime(2026, 11, 26, 0, 0, tzinfo=timezone.utc)
RULE = "KafkaShareGroupLag"

CONFIG = parse_config("""
clusters:
  - name: c1
    bootstrap_servers: localhost:9092
    discovery: {jolokia: "http://{host}:8778/jolokia"}
    brokers: [{id: 1, jmx: "localhost:9999", log_dirs: [/data]}]
tenants:
  - name: pay
    selectors: [{cluster: c1, topic_prefixes: [pay.], group_prefixes: [pay-]}]
  - name: ads
    selectors: [{cluster: c1, topic_prefixes: [ads.], client_id_prefixes: [ads-]}]
""")
FOR = timedelta(seconds=[r for r in load_rules(CONFIG.rules) if r.name == RULE][0].for_seconds)


def source(status: str, *, lag: float = 40.0, clients: tuple[str, ...] = ("pay-worker",)) -> FakeSource:
    g = {"cluster": "c1", "group": "pay-share", "tenant": "pay"}
    src = FakeSource(present=M.values())
    src.instant[M["sharegroup_status"]] = (
        [InstantSample({**g, "status": status}, 1)] if status in ("stalled", "no_members") else []
    )
    src.instant[M["sharegroup_lag"]] = [InstantSample({**g, "topic": "pay.orders"}, lag)]
    src.instant[M["sharegroup_member_partitions"]] = [
        InstantSample({**g, "client_id": c, "client_host": f"/10.0.0.{i}"}, 2) for i, c in enumerate(clients)
    ]
    return src


def mine(result):
    return [i for i in result.instances.values() if i.rule == RULE]


def test_a_stalled_share_group_fires_after_the_shipped_for_for_its_tenant_naming_its_client():
    eng = Engine(CONFIG, load_rules(CONFIG.rules), builtin_detectors())
    r = eng.evaluate({}, source("stalled"), T0)
    [pending] = mine(r)
    assert pending.state is AlertState.PENDING
    r = eng.evaluate(r.instances, source("stalled"), T0 + FOR - timedelta(seconds=15))
    assert [i.state for i in mine(r)] == [AlertState.PENDING]
    # the session expires: no member any more, the same alert (its client still named from the lookback)
    r = eng.evaluate(r.instances, source("no_members", lag=70, clients=("pay-worker",)), T0 + FOR)
    [fired] = mine(r)
    assert fired.state is AlertState.FIRING and fired.fingerprint == pending.fingerprint
    assert fired.labels["tenant"] == "pay" and fired.labels["client_id"] == "pay-worker"
    assert fired.labels["group"] == "pay-share" and fired.severity.value == "critical"
    assert fired.evidence["status"] == "no_members" and fired.evidence["lag_messages"] == 70
    assert fired.evidence["members"][0]["client_id"] == "pay-worker"  # the tenant's own client: not redacted
    assert "records waiting" in fired.annotations["summary"]


def test_consuming_and_idle_share_groups_never_fire():
    eng = Engine(CONFIG, load_rules(CONFIG.rules), builtin_detectors())
    r = eng.evaluate({}, source("consuming"), T0)
    r = eng.evaluate(r.instances, source("idle", lag=0), T0 + FOR * 2)
    assert not mine(r)


def test_the_table_of_statuses_lag_and_clients():
    key = ("c1", "g")
    two = [(key, Member("a", "/h1", 1)), (key, Member("b", "/h2", 1))]
    cases = [  # (status, lag, members) -> fires, client_id label
        ("stalled", 5.0, two[:1], True, "a"),
        ("no_members", 5.0, [], True, None),
        ("stalled", 5.0, two, True, None),  # two client ids: in the evidence only
        ("stalled", 0.0, two[:1], False, None),  # nothing waiting (min_lag 1)
        ("consuming", 5.0, two[:1], False, None),
    ]
    for status, lag, members, fires, client in cases:
        obs = alerting_groups([(key, "t", status)], [(key, "x", lag)], members, min_lag=1)
        assert bool(obs) is fires, (status, lag, members)
        if obs:
            assert obs[0].labels.get("client_id") == client and obs[0].labels["tenant"] == "t"
            assert len(obs[0].evidence["members"]) == len(members)
