"""``kafka-health serve`` stops when asked: SIGTERM ends the process within the stated bound even while the alert
engine is stuck mid-cycle on a Prometheus that accepts connections and never answers, names what it abandoned, and a
second start in the same directory comes up (and stops) the same way."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from monitor.core.lifecycle import STOP_BOUND_SECONDS
from tests.conftest import wait_until

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


class BlackholePrometheus:
    """Accepts every connection and never sends a byte: a hung Prometheus."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self.sock.close()
        for c in self.accepted:
            c.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(config: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "monitor.cli", "serve", "--config", str(config), "--role", "api,alerts"],
        stdout=log.open("a"),
        stderr=subprocess.STDOUT,
        cwd=REPO,
    )


def test_serve_stops_within_the_bound_while_the_engine_waits_on_a_hung_prometheus(tmp_path):
    prom = BlackholePrometheus()
    port = _free_port()
    config = tmp_path / "kh.yaml"
    config.write_text(f"""
service: {{port: {port}}}
prometheus: {{url: "http://127.0.0.1:{prom.port}", timeout_seconds: 120}}
alertmanager: {{url: null}}
store: {{url: "sqlite:///{tmp_path / "kh.db"}"}}
rules: {{evaluation_interval_seconds: 1}}
clusters:
  - name: local
    bootstrap_servers: 127.0.0.1:1
    brokers: [{{id: 1}}]
""")
    log = tmp_path / "serve.log"
    try:
        for attempt in (1, 2):  # the second start, in the same directory and store, must come up and stop too
            proc = _start(config, log)
            try:
                wait_until(lambda: _healthy(port), 60, what=f"serve /healthz (start {attempt})")
                # The engine is inside a query that will not end for 120 s.
                wait_until(lambda: len(prom.accepted) >= attempt, 30, what="the engine to query Prometheus")
                t0 = time.monotonic()
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=STOP_BOUND_SECONDS + 15)  # TimeoutExpired is the failure: it did not stop
                took = time.monotonic() - t0
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            out = log.read_text()
            assert "abandoned" in out and "alerts" in out, out[-3000:]
            print(f"start {attempt}: stopped {took:.1f} s after SIGTERM")
    finally:
        prom.close()


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
