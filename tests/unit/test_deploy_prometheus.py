"""deploy/prometheus: promtool accepts the configs and rules, the recording rules compute what the archive reads,
and they name only metrics kafka-health exports."""

from __future__ import annotations

import shutil

import pytest
import yaml

from alerts.rules import export_prometheus, load_rules
from dashboards.catalog import is_known, known_metrics
from dashboards.promql import metric_names
from tests.unit._deploy import DEPLOY, collectors_catalog, run, tool

pytestmark = pytest.mark.unit

PROM = DEPLOY / "prometheus"
RECORDING = PROM / "rules" / "kafka-health-recording.yml"
CONFIGS = ("prometheus.yml", "prometheus.kubernetes.yml")


def _recording_rules() -> list[dict]:
    return [r for g in yaml.safe_load(RECORDING.read_text())["groups"] for r in g["rules"]]


def _exported_alert_rules() -> str:
    """What `kafka-health rules export` writes."""
    return export_prometheus(load_rules())


def test_recording_rules_pass_promtool():
    res = run([tool("promtool", "prometheus"), "check", "rules", str(RECORDING)])
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"SUCCESS: {len(_recording_rules())} rules found" in res.stdout


@pytest.mark.parametrize("name", CONFIGS)
def test_config_passes_promtool_with_the_exported_alert_rules(tmp_path, name):
    config = yaml.safe_load((PROM / name).read_text())
    # Both configs load the recording rules and the file `kafka-health rules export` writes.
    assert [p.rsplit("/", 1)[-1] for p in config["rule_files"]] == [
        "kafka-health-recording.yml",
        "kafka-health-alerts.yml",
    ]
    shutil.copy(PROM / name, tmp_path / name)
    shutil.copytree(PROM / "rules", tmp_path / "rules")
    exported = _exported_alert_rules()
    assert yaml.safe_load(exported)["groups"], "the export holds no rule group"
    (tmp_path / "rules" / "kafka-health-alerts.yml").write_text(exported)
    text = (tmp_path / name).read_text().replace("/etc/prometheus/rules/", "rules/")
    (tmp_path / name).write_text(text)
    # The operator token Prometheus scrapes the API process with (a secret the operator provides; promtool wants it).
    for job in yaml.safe_load(text)["scrape_configs"]:
        token = job.get("authorization", {}).get("credentials_file")
        if token:
            assert not token.startswith("/"), "a relative path: resolved beside the config file"
            (tmp_path / token).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / token).write_text("kh_0123456789ab_secret")
    res = run([tool("promtool", "prometheus"), "check", "config", name], cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS: 2 rule files found" in res.stdout


def test_every_scrape_job_keeps_the_collectors_labels():
    for name in CONFIGS:
        config = yaml.safe_load((PROM / name).read_text())
        jobs = [j for j in config["scrape_configs"] if j["job_name"].startswith("kafka-health")]
        assert jobs and all(j.get("honor_labels") is True for j in jobs), name


def test_recording_rules_compute_the_archive_series(tmp_path):
    """promtool's rule unit test: known input series in, the recorded values out."""
    test = {
        "rule_files": [str(RECORDING)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    # two brokers each take 60 bytes/s of topic t1
                    {
                        "series": 'kafka_topic_bytes_in_total{cluster="c", broker="1", topic="t1", tenant="a"}',
                        "values": "0+3600x10",
                    },
                    {
                        "series": 'kafka_topic_bytes_in_total{cluster="c", broker="2", topic="t1", tenant="a"}',
                        "values": "0+3600x10",
                    },
                    {
                        "series": 'kafka_topic_log_size_bytes{cluster="c", broker="1", topic="t1", tenant="a"}',
                        "values": "100x10",
                    },
                    {
                        "series": 'kafka_topic_log_size_bytes{cluster="c", broker="2", topic="t1", tenant="a"}',
                        "values": "150x10",
                    },
                    {
                        "series": 'kafka_client_produce_throttle_time_seconds{cluster="c", broker="1", user="u", '
                        'client_id="p", tenant="a"}',
                        "values": "0.2x10",
                    },
                    {
                        "series": 'kafka_client_fetch_throttle_time_seconds{cluster="c", broker="1", user="u", '
                        'client_id="p", tenant="a"}',
                        "values": "0.5x10",
                    },
                    {
                        "series": 'kafka_client_request_throttle_time_seconds{cluster="c", broker="2", user="u", '
                        'client_id="p", tenant="a"}',
                        "values": "0.1x10",
                    },
                    {
                        "series": 'kafka_broker_request_latency_seconds{cluster="c", broker="1", request="Produce", '
                        'phase="total", quantile="0.99"}',
                        "values": "0.02x10",
                    },
                    {
                        "series": 'kafka_broker_request_latency_seconds{cluster="c", broker="1", request="Produce", '
                        'phase="local", quantile="0.99"}',
                        "values": "0.01x10",
                    },
                    # broker 1's two log dirs on one device: one row of it; broker 3 without a device label: summed
                    {
                        "series": 'kafka_host_filesystem_size_bytes{cluster="c", host="h", broker="1", path="/a", '
                        'device="8:1"}',
                        "values": "1000x10",
                    },
                    {
                        "series": 'kafka_host_filesystem_size_bytes{cluster="c", host="h", broker="1", path="/b", '
                        'device="8:1"}',
                        "values": "1000x10",
                    },
                    {
                        "series": 'kafka_host_filesystem_size_bytes{cluster="c", host="h3", broker="3", path="/a"}',
                        "values": "500x10",
                    },
                    {
                        "series": 'kafka_host_filesystem_size_bytes{cluster="c", host="h3", broker="3", path="/b"}',
                        "values": "700x10",
                    },
                ],
                "promql_expr_test": [
                    {
                        "expr": "kafka_health_archive:topic_bytes_in_rate",
                        "eval_time": "5m",
                        "exp_samples": [
                            {
                                "labels": 'kafka_health_archive:topic_bytes_in_rate{cluster="c", topic="t1"}',
                                "value": 120,
                            }
                        ],
                    },
                    {
                        "expr": "kafka_health_archive:topic_size_bytes",
                        "eval_time": "5m",
                        "exp_samples": [
                            {"labels": 'kafka_health_archive:topic_size_bytes{cluster="c", topic="t1"}', "value": 250}
                        ],
                    },
                    {
                        "expr": "kafka_health_archive:client_throttle_seconds",
                        "eval_time": "5m",
                        "exp_samples": [
                            {
                                "labels": 'kafka_health_archive:client_throttle_seconds{cluster="c", user="u", '
                                'client_id="p"}',
                                "value": 0.5,
                            }
                        ],
                    },
                    {
                        "expr": "kafka_health_archive:broker_produce_p99_seconds",
                        "eval_time": "5m",
                        "exp_samples": [
                            {
                                "labels": 'kafka_health_archive:broker_produce_p99_seconds{cluster="c", broker="1"}',
                                "value": 0.02,
                            }
                        ],
                    },
                    {
                        "expr": "kafka_health_archive:host_filesystem_size_bytes",
                        "eval_time": "5m",
                        "exp_samples": [
                            {
                                "labels": 'kafka_health_archive:host_filesystem_size_bytes{cluster="c", host="h", '
                                'broker="1", '
                                'device="8:1"}',
                                "value": 1000,
                            },
                            {
                                "labels": 'kafka_health_archive:host_filesystem_size_bytes{cluster="c", host="h3", '
                                'broker="3"}',
                                "value": 1200,
                            },
                        ],
                    },
                    {
                        "expr": "cluster_tenant:kafka_topic_bytes_in:rate2m",
                        "eval_time": "5m",
                        "exp_samples": [
                            {
                                "labels": 'cluster_tenant:kafka_topic_bytes_in:rate2m{cluster="c", tenant="a"}',
                                "value": 120,
                            }
                        ],
                    },
                ],
            }
        ],
    }
    path = tmp_path / "recording_test.yml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    res = run([tool("promtool", "prometheus"), "test", "rules", str(path)])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


def test_recording_rules_name_only_exported_metrics():
    known = known_metrics(collectors_catalog())
    unknown = {(r["record"], m) for r in _recording_rules() for m in metric_names(r["expr"]) if not is_known(m, known)}
    assert not unknown, f"recording rules read metrics no collector exports: {sorted(unknown)}"


def test_archive_records_are_series_of_the_archive():
    """Every kafka_health_archive:<name> record is a series the archive copies (monitor/archive/series.py)."""
    from monitor.archive import series

    recorded = {
        r["record"].split(":", 1)[1] for r in _recording_rules() if r["record"].startswith("kafka_health_archive:")
    }
    assert recorded and recorded <= set(series.BY_NAME), sorted(recorded - set(series.BY_NAME))
