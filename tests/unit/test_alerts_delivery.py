"""Delivery to every Alertmanager of a cluster (issue 31, item 2): one outbox target per Alertmanager, so one that is
down neither blocks nor loses what the others receive. The store is SQLite in a temporary file; the Alertmanagers
answer through httpx's MockTransport (the real-process proof with a gossiping pair is tests/integration/
test_alerts_ha.py)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from sqlalchemy import select

from alerts import repo
from alerts.models import OutboxEntry
from alerts.notify import (
    ALERTMANAGER,
    AlertmanagerNotifier,
    DeliveryPolicy,
    alertmanager_index,
    alertmanager_target,
    deliver_due,
    targets_for,
)
from alerts.types import Decision
from monitor.core.config import parse_config
from monitor.core.store import Store
from monitor.schema import create_all

pytestmark = pytest.mark.unit
T0 = datetime(2026, 11, 27, 9, 0, tzinfo=timezone.utc)
PAIR = parse_config("""
clusters: [{name: c1, bootstrap_servers: 'localhost:9092'}]
alertmanager: {urls: ['http://am-0:9093', 'http://am-1:9093']}
tenants:
  - name: shop
    selectors: [{cluster: c1, topic_prefixes: [orders.]}]
    receivers: {webhooks: ['http://127.0.0.1:1/hook']}
  - name: quiet
    selectors: [{cluster: c1, topic_prefixes: [logs.]}]
    receivers: {alertmanager: false}
""")


def test_every_alertmanager_of_the_cluster_is_a_target_of_its_own():
    shop = {"alertname": "X", "cluster": "c1", "tenant": "shop"}
    assert targets_for(shop, Decision.NOTIFY_FIRING, PAIR) == [
        "alertmanager",
        "alertmanager#2",
        "http://127.0.0.1:1/hook",
    ]
    assert targets_for(shop, Decision.REFRESH, PAIR) == ["alertmanager", "alertmanager#2"]
    assert (
        targets_for({**shop, "tenant": "quiet"}, Decision.NOTIFY_FIRING, PAIR) == []
    )  # opted out of every Alertmanager
    assert [alertmanager_index(alertmanager_target(i)) for i in range(3)] == [0, 1, 2]
    for not_one in ("http://127.0.0.1:1/hook", "alertmanager#1", "alertmanager#x", "alertmanager#2/"):
        assert alertmanager_index(not_one) is None


def test_an_alertmanager_down_delays_only_its_own_rows(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'outbox.db'}")
    create_all(store)
    sent: dict[str, list[str]] = {"am-0": [], "am-1": []}
    down = {"am-0"}

    def answer(request: httpx.Request) -> httpx.Response:
        host = request.url.host
        if host in down:
            raise httpx.ConnectError("connection refused", request=request)
        sent[host] += [a["labels"]["alertname"] for a in json.loads(request.content)]
        return httpx.Response(200)

    notifiers = {
        alertmanager_target(i): AlertmanagerNotifier.from_settings(
            PAIR.alertmanager, index=i, transport=httpx.MockTransport(answer)
        )
        for i in range(2)
    }
    body = {"status": "firing", "labels": {"alertname": "A"}, "annotations": {}, "startsAt": None, "endsAt": None}
    with store.session() as s:
        for target in notifiers:
            repo.enqueue(target, "fp-a", "alertname=A,cluster=c1,tenant=", "firing", body, now=T0, session=s)
    report = deliver_due(store, notifiers.__getitem__, now=T0, policy=DeliveryPolicy())
    assert (report.delivered, report.failed, report.dead) == (1, 1, 0)
    assert sent == {"am-0": [], "am-1": ["A"]}  # the pair's second member has it although the first is down
    with store.session() as s:
        assert [(r.target, r.attempts) for r in s.scalars(select(OutboxEntry))] == [(ALERTMANAGER, 1)]  # kept
    down.clear()  # back: its row, retried after its backoff, reaches it; the other is not sent a second time
    report = deliver_due(store, notifiers.__getitem__, now=T0 + timedelta(seconds=3), policy=DeliveryPolicy())
    assert (report.delivered, report.failed) == (1, 0) and sent == {"am-0": ["A"], "am-1": ["A"]}
    # a row for an Alertmanager the config no longer lists is refused to the dead letters, not sent elsewhere
    gone = AlertmanagerNotifier.from_settings(PAIR.alertmanager, index=2)
    assert gone.notify([body], now=T0) == (False, "no Alertmanager #3 in alertmanager.url/urls any more")
    store.dispose()
