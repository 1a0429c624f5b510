"""The HTTP transports share one client per process (collectors/transports/httpclient.py): reads of a target that
follow each other reuse its connection instead of paying a new client (an SSL context, ~35 ms of CPU) and a new
connection per read; no cookie one target sets is ever sent back; a forked process makes its own client.

A real HTTP server on loopback stands in for the agents: what is under test is what reaches it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from collectors.transports import httpclient
from collectors.transports.exposition import ExpositionTransport
from collectors.transports.jolokia import JolokiaTransport
from collectors.types import Endpoint, MBeanQuery

QUERY = MBeanQuery("kafka.server:type=ReplicaManager,name=PartitionCount", ("Value",))


class _Agent(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as Jolokia's and jmx_exporter's servers
    seen: list[tuple[int, str | None]] = []  # (client port, Cookie header) per request

    def _answer(self, body: bytes, content_type: str) -> None:
        type(self).seen.append((self.client_address[1], self.headers.get("Cookie")))
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Set-Cookie", "session=tenant-a-secret; Path=/")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # Jolokia's bulk read
        self.rfile.read(int(self.headers["Content-Length"]))
        self._answer(json.dumps([{"status": 200, "value": {"Value": 7}}]).encode(), "application/json")

    def do_GET(self) -> None:  # an exporter's /metrics
        self._answer(b"# TYPE kafka_server_replicamanager_partitioncount gauge\n", "text/plain")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def agent() -> Iterator[str]:
    _Agent.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Agent)
    server.daemon_threads, server.block_on_close = True, False  # a kept-alive connection must not hold the close
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_jolokia_reads_in_a_row_reuse_one_connection_and_send_back_no_cookie(agent):
    endpoint = Endpoint(jmx="", jolokia=f"{agent}/jolokia")
    for _ in range(3):
        [reading] = JolokiaTransport().read(endpoint, [QUERY], timeout=5)  # a new transport: the client is shared
        assert reading.value == 7.0
    ports = {port for port, _ in _Agent.seen}
    assert len(_Agent.seen) == 3 and len(ports) == 1, _Agent.seen  # one connection: no client (or socket) per read
    assert [cookie for _, cookie in _Agent.seen] == [None, None, None]


def test_exporter_scrapes_share_the_client_and_keep_no_cookie_either(agent):
    endpoint = Endpoint(jmx="", exporter=f"{agent}/metrics")
    for _ in range(2):
        ExpositionTransport().read(endpoint, [], timeout=5)
    assert len({port for port, _ in _Agent.seen}) == 1
    assert all(cookie is None for _, cookie in _Agent.seen)
    assert list(httpclient.shared_client().cookies.jar) == []


def test_a_forked_process_makes_its_own_client(monkeypatch):
    first = httpclient.shared_client()
    assert httpclient.shared_client() is first
    monkeypatch.setattr(httpclient.os, "getpid", lambda: -1)  # as in a child of fork()
    assert httpclient.shared_client() is not first
