"""The API's limits where only the real thing shows them (issue 15, items 7, 9, 11): a real ``serve --role api``
(uvicorn) answering 413 to a body it never received, cutting a chunked body short, limiting failed
authentications per address; token expiry stored and enforced on SQLite and real PostgreSQL.

tests/unit/test_api_limits.py covers the same limits through the ASGI app; the figures are bench/api_limits.py's.
"""

from __future__ import annotations

import json
import socket
from datetime import timedelta

import httpx
import pytest

from monitor.api import tokens
from tests.api_fixtures import *  # noqa: F403 - the shared API fixtures, used by name
from tests.api_fixtures import CONFIG_YAML, NOW
from tests.harness.launch import serve_process

pytestmark = pytest.mark.integration


@pytest.fixture
def server(tmp_path):
    """A real API server on a SQLite store; yields (port, operator token)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = tmp_path / "kh.yaml"
    cfg.write_text(
        CONFIG_YAML.replace("service:\n", f"service:\n  port: {port}\n  roles: [api]\n")
        + f"store: {{url: 'sqlite:///{tmp_path / 'kh.db'}'}}\n"
    )
    with serve_process(tmp_path, cfg, port):
        from monitor.core.config import load_config
        from monitor.core.store import Store

        store = Store(load_config(str(cfg)).store.url)
        with store.session() as s:
            _, operator = tokens.create(db_session=s, kind=tokens.TokenKind.OPERATOR, tenant=None, name="t", now=NOW)
        store.dispose()
        yield port, operator
    assert "Traceback" not in (tmp_path / "serve.log").read_text()


def _response(sock: socket.socket) -> tuple[int, dict[str, str], dict]:
    """Read one HTTP/1.1 response with a Content-Length body from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    while len(body) < int(headers["content-length"]):
        body += sock.recv(65536)
    return int(lines[0].split()[1]), headers, json.loads(body)


def test_a_real_server_answers_413_to_a_body_it_was_only_promised(server):
    port, operator = server
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            (
                f"POST /api/v1/silences HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {operator}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {64 * 1024 * 1024}\r\n\r\n"
            ).encode()
        )
        status, headers, body = _response(sock)  # not a byte of the 64 MiB was sent
    assert (status, body["error"]["code"]) == (413, "too_large")
    assert headers["connection"] == "close"


def test_a_real_server_cuts_a_chunked_body_short(server):
    port, operator = server
    chunk = b"4000\r\n" + b" " * 0x4000 + b"\r\n"  # 16 KiB per chunk, as long as the server keeps reading
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            (
                f"POST /api/v1/silences HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {operator}\r\n"
                "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            ).encode()
        )
        sent = 0
        try:
            while sent < 256 * 1024 * 1024:  # far past anything a socket buffers: the server must answer first
                sock.sendall(chunk)
                sent += len(chunk)
                sock.settimeout(0)
                try:
                    if sock.recv(1, socket.MSG_PEEK):
                        break
                except BlockingIOError:
                    pass
                finally:
                    sock.settimeout(10)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed after answering
        status, _, body = _response(sock)
    assert (status, body["error"]["code"]) == (413, "too_large")


def test_a_real_server_limits_failed_authentications_per_address(server):
    port, operator = server
    base = f"http://127.0.0.1:{port}/api/v1"
    with httpx.Client(timeout=10) as http:
        answers = [
            http.get(f"{base}/tenants", headers={"Authorization": f"Bearer kh_{i:012x}_" + "A" * 43}) for i in range(25)
        ]
        assert [r.status_code for r in answers] == [401] * 20 + [429] * 5
        assert answers[-1].json()["error"]["code"] == "rate_limited" and int(answers[-1].headers["retry-after"]) > 0
        # Never remembered yet, but valid: this server sees a token of its own store; the address is over its
        # limit, so it waits too (docs/api.md, "Limits").
        assert http.get(f"{base}/tenants", headers={"Authorization": f"Bearer {operator}"}).status_code == 429


def test_token_expiry_is_stored_and_enforced(store):
    with store.session() as s:
        _, token = tokens.create(
            db_session=s,
            kind=tokens.TokenKind.OPERATOR,
            tenant=None,
            name="t",
            now=NOW,
            expires_at=NOW + timedelta(hours=1),
        )
    with store.session() as s:
        [read] = [tokens.TokenRead.of(r) for r in tokens.get_all(db_session=s)]
        assert read.expires_at == NOW + timedelta(hours=1) and read.expires_at.utcoffset() == timedelta(0)
        assert tokens.authenticate(db_session=s, presented=token, now=NOW + timedelta(minutes=59)) is not None
        assert tokens.authenticate(db_session=s, presented=token, now=NOW + timedelta(hours=1)) is None
        verified = tokens.verify(db_session=s, presented=token, now=NOW)
        assert verified.expires_at == NOW + timedelta(hours=1)
