"""The evaluation cycle on an in-memory source: attribution, rule failure, no data, inhibition, silences, dedup."""

from datetime import datetime, timedelta, timezone

import pytest

from alerts.detectors.registry import builtin_detectors
from alerts.engine import FAILING, NO_DATA, Engine, RuleHealth
from alerts.mute import Matcher, Silencer, SilenceView
from alerts.notify import ALERTMANAGER, targets_for
from alerts.rules import builtin_variant, load_rules
from alerts.types import AlertState, Decision
from monitor.core.config import RulesSettings, parse_config
from monitor.core.errors import QueryError
from monitor.core.metric_names import M
from monitor.core.prom import InstantSample
from tests.harness.fake_source import FakeSource

pytestmark = pytest.mark.unit
T0 = datetime(2026, 11, 22, 0, 0, tzinfo=timezone.utc)

CONFIG = parse_config("""
clusters:
  - name: c1
    bootstrap_servers: localhost:9092
    # every source configured: a missing input is no data, not "not observable" (alerts/observable.py)
    discovery: {jolokia: "http://{host}:8778/jolokia"}
    brokers: [{id: 1, jmx: "localhost:9999", log_dirs: [/data]}]
tenants:
  - name: shop
    selectors: [{cluster: c1, topic_prefixes: [orders.], client_id_prefixes: [shop-]}]
    receivers: {webhooks: ["http://127.0.0.1:1/hook"], labels: {team: shop-oncall}}
  - name: ads
    selectors: [{cluster: c1, topic_prefixes: [clicks.]}]
""")


def _engine():
    return Engine(CONFIG, load_rules(CONFIG.rules), builtin_detectors())


def _placement(src):
    src.instant[f"last_over_time({M['topic_size']}"] = [
        InstantSample({"cluster": "c1", "broker": "1", "topic": "orders.eu"}, 3),
        InstantSample({"cluster": "c1", "broker": "1", "topic": "clicks.raw"}, 1),
        InstantSample({"cluster": "c1", "broker": "2", "topic": "orders.eu"}, 3),
    ]


def by_rule(result, rule):
    return sorted((i for i in result.instances.values() if i.rule == rule), key=lambda i: i.labels.get("tenant", ""))


def test_watchdog_fires_every_cycle_and_notifies_once():
    eng, src = _engine(), FakeSource(present=M.values())
    src.instant["vector(1)"] = [InstantSample({}, 1.0)]
    r1 = eng.evaluate({}, src, T0)
    [wd] = by_rule(r1, "KafkaHealthWatchdog")
    assert wd.state is AlertState.FIRING and "tenant" not in wd.labels and wd.labels["watchdog"] == "true"
    assert [n.decision for n in r1.notifications if n.instance.rule == "KafkaHealthWatchdog"] == [
        Decision.NOTIFY_FIRING
    ]
    r2 = eng.evaluate(r1.instances, src, T0 + timedelta(seconds=15))
    assert not [n for n in r2.notifications if n.instance.rule == "KafkaHealthWatchdog"]
    r3 = eng.evaluate(r2.instances, src, T0 + timedelta(seconds=75))  # refresh to Alertmanager after 60 s
    assert [n.decision for n in r3.notifications if n.instance.rule == "KafkaHealthWatchdog"] == [Decision.REFRESH]


def test_broker_alert_is_one_instance_per_tenant_on_the_broker():
    eng, src = _engine(), FakeSource(present=M.values())
    _placement(src)
    src.instant[M["broker_up"]] = [InstantSample({"cluster": "c1", "broker": "1"}, 0)]
    r = eng.evaluate({}, src, T0)
    r = eng.evaluate(r.instances, src, T0 + timedelta(seconds=30))
    insts = by_rule(r, "KafkaBrokerUnreachable")
    assert [(i.labels["tenant"], i.labels["broker"], i.state) for i in insts] == [
        ("ads", "1", AlertState.FIRING),
        ("shop", "1", AlertState.FIRING),
    ]
    shop = insts[1]
    assert shop.labels["team"] == "shop-oncall"  # the tenant's receiver labels
    assert shop.annotations["summary"] == "Broker 1 of cluster c1 is unreachable"
    assert shop.annotations["runbook"].endswith("#kafkabrokerunreachable")


def test_broker_down_inhibits_under_replication_reported_by_the_surviving_leaders():
    """As on a real cluster: the killed broker exports nothing; the leaders that lost a follower (brokers 2 and 3)
    report the under-replicated and under-min-ISR partitions under their own ``broker`` label."""
    eng, src = _engine(), FakeSource(present=M.values())
    _placement(src)
    src.instant[M["broker_up"]] = [InstantSample({"cluster": "c1", "broker": "1"}, 0)]
    src.instant[M["under_replicated"]] = [
        InstantSample({"cluster": "c1", "broker": "2"}, 4),
        InstantSample({"cluster": "c1", "broker": "3"}, 2),
    ]
    src.instant[M["under_min_isr"]] = [InstantSample({"cluster": "c1", "broker": "2"}, 1)]
    r, notified = {}, []
    for s in (0, 30, 60, 90, 120):
        res = eng.evaluate(r, src, T0 + timedelta(seconds=s))
        r = res.instances
        notified += [n.instance.rule for n in res.notifications]
    assert {i.state for i in by_rule(res, "KafkaBrokerUnreachable")} == {AlertState.FIRING}
    urp = by_rule(res, "KafkaUnderReplicatedPartitions")
    assert {i.labels["broker"] for i in urp} == {"2", "3"}
    assert all(
        i.state is AlertState.FIRING and i.muted_by == "inhibited:KafkaBrokerUnreachable" and i.notified_state is None
        for i in urp
    )
    assert "KafkaUnderReplicatedPartitions" not in notified
    # Writes with acks=all fail: that still pages, broker down or not.
    [minisr] = by_rule(res, "KafkaUnderMinIsrPartitions")
    assert minisr.muted_by is None and minisr.notified_state is AlertState.FIRING
    assert "KafkaUnderMinIsrPartitions" in notified


def test_silence_mutes_and_its_expiry_releases_the_page():
    eng, src = _engine(), FakeSource(present=M.values())
    src.instant["vector(1)"] = [InstantSample({}, 1.0)]
    sil = SilenceView("s1", (Matcher("alertname", "KafkaHealthWatchdog"),), T0, T0 + timedelta(minutes=5))
    r = eng.evaluate({}, src, T0, silences=Silencer([sil], T0))
    [wd] = by_rule(r, "KafkaHealthWatchdog")
    assert wd.muted_by == "silence:s1" and not [n for n in r.notifications if n.instance.rule == wd.rule]
    later = T0 + timedelta(minutes=6)
    r = eng.evaluate(r.instances, src, later, silences=Silencer([sil], later))
    assert [n.decision for n in r.notifications if n.instance.rule == wd.rule] == [Decision.NOTIFY_FIRING]


def test_silencing_an_alert_that_paged_keeps_it_firing_in_alertmanager_and_never_pages_again():
    """Alertmanager resolves an alert whose ``endsAt`` passed: a delivered firing must keep being refreshed there
    while our silence holds it (no false resolve, no second page when the silence ends); webhooks get nothing."""
    eng, src = _engine(), FakeSource(present=M.values())
    _placement(src)
    src.instant[M["broker_up"]] = [InstantSample({"cluster": "c1", "broker": "1"}, 0)]
    r = eng.evaluate({}, src, T0).instances
    res = eng.evaluate(r, src, T0 + timedelta(seconds=30))
    shop = next(n for n in res.notifications if n.instance.labels.get("tenant") == "shop")
    assert shop.decision is Decision.NOTIFY_FIRING
    fp = shop.instance.fingerprint
    start, end = T0 + timedelta(seconds=45), T0 + timedelta(minutes=16)
    sil = SilenceView("s1", (Matcher("tenant", "shop"),), start, end)
    r, sent = res.instances, [T0 + timedelta(seconds=30)]
    for t in range(45, 20 * 60, 15):
        now = T0 + timedelta(seconds=t)
        res = eng.evaluate(r, src, now, silences=Silencer([sil], now))
        r = res.instances
        assert r[fp].muted_by == ("silence:s1" if start <= now < end else None)
        for n in res.notifications:
            if n.instance.fingerprint == fp:
                assert n.decision is Decision.REFRESH, (now, n.decision)  # never resolved, never paged again
                assert targets_for(n.instance.labels, n.decision, CONFIG) == [ALERTMANAGER]  # no webhook
                sent.append(now)
    gaps = [(b - a).total_seconds() for a, b in zip(sent, sent[1:] + [T0 + timedelta(minutes=20)])]
    assert max(gaps) <= 75  # resend every 60 s on a 15 s cycle: far inside Alertmanager's 5 min endsAt
    assert sum(start <= t < end for t in sent) >= 14  # refreshed while silenced, not only after


def test_failing_rule_keeps_its_incidents_and_raises_rule_failing():
    eng, src = _engine(), FakeSource(present=M.values())
    src.instant[M["under_min_isr"]] = [InstantSample({"cluster": "c1", "broker": "2"}, 1)]
    r = eng.evaluate({}, src, T0)
    r = eng.evaluate(r.instances, src, T0 + timedelta(seconds=30))
    assert {i.state for i in by_rule(r, "KafkaUnderMinIsrPartitions")} == {AlertState.FIRING}
    src.instant[M["under_min_isr"]] = QueryError("Prometheus query failed: bad_data")
    for s in (60, 120, 180):
        r = eng.evaluate(r.instances, src, T0 + timedelta(seconds=s))
    assert r.rules["KafkaUnderMinIsrPartitions"].health is RuleHealth.ERR
    assert {i.state for i in by_rule(r, "KafkaUnderMinIsrPartitions")} == {AlertState.FIRING}  # not resolved
    [failing] = by_rule(r, FAILING)
    assert failing.labels["rule"] == "KafkaUnderMinIsrPartitions" and failing.state is AlertState.FIRING
    assert "bad_data" in failing.evidence["error"]
    assert not [n for n in r.notifications if n.decision is Decision.NOTIFY_RESOLVED]


def test_missing_input_raises_no_data_for_the_cluster():
    eng, src = _engine(), FakeSource(present=M.values())
    src.present.discard(M["under_replicated"])
    r = {}
    for s in (0, 300):
        res = eng.evaluate(r, src, T0 + timedelta(seconds=s))
        r = res.instances
    nd = [i for i in by_rule(res, NO_DATA) if i.labels["rule"] == "KafkaUnderReplicatedPartitions"]
    assert {i.state for i in nd} == {AlertState.FIRING}
    assert {i.labels["tenant"] for i in nd} == {"shop", "ads"}  # both are blind on c1
    assert nd[0].labels["metric"] == M["under_replicated"]
    assert res.rules["KafkaUnderReplicatedPartitions"].health is RuleHealth.NO_DATA
    assert res.data_ok == {"c1": True}  # the core input (broker_up) is there
    src.present.discard(M["broker_up"])
    assert eng.evaluate(r, src, T0 + timedelta(seconds=315)).data_ok == {"c1": False}


def test_a_live_broker_no_collector_watches_raises_no_data_for_that_broker():
    """Broker 3 is in the metadata but missing from the JMX targets (no request-handler series), broker 4 is down
    (not live), and the GC input is absent on every broker (the cluster-level instance covers it)."""
    eng, src = _engine(), FakeSource(present=M.values())
    idle, gc = M["request_handler_idle"], M["gc_seconds"]
    src.instant["count by (__name__, cluster, broker)"] = [
        InstantSample({"__name__": m, "cluster": "c1", "broker": b}, 1)
        for m in sorted(src.present - {gc})
        for b in ("1", "2", "3")
        if not (m == idle and b == "3")
    ]
    src.instant[f"max by (cluster, broker) ({M['broker_up']}) == 1"] = [
        InstantSample({"cluster": "c1", "broker": b}, 1) for b in ("1", "2", "3")
    ]
    src.present.discard(gc)
    r = {}
    for s in (0, 300):
        res = eng.evaluate(r, src, T0 + timedelta(seconds=s))
        r = res.instances
    per_broker = {
        (i.labels["rule"], i.labels["metric"], i.labels["broker"])
        for i in by_rule(res, NO_DATA)
        if "broker" in i.labels and i.state is AlertState.FIRING
    }
    assert per_broker == {("KafkaRequestHandlerSaturation", idle, "3")}
    whole = {i.labels["rule"] for i in by_rule(res, NO_DATA) if "broker" not in i.labels}
    assert whole == {"KafkaGcPressure"}
    assert res.rules["KafkaRequestHandlerSaturation"].health is RuleHealth.NO_DATA
    assert "broker 3" in res.rules["KafkaRequestHandlerSaturation"].error
    assert res.rules["KafkaRequestQueueSaturation"].health is RuleHealth.OK

    # the broker added to the targets: its series appear, the instance resolves
    src.instant["count by (__name__, cluster, broker)"].append(
        InstantSample({"__name__": idle, "cluster": "c1", "broker": "3"}, 1)
    )
    res = eng.evaluate(r, src, T0 + timedelta(seconds=315))
    assert not [i for i in by_rule(res, NO_DATA) if "broker" in i.labels and i.state is AlertState.FIRING]


def test_resolve_is_notified_once_and_instances_of_cleared_pending_are_dropped():
    eng, src = _engine(), FakeSource(present=M.values())
    src.instant[M["broker_up"]] = [InstantSample({"cluster": "c1", "broker": "3"}, 0)]
    r = eng.evaluate({}, src, T0)
    [p] = by_rule(r, "KafkaBrokerUnreachable")[:1]
    assert p.state is AlertState.PENDING
    del src.instant[M["broker_up"]]
    r2 = eng.evaluate(r.instances, src, T0 + timedelta(seconds=15))
    assert p.fingerprint in r2.deleted and not by_rule(r2, "KafkaBrokerUnreachable")
    src.instant[M["broker_up"]] = [InstantSample({"cluster": "c1", "broker": "3"}, 0)]
    r = eng.evaluate({}, src, T0)
    r = eng.evaluate(r.instances, src, T0 + timedelta(seconds=30))
    del src.instant[M["broker_up"]]
    r = eng.evaluate(r.instances, src, T0 + timedelta(seconds=45))
    res = [n for n in r.notifications if n.decision is Decision.NOTIFY_RESOLVED]
    assert len(res) == 2 and all(n.instance.state is AlertState.RESOLVED for n in res)
    r = eng.evaluate(r.instances, src, T0 + timedelta(seconds=60))
    assert not [n for n in r.notifications if n.instance.rule == "KafkaBrokerUnreachable"]


def test_a_builtin_variant_file_replaces_the_rule_with_changed_params_only(tmp_path):
    f = tmp_path / "fast.yaml"
    f.write_text(builtin_variant("KafkaDiskFullRisk", for_="10s", window="2m", min_points=5))
    base = {r.name: r for r in load_rules()}["KafkaDiskFullRisk"]
    rule = {r.name: r for r in load_rules(RulesSettings(files=(str(f),)))}["KafkaDiskFullRisk"]
    assert rule.params == {**base.params, "window": "2m", "min_points": 5} and rule.for_seconds == 10
    assert (rule.detector, rule.scope, rule.inputs) == (base.detector, base.scope, base.inputs)


def test_an_unreachable_prometheus_reaches_the_heartbeat_tenants_read_without_its_address():
    """The heartbeat's detail is shown to tenants (health reasons): the public text, never Prometheus' URL."""

    class Down(FakeSource):
        def query(self, expr, at):
            raise QueryError("Prometheus unreachable at http://prom-internal.example:9090: ConnectError")

    r = _engine().evaluate({}, Down(), T0)
    assert r.data_ok == {"c1": False}
    assert r.detail["c1"] == "prometheus: metrics backend unavailable"
    assert "prom-internal" in r.rules[NO_DATA].error  # the operator still sees where


# ------------------------------------------------------------------ no data for optional inputs where expected


def _no_data_for(res, rule):
    return {
        (i.labels["cluster"], i.labels["metric"])
        for i in by_rule(res, NO_DATA)
        if i.labels["rule"] == rule and i.state is AlertState.FIRING
    }


def _run(eng, src, minutes=(0, 5)):
    r, res = {}, None
    for m in minutes:
        res = eng.evaluate(r, src, T0 + timedelta(minutes=m))
        r = res.instances
    return res


def test_a_cluster_with_active_groups_and_no_lag_raises_no_data_for_the_lag_rule():
    """The group collector lists the groups (members) but exports no lag (e.g. it may describe the groups but not
    the topics whose offsets lag needs): KafkaConsumerGroupLag is blind there, and says so."""
    eng, src = _engine(), FakeSource(present=M.values())
    src.present.discard(M["group_lag"])
    src.instant[f"({M['group_members']} > 0)"] = [InstantSample({"cluster": "c1"}, 2)]
    res = _run(eng, src)
    assert _no_data_for(res, "KafkaConsumerGroupLag") == {("c1", M["group_lag"])}
    assert res.rules["KafkaConsumerGroupLag"].health is RuleHealth.NO_DATA
    [inst] = [i for i in by_rule(res, NO_DATA) if i.labels["rule"] == "KafkaConsumerGroupLag"][:1]
    assert "should have them" in inst.evidence["reason"] and M["group_members"] in inst.evidence["reason"]


def test_a_cluster_without_active_groups_needs_no_lag():
    eng, src = _engine(), FakeSource(present=M.values())
    src.present.discard(M["group_lag"])  # the guard answers nothing: no group with members on c1
    res = _run(eng, src)
    assert _no_data_for(res, "KafkaConsumerGroupLag") == set()
    assert res.rules["KafkaConsumerGroupLag"].health is RuleHealth.OK


def test_quota_sensors_without_their_throttle_time_raise_no_data_per_quota_type():
    """A produce quota is configured (its sensor's byte rates are collected) but the throttle times are not (a
    broken JMX mapping): KafkaClientThrottled cannot fire for produce. No fetch quota: nothing expected there."""
    eng, src = _engine(), FakeSource(present=M.values())
    for key in ("client_produce_throttle", "client_fetch_throttle", "client_fetch_rate"):
        src.present.discard(M[key])
    src.instant[f"count by (cluster) ({M['client_produce_rate']})"] = [InstantSample({"cluster": "c1"}, 4)]
    res = _run(eng, src)
    assert _no_data_for(res, "KafkaClientThrottled") == {("c1", M["client_produce_throttle"])}
    assert _no_data_for(res, "KafkaClientHurtsOtherTenants") == set()  # the produce rates are there
    # and the other way round: throttle times without the byte rates the noisy-client detector reads
    src.present |= {M["client_produce_throttle"]}
    src.present.discard(M["client_produce_rate"])
    src.instant = {f"count by (cluster) ({M['client_produce_throttle']})": [InstantSample({"cluster": "c1"}, 4)]}
    res = _run(eng, src)
    assert _no_data_for(res, "KafkaClientHurtsOtherTenants") == {("c1", M["client_produce_rate"])}
    assert _no_data_for(res, "KafkaClientThrottled") == set()


def test_client_connections_are_expected_where_groups_are_active():
    eng, src = _engine(), FakeSource(present=M.values())
    src.present.discard(M["client_connections"])
    assert _no_data_for(_run(eng, src), "KafkaOutdatedClient") == set()
    src.instant[f"({M['group_members']} > 0)"] = [InstantSample({"cluster": "c1"}, 1)]
    assert _no_data_for(_run(eng, src), "KafkaOutdatedClient") == {("c1", M["client_connections"])}


def test_a_failing_guard_expects_nothing_and_the_cycle_goes_on():
    eng, src = _engine(), FakeSource(present=M.values())
    src.present.discard(M["group_lag"])
    src.instant[f"({M['group_members']} > 0)"] = QueryError("guard timed out")
    res = _run(eng, src)
    assert _no_data_for(res, "KafkaConsumerGroupLag") == set()
    assert res.rules[NO_DATA].health is RuleHealth.OK


def test_expected_when_must_name_an_input_of_the_rule(tmp_path):
    from monitor.core.errors import ConfigError

    f = tmp_path / "rules.yaml"
    f.write_text("""rules:
  - name: KafkaSomethingOptional
    kind: threshold
    severity: warning
    scope: cluster
    expr: max by (cluster) (${group_lag}) > 0
    optional_inputs: [group_lag]
    expected_when: {group_members: "count by (cluster) (${group_members})"}
""")
    with pytest.raises(ConfigError, match="not one of the rule's inputs"):
        load_rules(RulesSettings(files=[str(f)]))
    f.write_text(f.read_text().replace("{group_members:", "{group_lag:"))
    [rule] = [r for r in load_rules(RulesSettings(files=[str(f)])) if r.name == "KafkaSomethingOptional"]
    assert rule.params["expected_when"] == {M["group_lag"]: f"count by (cluster) ({M['group_members']})"}


def test_an_input_no_configured_source_gives_is_not_observable_and_never_no_data():
    protocol_only = parse_config("clusters:\n  - name: c1\n    bootstrap_servers: localhost:9092\n")
    eng = Engine(protocol_only, load_rules(protocol_only.rules), builtin_detectors())
    src = FakeSource(present=M.values())
    src.present -= {M["under_replicated"], M["broker_up"]}  # JMX (no source here) and Admin (configured: no data)
    r = {}
    for s in (0, 300):
        res = eng.evaluate(r, src, T0 + timedelta(seconds=s))
        r = res.instances
    missing = {i.labels["metric"] for i in by_rule(res, NO_DATA)}
    assert M["broker_up"] in missing and M["under_replicated"] not in missing
    status = res.rules["KafkaUnderReplicatedPartitions"]
    assert status.health is RuleHealth.NOT_OBSERVABLE
    assert "not observable on cluster c1: enable discovery.jolokia" in status.error
