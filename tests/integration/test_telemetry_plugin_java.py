"""The broker plugin's own JUnit tests (deploy/kafka/telemetry/src/test): OTLP decoding, the signals' sources,
thousands of short-lived client instances held within max.clients (least recently pushed evicted, MBeans
unregistered), stale and terminating instances expiring, and a broken payload or a failing MBean server counted
in Failures instead of thrown into the broker's request handler. Needs a JDK and Maven (dependencies from Maven
Central once, then its local repository)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from monitor.stack import telemetry

pytestmark = pytest.mark.integration


def test_plugin_unit_tests_pass(tmp_path):
    mvn = shutil.which("mvn")
    assert mvn, "Maven is set up by scripts/setup.sh"
    out = subprocess.run([mvn, "-B", "-q", "-f", str(telemetry.PLUGIN_DIR / "pom.xml"), f"-Dtelemetry.out={tmp_path}",
                          "test"], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    reports = list((tmp_path / "build" / "surefire-reports").glob("*.txt"))
    assert reports and all("Failures: 0, Errors: 0" in r.read_text() for r in reports)
    assert sum(int(n) for r in reports for n in re.findall(r"Tests run: (\d+)", r.read_text())) >= 7
