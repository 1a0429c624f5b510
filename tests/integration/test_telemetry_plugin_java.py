"""The broker plugin's own JUnit tests (deploy/kafka/telemetry/src/test), against the kafka-clients of every
supported Kafka line (monitor/core/kafka_versions.py): OTLP decoding, the signals' sources, thousands of short-lived
client instances held within max.clients (least recently pushed evicted, MBeans unregistered), stale and terminating
instances expiring (a told push interval holding a rare pusher), a broken payload or a failing MBean server counted in
Failures instead of thrown into the broker's request handler, and the entry point the broker asked for. Lines with
``ClientTelemetryExporterProvider`` (4.2+) compile and test its class too; older ones leave it out (the pom's
``telemetry.interface`` profile), and on the newest the ClientTelemetry class is shown to name none of its types, so
the one shipped jar loads on 3.9. Needs a JDK and Maven (each line's jars from Maven Central once, then its local
repository: about 5-8 s a line)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from monitor.core.kafka_versions import RELEASES, KafkaRelease
from monitor.stack import telemetry

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.line)
def test_plugin_unit_tests_pass_on_each_kafka_line(tmp_path, release: KafkaRelease):
    mvn = shutil.which("mvn")
    assert mvn, "Maven is set up by scripts/setup.sh"
    out = subprocess.run(
        [
            mvn,
            "-B",
            "-q",
            "-f",
            str(telemetry.PLUGIN_DIR / "pom.xml"),
            f"-Dtelemetry.out={tmp_path}",
            f"-Dkafka.api.version={release.version}",
            f"-Dtelemetry.interface={release.telemetry_interface}",
            "test",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    reports = {r.name: r.read_text() for r in (tmp_path / "build" / "surefire-reports").glob("*.txt")}
    assert reports and all("Failures: 0, Errors: 0" in text for text in reports.values())
    classes = {name.removesuffix(".txt").rsplit(".", 1)[1] for name in reports}
    provider = release.telemetry_interface == "ClientTelemetryExporterProvider"
    assert classes == {"ClientTelemetryExporterTest"} | ({"ProviderClientTelemetryExporterTest"} if provider else set())
    assert sum(int(n) for text in reports.values() for n in re.findall(r"Tests run: (\d+)", text)) >= (
        12 if provider else 10
    )
