"""Bad environment, one clear line each: an occupied port, a missing Java, a Maven failure. Exit non-zero, no
traceback, nothing left running. These run the real CLI in a subprocess against a fresh stack directory."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.core.kafka_versions import DEFAULT_RELEASE

pytestmark = pytest.mark.integration


def _cli(args, env=None, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        cwd=cwd,
    )


def _no_process_under(path: Path) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(path) in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    return False
            except OSError:
                pass
    return True


def test_occupied_port_is_one_clear_line(tmp_path):
    base = 20400  # clear of every other stack and Prometheus the sessions start (19700-19990)
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", base + 52))  # broker-2's SASL_SSL listener (a new stack dir is secured)
        s.listen()
        r = _cli(["stack", "up", "--dir", str(tmp_path / "s"), "--port-base", str(base)])
    if r.returncode == 0:  # a stack that came up would hold ports the next tests use
        _cli(["stack", "down", "--dir", str(tmp_path / "s"), "--port-base", str(base)])
    assert r.returncode == 1
    assert r.stderr.strip() == (
        f"error: already in use by another process: broker-2 ({base + 52}) port {base + 52} "
        "(stop it, or pick another --port-base)"
    )
    assert _no_process_under(tmp_path / "s")


def test_missing_java_is_one_clear_line(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    r = _cli(["stack", "up", "--dir", str(tmp_path / "s"), "--port-base", "20500"], env={"PATH": str(bindir)})
    assert r.returncode == 1
    assert r.stderr.strip().startswith("error: java not found on PATH")
    assert "Traceback" not in r.stderr
    assert _no_process_under(tmp_path / "s")


def test_maven_failure_names_the_log(tmp_path):
    # A mvn that fails the way a registry outage does; the real java is kept so the failure is Maven's.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "mvn").write_text("#!/bin/sh\necho 'Could not resolve dependencies' >&2\nexit 1\n")
    (bindir / "mvn").chmod(0o755)
    for tool in ("java", "prometheus", "prometheus-alertmanager"):
        src = subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip()
        if src:
            (bindir / tool).symlink_to(src)
    r = _cli(
        ["stack", "up", "--dir", str(tmp_path / "s"), "--port-base", "20600"],
        env={
            "PATH": f"{bindir}:/usr/bin:/bin".replace("/usr/bin:/bin", str(bindir)),
            "KAFKA_HEALTH_CACHE_DIR": str(tmp_path / "cache"),
        },
    )
    assert r.returncode == 1, r.stderr
    line = r.stderr.strip()
    assert line.startswith(f"error: maven could not resolve Kafka {DEFAULT_RELEASE.version} jars (exit 1); see ")
    assert "Could not resolve dependencies" in Path(line.rsplit("see ", 1)[1]).read_text()
    assert _no_process_under(tmp_path / "s")
