"""Tenants as principals on the secured session stack: a tenant created through the API (POST /api/v1/tenants) with
a principal selector gets its contract as a Kafka user quota from ``kafka-health tenants apply-quotas``; a client of
that principal exceeding it is throttled by the real broker, and KafkaClientThrottled fires for that tenant naming
the principal and the client id, and reaches the tenant's webhook (a real HTTP receiver)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone

import pytest
import yaml
from confluent_kafka import Producer
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, start_http_server

from alerts.component import AlertService
from collectors.component import CollectionService
from monitor.core.config import RuleOverride, RulesSettings
from monitor.core.store import Store
from monitor.store.migrate import upgrade
from monitor.tenants.live import with_stored_tenants
from tests.api_fixtures import build_api, new_token
from tests.integration.alerts_helpers import WebhookReceiver

pytestmark = pytest.mark.integration
QUOTA = 16 * 1024


def _fast(cfg):
    """The throttle rule without its 5-minute ``for``: the test is about who is named and where it goes."""
    rules = RulesSettings(overrides={"KafkaClientThrottled": RuleOverride(for_seconds=0)})
    return cfg.model_copy(update={"rules": rules})


def test_a_principal_over_its_user_quota_pages_its_tenant_by_principal_and_client(stack, tmp_path):
    L = stack.layout
    tag = uuid.uuid4().hex[:8]
    tenant, user, client_id = f"quota{tag}", f"quota{tag}-app", f"quota{tag}-writer"
    hook = WebhookReceiver().start()
    store_url = f"sqlite:///{tmp_path / 'kh.db'}"
    base = stack.config(store_url=store_url)
    store = Store(store_url)
    upgrade(store)
    with TestClient(build_api(base, store, now=datetime.now(timezone.utc))) as api:  # the API's own POST
        r = api.post(
            "/api/v1/tenants",
            headers={"Authorization": f"Bearer {new_token(store, None)}"},
            json={
                "name": tenant,
                "selectors": [{"cluster": "local", "topic_prefixes": [f"{tenant}."], "principals": [f"User:{user}"]}],
                "contract": {"produce_quota_bytes_per_second": QUOTA},
                "receivers": {"alertmanager": False, "webhooks": [hook.url]},
            },
        )
        assert r.status_code == 201, r.text
    settings = stack.add_principal(user, topic_prefixes=(f"{tenant}.",))

    cfg_file = tmp_path / "kafka-health.yaml"
    cfg_file.write_text(yaml.safe_dump(base.model_dump(mode="json", exclude_defaults=True)))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "monitor.cli",
            "tenants",
            "apply-quotas",
            "--config",
            str(cfg_file),
            "--admin-config",
            str(L.clients_dir / "admin.java.properties"),
            "--dir",
            str(L.dir),
            "--port-base",
            str(L.port_base),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"local: User:{user} (tenant {tenant}): producer_byte_rate={QUOTA}" in out.stdout
    assert settings["sasl.password"] not in out.stdout + out.stderr

    stop = threading.Event()

    def flood():  # well over the quota: 1 KiB records as fast as the broker's throttling lets them through
        p = Producer({**settings, "client.id": client_id, "linger.ms": 5})
        while not stop.is_set():
            try:
                p.produce(f"{tenant}.events", b"x" * 1024)
            except BufferError:
                p.poll(0.2)
            p.poll(0)
        p.flush(10)

    cfg = _fast(with_stored_tenants(base, store))
    registry = CollectorRegistry()
    collection = CollectionService(cfg, registry=registry)
    engine = AlertService(cfg, store=store, registry=CollectorRegistry())
    server, _ = start_http_server(L.service_port, addr="127.0.0.1", registry=registry)
    flooder = threading.Thread(target=flood, daemon=True)
    flooder.start()
    firing = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not firing:
            collection.collect_once()
            result = engine.run_once(datetime.now(timezone.utc))
            if result is not None:
                firing = [
                    i
                    for i in result.instances.values()
                    if i.rule == "KafkaClientThrottled" and i.labels.get("user") == user and i.state.value == "firing"
                ]
            time.sleep(L.scrape_interval_seconds)
        assert firing, "KafkaClientThrottled did not fire for the principal within 240 s"
        labels = firing[0].labels
        assert (labels["tenant"], labels["client_id"], labels["quota"]) == (tenant, client_id, "produce"), labels
        engine.deliver(datetime.now(timezone.utc))
        got = [a for doc in hook.received for a in doc["alerts"] if a["labels"]["alertname"] == "KafkaClientThrottled"]
        assert got and got[0]["labels"]["tenant"] == tenant and got[0]["labels"]["user"] == user
        assert got[0]["labels"]["client_id"] == client_id
    finally:
        stop.set()
        flooder.join(15)
        server.shutdown()
        server.server_close()
        collection.stop()
        hook.stop()
        store.dispose()
