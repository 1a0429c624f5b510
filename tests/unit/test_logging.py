"""The console script's logging: library loggers at WARNING whatever the level, -v / --log-level / --log-format on
the top parser and after any command, JSON lines (one object per line: time, level, logger, message) for log
shippers, and no secret-looking value in a line of either format."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from monitor.cli import build_parser
from monitor.core.logs import LIBRARY_LOGGERS, configure_logging
from tests.conftest import _free_port

pytestmark = pytest.mark.unit
SECRET = "s3cr3t-XYZ"
TOKEN = "kh_0123456789ab_" + "Q" * 43


@pytest.fixture
def restore_logging():
    """configure_logging changes the root logger and the library loggers: put them back for the other tests."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in LIBRARY_LOGGERS}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, lvl in levels.items():
        logging.getLogger(name).setLevel(lvl)


def _lines(level: str, fmt: str) -> list[str]:
    out = io.StringIO()
    configure_logging(level, fmt, stream=out)
    logging.getLogger("monitor.serve").info("serving on %s", "http://127.0.0.1:8080")
    logging.getLogger("monitor.serve").debug("a debug detail")
    logging.getLogger("httpx").info('HTTP Request: POST http://prometheus:9090/api/v1/query "HTTP/1.1 200 OK"')
    logging.getLogger("uvicorn.error").info("Started server process [1]")
    logging.getLogger("alerts.notify").warning(
        "delivery to http://am:%s@alertmanager:9093/api/v2/alerts?token=%s failed", SECRET, SECRET
    )
    logging.getLogger("monitor.api.auth").warning("refused Authorization: Bearer %s and %s", SECRET, TOKEN)
    logging.getLogger("collectors.admin").error("settings sasl.password=%s refused", SECRET)
    try:
        raise RuntimeError(f"cannot reach http://u:{SECRET}@db:5432/x")
    except RuntimeError:
        logging.getLogger("monitor.store").exception("store down")
    return out.getvalue().splitlines()


def test_json_lines_are_one_object_each_with_level_logger_and_message(restore_logging):
    lines = _lines("info", "json")
    docs = [json.loads(line) for line in lines]  # every line parses alone: a traceback stays inside its record
    assert all({"time", "level", "logger", "message"} <= d.keys() for d in docs)
    assert [(d["level"], d["logger"]) for d in docs] == [
        ("info", "monitor.serve"),
        ("warning", "alerts.notify"),
        ("warning", "monitor.api.auth"),
        ("error", "collectors.admin"),
        ("error", "monitor.store"),
    ]
    assert docs[0]["message"] == "serving on http://127.0.0.1:8080"
    assert "RuntimeError" in docs[-1]["exception"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", docs[0]["time"])


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_no_secret_looking_value_reaches_a_line(restore_logging, fmt):
    text = "\n".join(_lines("debug", fmt))
    assert "a debug detail" in text  # the level asked for our code...
    assert "HTTP Request" not in text and "Started server process" not in text  # ...libraries stay at WARNING
    assert SECRET not in text and TOKEN not in text
    assert "kh_0123456789ab_***" in text and "Bearer ***" in text and "sasl.password=***" in text


@pytest.mark.parametrize(
    "argv, level, fmt",
    [
        (["serve"], "info", "text"),
        (["-v", "serve"], None, "text"),
        (["serve", "-v"], None, "text"),
        (["--log-format", "json", "serve"], "info", "json"),
        (["serve", "--log-level", "WARNING", "--log-format", "json"], "warning", "json"),
        (["--log-level", "error", "stack", "status"], "error", "text"),
        (["stack", "status", "--log-format", "json"], "info", "json"),
    ],
)
def test_the_options_work_before_and_after_the_command(argv, level, fmt):
    args = build_parser().parse_args(argv)
    assert (args.verbose or args.log_level == level) and args.log_format == fmt


def test_serve_writes_json_lines_from_its_first_to_its_last(tmp_path):
    """The real console script: uvicorn's records go through the same handler (no line of another format)."""
    cfg = tmp_path / "kh.yaml"
    cfg.write_text(
        f"clusters: [{{name: c1, bootstrap_servers: '127.0.0.1:1', brokers: [{{id: 1}}]}}]\n"
        f"store: {{url: 'sqlite:///{tmp_path / 'kh.db'}'}}\n"
    )
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monitor.cli",
            "serve",
            "--log-format",
            "json",
            "--role",
            "collector",
            "--port",
            str(port),
            "--config",
            str(cfg),
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    lines = [line for line in err.splitlines() if line.strip()]
    docs = [json.loads(line) for line in lines]  # raises on the first line that is not one JSON object
    assert any(d["logger"] == "monitor.serve" and "serving on" in d["message"] for d in docs), lines


def test_the_deployed_services_log_json_lines():
    """The Kubernetes and systemd service command lines ask for JSON and parse with the real parser."""
    import yaml

    from tests.harness import REPO_ROOT

    argvs = []
    for doc in yaml.safe_load_all((REPO_ROOT / "deploy" / "kubernetes" / "30-deployment.yaml").read_text()):
        for c in (doc or {}).get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
            argvs.append([a.replace("$(", "").replace(")", "") for a in c["args"]])
    for unit in ("kafka-health.service", "kafka-health-collector@.service"):
        line = next(
            x for x in (REPO_ROOT / "deploy" / "systemd" / unit).read_text().splitlines() if x.startswith("ExecStart=")
        )
        argvs.append(re.search(r"kafka-health (.*? serve)\b", line).group(1).split())  # options, the command
    assert len(argvs) == 3
    for argv in argvs:
        assert build_parser().parse_args(argv).log_format == "json", argv


def test_the_demo_console_shows_our_errors_and_leaves_kafka_pythons_to_the_file(restore_logging, tmp_path):
    """kafka-python logs a timed-out request at ERROR although the round handles and reports it; on the demo's
    console (divert_to_file) that line was noise between the URLs and tokens. The file keeps it."""
    from monitor.core.logs import divert_to_file

    console = io.StringIO()
    configure_logging("info", "text", stream=console)
    file_handler = divert_to_file(tmp_path / "demo.log")
    try:
        logging.getLogger("kafka.net.connection").error("RequestTimedOutError: Request timed out after 108 ms")
        logging.getLogger("collectors.admin").error("the Admin client process died")
        logging.getLogger("kafka").critical("a fatal library error")
    finally:
        logging.getLogger().removeHandler(file_handler)
        file_handler.close()
    shown = console.getvalue()
    assert "the Admin client process died" in shown and "a fatal library error" in shown
    assert "Request timed out" not in shown
    assert "Request timed out after 108 ms" in (tmp_path / "demo.log").read_text()
