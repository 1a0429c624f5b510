"""The demo and ``stack`` commands without a running stack: what the demo prints (every printed command is a real one),
the config file it writes, and the bad inputs that must end in one line and a non-zero exit, never a traceback."""

import io
import shlex
import socket
import subprocess
import sys
import threading
import time
from datetime import date, datetime
from pathlib import Path

import pytest

from monitor.cli import build_parser, main
from monitor.core.config import load_config
from monitor.core.errors import ComponentFailed, StackError
from monitor.demo.console import Console, demo_text, status_text
from monitor.demo.lifecycle import _wait_ready
from monitor.demo.story import DEMO_TENANTS, STORY_WINDOW
from monitor.loadgen import ensure_topics
from monitor.stack import Stack
from monitor.stack.kafka import jolokia_port
from monitor.stack.layout import StackLayout
from tests.harness import REPO_ROOT

pytestmark = pytest.mark.unit

TOKENS = {"operator": ("1", "kh_operator_secret"), "payments": ("2", "kh_payments_secret")}


def _run_cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", *argv], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT
    )


def _closed_port() -> int:
    """A loopback port nothing listens on (bound and released: the kernel does not hand it out again at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lines(text: str, marker: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if marker in line]


# --- what the demo prints -------------------------------------------------------------------------------------------


def test_demo_text_shows_every_capability_with_the_right_token(tmp_path):
    L = StackLayout(dir=tmp_path, port_base=30000)
    text = demo_text(
        L, TOKENS, L.config_file, today=date(2026, 11, 18), cli="kafka-health", log_file=L.logs_dir / "demo.log"
    )
    pay, op = "Bearer kh_payments_secret", "Bearer kh_operator_secret"
    url = "http://127.0.0.1:30030"
    expected = {  # endpoint -> the token that may call it
        f"{url}/api/v1/tenants/payments/health": pay,
        f'{url}/api/v1/tenants/payments/advice?window={STORY_WINDOW}"': pay,  # the story's alert's window
        f"{url}/api/v1/tenants/payments/reports": pay,
        f"{url}/api/v1/tenants/payments/reports/2026-W47": pay,
        f"{url}/api/v1/clusters/local/capacity": op,
        f"{url}/api/v1/alerts": op,
    }
    curls = _lines(text, "curl ")
    for endpoint, token in expected.items():
        line = next((c for c in curls if c.split(" > ")[0].endswith(endpoint)), None)
        assert line is not None, f"no curl for {endpoint} in:\n{text}"
        assert token in line
    # The e2e test and users read the tokens from these lines.
    assert "tenant payments: kh_payments_secret" in _lines(text, "tenant payments:")
    assert f"Config (YAML):           {L.config_file}" in text
    assert f"{L.logs_dir / 'demo.log'} (the console shows errors only)" in text
    assert text.strip().splitlines()[-1].startswith("Story: calm for 60 s, then tenant payments starts")
    # Grafana: the dashboards and the provisioning the text points at exist in the checkout.
    assert f"{REPO_ROOT / 'dashboards' / 'json'}/*.json" in text
    assert list((REPO_ROOT / "dashboards" / "json").glob("*.json"))
    assert f"{REPO_ROOT / 'deploy' / 'grafana' / 'provisioning'}/" in text
    assert (REPO_ROOT / "deploy" / "grafana" / "provisioning" / "dashboards").is_dir()


def test_printed_archive_and_report_commands_are_real_commands_on_the_demo_config(tmp_path):
    L = StackLayout(dir=tmp_path / "stack dir", port_base=30000)  # a space: the commands must quote the path
    text = demo_text(
        L, TOKENS, L.config_file, today=date(2026, 11, 18), cli="kafka-health", log_file=L.logs_dir / "demo.log"
    )
    archive = shlex.split(next(line for line in _lines(text, "kafka-health archive")))
    report = shlex.split(next(line for line in _lines(text, "kafka-health report")))
    parser = build_parser()
    a = parser.parse_args(archive[1:])
    assert a.command == "archive" and a.config == str(L.config_file)
    assert (a.start.date().isoformat(), a.end.date().isoformat()) == ("2026-11-18", "2026-11-19")
    r = parser.parse_args(report[1:])
    assert r.command == "report" and r.config == str(L.config_file) and r.week == "2026-W47"


def test_printed_week_is_the_iso_week_across_a_year_boundary(tmp_path):
    L = StackLayout(dir=tmp_path)
    text = demo_text(
        L, TOKENS, L.config_file, today=date(2027, 1, 1), cli="kafka-health", log_file=L.logs_dir / "demo.log"
    )  # a Friday of 2026-W53
    assert "--week 2026-W53" in text and "--from 2027-01-01 --to 2027-01-02" in text


def test_status_line_names_firing_alerts_but_the_watchdog_and_counts_tenants_and_clients():
    now = datetime(2026, 11, 18, 12, 3, 4)
    firing = [
        {"alertname": "KafkaHealthWatchdog", "labels": {}},
        {
            "alertname": "KafkaClientHurtsOtherTenants",
            "labels": {"tenant": "payments", "client_id": "payments-batch-import"},
        },
    ]
    assert status_text(firing, 2, 5, 0, now=now) == (
        "12:03:04 | alerts firing: 1 (KafkaClientHurtsOtherTenants "
        "payments/payments-batch-import) | tenants: 2 | clients: 5"
    )
    assert (
        status_text(None, None, 4, 1, now=now)
        == "12:03:04 | alerts: API not answering | tenants: ? | clients: 4 | log: 1 warning"
    )


def test_console_redraws_the_status_in_place_on_a_terminal_and_rarely_prints_it_elsewhere():
    tty = io.StringIO()
    c = Console(tty, tty=True)
    c.status("s1")
    c.say("event")
    c.status("s2")
    assert tty.getvalue() == "s1\r\x1b[2Kevent\ns1\r\x1b[2Ks2"
    t = [0.0]
    pipe = io.StringIO()
    c = Console(pipe, tty=False, every=30, clock=lambda: t[0])
    for t[0] in (0, 10, 29, 30, 45, 61):
        c.status(f"s{t[0]:g}")
    c.say("event")
    assert pipe.getvalue().splitlines() == ["s0", "s30", "s61", "event"]


def test_calm_demo_says_so_and_the_story_is_the_default():
    assert build_parser().parse_args(["demo", "--calm"]).calm and not build_parser().parse_args(["demo"]).calm
    L = StackLayout(dir=Path("/tmp/x"))
    text = demo_text(
        L,
        TOKENS,
        L.config_file,
        today=date(2026, 11, 18),
        cli="kafka-health",
        log_file=L.logs_dir / "demo.log",
        calm=True,
    )
    assert text.strip().splitlines()[-1].startswith("Story: none (--calm)")


# --- the config file the demo writes ----------------------------------------------------------------------------------


def test_written_config_is_the_demo_config_and_passes_check_config(tmp_path, capsys):
    stack = Stack(StackLayout(dir=tmp_path, port_base=30000))
    config = stack.config(tenants=DEMO_TENANTS)
    path = stack.write_config(config)
    assert path == tmp_path / "kafka-health.yaml"
    assert load_config(path) == config
    assert main(["check-config", str(path)]) == 0
    assert "ok (1 cluster(s), 3 broker target(s), 2 tenant(s))" in capsys.readouterr().out
    assert not list(tmp_path.glob("*.tmp"))


def test_config_in_an_unusable_dir_is_a_stack_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    stack = Stack(StackLayout(dir=blocker))
    with pytest.raises(StackError, match="cannot write the config file"):
        stack.write_config(stack.config())


# --- bad input: one line, non-zero exit, nothing started --------------------------------------------------------------


@pytest.mark.parametrize("where", ["under-a-file", "is-a-file", "read-only"])
def test_stack_up_on_an_unusable_dir_is_one_line(tmp_path, where):
    blocker = tmp_path / "file"
    blocker.write_text("")
    target = {"under-a-file": blocker / "stack", "is-a-file": blocker, "read-only": Path("/proc/kafka-health-x")}[where]
    r = _run_cli("stack", "up", "--dir", str(target), "--port-base", "31000")  # fails before any port
    assert r.returncode == 1, r
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot use {target} as the stack directory"), r.stderr
    assert "pick another --dir" in lines[0]


def test_demo_on_an_unusable_dir_is_one_line_and_starts_nothing(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = _run_cli("demo", "--dir", str(blocker / "stack"), "--port-base", "31000")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().startswith("error: cannot use") and len(r.stderr.strip().splitlines()) == 1
    assert "starting the local stack" not in r.stdout


def test_demo_with_its_service_port_taken_names_the_port_and_starts_nothing(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        service_port = s.getsockname()[1]
        if service_port - 30 < 1024:
            pytest.skip("ephemeral port too low for a port base")
        r = _run_cli("demo", "--dir", str(tmp_path / "stack"), "--port-base", str(service_port - 30))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("error: ") and str(service_port) in line and "--port-base" in line
    assert r.stdout == "" and not (tmp_path / "stack").exists()


def test_wait_ready_names_the_service_when_it_died_or_never_answered():
    dead = threading.Thread(target=lambda: None)
    dead.start()
    dead.join()
    port = _closed_port()
    with pytest.raises(ComponentFailed, match=f"service failed: stopped during start-up on port {port}"):
        _wait_ready(f"http://127.0.0.1:{port}", port, dead)
    alive = threading.Thread(target=time.sleep, args=(3,), daemon=True)
    alive.start()
    with pytest.raises(ComponentFailed, match="did not answer .*/healthz within 1s"):
        _wait_ready(f"http://127.0.0.1:{port}", port, alive, timeout=1)


def test_ensure_topics_without_a_cluster_is_a_stack_error():
    bootstrap = f"127.0.0.1:{_closed_port()}"
    t0 = time.monotonic()
    with pytest.raises(StackError, match=f"Kafka at {bootstrap} did not answer: .*_TRANSPORT"):
        ensure_topics(bootstrap, ["payments.orders"], timeout=1)
    assert time.monotonic() - t0 < 10


# --- ports ------------------------------------------------------------------------------------------------------------


def test_every_port_is_distinct_and_jolokia_and_client_ports_are_listed():
    L = StackLayout(dir=Path("/tmp/x"), port_base=30000, client_listener_host="10.9.0.1")
    ports = L.all_ports()
    assert len(set(ports.values())) == len(ports)
    assert (
        [ports[f"broker-{b}-jolokia"] for b in (1, 2, 3)]
        == [jolokia_port(L, b) for b in (1, 2, 3)]
        == [30041, 30042, 30043]
    )
    assert [ports[f"broker-{b}-clients"] for b in (1, 2, 3)] == [30061, 30062, 30063]
    assert ports["service"] == 30030
    assert "broker-1-clients" not in StackLayout(dir=Path("/tmp/x")).all_ports()
