"""Every dashboard works: each panel query, with Grafana's variables substituted, returns data from the live
Prometheus of the test stack while the real service collects and the demo load runs.

Panels marked ``Needs.FAULT`` show data only during trouble (fault tests cover them). ``Needs.ALERT_ENGINE`` panels
read the alerts role: it runs beside the collector when the alert engine is installed, and then they must have data
too. Everything else must have data. The variables' own queries (label_values) must list the demo's cluster, brokers
and tenants.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import uvicorn

from dashboards.boards import ALL
from dashboards.boards.selectors import alerts
from dashboards.model import VARIABLE_SOURCES, Needs, Var
from dashboards.promql import substitute
from monitor.demo.story import DEMO_LOAD, DEMO_TENANTS
from monitor.loadgen import LoadGenerator
from monitor.serve import build_app
from tests.conftest import wait_until

pytestmark = pytest.mark.integration

# What Grafana would substitute with cluster "local", broker 1, tenant payments selected; the stack scrapes every
# 5 s, so Grafana's $__rate_interval (4 x scrape interval, at least) is 20 s: 1m is the safe side of it.
VARIABLES = {
    "cluster": "local",
    "broker": "1",
    "tenant": "payments",
    "__rate_interval": "1m",
    "__interval": "15s",
    "__range": "1h",
}
ROLES = ("collector", "alerts")


@pytest.fixture(scope="module")
def live(stack):
    """The service (collector and alerts) on the port Prometheus scrapes, and the demo load."""
    app = build_app(stack.config(tenants=DEMO_TENANTS), ROLES)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=stack.layout.service_port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, name="dashboards-live-serve", daemon=True)
    thread.start()
    load = LoadGenerator(stack.layout.bootstrap_servers, DEMO_LOAD)
    load.start()
    # 30 s: Grafana's own data-proxy timeout, the longest a panel's query may take before a user sees an error.
    prom = httpx.Client(base_url=stack.layout.prometheus_url, timeout=30)
    try:
        yield prom
    finally:
        load.stop()
        server.should_exit = True
        thread.join(timeout=15)
        prom.close()


def _query(prom: httpx.Client, expr: str) -> list:
    r = prom.get("/api/v1/query", params={"query": expr})
    body = r.json()
    if body.get("status") != "success":
        return [f"error: {body.get('error')}"]
    return body["data"]["result"]


def _panels(*needs: Needs):
    for board in ALL:
        for panel in board.panels():
            if panel.needs in needs:
                for q in panel.queries:
                    yield board.uid, panel.title, substitute(q.expr, VARIABLES)


def _has_data(prom: httpx.Client, expr: str, timeouts: dict[str, int]) -> bool:
    """Whether ``expr`` returns data now. A query Prometheus did not answer in time counts as no data yet (counted
    in ``timeouts``) and is asked again at the next pass: once, in CI, beside the background chain of scripts/test.sh,
    one query went unanswered for 10 s. A query that never answers still fails the wait, named with its count."""
    try:
        result = _query(prom, expr)
    except httpx.TimeoutException:
        timeouts[expr] = timeouts.get(expr, 0) + 1
        return False
    return bool(result) and not isinstance(result[0], str)


def test_every_panel_query_returns_data(live):
    # Rates need two scrapes inside their window and ratios two collections: poll until the slowest has data. A
    # panel that has shown data is not asked again, and the rest are asked side by side: a pass costs the slowest
    # query still waiting, not the sum of every panel's (about 65), on a Prometheus holding the session's series.
    waiting = list(_panels(Needs.DATA, Needs.ALERT_ENGINE))
    timeouts: dict[str, int] = {}
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="panel-query") as pool:

        def all_have_data() -> bool:
            nonlocal waiting
            empty = list(pool.map(lambda panel: not _has_data(live, panel[2], timeouts), waiting))
            waiting = [panel for panel, is_empty in zip(waiting, empty, strict=True) if is_empty]
            return not waiting

        wait_until(
            all_have_data,
            timeout=240,
            interval=2,
            what=lambda: f"every panel to have data: {waiting} (queries that timed out, with counts: {timeouts})",
        )
    assert waiting == []


def test_fault_and_engine_panels_are_at_least_valid_promql(live):
    for uid, title, expr in _panels(Needs.FAULT, Needs.ALERT_ENGINE):
        body = live.get("/api/v1/query", params={"query": expr}).json()
        assert body["status"] == "success", (uid, title, body.get("error"))


def test_the_engines_alerts_reach_prometheus_and_the_watchdog_stays_off_the_boards(live):
    # The watchdog always fires: the alerts role exports it as kafka_health_alert_instance, Prometheus scrapes it.
    watchdog = 'kafka_health_alert_instance{alertname="KafkaHealthWatchdog", alertstate="firing"}'
    wait_until(lambda: _query(live, watchdog), timeout=120, interval=5, what="the engine's watchdog in Prometheus")
    # The boards' union of the engine's alerts and ALERTS is valid PromQL and leaves the watchdog out.
    assert _query(live, alerts('alertname="KafkaHealthWatchdog"')) == []


def test_variables_list_the_demo_cluster_brokers_and_tenants(live):
    expected = {Var.CLUSTER: {"local"}, Var.BROKER: {"1", "2", "3"}, Var.TENANT: {"payments", "search"}}

    def values(var: Var) -> set[str]:
        metric, label = VARIABLE_SOURCES[var]
        r = live.get(f"/api/v1/label/{label}/values", params={"match[]": metric})
        return set(r.json()["data"])

    wait_until(
        lambda: all(expected[v] <= values(v) for v in expected),
        timeout=120,
        interval=2,
        what="variables to list the demo's cluster, brokers and tenants",
    )
