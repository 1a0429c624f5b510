"""`kafka-health rules export` output proven by the real promtool: `check rules` and `test rules`."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from monitor.core.config import DEFAULT_RUNBOOK_BASE_URL
from tests.integration.alerts_helpers import run_cli

pytestmark = pytest.mark.integration
HERE = Path(__file__).resolve().parents[1] / "promtool"
PROMTOOL = shutil.which("promtool")
RAW_VALUE = re.compile(r"\{\{\s*\$value\s*\}\}")  # {{ $value }} with no humanize function


def _export(tmp_path: Path, monkeypatch, capsys, *extra: str) -> Path:
    out = tmp_path / "rules.yml"
    rc, _, err = run_cli(
        monkeypatch, capsys, "rules", "export", "--out", str(out), "--dir", str(tmp_path / "no-stack"), *extra
    )
    assert rc == 0, err
    return out


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (apt-get install prometheus)")
def test_exported_rules_pass_promtool_check_and_unit_tests(tmp_path, monkeypatch, capsys):
    rules = _export(tmp_path, monkeypatch, capsys)
    check = subprocess.run([PROMTOOL, "check", "rules", str(rules)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    exported = _alerts(rules)
    assert {"KafkaBrokerUnreachable", "KafkaHealthWatchdog", "KafkaUnderMinIsrPartitions"} <= set(exported)
    assert "KafkaDiskFullRisk" not in exported  # Python-only detectors have no PromQL equivalent
    for name, rule in exported.items():  # the conventions: an absolute runbook link, the value in words
        assert rule["annotations"]["runbook_url"] == f"{DEFAULT_RUNBOOK_BASE_URL}#{name.lower()}"
        assert not RAW_VALUE.search(rule["annotations"]["summary"]), name
    _promtool_test(tmp_path, exported, "alerts_test.yml")


def _alerts(rules: Path) -> dict[str, dict]:
    return {r["alert"]: r for g in yaml.safe_load(rules.read_text())["groups"] for r in g["rules"] if "alert" in r}


def _promtool_test(tmp_path: Path, exported: dict[str, dict], cases_file: str) -> None:
    """``promtool test rules`` on tests/promtool/``cases_file`` beside the exported rules.yml, each expected alert
    given its rule's constant annotations (the cases state the rendered summary)."""
    cases = yaml.safe_load((HERE / cases_file).read_text())
    for test in cases["tests"]:
        for art in test.get("alert_rule_test", []):
            for exp in art.get("exp_alerts", []):
                constant = exported[art["alertname"]]["annotations"]
                exp["exp_annotations"] = {
                    **{k: v for k, v in constant.items() if k != "summary"},
                    **exp["exp_annotations"],
                }
    (tmp_path / cases_file).write_text(yaml.safe_dump(cases, sort_keys=False))
    res = subprocess.run([PROMTOOL, "test", "rules", cases_file], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed")
def test_exported_tenant_slo_rules_record_availability_and_burn_and_page_only_the_tenant_hurt(
    tmp_path, monkeypatch, capsys
):
    """The SLO recording rules and burn-rate alerts as exported, on hand-computed cases (tests/promtool/slo_test.yml):
    a probe failing on the broker leading one tenant's partitions pages that tenant only; minutes while the probe is
    down are unknown, not bad; offline and under-min-ISR partitions make minutes bad."""
    rules = _export(tmp_path, monkeypatch, capsys)
    groups = {g["name"]: g for g in yaml.safe_load(rules.read_text())["groups"]}
    records = [r["record"] for r in groups["kafka-health-tenant-slo"]["rules"]]
    for window in ("5m", "30m", "1h", "6h", "1d", "3d"):
        assert f"cluster_tenant:kafka_tenant_availability:ratio_{window}" in records
        assert f"cluster_tenant:kafka_tenant_slo_burn_rate:{window}" in records
    assert groups["kafka-health-tenant-slo"]["interval"] == "1m"
    _promtool_test(tmp_path, _alerts(rules), "slo_test.yml")


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed")
def test_export_applies_config_overrides(tmp_path, monkeypatch, capsys):
    cfg = tmp_path / "kh.yaml"
    cfg.write_text("""
rules:
  runbook_base_url: https://wiki.example/kafka/alerts
  overrides:
    KafkaUnderReplicatedPartitions: {threshold: 5, for_seconds: 300}
    KafkaGcPressure: {enabled: false}
""")
    exported = _export(tmp_path, monkeypatch, capsys, "--config", str(cfg))
    rules = yaml.safe_load(exported.read_text())["groups"][0]["rules"]
    urp = next(r for r in rules if r["alert"] == "KafkaUnderReplicatedPartitions")
    assert urp["expr"].endswith("> 5") and urp["for"] == "5m"
    assert not [r for r in rules if r["alert"] == "KafkaGcPressure"]
    assert urp["annotations"]["runbook_url"] == "https://wiki.example/kafka/alerts#kafkaunderreplicatedpartitions"
    assert urp["annotations"]["runbook"] == "docs/alerts.md#kafkaunderreplicatedpartitions"


def test_export_rejects_an_override_of_an_unknown_rule(tmp_path, monkeypatch, capsys):
    cfg = tmp_path / "kh.yaml"
    cfg.write_text("rules: {overrides: {KafkaNoSuchRule: {threshold: 1}}}\n")
    rc, out, err = run_cli(monkeypatch, capsys, "rules", "export", "--config", str(cfg))
    assert rc == 2 and "KafkaNoSuchRule" in err and "no such rule" in err and not out
