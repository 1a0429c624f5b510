"""The panels marked ``Needs.FAULT`` show data when the fault they are about happens, on the live stack.

Faults made here, all real: a configured broker whose JMX port is closed (collection failures, a broker down), a
record larger than the brokers accept (a request error), and an alert that fires in Prometheus (a probe rule on the
failing collection, attributed to a tenant the way the engine attributes cluster-wide trouble). "Disk full in"
needs a filling disk: the disk-fill scenario of the collectors/alerts fault tests covers its input.

When the alert engine is installed, the alerts role runs too (its own store, no Alertmanager, so nothing leaks into
other modules): the engine's alerts on the same faults reach the alert panels through kafka_health_alert_instance.
"""

from __future__ import annotations

import socket
import threading

import httpx
import pytest
import uvicorn
import yaml
from confluent_kafka import KafkaError, Producer

from alerts.rules import builtin_variant
from dashboards.boards import ALL, service, tenant
from dashboards.model import Kind, Needs
from dashboards.promql import substitute
from monitor.core.config import BrokerTarget
from monitor.demo.story import DEMO_TENANTS
from monitor.serve import build_app
from tests.conftest import wait_until

pytestmark = pytest.mark.e2e

VARIABLES = {
    "cluster": "local",
    "broker": ".*",
    "tenant": "payments",
    "__rate_interval": "1m",
    "__interval": "15s",
    "__range": "1h",
}
# "Client advisor findings" needs the alerts role and misbehaving clients:
# tests/integration/test_advisor_stack.py runs its query against the live Prometheus while they run.
NOT_INDUCED = {"Disk full in", "Client advisor findings"}
PROBE_RULE = "KafkaHealthDashboardsProbe"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def faulty(stack, tmp_path_factory):
    L = stack.layout
    config = stack.config(tenants=DEMO_TENANTS, store_url=f"sqlite:///{tmp_path_factory.mktemp('faults') / 'kh.db'}")
    (cluster,) = config.clusters
    ghost = BrokerTarget(id=9, jmx=f"127.0.0.1:{_closed_port()}", host="localhost")
    # The panels are under test, not the rule's 2m `for`: the scrape-failure rule fires after 20s here.
    rules = tmp_path_factory.mktemp("faults-rules") / "scrape-failing.yaml"
    rules.write_text(builtin_variant("KafkaHealthScrapeFailing", for_="20s"))
    config = config.model_copy(
        update={
            "clusters": (cluster.model_copy(update={"brokers": cluster.brokers + (ghost,)}),),
            "alertmanager": config.alertmanager.model_copy(update={"url": None, "urls": ()}),
            "rules": config.rules.model_copy(update={"files": (str(rules),)}),
        }
    )
    app = build_app(config, ("collector", "alerts"))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=L.service_port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, name="dashboards-faults-serve", daemon=True)
    thread.start()
    rule_file = L.prometheus_rules_dir / "dashboards-probe.yml"
    rule_file.write_text(
        yaml.safe_dump(
            {
                "groups": [
                    {
                        "name": "dashboards-probe",
                        "rules": [
                            {
                                "alert": PROBE_RULE,
                                "expr": 'kafka_health_scrape_success{target="broker-9"} == 0',
                                "labels": {"severity": "warning", "tenant": "payments"},
                                "annotations": {"summary": "probe for the dashboards' fault panels"},
                            }
                        ],
                    }
                ]
            }
        )
    )
    prom = httpx.Client(base_url=L.prometheus_url, timeout=10)
    prom.post("/-/reload").raise_for_status()
    try:
        yield prom
    finally:
        rule_file.unlink(missing_ok=True)
        prom.post("/-/reload")
        prom.close()
        server.should_exit = True
        thread.join(timeout=15)


def _too_large_record(bootstrap: str) -> None:
    """The client accepts 2 MB, the broker's message.max.bytes (1 MB default) refuses it: MESSAGE_TOO_LARGE."""
    errors = []
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "payments-oversize",
            "message.max.bytes": 4_000_000,
            "compression.type": "none",
            "retries": 0,
        }
    )
    p.produce("payments.orders", b"x" * 2_000_000, on_delivery=lambda err, _msg: errors.append(err))
    p.flush(30)
    assert errors and errors[0] is not None and errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE, errors


def _has_data(prom: httpx.Client, expr: str) -> bool:
    body = prom.get("/api/v1/query", params={"query": expr}).json()
    return body["status"] == "success" and bool(body["data"]["result"])


def test_fault_panels_show_the_faults(stack, faulty):
    _too_large_record(stack.layout.bootstrap_servers)
    panels = [
        (b.uid, p.title, substitute(q.expr, VARIABLES))
        for b in ALL
        for p in b.panels()
        if p.needs is Needs.FAULT and p.title not in NOT_INDUCED
        for q in p.queries
    ]
    assert len(panels) >= 5

    def empty():
        return [(uid, title) for uid, title, expr in panels if not _has_data(faulty, expr)]

    wait_until(lambda: not empty(), timeout=180, interval=5, what="every fault panel to show its fault")
    # The healthy-path panels say it too: the ghost broker is down and its target fails. Waited for: the Admin
    # collector's round that says so may be the one a loaded machine made fail (CI saw it missing at once, 2026-11-24)
    wait_until(
        lambda: _has_data(faulty, 'count by (cluster) (kafka_cluster_broker_up{cluster="local"} == 0)'),
        60,
        interval=5,
        what="the ghost broker down (kafka_cluster_broker_up == 0)",
    )
    assert _has_data(faulty, f'ALERTS{{alertname="{PROBE_RULE}", alertstate="firing", tenant="payments"}}')


def _result(prom: httpx.Client, expr: str) -> list[dict]:
    body = prom.get("/api/v1/query", params={"query": expr}).json()
    return body["data"]["result"] if body["status"] == "success" else []


def _engine_alerts(prom: httpx.Client, board, title: str, variables: dict[str, str]) -> set[tuple[str, str, str]]:
    """(alertname, broker, tenant) of the engine's series in a firing-alerts table."""
    (panel,) = [p for p in board.panels() if p.title == title and p.kind is Kind.TABLE]
    rows = _result(prom, substitute(panel.queries[0].expr, variables))
    return {
        (r["metric"]["alertname"], r["metric"].get("broker", ""), r["metric"].get("tenant", ""))
        for r in rows
        if r["metric"].get("__name__") == "kafka_health_alert_instance"
    }


def test_the_engines_alerts_show_on_the_alert_panels(faulty):
    # The ghost broker is down (KafkaBrokerUnreachable, for 30s) and its collection fails (KafkaHealthScrapeFailing,
    # for 20s in this module; cluster-wide: every tenant on the cluster, so the tenant's table shows it with its
    # tenant).
    def seen():
        on_service = _engine_alerts(faulty, service.BOARD, "Firing alerts", VARIABLES)
        on_tenant = _engine_alerts(faulty, tenant.BOARD, "Firing alerts", VARIABLES)
        return (
            any(name == "KafkaBrokerUnreachable" and broker == "9" for name, broker, _ in on_service)
            and ("KafkaHealthScrapeFailing", "", "payments") in on_tenant
            and all(t == "payments" for _, _, t in on_tenant)
        )

    wait_until(seen, timeout=300, interval=5, what="the engine's alerts in the firing-alerts tables")
