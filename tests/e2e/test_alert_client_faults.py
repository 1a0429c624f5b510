"""Clients that hurt a broker, on a real stack, watched by the real collectors through the real Prometheus and
delivered to the real Alertmanager:

- a slow reader among five fast consumers of the same broker: a consumer in a network namespace whose link is
  rate-limited (``tc``), fetching large responses through a small receive buffer -> KafkaResponseQueueBacklog
  (cause ``slow_readers``) on the broker it reads from, naming that consumer's client id, its tenant and its
  address, not the fast ones; resolved once the link is fast again;
- a flood of tiny produce requests (linger.ms=0, one small record per batch, many producers sharing one client
  id) -> KafkaRequestHandlerSaturation on the broker leading the topic, naming that producer; resolved after it
  stops.

The module has its own stack (``own_stack``): its brokers need an extra listener on the namespace's veth address,
which must exist before they start. Both scenarios share it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from alerts.component import AlertService
from alerts.types import AlertState
from monitor.core.config import (
    RuleOverride,
    RulesSettings,
    TenantConfig,
    TenantContract,
    TenantSelector,
)
from monitor.stack import StackLayout
from monitor.stack.kafka import require_java, run_config_command
from monitor.tenants import quotas
from tests.conftest import running_stack, wait_until
from tests.harness import slow_link
from tests.harness.engine import create_topics, prom_query, watched_config, watching
from tests.harness.faults import (
    SLOW_READER,
    fewer_io_threads,
    fill_topic,
    tiny_produce_flood,
)
from tests.integration.alerts_helpers import am_alerts

pytestmark = [pytest.mark.e2e, pytest.mark.own_stack]
REPO = Path(__file__).resolve().parents[2]
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
        name="ads",
        selectors=(
            TenantSelector(
                cluster="local", topic_prefixes=("ads.",), client_id_prefixes=("ads-",), principals=("User:ads-app",)
            ),
        ),
        contract=TenantContract(produce_quota_bytes_per_second=100 * 1024**2),
    ),
)
SLOW_BROKER, FLOOD_BROKER = 2, 1


def _fast_backlog_rule(path: Path) -> None:
    """The shipped rule with a 3-minute window (instead of 15) and 10 s `for`, so the test waits for one short
    window. Its thresholds are the shipped ones."""
    spec = next(
        r
        for r in yaml.safe_load((REPO / "alerts" / "rules.yaml").read_text())["rules"]
        if r["name"] == "KafkaResponseQueueBacklog"
    )
    spec = {**spec, "for": "10s", "params": {**spec["params"], "window": "3m", "socket_window": "1m"}}
    path.write_text(yaml.safe_dump({"rules": [spec]}))


def _port_base() -> int:
    # Beside the session stack of the same port base (it may be up in the same pytest session).
    return int(os.environ.get("KAFKA_HEALTH_TEST_PORT_BASE", "19700")) + 100


@pytest.fixture(scope="module")
def link():
    why = slow_link.available()
    if why:
        pytest.skip(f"slow-link fault: {why}")
    n = (_port_base() // 10) % 250
    lnk = slow_link.SlowLink(f"kh{_port_base()}", f"10.231.{n}.1", f"10.231.{n}.2")
    try:
        yield lnk.create()
    finally:
        lnk.destroy()


@pytest.fixture(scope="module")
def fault_stack(link, tmp_path_factory):
    # Secured like a shared cluster (the flooder is a tenant principal on SASL_SSL), with the anonymous listeners
    # the slow reader in its network namespace uses.
    layout = StackLayout(
        dir=tmp_path_factory.mktemp("client-fault-stack"),
        port_base=_port_base(),
        client_listener_host=link.host_addr,
        secured=True,
        plaintext_listener=True,
    )
    with running_stack(layout) as s:
        yield s


# The saturation rule's threshold in this module. The built-in 0.2 is for a production broker; here a flood driven
# from Python on 2 cores shared with the brokers holds broker 1's handlers at 0.15-0.45 idle (one CI run: median
# 0.24), so 0.2 made the test depend on the machine's mood. What the test proves is the detection and the attribution
# to the producer, at a threshold that the flood crosses for sure.
FLOOD_IDLE_THRESHOLD = 0.3


@pytest.fixture(scope="module")
def watched(fault_stack, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("client-faults")
    _fast_backlog_rule(tmp / "backlog-rule.yaml")
    config = watched_config(
        fault_stack,
        tmp,
        TENANTS,
        rules=RulesSettings(
            files=(str(tmp / "backlog-rule.yaml"),),
            overrides={"KafkaRequestHandlerSaturation": RuleOverride(threshold=FLOOD_IDLE_THRESHOLD, for_seconds=10)},
        ),
    )
    _create(fault_stack, "shop.slow", [[SLOW_BROKER]])
    # Led by FLOOD_BROKER, replicated: the followers' fetches are handler work on the leader too.
    _create(
        fault_stack, "ads.flood", [[FLOOD_BROKER] + [b for b in fault_stack.layout.broker_ids if b != FLOOD_BROKER]] * 4
    )
    # shop has a partition led by the flooded broker too: the flood hurts it, so the alert must reach it
    _create(
        fault_stack, "shop.orders", [[FLOOD_BROKER] + [b for b in fault_stack.layout.broker_ids if b != FLOOD_BROKER]]
    )
    with watching(
        fault_stack,
        config,
        tmp,
        lambda: (
            len(prom_query(fault_stack, "kafka_cluster_broker_up == 1")) == 3
            and prom_query(fault_stack, "kafka_broker_request_handler_idle_ratio")
        ),
    ):
        yield config


def _create(stack, topic: str, assignment: list[list[int]]) -> None:
    from confluent_kafka.admin import NewTopic

    create_topics(stack, [NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)])


def _firing(svc: AlertService, rule: str, broker: int, seen: dict) -> list:
    r = svc.run_once()
    seen["errors"] = {n: st.error for n, st in r.rules.items() if st.error}
    seen["all"] = sorted({(i.rule, i.labels.get("broker"), i.state.value) for i in r.instances.values()})
    return [
        i
        for i in r.instances.values()
        if i.rule == rule and i.labels.get("broker") == str(broker) and i.state is AlertState.FIRING
    ]


def _wait_firing(svc, rule, broker, predicate, timeout, what):
    seen: dict = {}
    try:
        return wait_until(
            lambda: [i for i in _firing(svc, rule, broker, seen) if predicate(i)], timeout, interval=5, what=what
        )
    except pytest.fail.Exception as exc:  # say what the engine saw, so a CI failure can be diagnosed
        raise AssertionError(f"{exc}; instances: {seen.get('all')}; rule errors: {seen.get('errors')}") from None


def _wait_resolved(svc, rule, broker, timeout, what):
    def resolved():
        r = svc.run_once()
        states = {i.state for i in r.instances.values() if i.rule == rule and i.labels.get("broker") == str(broker)}
        return states == {AlertState.RESOLVED}

    wait_until(resolved, timeout, interval=5, what=what)


HEALTHY_READERS = 5


def test_slow_reader_among_fast_consumers_is_named_by_the_backlog_alert(fault_stack, watched, engine, link):
    svc = engine
    servers = fault_stack.layout.bootstrap_servers
    fill_topic(servers, "shop.slow", 2500, 10_000, "shop-filler")  # 25 MB for the reader to fetch
    # Five healthy consumers of the same broker, polling often on loopback: their fast responses dilute the broker's
    # p99 response send time, so the slow reader is found by its own socket, not by the broker-wide figure.
    stop = threading.Event()
    healthy = [
        threading.Thread(target=_healthy_reader, args=(servers, stop, n), daemon=True) for n in range(HEALTHY_READERS)
    ]
    for t in healthy:
        t.start()
    qdisc = link.slow(delay_ms=50, rate="1mbit")
    link.popen(
        [
            sys.executable,
            "-c",
            SLOW_READER,
            fault_stack.layout.client_bootstrap_servers,
            "shop.slow",
            "shop-slow-reader",
            "shop-slow",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        [inst] = _wait_firing(
            svc,
            "KafkaResponseQueueBacklog",
            SLOW_BROKER,
            # 420 s: the latency bench's median is 180 s; with the session stack up beside this
            # one (8 JVMs on 2 cores) one own_stack run saw nothing within 240 s, alone it took 126 s
            lambda i: i.labels.get("tenant") == "shop" and i.evidence.get("slow_client"),
            420,
            f"KafkaResponseQueueBacklog on broker {SLOW_BROKER} naming a client ({qdisc})",
        )
        ev = inst.evidence
        print(
            f"\nbacklog alert: trigger {ev.get('trigger')}, p99 send {ev.get('send_time_now_seconds')} s, "
            f"slow peers {ev['slow_peers']}"
        )
        assert inst.labels["cluster"] == "local" and ev["cause"] == "slow_readers", ev
        assert ev["slow_client"] == "shop-slow-reader", ev
        detail = ev["slow_client_detail"]
        assert detail["peer"] == link.ns_addr and detail["tenant"] == "shop" and detail["groups"] == ["shop-slow"]
        assert ev["slow_peers"][0]["peer"] == link.ns_addr and ev["slow_peers"][0]["send_queue_bytes"] > 0
        # the healthy readers were there all along, and none of them is blamed
        assert _healthy_groups(fault_stack) == {f"shop-healthy-{n}" for n in range(HEALTHY_READERS)}
        assert not any(
            c["client_id"].startswith("shop-healthy")
            for p in ev["slow_peers"]
            if p["peer"] == link.ns_addr
            for c in p["clients"]
        ), ev["slow_peers"]
        assert {s["name"] for s in ev["client_software"]} >= {"confluent-kafka-python"}, ev["client_software"]
        wait_until(
            lambda: [
                a
                for a in am_alerts(fault_stack, "KafkaResponseQueueBacklog")
                if a["labels"].get("tenant") == "shop" and a["labels"].get("broker") == str(SLOW_BROKER)
            ],
            30,
            what="the backlog alert in Alertmanager",
        )

        # The fault removed: the link is fast again; the healthy readers poll often, so the broker's send-time
        # histogram (a decaying reservoir) fills with fast sends and the reader's queue drains.
        link.fast()
        _wait_resolved(svc, "KafkaResponseQueueBacklog", SLOW_BROKER, 240, "the backlog alert resolved")
        wait_until(
            lambda: not am_alerts(fault_stack, "KafkaResponseQueueBacklog"),
            60,
            interval=2,
            what="the resolve reaching Alertmanager",
        )
    finally:
        stop.set()
        for t in healthy:
            t.join(20)
        link.stop_processes()


def _healthy_groups(stack) -> set[str]:
    rows = prom_query(stack, 'max by (group) (kafka_consumergroup_members{group=~"shop-healthy-.*"}) > 0')
    return {r["metric"].get("group", "") for r in rows}


def _healthy_reader(servers: str, stop: threading.Event, n: int) -> None:
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": servers,
            "group.id": f"shop-healthy-{n}",
            "client.id": f"shop-healthy-{n}",
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
        }
    )
    c.subscribe(["shop.slow"])
    while not stop.is_set():
        c.poll(0.2)
    c.close()


@pytest.fixture
def one_io_thread(fault_stack):
    """Broker FLOOD_BROKER on one request handler thread, restored afterwards (see faults.fewer_io_threads)."""
    with fewer_io_threads(fault_stack, FLOOD_BROKER, 1):
        yield


def test_flood_of_tiny_produce_requests_saturates_handlers_and_names_the_producer(
    fault_stack, watched, engine, one_io_thread
):
    """The flooder is tenant ads's principal User:ads-app on SASL_SSL, with its contract as a user quota (what
    tenants apply-quotas sets): the alert names the principal and its client, and reaches shop too, whose partition
    the flooded broker leads."""
    svc = engine
    ads = fault_stack.add_principal("ads-app", topic_prefixes=("ads.",))
    java = require_java()
    for q in quotas.plan(TENANTS, "local"):
        run_config_command(
            fault_stack.layout,
            java,
            fault_stack.layout.logs_dir / "setup.log",
            quotas.config_command_args(q),
            what=f"the quota of User:{q.user}",
        )
    with tiny_produce_flood(ads, "ads.flood", "ads-flood"):
        try:
            [inst] = _wait_firing(
                svc,
                "KafkaRequestHandlerSaturation",
                FLOOD_BROKER,
                lambda i: i.labels.get("tenant") == "ads",
                240,
                f"KafkaRequestHandlerSaturation on broker {FLOOD_BROKER}",
            )
        except AssertionError as exc:
            idle = prom_query(fault_stack, "kafka_broker_request_handler_idle_ratio[2m]")
            raise AssertionError(f"{exc}; idle ratios: {idle}") from None
        ev = inst.evidence
        assert inst.labels["cluster"] == "local" and ev["value"] < FLOOD_IDLE_THRESHOLD, ev
        assert ev["busy_client"] == "ads-flood", ev
        top = ev["clients"][0]
        assert top["client_id"] == "ads-flood" and top["tenant"] == "ads" and top["request_time_ratio"] > 0.1, top
        assert top["user"] == "ads-app", top  # the principal, not only the client id
        _wait_firing(
            svc,
            "KafkaRequestHandlerSaturation",
            FLOOD_BROKER,
            lambda i: i.labels.get("tenant") == "shop",
            60,
            "the saturation alert routed to shop, whose partition the flooded broker leads",
        )
        wait_until(
            lambda: [
                a for a in am_alerts(fault_stack, "KafkaRequestHandlerSaturation") if a["labels"].get("tenant") == "ads"
            ],
            30,
            what="the saturation alert in Alertmanager",
        )
    _wait_resolved(svc, "KafkaRequestHandlerSaturation", FLOOD_BROKER, 120, "the saturation alert resolved")
    wait_until(
        lambda: not am_alerts(fault_stack, "KafkaRequestHandlerSaturation"),
        60,
        interval=2,
        what="the resolve reaching Alertmanager",
    )
