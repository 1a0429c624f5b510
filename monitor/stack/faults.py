"""Faults on the local stack that need more than a signal: a broker's log dir on a small filesystem.

    with small_log_dir(stack, broker_id=3, size_mib=128) as path:
        ...   # broker 3 now writes to a 128 MiB tmpfs mounted on its log dir; fill it, watch the alerts

Needs root (mount). On exit, whatever happened inside, the broker is stopped, what it wrote is copied back to its
real log dir, the tmpfs is unmounted (lazily if something still holds it) and the broker started again, so nothing
is left mounted and the cluster keeps its data. Only a process killed hard (SIGKILL, a crash in a native library)
cannot clean up; the next call then refuses to start and says how to restore by hand.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from monitor.errors import StackError
from monitor.stack.kafka import jolokia_port
from monitor.stack.procs import port_open

_FS_NAME = "kafka-health-fault"


def _run(*argv: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise StackError(f"{' '.join(argv)} failed: {proc.stderr.strip()[:300]}")


def _copy(src: Path, dst: Path) -> None:
    # cp keeps sparse files sparse (Kafka preallocates index files) and preserves everything else.
    dst.mkdir(parents=True, exist_ok=True)
    _run("cp", "-a", "--sparse=always", f"{src}/.", str(dst))


def _unmount(path: Path) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _stop_broker(stack, broker_id: int, timeout: float = 30.0) -> None:
    """Stop the broker and wait until its ports are closed: a JVM's main thread can be reaped while its other
    threads still hold the listeners, and the restart would find them taken."""
    L = stack.layout
    stack.procs.stop(L.node_name(broker_id))
    ports = (L.broker_port(broker_id), L.broker_jmx_port(broker_id), jolokia_port(L, broker_id))
    deadline = time.monotonic() + timeout
    while any(port_open(p) for p in ports) and time.monotonic() < deadline:
        time.sleep(0.5)


@contextmanager
def small_log_dir(stack, broker_id: int, size_mib: int = 128, *, timeout: float = 180.0) -> Iterator[Path]:
    """Run a broker with its log dir on a tmpfs of ``size_mib``; yields the log dir. The stack must be up."""
    if os.geteuid() != 0:
        raise StackError("mounting a small filesystem on a broker's log dir needs root")
    layout = stack.layout
    data = layout.log_dir(broker_id)
    saved = data.with_name(data.name + ".before-tmpfs")
    if saved.exists():
        raise StackError(f"{saved} exists: an earlier fault run was killed before it could clean up; stop the stack, "
                         f"`umount {data}` if it is still mounted, then replace {data} with {saved}")
    _stop_broker(stack, broker_id)  # a clean shutdown trims Kafka's preallocated index files
    data.rename(saved)
    data.mkdir()
    mounted = False
    try:
        _run("mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0755", _FS_NAME, str(data))
        mounted = True
        _copy(saved, data)
        stack.up(timeout=timeout)
        yield data
    finally:
        _stop_broker(stack, broker_id)
        kept = data.with_name(data.name + ".from-tmpfs")
        try:
            if mounted:
                _copy(data, kept)  # what the broker wrote meanwhile (offsets, other tenants' data)
        except StackError:
            shutil.rmtree(kept, ignore_errors=True)  # fall back to the state before the fault
        finally:
            if mounted:
                _unmount(data)
            data.rmdir()
            (kept if kept.exists() else saved).rename(data)
            shutil.rmtree(saved, ignore_errors=True)
        stack.up(timeout=timeout)
