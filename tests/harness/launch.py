"""Run ``kafka-health serve`` as a detached child process and wait until it answers (tests, benchmarks).

Built on the stack's ``ProcessTable``: the process is owned by ``state_dir`` (its pid file lives there and its
command line names it), so ``stop`` ends exactly that process and nothing else.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from monitor.core.errors import ComponentFailed
from monitor.stack.procs import ProcessTable, ProcSpec, tail
from tests.harness import REPO_ROOT


@contextmanager
def serve_process(state_dir: Path, config_path: Path, port: int, *, timeout: float = 60.0) -> Iterator[int]:
    """Start ``serve --config config_path`` (``config_path`` inside ``state_dir``); yield its pid once ``/healthz``
    answers; stop it on exit. Raises ComponentFailed (naming the log) if it exits or does not answer in time."""
    table = ProcessTable(state_dir)
    log = state_dir / "serve.log"
    pid = table.start(ProcSpec(name="serve", argv=[sys.executable, "-m", "monitor.cli", "serve", "--config",
                                                   str(config_path)], log=log, cwd=REPO_ROOT))
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if table.owned_pid("serve") is None:
                raise ComponentFailed("serve", f"exited: {tail(log, 20)}", str(log))
            if time.monotonic() > deadline:
                raise ComponentFailed("serve", f"no answer on port {port} after {timeout:.0f}s", str(log))
            time.sleep(0.2)
        yield pid
    finally:
        table.stop("serve")
