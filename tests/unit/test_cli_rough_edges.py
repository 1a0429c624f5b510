"""The CLI rough edges a platform team notices on day one (issue 16, point 4), and the packaging conventions of
point 5 that are checked without building a wheel: ``--version``; argparse's exit 2 for a bad ``--kafka-version``,
``--role`` or ``--port-base``; ``check-config`` refusing duplicate keys and unknown rule overrides with file:line;
``--json`` on the list and status commands; the service's app started and stopped through a lifespan (no deprecated
``on_event``), the API's store watch included; the license as an SPDX string with its text shipped."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from monitor import __version__
from monitor.cli import main
from monitor.core.config import parse_config
from monitor.core.errors import ConfigError
from monitor.core.kafka_versions import DEFAULT_RELEASE

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """No command here may read or write the user's ~/.kafka-health, nor a config named by the environment."""
    monkeypatch.delenv("KAFKA_HEALTH_CONFIG", raising=False)
    monkeypatch.setenv("KAFKA_HEALTH_STACK_DIR", str(tmp_path / "stack"))


def _exit_code(capsys, *argv) -> tuple[int, str, str]:
    """The exit code of ``kafka-health argv`` whether it returns or exits, with what it printed."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


# --- --version ---------------------------------------------------------------------------------------------------


def test_version_prints_the_package_version_and_exits_0(capsys):
    code, out, _ = _exit_code(capsys, "--version")
    assert (code, out.strip()) == (0, f"kafka-health {__version__}")


def test_version_from_the_console_script_process():
    done = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "--version"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, f"kafka-health {__version__}", "")


# --- bad option values: argparse's usage error, exit 2 -----------------------------------------------------------


@pytest.mark.parametrize(
    "argv, complaint",
    [
        (["stack", "status", "--kafka-version", "9.9"], "--kafka-version"),
        (["tenants", "list", "--kafka-version", "latest"], "--kafka-version"),
        (["check-config", "--kafka-version", "2.8"], "--kafka-version"),
        (["stack", "status", "--port-base", "80"], "--port-base"),
        (["serve", "--role", "api,bogus"], "--role"),
        (["serve", "--role", ""], "--role"),
    ],
)
def test_bad_option_values_are_usage_errors(capsys, argv, complaint):
    code, out, err = _exit_code(capsys, *argv)
    assert code == 2
    assert err.startswith("usage: kafka-health ")
    assert f"argument {complaint}" in err and "Traceback" not in err
    assert out == ""


def test_good_kafka_version_aliases_still_accepted(capsys, tmp_path):
    code, out, _ = _exit_code(capsys, "stack", "status", "--kafka-version", "3.9", "--dir", str(tmp_path / "s"))
    assert code == 3  # nothing running, but the option was taken
    assert "(Kafka 3.9.1, sasl_ssl, profile jolokia)" in out  # a new stack dir is secured, on the default profile


# --- check-config: duplicate keys, unknown rule overrides --------------------------------------------------------

CLUSTER = """clusters:
  - name: main
    bootstrap_servers: 127.0.0.1:9092
"""


def test_parse_config_refuses_duplicate_keys_with_their_lines():
    text = (
        CLUSTER
        + """prometheus:
  url: http://127.0.0.1:9090
  url: http://127.0.0.1:9091
lake: {path: a}
lake: {path: b}
"""
    )
    with pytest.raises(ConfigError) as exc:
        parse_config(text, "kh.yaml")
    assert [str(p) for p in exc.value.problems] == [
        "kh.yaml:6: prometheus.url: duplicate key (first at line 5); YAML keeps only the last",
        "kh.yaml:8: lake: duplicate key (first at line 7); YAML keeps only the last",
    ]


def test_parse_config_refuses_duplicates_in_lists_and_reports_other_problems_too():
    text = """clusters:
  - name: main
    bootstrap_servers: 127.0.0.1:9092
    name: other
service: {port: 0}
"""
    with pytest.raises(ConfigError) as exc:
        parse_config(text, "kh.yaml")
    problems = [str(p) for p in exc.value.problems]
    assert "kh.yaml:4: clusters[0].name: duplicate key (first at line 2); YAML keeps only the last" in problems
    assert any(p.startswith("kh.yaml:5: service.port: ") for p in problems)


def test_parse_config_accepts_the_same_key_in_different_mappings():
    cfg = parse_config(
        CLUSTER
        + """  - name: second
    bootstrap_servers: 127.0.0.1:9093
"""
    )
    assert [c.name for c in cfg.clusters] == ["main", "second"]


def test_check_config_refuses_duplicate_keys(capsys, tmp_path):
    path = tmp_path / "kh.yaml"
    path.write_text(CLUSTER + "lake: {path: a}\nlake: {path: b}\n")
    code, out, err = _exit_code(capsys, "check-config", str(path))
    assert code == 2 and "ok" not in out
    assert f"error: {path}:5: lake: duplicate key (first at line 4)" in err


def test_check_config_refuses_unknown_rule_overrides_with_their_lines(capsys, tmp_path):
    path = tmp_path / "kh.yaml"
    path.write_text(
        CLUSTER
        + """rules:
  overrides:
    KafkaUnderReplicatedPartitions: {for_seconds: 60}
    KafkaNoSuchRule: {threshold: 1}
    KafkaNeither: {enabled: false}
"""
    )
    code, out, err = _exit_code(capsys, "check-config", str(path))
    assert code == 2 and "ok" not in out
    assert err.splitlines() == [
        f"error: {path}:8: rules.overrides.KafkaNeither: no such rule",
        f"error: {path}:7: rules.overrides.KafkaNoSuchRule: no such rule",
    ]


def test_check_config_refuses_an_override_parameter_the_rule_lacks(capsys, tmp_path):
    path = tmp_path / "kh.yaml"
    path.write_text(
        CLUSTER
        + """rules:
  overrides:
    KafkaUnderReplicatedPartitions:
      for_seconds: 60
      critical: 3
"""
    )
    code, _, err = _exit_code(capsys, "check-config", str(path))
    assert code == 2
    assert re.fullmatch(
        rf"error: {re.escape(str(path))}:8: "
        r"rules\.overrides\.KafkaUnderReplicatedPartitions\.critical: "
        r"rule has no 'critical' parameter .*\n",
        err,
    )


def test_check_config_still_accepts_known_overrides(capsys, tmp_path):
    path = tmp_path / "kh.yaml"
    path.write_text(CLUSTER + "rules:\n  overrides:\n    KafkaUnderReplicatedPartitions: {for_seconds: 60}\n")
    code, out, err = _exit_code(capsys, "check-config", str(path))
    assert (code, err) == (0, "")
    assert out.startswith(f"{path}: ok (1 cluster(s)")


# --- --json on list and status commands --------------------------------------------------------------------------


@pytest.fixture
def cfg(tmp_path) -> str:
    path = tmp_path / "kh.yaml"
    path.write_text(
        CLUSTER
        + f"""tenants:
  - name: acme
    selectors: [{{cluster: main, topic_prefixes: [acme.]}}]
store: {{url: 'sqlite:///{tmp_path / "kh.db"}'}}
"""
    )
    return str(path)


def test_tenants_list_json(capsys, cfg):
    assert _exit_code(capsys, "tenants", "create", "globex", "--topic-prefix", "main:globex.", "--config", cfg)[0] == 0
    code, out, _ = _exit_code(capsys, "tenants", "list", "--json", "--config", cfg)
    rows = json.loads(out)
    assert code == 0
    assert [(r["name"], r["source"], r["selectors"][0]["topic_prefixes"]) for r in rows] == [
        ("acme", "config", ["acme."]),
        ("globex", "api", ["globex."]),
    ]


def test_silences_list_json(capsys, cfg):
    code, out, _ = _exit_code(
        capsys,
        "silences",
        "create",
        "alertname=KafkaDiskFullRisk",
        "broker=~1|2",
        "--duration",
        "1h",
        "--comment",
        "maintenance",
        "--config",
        cfg,
    )
    assert code == 0
    silence_id = out.strip()
    code, out, _ = _exit_code(capsys, "silences", "list", "--json", "--config", cfg)
    (row,) = json.loads(out)
    assert code == 0
    assert (row["id"], row["state"], row["comment"]) == (silence_id, "active", "maintenance")
    assert [(m["name"], m["value"], m["is_regex"]) for m in row["matchers"]] == [
        ("alertname", "KafkaDiskFullRisk", False),
        ("broker", "1|2", True),
    ]


def test_stack_status_json(capsys, tmp_path):
    code, out, _ = _exit_code(capsys, "stack", "status", "--json", "--dir", str(tmp_path / "s"), "--port-base", "31000")
    doc = json.loads(out)
    assert code == 3  # not running: the same exit code as the table
    assert doc["healthy"] is False
    assert [c["name"] for c in doc["components"]][:2] == ["controller", "broker-1"]
    assert all(c["pid"] is None and c["healthy"] is False for c in doc["components"])
    assert doc["components"][0]["ports"] and doc["components"][0]["detail"] == "not running"
    assert doc["kafka_version"] == DEFAULT_RELEASE.version  # the current release by default
    assert doc["bootstrap_servers"].startswith("127.0.0.1:310")
    assert doc["prometheus_url"].startswith("http://127.0.0.1:310")
    assert doc["dir"] == str((tmp_path / "s").resolve())


# --- serve: a lifespan, not the deprecated on_event --------------------------------------------------------------


def test_serve_app_starts_and_stops_its_components_and_the_store_watch_through_a_lifespan(tmp_path):
    from monitor.serve import build_app

    config = parse_config(CLUSTER + f"store: {{url: 'sqlite:///{tmp_path / 'kh.db'}'}}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # on_event / add_event_handler are deprecated
        app = build_app(config, ("api",))
    (presence,) = app.state.components
    watch = app.state.store_watch
    assert watch._thread is None and presence._thread is None
    with TestClient(app) as client:
        assert watch._thread is not None and watch._thread.is_alive()
        assert presence._thread is not None and presence._thread.is_alive()
        assert client.get("/readyz").json() == {"ready": True, "components": {"presence": True}}
    assert watch._thread is None  # stopped on shutdown
    assert presence._stop.is_set() and not presence._thread.is_alive()


# --- packaging: license, dependencies ----------------------------------------------------------------------------


def test_license_is_an_spdx_expression_and_its_text_ships():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert "LICENSE" in project["license-files"]
    text = (REPO / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_every_declared_dependency_is_imported_somewhere():
    """A dependency nobody imports is weight in every install (pandas was one)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=!\[ ;]", d, maxsplit=1)[0].lower() for d in project["dependencies"]]
    imports = {
        "confluent-kafka": "confluent_kafka",
        "prometheus-client": "prometheus_client",
        "pyyaml": "yaml",
        "google-re2": "re2",
        "uvicorn": "uvicorn",
        "kafka-python": "kafka",
    }
    sources = "\n".join(
        p.read_text() for pkg in ("monitor", "collectors", "alerts", "dashboards") for p in (REPO / pkg).rglob("*.py")
    )
    for name in names:
        module = imports.get(name, name.replace("-", "_"))
        assert re.search(rf"^\s*(from|import)\s+{module}\b", sources, re.M), f"{name} is declared, never imported"


def test_a_bad_report_week_is_a_usage_error_before_spark_starts(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["report", "--week", "2026-47"])
    assert exc.value.code == 2 and "week must look like 2026-W47" in capsys.readouterr().err


def test_a_store_in_a_missing_directory_is_one_error_line(tmp_path, capsys):
    cfg = tmp_path / "kh.yaml"
    cfg.write_text(f"store: {{url: 'sqlite:///{tmp_path / 'nowhere' / 'kh.db'}'}}\n")
    assert main(["tenants", "list", "--config", str(cfg)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "does not exist" in err and "Traceback" not in err
