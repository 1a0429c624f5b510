"""Detached processes owned by a stack directory.

A component is started with ``start_new_session`` so it outlives the CLI call that started it, its pid written to
``<dir>/run/<name>.pid``. A pid file alone is not proof of ownership (pids are reused), so every command line we
start contains the stack directory, and ``owned_pid`` checks ``/proc/<pid>/cmdline`` for it: ``down`` therefore stops
exactly the processes this stack started and nothing else, and a stale pid file is simply removed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from monitor.core.errors import ComponentFailed, PortInUse


@dataclass(frozen=True)
class ProcSpec:
    name: str
    argv: list[str]
    log: Path
    env: dict[str, str] | None = None
    cwd: Path | None = None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists() and not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


class ProcessTable:
    """Pid files of one stack directory."""

    def __init__(self, stack_dir: Path):
        self.stack_dir = stack_dir.resolve()
        self.run_dir = self.stack_dir / "run"
        # Pids this object started: trusted without reading cmdline, which can be briefly empty or still the
        # launcher's just after exec (the java launcher re-execs itself).
        self._started: dict[str, int] = {}

    def pid_file(self, name: str) -> Path:
        return self.run_dir / f"{name}.pid"

    def owned_pid(self, name: str) -> int | None:
        """The live pid of component ``name`` if this stack started it; removes a stale pid file."""
        pf = self.pid_file(name)
        try:
            pid = int(pf.read_text().strip())
        except (OSError, ValueError):
            return None
        if not _alive(pid):
            pf.unlink(missing_ok=True)
            return None
        if self._started.get(name) == pid:
            return pid
        for _ in range(20):
            cmdline = _cmdline(pid)
            if cmdline:
                break
            time.sleep(0.05)
        if str(self.stack_dir) in cmdline:
            return pid
        if cmdline:  # pid reused by an unrelated process: the pid file is stale
            pf.unlink(missing_ok=True)
        return None

    def start(self, spec: ProcSpec) -> int:
        existing = self.owned_pid(spec.name)
        if existing:
            return existing
        if not any(str(self.stack_dir) in a for a in spec.argv):
            raise ValueError(f"{spec.name}: argv must mention the stack dir so the process can be identified")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        spec.log.parent.mkdir(parents=True, exist_ok=True)
        with open(spec.log, "ab") as log:
            proc = subprocess.Popen(
                spec.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env={**os.environ, **(spec.env or {})},
                cwd=spec.cwd,
            )
        self.pid_file(spec.name).write_text(str(proc.pid))
        self._started[spec.name] = proc.pid
        return proc.pid

    def stop(self, name: str, timeout: float = 20.0) -> bool:
        """SIGTERM, wait, then SIGKILL. Returns True if a process was stopped."""
        pid = self.owned_pid(name)
        if pid is None:
            return False
        for sig, wait in ((signal.SIGCONT, 0), (signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            # SIGCONT first: a component frozen by a fault test must be able to handle SIGTERM.
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.1)
            if not _alive(pid):
                break
        try:  # reap if it is our child (same process started and stops, as in tests)
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        self.pid_file(name).unlink(missing_ok=True)
        self._started.pop(name, None)
        return True

    def signal(self, name: str, sig: int) -> int:
        pid = self.owned_pid(name)
        if pid is None:
            raise ComponentFailed(name, "not running")
        os.kill(pid, sig)
        return pid


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def require_ports_free(ports: dict[str, int]) -> None:
    # "Taken" means something listens there. A bind probe would also trip over TIME_WAIT sockets left by a
    # stack that was just stopped, which the JVMs' own listeners (SO_REUSEADDR) do not mind.
    taken = [f"{name} port {port}" for name, port in ports.items() if port_open(port)]
    if taken:
        raise PortInUse(
            "already in use by another process: " + ", ".join(taken) + " (stop it, or pick another --port-base)"
        )


def tail(path: Path, lines: int = 5) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
