"""``serve --workers N`` (issue 33 item 4): N API processes accept on one port; a worker that dies ends the others
and the command (exit 1, for the supervisor), and only the api role may run in several workers."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import httpx
import pytest

from monitor.cli import main
from tests.harness.launch import serve_process

pytestmark = pytest.mark.unit


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _config(tmp_path: Path, port: int) -> Path:
    path = tmp_path / "kh.yaml"
    path.write_text(
        "clusters:\n  - {name: c0, bootstrap_servers: '127.0.0.1:1', brokers: [{id: 1}]}\n"
        f"store: {{url: 'sqlite:///{tmp_path / 'kh.db'}'}}\nservice: {{port: {port}, roles: [api]}}\n"
    )
    return path


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d.name))
            except (OSError, IndexError):
                continue
    return out


def _alive(pid: int) -> bool:
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z"
    except OSError:
        return False


def _wait(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_workers_share_the_port_and_a_dead_worker_ends_the_rest(tmp_path):
    port = _free_port()
    with serve_process(tmp_path, _config(tmp_path, port), port, args=("--workers", "2")) as pid:
        assert _wait(lambda: len(_children(pid)) == 2), "two workers forked"
        workers = _children(pid)
        assert all(httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200 for _ in range(4))
        os.kill(workers[0], signal.SIGKILL)
        assert _wait(lambda: not _alive(pid)), "the command ends when a worker dies"
        assert _wait(lambda: not _alive(workers[1])), "and the other worker with it"
    assert "API worker" in (tmp_path / "serve.log").read_text()


def test_only_the_api_role_runs_in_several_workers(tmp_path):
    path = _config(tmp_path, _free_port())
    assert main(["serve", "--config", str(path), "--workers", "2", "--role", "api,alerts"]) == 2
    assert main(["serve", "--config", str(path), "--workers", "0", "--role", "api"]) == 2
