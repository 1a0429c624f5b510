"""The real-client harness (tests.harness.javaclients): settings in a 0600 file, never argv; inputs bounded."""

from __future__ import annotations

import os
import stat

import pytest

from tests.harness import javaclients
from tests.harness.javaclients import JavaClient, KcatProducer, write_properties


def test_properties_file_is_private_and_keeps_backslashes(tmp_path):
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p\\q";'
    path = write_properties(tmp_path / "c.properties", {"sasl.jaas.config": jaas, "linger.ms": 0})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # java.util.Properties reads "\\" as one backslash: the password arrives as written
    assert path.read_text() == f"sasl.jaas.config={jaas.replace(chr(92), chr(92) * 2)}\nlinger.ms=0\n"
    with pytest.raises(ValueError, match="line breaks"):
        write_properties(tmp_path / "x", {"a": "1\nsasl.mechanism=PLAIN"})


def test_argv_names_the_file_not_the_settings(tmp_path):
    c = JavaClient(
        version="3.9.1",
        mode="produce",
        topic="t",
        rate=200,
        record_bytes=20,
        log=tmp_path / "l",
        properties={"sasl.jaas.config": "secret-jaas", "client.id": "c1"},
    )
    argv = c.argv("java", tmp_path / "jars", tmp_path / "client.properties")
    assert "secret-jaas" not in " ".join(argv) and "c1" not in " ".join(argv)
    assert argv[-6:] == [
        str(javaclients.CLIENT_SOURCE),
        "produce",
        str(tmp_path / "client.properties"),
        "t",
        "200.0",
        "20",
    ]
    assert javaclients.CLIENT_SOURCE.exists() and javaclients.CLIENTS_POM.exists()


@pytest.mark.parametrize("kwargs", [{"mode": "delete"}, {"rate": -1}, {"record_bytes": 0}, {"record_bytes": 2_000_000}])
def test_bad_inputs_are_refused(tmp_path, kwargs):
    with pytest.raises(ValueError):
        JavaClient(
            **{"version": "3.9.1", "mode": "produce", "topic": "t", "properties": {}, "log": tmp_path / "l", **kwargs}
        )
    with pytest.raises(ValueError):
        KcatProducer(topic="t", properties={}, log=tmp_path / "l", rate=0)


def test_version_is_checked_before_maven_runs(tmp_path):
    with pytest.raises(ValueError, match="version"):
        javaclients.ensure_client_jars("3.9.1 -Dx=y", tmp_path / "mvn.log")


def test_resolved_jars_are_reused_without_maven(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_HEALTH_CACHE_DIR", str(tmp_path))
    jars = javaclients.client_jars_dir("2.3.1")
    jars.mkdir(parents=True)
    (jars / "kafka-clients-2.3.1.jar").write_bytes(b"")
    (jars.parent / ".complete").write_text("2.3.1")
    monkeypatch.setattr(javaclients.shutil, "which", lambda _: pytest.fail("maven was run again"))
    assert javaclients.ensure_client_jars("2.3.1", tmp_path / "mvn.log") == jars
