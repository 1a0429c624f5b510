"""A share group (KIP-932) of a real share consumer and a streams group (KIP-1071) of a real Kafka Streams
application on the session stack (issue 29, item 4 and done-means).

Kafka's own share consumer (``ConsoleShareConsumer`` of the stack's kafka-tools jars: ``KafkaShareConsumer`` of
kafka-clients, in a JVM of its own, 64 MB heap) reads a topic of tenant ``share29``. ``collectors.group_kinds`` must
list the group as a ``share`` group, describe its member and per-partition start offset and lag, attribute it to the
tenant by its group prefix, read it ``idle`` once it has consumed what was written, and ``stalled`` when the
consumer is frozen (SIGSTOP: still a member, acquiring nothing) while records wait. Skipped on releases without
share groups (3.9, 4.1; tests/integration/test_kafka_versions.py checks there that a round exports no share series
and logs no error).

Through the product too: the real collectors (``serve --role collector``, every 5 s, one process for the module,
started with it, so they are up while the consumer joins) export the frozen group's status, lag and client to the
stack's Prometheus, and the real alert engine on that Prometheus raises ``KafkaShareGroupLag`` for tenant
``share29`` naming the consumer's client id: pending at once, firing ``FOR_SECONDS`` later. The shipped rule with
its ``for`` shortened (rules.overrides) from 2 minutes to 5 s, so as not to spend two minutes of CI time: the
shipped ``for`` is proven through the engine, minute by minute, in tests/unit/test_alerts_share_groups.py. While the
group is there, the tenant dashboard's share-group panels (``Needs.SHARE_GROUPS``) are run against the live
Prometheus and must have data. What Kafka gives of delivery counts comes from the brokers' per share-partition meters
(KIP-1103, no member named): the frozen member's acquired records in flight, then, once their acquisition lock has
run out (30 s), counted as lock timeouts, each delivered again (``kafka_broker_share_*``, tenant ``share29``).

A streams group (KIP-1071) of a real Kafka Streams 4.4.0 application on ``group.protocol=streams``
(``tests.harness.javaclients.StreamsApp``, started with the module's collectors, so its start and first rounds
overlap the share-group test) is watched as a consumer group: the real collectors export its lag, members, state and
member partitions as ``kafka_consumergroup_*`` series of tenant ``streams29`` (its application.id prefix) beside
``kafka_group_info{type="streams"}``, and the tenant dashboard's streams-group panels (``Needs.STREAMS_GROUPS``) show
that group, its state and its member on the live Prometheus; once the application is closed (it leaves the group)
while records keep coming, the real engine's shipped ``KafkaConsumerGroupLag`` says STOP for the tenant, decided by
membership (rule M), and the tenant's health assessment (``assess`` over the store's firing instances, as the API)
has the group as a critical component. The rule runs with two of its params shortened (rules.overrides) so as not to
spend minutes of CI: ``members_gone_for`` 30 s -> 5 s, and ``window`` 10 m -> 30 s (its query step, a tenth of the
window but at least 15 s, must see the few seconds the application was a member). The shipped values are proven by
the numbered table of tests/unit/test_lag_cases.py. Skipped on releases without streams groups (3.9; on 4.1 early
access, off by default).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry

from alerts.component import AlertService
from alerts.repo import Owner, firing_reasons, tenant_alerts_filter
from alerts.types import AlertState
from collectors.catalog import TenantLookup
from collectors.group_kinds import GroupKinds, ShareGroup, share_status, share_tenant
from dashboards.boards.tenant import BOARD as tenant_board
from dashboards.model import Needs
from dashboards.promql import substitute
from monitor.core.config import Config, RuleOverride, RulesSettings, TenantConfig, TenantSelector
from monitor.core.kafka_versions import release
from monitor.core.store import Store
from monitor.core.tenancy import TenantIndex
from monitor.schema import create_all
from monitor.stack.kafka import require_java
from monitor.tenants.health import ComponentKind, HealthStatus, assess
from tests.conftest import wait_until
from tests.harness.engine import create_topics, prom_query, running_collectors, watched_config
from tests.harness.javaclients import StreamsApp

RULE = "KafkaShareGroupLag"
LAG_RULE = "KafkaConsumerGroupLag"
FOR_SECONDS = 5.0
TENANT = TenantConfig(name="share29", selectors=(TenantSelector(cluster="local", group_prefixes=("share29-",)),))
STREAMS_TENANT = TenantConfig(
    name="streams29", selectors=(TenantSelector(cluster="local", group_prefixes=("streams29-",)),)
)
STREAMS_VERSION = "4.4.0"

pytestmark = [pytest.mark.e2e]


def _engine_store(config: Config, tmp) -> Config:
    """``config`` with a store of its own in ``tmp``: each test's engine holds its own lease (alerts/lease.py)."""
    return config.model_copy(
        update={"store": config.store.model_copy(update={"url": f"sqlite:///{tmp / 'alerts.db'}"})}
    )


def _produce(bootstrap: str, topic: str, n: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, value=b"x" * 50, key=str(i).encode())
    assert p.flush(30) == 0


@dataclass(frozen=True)
class Watched:
    """The module's collectors' config, and its Kafka Streams application (None where Kafka has no streams groups)
    with its input topic and application.id."""

    config: Config
    app: StreamsApp | None
    source: str = ""
    app_id: str = ""


@pytest.fixture(scope="module")
def watched(stack, tmp_path_factory) -> Iterator[Watched]:
    """One collectors process for both tenants, with both rules' overrides (module docstring), and the Kafka Streams
    application, running from the module's start, with 40 records waiting for it."""
    from confluent_kafka.admin import NewTopic

    L, tmp = stack.layout, tmp_path_factory.mktemp("groups")
    overrides = {
        RULE: RuleOverride(for_seconds=FOR_SECONDS),
        LAG_RULE: RuleOverride(params={"members_gone_for": "5s", "window": "30s"}),
    }
    config = watched_config(stack, tmp, [TENANT, STREAMS_TENANT], rules=RulesSettings(overrides=overrides))
    with contextlib.ExitStack() as running:
        if not release(L.kafka_version).has("streams_groups"):
            running.enter_context(running_collectors(config, tmp))
            yield Watched(config, None)
            return
        run = uuid.uuid4().hex[:6]
        src, out, app_id = f"streams29-in-{run}", f"streams29-out-{run}", f"streams29-app-{run}"
        create_topics(stack, [NewTopic(t, num_partitions=2, replication_factor=3) for t in (src, out)])
        props = {
            "application.id": app_id,
            "bootstrap.servers": L.bootstrap_servers,
            "group.protocol": "streams",
            "client.id": app_id,
            "commit.interval.ms": 500,
            "state.dir": str(tmp / "streams-state"),
        }
        app = StreamsApp(version=STREAMS_VERSION, topic=src, output=out, properties=props, log=tmp / "streams-app.log")
        running.enter_context(app)
        running.enter_context(running_collectors(config, tmp))
        _produce(L.bootstrap_servers, src, 40)  # a streams application reads from the earliest offset
        yield Watched(config, app, src, app_id)


def test_share_group_listed_with_lag_tenant_and_stall(stack, watched, tmp_path) -> None:
    L = stack.layout
    if not release(L.kafka_version).has("share_groups"):
        pytest.skip(f"Kafka {L.kafka_version} has no share groups")
    from confluent_kafka.admin import NewTopic

    run = uuid.uuid4().hex[:6]
    topic, group = f"share29-orders-{run}", f"share29-workers-{run}"
    create_topics(stack, [NewTopic(topic, num_partitions=2, replication_factor=3)])
    log = (tmp_path / "share-consumer.log").open("wb")
    consumer = subprocess.Popen(
        [
            require_java(),
            "-Xmx64m",
            "-cp",
            f"{L.jars_dir}/*",
            "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
            "--bootstrap-server",
            L.bootstrap_servers,
            "--topic",
            topic,
            "--group",
            group,
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    kinds = GroupKinds({"bootstrap.servers": L.bootstrap_servers}, timeout=10)
    index = TenantIndex([TENANT])
    # the real collectors every 5 s; the shipped rules, KafkaShareGroupLag's `for` shortened
    config = _engine_store(watched.config, tmp_path)

    def described() -> ShareGroup:
        (g,) = kinds.describe_share_groups([group])
        return g

    try:
        assert kinds.share_supported
        wait_until(
            lambda: any(g.id == group and g.type == "share" for g in kinds.list_groups().groups),
            60,
            what="the share group listed as type share",
        )
        wait_until(lambda: len(described().members) == 1, 60, what="the share consumer a member")

        # A share group starts at the latest offset when its share-partitions are initialised, which on a fresh
        # stack waits for the share coordinator (__share_group_state): write until both partitions have a start
        # offset, then until everything written is acknowledged.
        def initialised() -> bool:
            _produce(L.bootstrap_servers, topic, 10)
            parts = described().partitions
            return len(parts) == 2 and all(p.start_offset >= 0 for p in parts)

        wait_until(initialised, 120, interval=2, what=lambda: f"share-partitions initialised (last {described()})")
        wait_until(lambda: described().lag == 0, 60, what=lambda: f"everything acknowledged (last {described()})")
        # the member's assignment follows its heartbeats: both partitions within seconds of joining
        wait_until(
            lambda: [{p for _, p in m.partitions} for m in described().members] == [{0, 1}],
            30,
            what="the member assigned both partitions",
        )
        g = described()
        assert g.members[0].client_id == "console-share-consumer"
        assert {(p.topic, p.partition) for p in g.partitions} == {(topic, 0), (topic, 1)}
        assert share_status(g, None) == "idle"
        assert share_tenant(TenantLookup(index, "local"), g) == "share29"

        sel = f'group="{group}",tenant="share29"'
        inflight = f"sum(kafka_broker_share_inflight_records{{{sel}}})"

        def acquired() -> bool:
            r = prom_query(stack, inflight)
            return bool(r) and 0 < float(r[0]["value"][1]) <= 60

        # Freeze the member (still a member until its session times out, 45 s; it takes nothing) and write 60
        # records. A share fetch the member left pending on a leader acquires records for it: in flight on the
        # broker (KIP-1103) until their acquisition lock runs out. Whether a fetch is pending at the very instant of
        # the SIGSTOP is a race (the consumer re-sends its long poll every fetch.max.wait.ms), so if none acquired
        # anything within two collector rounds the member is thawed, drains what was written, and is frozen again.
        for _ in range(3):
            consumer.send_signal(signal.SIGSTOP)
            _produce(L.bootstrap_servers, topic, 60)
            wait_until(lambda: described().lag > 0, 30, what=lambda: f"share lag (last {described()})")
            deadline = time.monotonic() + 15
            while not (held := acquired()) and time.monotonic() < deadline:
                time.sleep(1)
            if held:
                break
            consumer.send_signal(signal.SIGCONT)
            wait_until(lambda: described().lag == 0, 60, what=lambda: f"the thawed member drained (last {described()})")
        else:
            pytest.fail(f"no records in flight on the brokers after 3 freezes (last {prom_query(stack, inflight)})")
        before = described()
        time.sleep(2)
        now = described()
        assert len(now.members) == 1 and 0 < now.lag <= 60, now
        assert share_status(now, before) == "stalled"

        # the real round: in Prometheus as a share group of tenant share29, stalled (or, once its session expired,
        # without members) with records waiting, its client named
        status_of = f'kafka_sharegroup_status{{group="{group}"}}'
        wait_until(
            lambda: (
                prom_query(stack, f'kafka_sharegroup_status{{{sel},status=~"stalled|no_members"}}')
                and prom_query(stack, f"kafka_sharegroup_lag{{{sel}}} > 0")
            ),
            60,
            interval=2,
            what=lambda: f"the stalled share group in Prometheus (status {prom_query(stack, status_of)})",
        )
        assert [r["metric"]["type"] for r in prom_query(stack, f'kafka_group_info{{group="{group}"}}')] == ["share"]
        # shown as what it is, never also as a consumer group without members (kafka_exporter #533, KMinion #294)
        as_consumer = prom_query(stack, f'{{__name__=~"kafka_consumergroup_.+",group="{group}"}}')
        assert not as_consumer, [r["metric"]["__name__"] for r in as_consumer]
        clients = prom_query(stack, f"kafka_sharegroup_member_partitions{{{sel}}}")
        assert [r["metric"]["client_id"] for r in clients] == ["console-share-consumer"], clients

        # the tenant dashboard's share-group panels on the live Prometheus
        variables = {"cluster": "local", "tenant": "share29", "__rate_interval": "1m"}
        panels = [(p.title, q.expr) for p in tenant_board.panels() if p.needs is Needs.SHARE_GROUPS for q in p.queries]
        assert len(panels) == 4
        [redelivered] = [e for t, e in panels if "redelivered" in t]  # data once a lock has timed out: below
        for title, expr in panels:
            if expr != redelivered:
                assert prom_query(stack, substitute(expr, variables)), title

        # the real engine on that Prometheus
        store = Store(config.store.url)
        create_all(store)
        engine = AlertService(config, store=store, registry=CollectorRegistry())
        try:

            def instances(result):
                return [i for i in result.instances.values() if i.rule == RULE and i.labels.get("group") == group]

            [pending] = instances(engine.run_once())
            assert pending.state is AlertState.PENDING, pending
            time.sleep(FOR_SECONDS + 1)
            [fired] = instances(engine.run_once())
        finally:
            store.dispose()
        assert fired.state is AlertState.FIRING, fired
        assert fired.labels["tenant"] == "share29" and fired.labels["client_id"] == "console-share-consumer"
        assert fired.evidence["status"] in ("stalled", "no_members") and fired.evidence["lag_messages"] > 0
        assert fired.evidence["members"][0]["client_id"] == "console-share-consumer"

        # What Kafka gives of delivery counts (KIP-1103, per share-partition, no member named): the records the
        # frozen member's pending fetch acquired were in flight on the brokers (above), and once their acquisition
        # lock runs out (group.share.record.lock.duration.ms, 30 s) each counts as a lock timeout: delivered again.
        # The tenant dashboard's third share panel shows them on the live Prometheus.
        timed_out = f"sum(kafka_broker_share_lock_timeouts_total{{{sel}}})"
        wait_until(
            lambda: (r := prom_query(stack, timed_out)) and float(r[0]["value"][1]) > 0,
            75,
            interval=2,
            what="the frozen member's records' locks timed out (Prometheus)",
        )
        assert prom_query(stack, substitute(redelivered, variables)), "Share records redelivered panel"
    finally:
        consumer.send_signal(signal.SIGCONT)
        consumer.kill()
        consumer.wait(10)
        kinds.close()
        log.close()


def test_streams_group_watched_as_a_consumer_group_and_paged_for_its_tenant(stack, watched, tmp_path) -> None:
    L = stack.layout
    if watched.app is None:
        pytest.skip(f"Kafka {L.kafka_version} has no streams groups on by default")
    app, app_id, src, rule = watched.app, watched.app_id, watched.source, LAG_RULE
    config = _engine_store(watched.config, tmp_path)
    sel = f'group="{app_id}",tenant="streams29"'
    members, lag = f"kafka_consumergroup_members{{{sel}}}", f"kafka_consumergroup_lag{{{sel}}}"

    def answered(*exprs: str) -> bool:
        return all(prom_query(stack, e) for e in exprs)

    wait_until(lambda: app.counts().get("processed", 0) >= 40, 60, what=lambda: f"40 copied ({app.counts()})")
    # the real round: its lag, members and member partitions as a consumer group's, its kind beside them
    wait_until(lambda: answered(lag, f"{members} == 1"), 60, interval=2, what="its lag and member in Prometheus")
    [kind] = prom_query(stack, f'kafka_group_info{{group="{app_id}"}}')
    assert (kind["metric"]["type"], kind["metric"]["tenant"]) == ("streams", "streams29"), kind
    partitions = f"kafka_consumergroup_member_partitions{{{sel}}}"
    wait_until(
        lambda: answered(f"{partitions} == 2", f'kafka_consumergroup_state{{{sel},state="stable"}}'),
        30,
        interval=2,
        what=lambda: f"one member of both partitions, stable (last {prom_query(stack, partitions)})",
    )
    [member] = prom_query(stack, partitions)
    assert member["metric"]["client_id"].startswith(app_id), member
    # the tenant dashboard's streams-group panels on the live Prometheus: this group, its state and member
    variables = {"cluster": "local", "tenant": "streams29"}
    panels = [
        (p.title, prom_query(stack, substitute(q.expr, variables)))
        for p in tenant_board.panels()
        if p.needs is Needs.STREAMS_GROUPS
        for q in p.queries
    ]
    [(table, [row]), (members_panel, [count])] = panels  # this group only: its tenant's one streams group
    assert (table, row["metric"]["group"], row["metric"]["state"]) == (
        "Streams groups: state and lag",
        app_id,
        "stable",
    )
    assert float(row["value"][1]) >= 0, row  # its lag: the panel joined the group's lag series
    assert (members_panel, count["metric"]["group"], count["value"][1]) == ("Streams group members", app_id, "1")
    # a member in four scrapes (5 s apart) in a row: over 15 s, so the rule's 15-s query step sees it
    wait_until(
        lambda: answered(f"min_over_time({members}[18s]) == 1", f"count_over_time({members}[18s]) >= 4"),
        60,
        interval=2,
        what="the member seen for 15 s",
    )

    app.stop()  # closed: it leaves its group, and the records keep coming, more than it ever lagged (40)
    _produce(L.bootstrap_servers, src, 100)
    wait_until(
        lambda: answered(f"{members} == 0", f"sum({lag}) >= 100"),
        60,
        interval=2,
        what=lambda: f"no member, lag 100 (members {prom_query(stack, members)})",
    )
    store = Store(config.store.url)
    create_all(store)
    engine = AlertService(config, store=store, registry=CollectorRegistry())
    try:

        def stopped():
            result = engine.run_once()
            return [i for i in result.instances.values() if i.rule == rule and i.labels.get("group") == app_id]

        # membership gone for 5 s in Prometheus (its scrapes are 5 s apart): STOP within a few evaluations
        last: list = []

        def stop_seen() -> bool:
            last[:] = stopped()
            return any(i.labels.get("status") == "STOP" for i in last)

        wait_until(stop_seen, 30, interval=2, what=lambda: f"STOP (last {[(i.labels, i.evidence) for i in last]})")
        [paged] = [i for i in last if i.labels.get("status") == "STOP"]
        # the tenant health answer's assessment, from the engine's store as the API reads it
        with store.session() as session:
            firing = firing_reasons(session, *tenant_alerts_filter(Owner(STREAMS_TENANT.name)))
        health = assess(
            clusters=["local"], firing=firing, heartbeats={}, now=datetime.now(UTC), stale_after=timedelta(hours=1)
        )
    finally:
        store.dispose()
    [component] = [c for c in health.components if c.kind is ComponentKind.CONSUMERGROUP and c.id == app_id]
    assert component.status is HealthStatus.CRITICAL and [r.alert for r in component.reasons] == [rule], component
    assert paged.state is AlertState.FIRING, paged
    assert paged.labels["tenant"] == "streams29" and paged.labels["topic"] == src, paged.labels
    assert paged.evidence["decided_by"] == "members", paged.evidence
