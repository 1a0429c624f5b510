"""A crashed consumer group pages its tenant within two minutes on the shipped defaults (issue 29).

Three real consumers (confluent-kafka, classic protocol, auto-commit every 5 s, session timeout 45 s: the client's
defaults), each a process of its own, read a topic of tenant ``shop`` while a producer keeps writing; all three are
killed with SIGKILL. Watched with the shipped defaults: collectors every 15 s, the built-in ``KafkaConsumerGroupLag``
(window 10m, members_gone_for 30s), the engine every 15 s. The session stack's Prometheus scrapes every 5 s where
the shipped config scrapes every 15 s: up to 10 s sooner, so the engine must fire within 110 s of the kill, and the
alert must be in Alertmanager within 120 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from alerts.types import AlertState
from monitor.core.config import CollectionSettings, TenantConfig, TenantSelector
from tests.conftest import wait_until
from tests.harness.engine import create_topics, prom_query, watched_config, watching
from tests.harness.faults import delete_group
from tests.harness.producer import SteadyProducer
from tests.integration.alerts_helpers import am_alerts

pytestmark = [pytest.mark.e2e]

TOPIC = "orders.crash"
ENGINE_EVERY = 15.0  # rules.evaluation_interval_seconds' default
SCRAPE_ADVANTAGE = 10.0  # the stack's Prometheus scrapes every 5 s, the shipped config every 15 s

CONSUMER = """
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "auto.offset.reset": "earliest",
              "client.id": sys.argv[3]})
c.subscribe([sys.argv[4]])
while True:
    c.poll(0.5)
"""


@pytest.fixture(scope="module")
def watched(stack, tmp_path_factory):
    from confluent_kafka.admin import NewTopic

    tmp = tmp_path_factory.mktemp("lag-crash")
    tenants = (
        TenantConfig(
            name="shop",
            selectors=(TenantSelector(cluster="local", topic_prefixes=("orders.",), group_prefixes=("shop.",)),),
        ),
    )
    config = watched_config(stack, tmp, tenants, collection=CollectionSettings())  # the shipped 15 s
    create_topics(stack, [NewTopic(TOPIC, num_partitions=3, replication_factor=3)])
    with watching(stack, config, tmp, lambda: prom_query(stack, "kafka_cluster_broker_up == 1"), timeout=90):
        yield config


def test_a_group_killed_under_load_pages_its_tenant_within_two_minutes(stack, engine):
    servers = stack.layout.bootstrap_servers
    group = f"shop.crash-{uuid.uuid4().hex[:6]}"
    feed = SteadyProducer(servers, TOPIC)  # ~40 records/s all along
    consumers = [
        subprocess.Popen(
            [sys.executable, "-c", CONSUMER, servers, group, f"shop-crash-{i}", TOPIC],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for i in range(3)
    ]
    try:
        feed.start()
        members = f'kafka_consumergroup_members{{group="{group}"}} == 3'
        committed = f'kafka_consumergroup_committed_offset{{group="{group}"}}'
        wait_until(
            lambda: prom_query(stack, members) and prom_query(stack, committed),
            90,
            interval=2,
            what=f"{group}'s three members and offsets in Prometheus",
        )
        first = engine.run_once()
        assert not [i for i in first.instances.values() if i.labels.get("group") == group], "paged before the crash"

        for c in consumers:
            os.killpg(c.pid, signal.SIGKILL)
        killed = time.monotonic()

        fired_after, seen = None, []
        while time.monotonic() - killed < 150 and fired_after is None:
            tick = time.monotonic()
            r = engine.run_once()
            mine = [
                i for i in r.instances.values() if i.rule == "KafkaConsumerGroupLag" and i.labels.get("group") == group
            ]
            seen.append((round(tick - killed), [(i.labels.get("status"), i.state.value) for i in mine]))
            firing = [i for i in mine if i.state is AlertState.FIRING and i.labels.get("status") == "STOP"]
            if firing:
                fired_after, inst = tick - killed, firing[0]
                break
            time.sleep(max(0.0, ENGINE_EVERY - (time.monotonic() - tick)))
        assert fired_after is not None, seen
        print(f"\nSTOP firing {fired_after:.0f} s after SIGKILL; evidence {inst.evidence}")
        assert fired_after <= 120 - SCRAPE_ADVANTAGE, seen
        assert inst.labels["tenant"] == "shop" and inst.severity.value == "critical"
        assert inst.evidence["decided_by"] == "members" and inst.evidence["active_members"] == 0
        assert inst.evidence["lag_messages"] > 0

        def in_alertmanager():
            return [a for a in am_alerts(stack, "KafkaConsumerGroupLag") if a["labels"].get("group") == group]

        wait_until(
            in_alertmanager,
            max(1.0, 120 - (time.monotonic() - killed)),
            interval=1,
            what="the page in Alertmanager within 120 s of the kill",
        )
        print(f"in Alertmanager {time.monotonic() - killed:.0f} s after SIGKILL")
    finally:
        feed.stop()
        for c in consumers:
            if c.poll() is None:
                os.killpg(c.pid, signal.SIGKILL)
            c.wait(10)
        delete_group(servers, group)
