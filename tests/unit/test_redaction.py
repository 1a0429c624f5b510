"""Secrets stay out of errors, logs and tenants' answers (issue 15, items 4, 5 and 12).

Each test seeds one secret, ``s3cr3t-XYZ``, where operators put secrets (a Prometheus or Alertmanager URL, a webhook
URL, a confluent-kafka secret key) and greps for it in what the code produced: the config errors ``check-config``
prints, the API's 422, every log record at DEBUG, the rows the engine and the outbox write, the advice a tenant reads.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from monitor.core.config import parse_config
from monitor.core.errors import ConfigError
from monitor.core.logs import LIBRARY_LOGGERS

pytestmark = pytest.mark.unit

SECRET = "s3cr3t-XYZ"
T0 = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
CLUSTER = """
clusters:
  - name: c1
    bootstrap_servers: 127.0.0.1:1
    brokers: [{id: 1}]
"""
TENANT = """
tenants:
  - name: shop
    whole_clusters: [c1]
"""


@pytest.fixture
def debug_logs(caplog):
    """Every record of every logger at DEBUG (what ``-v`` would let through); the levels the CLI sets on library
    loggers are restored after, so other tests see the defaults."""
    levels = {name: logging.getLogger(name).level for name in LIBRARIES}
    caplog.set_level(logging.DEBUG)
    yield caplog
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


LIBRARIES = LIBRARY_LOGGERS  # the levels the CLI sets
PROJECT_LOGGERS = ("monitor", "alerts", "collectors", "dashboards", "kafka_health")


def _logged(caplog, *, project_only: bool = True) -> str:
    """What was logged, by our loggers (libraries' are the CLI's to quiet: see the CLI test) or by all."""
    return "\n".join(
        f"{r.name} {r.getMessage()} {r.exc_text or ''}"
        for r in caplog.records
        if not project_only or r.name.split(".")[0] in PROJECT_LOGGERS
    )


def _refused(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as exc:
        parse_config(text, "c.yaml")
    return exc.value


# ---------------------------------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    "text, path, line",
    [
        (CLUSTER + f"prometheus: {{url: 'http://admin:{SECRET}@prom.internal:9090'}}\n", "prometheus.url", 6),
        (CLUSTER + f"alertmanager:\n  url: 'https://am:{SECRET}@am.internal:9093'\n", "alertmanager.url", 7),
        (CLUSTER + f"prometheus: {{url: 'http://prom.internal:9090/?token={SECRET}'}}\n", "prometheus.url", 6),
        (
            CLUSTER + TENANT + f"    receivers: {{webhooks: ['hooks.example/services/T0/{SECRET}']}}\n",
            "tenants[0].receivers.webhooks",
            10,
        ),
        (
            CLUSTER.replace(
                "brokers: [{id: 1}]", f"brokers: [{{id: 1, jolokia: 'http://jmx:{SECRET}@k1:8778/jolokia'}}]"
            ),
            "clusters[0].brokers[0].jolokia",
            5,
        ),
    ],
    ids=[
        "prometheus-userinfo",
        "alertmanager-userinfo",
        "prometheus-query-token",
        "webhook-not-a-url",
        "jolokia-userinfo",
    ],
)
def test_a_secret_in_a_url_is_refused_with_its_place_and_not_echoed(text, path, line):
    err = _refused(text)
    assert [(p.path, p.line) for p in err.problems] == [(path, line)], str(err)
    assert SECRET not in str(err)


@pytest.mark.parametrize(
    "key",
    [
        "ssl.key.pem",
        "sasl.oauthbearer.config",
        "sasl.jaas.config",
        "ssl.keystore.key",
        "ssl.truststore.password",
        "sasl.oauthbearer.client.secret",
        "sasl.password",
    ],
)
def test_an_inline_kafka_secret_key_is_refused_and_not_echoed(key):
    err = _refused(CLUSTER + f"    security:\n      security.protocol: SASL_SSL\n      {key}: 'x {SECRET}'\n")
    [problem] = err.problems
    assert problem.path == "clusters[0].security" and problem.line == 6 and key in problem.message
    assert SECRET not in str(err)


def test_a_kafka_secret_key_is_accepted_as_a_reference(monkeypatch):
    monkeypatch.setenv("KAFKA_HEALTH_KEY_PEM", f"-----BEGIN PRIVATE KEY----- {SECRET}")
    cfg = parse_config(CLUSTER + "    security:\n      ssl.key.pem: {env: KAFKA_HEALTH_KEY_PEM}\n")
    assert cfg.clusters[0].client_settings()["ssl.key.pem"].endswith(SECRET)
    assert SECRET not in repr(cfg)


def test_check_config_prints_every_problem_without_the_secrets(tmp_path, capsys, debug_logs):
    from monitor.cli import main

    f = tmp_path / "c.yaml"
    f.write_text(
        CLUSTER.replace("127.0.0.1:1\n", f"127.0.0.1:1\n    security: {{ssl.key.pem: '{SECRET}'}}\n")
        + TENANT
        + f"    receivers: {{webhooks: ['ftp://hooks.example/{SECRET}']}}\n"
        + f"prometheus: {{url: 'http://admin:{SECRET}@prom:9090'}}\n"
        + f"alertmanager: {{url: 'http://am:{SECRET}@am:9093'}}\n"
    )
    assert main(["check-config", str(f)]) == 2
    out = capsys.readouterr()
    errors = out.err.strip().splitlines()
    assert len(errors) == 4 and all(e.startswith(f"error: {f}:") for e in errors), out.err
    assert SECRET not in out.out + out.err + _logged(debug_logs, project_only=False)


def test_the_api_422_for_a_bad_webhook_does_not_echo_it(tmp_path):
    from fastapi.testclient import TestClient

    from monitor.core.store import Store
    from monitor.store.migrate import upgrade
    from tests.api_fixtures import build_api, make_config, new_token

    store = Store(f"sqlite:///{tmp_path / 'kh.db'}")
    upgrade(store)
    try:
        with TestClient(build_api(make_config(), store), raise_server_exceptions=False) as client:
            body = {
                "name": "initech",
                "selectors": [{"cluster": "shared", "topic_prefixes": ["initech."]}],
                "receivers": {"webhooks": [f"hooks.example/services/{SECRET}"]},
            }
            r = client.post("/api/v1/tenants", json=body, headers={"Authorization": f"Bearer {new_token(store, None)}"})
        assert r.status_code == 422, r.text
        assert "receivers.webhooks" in r.text and SECRET not in r.text
    finally:
        store.dispose()


def test_prometheus_and_alertmanager_credentials_are_sent_as_basic_auth(monkeypatch):
    from alerts.notify import AlertmanagerNotifier
    from monitor.core.prom import prometheus_source

    monkeypatch.setenv("KAFKA_HEALTH_PROM_PASSWORD", SECRET)
    monkeypatch.setenv("KAFKA_HEALTH_AM_PASSWORD", SECRET)
    cfg = parse_config(
        CLUSTER + "prometheus:\n  url: http://prom:9090\n  username: kh\n"
        "  password: {env: KAFKA_HEALTH_PROM_PASSWORD}\n"
        "alertmanager: {url: 'http://am:9093', username: kh,\n"
        "               password: {env: KAFKA_HEALTH_AM_PASSWORD}}\n"
    )
    assert SECRET not in repr(cfg)
    seen = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, request.headers.get("authorization")))
        if request.url.path == "/api/v1/query":
            return httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": []}})
        return httpx.Response(200, json={})

    transport = httpx.MockTransport(answer)
    assert prometheus_source(cfg.prometheus, transport=transport).query("up", T0) == []
    am = AlertmanagerNotifier.from_settings(cfg.alertmanager, transport=transport)
    assert am.notify([{"labels": {}, "annotations": {}, "startsAt": None, "status": "firing"}], now=T0) == (False, None)
    expected = httpx.BasicAuth("kh", SECRET)._auth_header
    assert seen == [("/api/v1/query", expected), ("/api/v2/alerts", expected)]


def test_a_password_without_a_username_is_refused():
    err = _refused("prometheus: {url: 'http://prom:9090', password: {env: KAFKA_HEALTH_X}}\n")
    assert [p.path for p in err.problems] == ["prometheus"]


# ---------------------------------------------------------------------------------------------------- Prometheus


def _unreachable(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


def _leaky_source():
    """A source built with credentials and a token in its URL (config refuses both; the source must still hide
    them), whose Prometheus does not answer."""
    from monitor.core.prom import PrometheusSource

    return PrometheusSource(
        f"http://admin:{SECRET}@prom.internal:9090/?token={SECRET}", transport=httpx.MockTransport(_unreachable)
    )


def test_a_failing_prometheus_query_names_prometheus_without_its_credentials():
    from monitor.core.errors import QueryError

    with pytest.raises(QueryError) as exc:
        _leaky_source().query("up", T0)
    assert "Prometheus unreachable at http://prom.internal:9090" in str(exc.value)
    assert SECRET not in str(exc.value) and exc.value.public == "metrics backend unavailable"


def test_a_tenant_reads_a_generic_message_when_prometheus_is_unreachable(tmp_path, monkeypatch, debug_logs):
    from fastapi.testclient import TestClient

    from monitor.advisor import views
    from monitor.core.store import Store
    from monitor.store.migrate import upgrade
    from tests.api_fixtures import build_api, make_config, new_token

    monkeypatch.setattr(views, "_source", lambda config: _leaky_source())
    store = Store(f"sqlite:///{tmp_path / 'kh.db'}")
    upgrade(store)
    try:
        with TestClient(build_api(make_config(), store), raise_server_exceptions=False) as client:
            auth = {"Authorization": f"Bearer {new_token(store, 'acme')}"}  # a tenant's token: a tenant's answer
            r = client.get("/api/v1/tenants/acme/advice", headers=auth)
        assert r.status_code == 200, r.text
        assert {c["cluster"]: (c["status"], c["message"]) for c in r.json()["clusters"]} == {
            "acme-only": ("unavailable", "metrics backend unavailable"),
            "shared": ("unavailable", "metrics backend unavailable"),
        }
        assert "prom.internal" not in r.text
    finally:
        store.dispose()
    logged = _logged(debug_logs)
    assert "prom.internal" in logged and SECRET not in logged  # the operator's detail is logged, redacted


def test_an_engine_cycle_against_a_failing_prometheus_leaks_no_credentials(tmp_path, debug_logs):
    from prometheus_client import CollectorRegistry, generate_latest

    from alerts import repo
    from alerts.component import AlertService
    from alerts.models import EngineHeartbeat
    from monitor.core.store import Store
    from monitor.schema import create_all

    config = parse_config(CLUSTER + TENANT + "alertmanager: {url: null}\n")
    store = Store(f"sqlite:///{tmp_path / 'alerts.db'}")
    create_all(store)
    registry = CollectorRegistry()
    service = AlertService(
        config,
        store=store,
        registry=registry,
        source=_leaky_source(),
        clock=lambda: T0,
        notifier_for=lambda target: pytest.fail(f"nothing to deliver, got {target}"),
    )
    try:
        service.run_once(T0)
        with store.session() as s:
            instances = repo.load_instances(session=s).values()
            stored = json.dumps([(i.labels, i.annotations, i.evidence) for i in instances], default=str)
            stored += json.dumps([h.detail for h in s.query(EngineHeartbeat).all()])  # what tenant health shows
        assert "Prometheus unreachable" in stored  # the failure was recorded...
        assert SECRET not in stored  # ...without the credentials
        assert SECRET not in _logged(debug_logs) and SECRET not in generate_latest(registry).decode()
    finally:
        store.dispose()


# ---------------------------------------------------------------------------------------------------- webhooks


def _failing_webhook(request: httpx.Request) -> httpx.Response:
    # Receivers often echo what they were called with in their error body.
    return httpx.Response(503, text=f"no such hook: {request.url.path} ({request.url})")


@pytest.mark.parametrize("handler", [_failing_webhook, _unreachable], ids=["http-503", "unreachable"])
def test_a_failing_webhook_delivery_logs_and_stores_no_part_of_its_url(tmp_path, debug_logs, handler):
    from alerts import repo
    from alerts.models import OutboxEntry
    from alerts.notify import WebhookNotifier, deliver_due
    from monitor.core.store import Store
    from monitor.schema import create_all

    url = f"https://hooks.example/services/T0/B0/{SECRET}?key={SECRET}"
    store = Store(f"sqlite:///{tmp_path / 'alerts.db'}")
    create_all(store)
    alert = {"labels": {"alertname": "KafkaBrokerUnreachable", "tenant": "shop"}, "annotations": {}, "status": "firing"}
    try:
        with store.session() as s:
            repo.enqueue(url, "fp1", "alertname=KafkaBrokerUnreachable", "firing", alert, now=T0, session=s)
        report = deliver_due(
            store, lambda target: WebhookNotifier(target, transport=httpx.MockTransport(handler)), now=T0
        )
        assert report.failed == 1
        with store.session() as s:
            [row] = s.query(OutboxEntry).all()
            error = row.last_error
        assert error and SECRET not in error
        logged = _logged(debug_logs)
        assert "delivery to https://hooks.example/...#" in logged and SECRET not in logged
        assert "/services/" not in logged  # the path is the token's neighbourhood: never shown at all
    finally:
        store.dispose()


# ---------------------------------------------------------------------------------------------------- CLI


class _Prometheus(BaseHTTPRequestHandler):
    """Prometheus' query API answering "no data" to everything."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_cli_command_at_debug_logs_no_request_url(tmp_path, capsys, debug_logs):
    """A Prometheus behind a proxy whose path carries a token: ``-v`` must not let httpx log the request URLs."""
    from monitor.cli import main

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Prometheus)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        f = tmp_path / "c.yaml"
        f.write_text(CLUSTER + TENANT + f"prometheus: {{url: 'http://127.0.0.1:{server.server_port}/{SECRET}/'}}\n")
        assert main(["-v", "advice", "--tenant", "shop", "--config", str(f)]) == 1  # answered: no data
    finally:
        server.shutdown()
        server.server_close()
    out = capsys.readouterr()
    assert "NO DATA" in out.out
    chatty = [r for r in debug_logs.records if r.name.startswith(("httpx", "httpcore")) and r.levelno < logging.WARNING]
    assert chatty == []
    assert SECRET not in _logged(debug_logs, project_only=False) + out.out + out.err


# ---------------------------------------------------------------------------------------------------- the helpers


@pytest.mark.parametrize(
    "url, shown",
    [
        (f"http://admin:{SECRET}@prom.internal:9090/prom/", "http://prom.internal:9090/prom/"),
        (f"https://am.internal/?token={SECRET}#x", "https://am.internal/?..."),
        (f"http://[::1]:9090/?t={SECRET}", "http://[::1]:9090/?..."),
        ("http://plain:9090", "http://plain:9090"),
        (f"not a url {SECRET}", f"not a url {SECRET}"),  # no URL, nothing to redact: callers never pass secrets bare
        (f"http://u:{SECRET}@[::1", "<unparseable URL>"),
    ],
)
def test_redact_url(url, shown):
    from monitor.core.redact import redact_url

    assert redact_url(url) == shown


def test_target_id_is_stable_host_only_and_tells_webhooks_apart():
    from monitor.core.redact import target_id

    a, b = f"https://hooks.example/services/A/{SECRET}", "https://hooks.example/services/B/other"
    assert target_id(a) == target_id(a) != target_id(b)
    assert target_id(a).startswith("https://hooks.example/...#") and SECRET not in target_id(a)
    assert "services" not in target_id(a)


def test_scrub_replaces_the_url_its_path_and_its_query_in_free_text():
    from monitor.core.redact import scrub, target_id

    url = f"https://u:{SECRET}@hooks.example/services/{SECRET}?k={SECRET}"
    text = f"404: no hook at {url}; path /services/{SECRET}?k={SECRET}; query k={SECRET}"
    assert SECRET not in scrub(text, url) and target_id(url) in scrub(text, url)


def test_the_log_filter_redacts_urls_in_messages_and_tracebacks():
    from monitor.core.redact import RedactingFilter

    try:
        raise RuntimeError(f"failed to reach http://u:{SECRET}@host:1/x?token={SECRET}")
    except RuntimeError:
        record = logging.LogRecord(
            "httpx",
            logging.INFO,
            __file__,
            1,
            "HTTP Request: POST %s",
            (f"http://u:{SECRET}@host:1/api?token={SECRET}",),
            exc_info=sys.exc_info(),
        )
    assert RedactingFilter().filter(record)
    line = logging.Formatter("%(message)s").format(record)
    assert "HTTP Request: POST http://host:1/api?..." in line and "RuntimeError" in line and SECRET not in line
