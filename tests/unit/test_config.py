import subprocess
import sys

import pytest

from monitor.core.config import Config, load_config, parse_config
from monitor.core.errors import ConfigError

pytestmark = pytest.mark.unit

GOOD = """
clusters:
  - name: prod-eu
    bootstrap_servers: "k1:9092,k2:9092"
    security:
      security.protocol: SASL_SSL
      sasl.mechanism: SCRAM-SHA-512
      sasl.username: monitor
      sasl.password: {env: KAFKA_HEALTH_SASL_PASSWORD}
    brokers:
      - {id: 1, jmx: "k1:9999", log_dirs: [/var/lib/kafka]}
tenants:
  - name: payments
    selectors:
      - {cluster: prod-eu, topic_prefixes: [payments.]}
"""


def test_valid_config_resolves_secret_from_env_and_hides_it(monkeypatch):
    monkeypatch.setenv("KAFKA_HEALTH_SASL_PASSWORD", "s3cret")
    cfg = parse_config(GOOD)
    settings = cfg.clusters[0].client_settings()
    assert settings["sasl.password"] == "s3cret"
    assert settings["bootstrap.servers"] == "k1:9092,k2:9092"
    assert "s3cret" not in repr(cfg)


def test_every_error_is_reported_at_once_with_its_line():
    text = """clusters:
  - name: local
    bootstrap_servers: "x:1"
    brokers:
      - id: 1
        jmx: "nohost"
        colour: red
prometheus:
  url: http://p:9090
  scrape: 5
store:
  url: postgresql://u:pw@h/db
"""
    with pytest.raises(ConfigError) as exc:
        parse_config(text, "c.yaml")
    got = {(p.line, p.path, p.message) for p in exc.value.problems}
    assert (6, "clusters[0].brokers[0].jmx", "must be host:port") in got
    assert (7, "clusters[0].brokers[0].colour", "unknown key") in got
    assert (10, "prometheus.scrape", "unknown key") in got
    assert any(line == 12 and path == "store.url" and "password" in msg for line, path, msg in got)
    assert len(got) == 4


def test_inline_secret_is_rejected_and_not_echoed():
    text = """clusters:
  - name: a
    bootstrap_servers: "x:1"
    security:
      sasl.password: hunter2
"""
    with pytest.raises(ConfigError) as exc:
        parse_config(text)
    assert "hunter2" not in str(exc.value)
    assert exc.value.problems[0].line == 4


def test_missing_secret_env_is_a_config_error(monkeypatch):
    monkeypatch.delenv("KAFKA_HEALTH_SASL_PASSWORD", raising=False)
    with pytest.raises(ConfigError) as exc:
        parse_config(GOOD, "g.yaml")
    (problem,) = exc.value.problems
    assert problem.path == "clusters[0].security.sasl.password"
    assert "KAFKA_HEALTH_SASL_PASSWORD is not set" in problem.message
    assert problem.line == 9


def test_tenant_on_unknown_cluster_is_rejected():
    with pytest.raises(ConfigError, match="unknown cluster 'nope'"):
        parse_config("tenants:\n  - name: t\n    selectors: [{cluster: nope}]\n")


def test_yaml_syntax_error_has_line(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("clusters:\n  - name: [unclosed\n")
    with pytest.raises(ConfigError) as exc:
        load_config(f)
    assert exc.value.problems[0].line is not None


def test_check_config_cli_exits_2_with_located_errors(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("clusters:\n  - name: a\n    bootstrap_servers: x:1\n    bogus: 1\nstore: {url: 5}\n")
    r = subprocess.run([sys.executable, "-m", "monitor.cli", "check-config", str(f)], capture_output=True, text=True)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert f"error: {f}:4: clusters[0].bogus: unknown key" in lines
    assert any(line.startswith(f"error: {f}:5: store.url") for line in lines)
    assert "Traceback" not in r.stderr


def test_check_config_cli_accepts_good_file(tmp_path, monkeypatch):
    f = tmp_path / "c.yaml"
    f.write_text(GOOD)
    env = {"KAFKA_HEALTH_SASL_PASSWORD": "x", "PATH": "/usr/bin:/bin"}
    r = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "check-config", str(f)], capture_output=True, text=True, env=env
    )
    assert r.returncode == 0, r.stderr
    assert "1 cluster(s), 1 broker target(s), 1 tenant(s)" in r.stdout


def test_prometheus_and_alertmanager_credentials_are_secret_references(monkeypatch):
    monkeypatch.setenv("KAFKA_HEALTH_PROM_PASSWORD", "pw")
    monkeypatch.delenv("KAFKA_HEALTH_AM_PASSWORD", raising=False)
    text = """prometheus:
  url: https://prom.internal:9090
  username: kafka-health
  password: {env: KAFKA_HEALTH_PROM_PASSWORD}
alertmanager:
  url: https://am.internal:9093
  username: kafka-health
  password: {env: KAFKA_HEALTH_AM_PASSWORD}
"""
    with pytest.raises(ConfigError) as exc:
        parse_config(text, "c.yaml")
    assert [(p.line, p.path) for p in exc.value.problems] == [(8, "alertmanager.password")]
    monkeypatch.setenv("KAFKA_HEALTH_AM_PASSWORD", "pw2")
    cfg = parse_config(text)
    assert cfg.prometheus.basic_auth() == ("kafka-health", "pw")
    assert cfg.alertmanager.basic_auth() == ("kafka-health", "pw2")
    assert parse_config("").prometheus.basic_auth() is None


def test_alertmanager_is_one_url_or_a_cluster_of_urls_each_checked():
    assert parse_config("").alertmanager.endpoints() == ("http://127.0.0.1:9093",)
    assert parse_config("alertmanager: {url: null}").alertmanager.endpoints() == ()
    one = parse_config("alertmanager: {url: 'http://am:9093'}").alertmanager
    assert one.endpoints() == ("http://am:9093",)
    pair = parse_config("alertmanager: {urls: ['http://am-0:9093', 'http://am-1:9093']}").alertmanager
    assert pair.endpoints() == ("http://am-0:9093", "http://am-1:9093") and pair.url == "http://am-0:9093"
    # written back out whole (as tests/harness/engine.py does), it reads the same
    again = Config.model_validate(Config(alertmanager=pair).model_dump(mode="json", exclude_none=True))
    assert again.alertmanager == pair
    for text, says in [
        ("alertmanager: {url: 'http://am:9093', urls: ['http://am-1:9093']}", "not both"),
        ("alertmanager: {urls: ['http://am-0:9093', 'http://am-0:9093/']}", "listed twice"),
        ("alertmanager: {urls: ['http://am-0:9093', 'http://kh:s3cr3t@am-1:9093']}", "entry 1: do not put credentials"),
    ]:
        with pytest.raises(ConfigError, match=says) as exc:
            parse_config(text, "c.yaml")
        assert [p.path.split(".")[0] for p in exc.value.problems] == ["alertmanager"]
        assert "s3cr3t" not in str(exc.value)


def test_an_alertmanager_timeout_at_or_above_the_delivery_hold_is_refused():
    # A send slower than the hold would have its claim ended by the server and the group sent again by the engine
    # that took over: a live, slow Alertmanager would get every alert twice.
    from alerts.notify import DeliveryPolicy

    hold = DeliveryPolicy().hold_seconds
    assert parse_config(f"alertmanager: {{timeout_seconds: {hold - 0.5}}}").alertmanager.timeout_seconds == hold - 0.5
    with pytest.raises(ConfigError) as exc:
        parse_config(f"alertmanager:\n  timeout_seconds: {hold:g}\n", "c.yaml")
    [problem] = exc.value.problems
    assert (problem.line, problem.path) == (2, "alertmanager.timeout_seconds")
    assert f"must be below {hold:g} s" in problem.message and "sent again" in problem.message
