"""Helpers for the alert engine's integration tests: a real local HTTP webhook receiver, an in-memory source, and
the real collectors run against a stack."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from monitor.core.metric_names import M
from monitor.core.prom import InstantSample
from tests.harness.engine import prom_query, running_collectors
from tests.harness.fake_source import FakeSource

__all__ = ["prom_query", "running_collectors"]  # their home is tests.harness.engine; imported from here too


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
        return [
            (a["status"], a["labels"]["alertname"], a["labels"].get("tenant", ""))
            for doc in self.received
            for a in doc["alerts"]
        ]


class ScriptedSource(FakeSource):
    """Prometheus stand-in for store/delivery tests: every input present, broker_up as scripted in ``down``."""

    def __init__(self) -> None:
        super().__init__(
            {
                M["broker_up"]: lambda expr, at: [
                    InstantSample({"cluster": "local", "broker": b}, 0) for b in sorted(self.down)
                ]
            },
            present=M.values(),
            cluster="local",
        )
        self.down: set[str] = set()


def run_cli(monkeypatch, capsys, *argv: str) -> tuple[int, str, str]:
    """``kafka-health <argv>`` in-process through ``monitor.cli.main`` (its real error handling)."""
    import monitor.cli

    capsys.readouterr()
    rc = monitor.cli.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def am_alerts(stack, alertname: str) -> list[dict]:
    """The alerts of that name the stack's Alertmanager holds now."""
    return [
        a
        for a in httpx.get(f"{stack.layout.alertmanager_url}/api/v2/alerts", timeout=5).json()
        if a["labels"]["alertname"] == alertname
    ]
