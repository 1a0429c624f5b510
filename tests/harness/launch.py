"""Run ``kafka-health serve`` as a detached child process and wait until it answers (tests, benchmarks).

Built on the stack's ``ProcessTable``: the process is owned by ``state_dir`` (its pid file lives there and its
command line names it), so ``stop`` ends exactly that process and nothing else.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from monitor.core.errors import ComponentFailed
from monitor.core.healthz import Wait, wait_healthy
from monitor.stack.procs import ProcessTable, ProcSpec, tail
from tests.harness import REPO_ROOT


@contextmanager
def serve_process(
    state_dir: Path, config_path: Path, port: int, *, timeout: float = 60.0, args: tuple[str, ...] = ()
) -> Iterator[int]:
    """Start ``serve --config config_path [args]`` (``config_path`` inside ``state_dir``); yield its pid once
    ``/healthz`` answers; stop it on exit. Raises ComponentFailed (naming the log) if it exits or does not answer in
    time."""
    table = ProcessTable(state_dir)
    log = state_dir / "serve.log"
    pid = table.start(
        ProcSpec(
            name="serve",
            argv=[sys.executable, "-m", "monitor.cli", "serve", "--config", str(config_path), *args],
            log=log,
            cwd=REPO_ROOT,
        )
    )
    try:
        ended = wait_healthy(
            f"http://127.0.0.1:{port}",
            alive=lambda: table.owned_pid("serve") is not None,
            timeout=timeout,
            interval=0.2,
            request_timeout=1,
        )
        if ended is Wait.EXITED:
            raise ComponentFailed("serve", f"exited: {tail(log, 20)}", str(log))
        if ended is Wait.TIMEOUT:
            raise ComponentFailed("serve", f"no answer on port {port} after {timeout:.0f}s", str(log))
        yield pid
    finally:
        table.stop("serve")
