"""Helpers for the alert engine's integration tests: a real local HTTP webhook receiver, an in-memory source, and
the real collectors run against a stack."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import yaml

from monitor.core.metric_names import M
from monitor.core.prom import InstantSample


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebhookReceiver:
    """A real HTTP server on loopback recording every JSON document POSTed; ``status`` is what it answers."""

    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.received: list[dict] = []
        self.status = 200
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> WebhookReceiver:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if owner.status < 300:
                    owner.received.append(body)
                self.send_response(owner.status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def alerts(self) -> list[tuple[str, str, str]]:
        """(status, alertname, tenant) of every alert received, in order."""
        return [(a["status"], a["labels"]["alertname"], a["labels"].get("tenant", ""))
                for doc in self.received for a in doc["alerts"]]


class ScriptedSource:
    """Prometheus stand-in for store/delivery tests: every input present, broker_up as scripted."""

    def __init__(self):
        self.down: set[str] = set()

    def query(self, expr, at):
        if expr.startswith("count by (__name__, cluster)"):
            return [InstantSample({"__name__": m, "cluster": "local"}, 1) for m in M.values()]
        if M["broker_up"] in expr:
            return [InstantSample({"cluster": "local", "broker": b}, 0) for b in sorted(self.down)]
        return []

    def query_range(self, *a, **k):
        return []


def run_cli(monkeypatch, capsys, *argv: str) -> tuple[int, str, str]:
    """``kafka-health <argv>`` in-process through ``monitor.cli.main`` (its real error handling)."""
    import monitor.cli

    capsys.readouterr()
    rc = monitor.cli.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


REPO = Path(__file__).resolve().parents[2]


@contextmanager
def running_collectors(config, workdir: Path) -> Iterator[subprocess.Popen]:
    """``serve --role collector`` for ``config`` as a process (its exporter on the config's service port, which the
    stack's Prometheus scrapes); yields that process (its log is workdir/collector.log). Stopped, with its children,
    on exit."""
    cfg_file = workdir / "kafka-health.yaml"
    cfg_file.write_text(yaml.safe_dump(config.model_dump(mode="json", exclude_none=True)))
    # Without the CLI's module discovery (which could pick other packages' commands up from an editable install of
    # another checkout).
    run = ("import sys; from monitor.core.config import load_config; from monitor.serve import run; "
           "c = load_config(sys.argv[1]); run(c, ('collector',), c.service.host, c.service.port)")
    proc = subprocess.Popen(
        [sys.executable, "-c", run, str(cfg_file)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL,
        stderr=open(workdir / "collector.log", "wb"), start_new_session=True)
    try:
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def prom_query(stack, expr: str) -> list[dict]:
    r = httpx.get(f"{stack.layout.prometheus_url}/api/v1/query", params={"query": expr}, timeout=5).json()
    return r["data"]["result"]


def am_alerts(stack, alertname: str) -> list[dict]:
    """The alerts of that name the stack's Alertmanager holds now."""
    return [a for a in httpx.get(f"{stack.layout.alertmanager_url}/api/v2/alerts", timeout=5).json()
            if a["labels"]["alertname"] == alertname]
