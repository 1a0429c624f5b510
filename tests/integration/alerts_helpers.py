"""Helpers for the alert engine's integration tests: a real local HTTP webhook receiver, an in-memory source, and
the real collectors run against a stack."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from monitor.core.metric_names import M
from monitor.core.prom import InstantSample
from tests.harness.engine import prom_query, running_collectors
from tests.harness.fake_source import FakeSource
from tests.harness.prometheus import start_prometheus, wait_ready

__all__ = ["prom_query", "running_collectors"]  # their home is tests.harness.engine; imported from here too


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _LoopbackHTTP:
    """A real HTTP server on 127.0.0.1:``port`` in a thread of this process, answering with ``handler``."""

    port: int
    _server: ThreadingHTTPServer | None = None

    def _listen(self, handler: type[BaseHTTPRequestHandler]) -> None:
        handler.log_message = lambda *args: None  # type: ignore[method-assign] - tests read no access log
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class WebhookReceiver(_LoopbackHTTP):
    """A real HTTP server on loopback recording every JSON document POSTed; ``status`` is what it answers."""

    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.received: list[dict] = []
        self.status = 200

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

        self._listen(Handler)
        return self

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


class IncidentExporter(_LoopbackHTTP):
    """A real HTTP /metrics endpoint serving ``kh_test_incident{cluster, topic}``: 1 while ``topic``'s incident is on,
    0 once it is off; a Prometheus scraping it makes an incident flip within one scrape interval."""

    METRIC = "kh_test_incident"

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.topics: dict[str, int] = {}
        self.port = free_port()

    def on(self, topic: str) -> None:
        self.topics[topic] = 1

    def off(self, topic: str) -> None:
        self.topics[topic] = 0

    def start(self) -> IncidentExporter:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                lines = [
                    f'{owner.METRIC}{{cluster="{owner.cluster}",topic="{t}"}} {v}'
                    for t, v in dict(owner.topics).items()
                ]
                body = ("\n".join(lines) + "\n").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._listen(Handler)
        return self


def own_prometheus(tmp_path, targets: list[int], *, scrape_ms: int = 1000) -> tuple[subprocess.Popen, int]:
    """The Debian ``prometheus`` binary on a free port, scraping ``127.0.0.1:<port>`` for each of ``targets`` every
    ``scrape_ms``; returned once it is ready. The caller kills it."""
    return start_prometheus(
        tmp_path / "prometheus", {"test": [(f"127.0.0.1:{p}", {}) for p in targets]}, interval=f"{scrape_ms}ms"
    )


def alertmanager_pair(tmp_path) -> list[tuple[subprocess.Popen, str]]:
    """Two Debian ``prometheus-alertmanager`` processes gossiping on loopback (free ports; the local stack's config,
    whose receivers notify nobody), each returned with its URL once ready. The caller kills them."""
    from monitor.stack.packaged import deploy_path

    web, gossip = [free_port(), free_port()], [free_port(), free_port()]
    out = []
    for i in range(2):
        home = tmp_path / f"alertmanager-{i}"
        home.mkdir()
        shutil.copyfile(deploy_path("alertmanager/alertmanager.local.yml"), home / "alertmanager.yml")
        proc = subprocess.Popen(
            [
                shutil.which("prometheus-alertmanager") or "alertmanager",
                f"--config.file={home / 'alertmanager.yml'}",
                f"--storage.path={home / 'data'}",
                f"--web.listen-address=127.0.0.1:{web[i]}",
                f"--cluster.listen-address=127.0.0.1:{gossip[i]}",
                f"--cluster.advertise-address=127.0.0.1:{gossip[i]}",
                f"--cluster.peer=127.0.0.1:{gossip[1 - i]}",
            ],
            stdout=(home / "log").open("w"),
            stderr=subprocess.STDOUT,
        )
        out.append((proc, f"http://127.0.0.1:{web[i]}"))
    try:
        for i, (proc, url) in enumerate(out):
            wait_ready(proc, url, tmp_path / f"alertmanager-{i}" / "log")
    except BaseException:
        for proc, _ in out:
            proc.kill()
            proc.wait()
        raise
    return out


def alertmanager_peers(url: str) -> int:
    """How many members of its cluster an Alertmanager sees (itself included)."""
    return len(httpx.get(f"{url}/api/v2/status", timeout=5).json()["cluster"].get("peers") or [])
