import signal
import subprocess
import sys
import time

import pytest

from monitor.stack.procs import ProcessTable, ProcSpec

pytestmark = pytest.mark.unit


def _sleeper(marker):
    # The stack dir must be in the command line: that is how ownership is proven.
    return [sys.executable, "-c", "import time; time.sleep(60)", str(marker)]


def test_stop_kills_only_owned_process_and_clears_stale_pid_file(tmp_path):
    table = ProcessTable(tmp_path)
    pid = table.start(ProcSpec("sleeper", _sleeper(tmp_path), tmp_path / "s.log"))
    # An unrelated process whose pid we plant in a pid file must never be touched.
    other = subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / "run" / "intruder.pid").write_text(str(other.pid))
        fresh = ProcessTable(tmp_path)  # a later CLI call: knows nothing but the pid files
        assert fresh.owned_pid("sleeper") == pid
        assert fresh.owned_pid("intruder") is None
        assert not (tmp_path / "run" / "intruder.pid").exists()
        assert fresh.stop("intruder") is False
        assert other.poll() is None
        assert fresh.stop("sleeper") is True
        assert fresh.owned_pid("sleeper") is None
    finally:
        other.kill()
        other.wait()


def test_start_twice_returns_the_running_pid(tmp_path):
    table = ProcessTable(tmp_path)
    spec = ProcSpec("s", _sleeper(tmp_path), tmp_path / "s.log")
    try:
        assert table.start(spec) == table.start(spec)
    finally:
        table.stop("s")


def test_stop_wakes_a_frozen_process_first(tmp_path):
    table = ProcessTable(tmp_path)
    table.start(ProcSpec("s", _sleeper(tmp_path), tmp_path / "s.log"))
    table.signal("s", signal.SIGSTOP)
    t0 = time.monotonic()
    assert table.stop("s", timeout=5)
    assert time.monotonic() - t0 < 5
    assert table.owned_pid("s") is None
