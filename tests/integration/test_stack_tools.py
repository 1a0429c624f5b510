"""The stack's short tool JVMs (storage format, kafka-configs, FindCoordinator) and their cached class archive
(monitor/stack/kafka.py, run_tool_jvm): a fresh cache gets the archive from the first run, later runs use it, and a
cache where no archive can be written still runs the tool. Real Java on the cached Kafka jars, no stack."""

from pathlib import Path

import pytest

from monitor.stack import StackLayout, kafka

pytestmark = pytest.mark.integration


def _random_uuid(layout: StackLayout, log: Path) -> int:
    # kafka-storage random-uuid: the storage tool's classes without touching any directory
    java = kafka.require_java()
    return kafka.run_tool_jvm(java, layout, log, layout.release.storage_tool, ["random-uuid"], heap="64m", props=[])


def test_first_run_makes_the_class_archive_later_runs_use_it(tmp_path, monkeypatch):
    layout = StackLayout(dir=tmp_path / "stack", port_base=20290)
    log = tmp_path / "setup.log"
    kafka.ensure_jars(layout, log)  # the session's cache: no download
    cache = tmp_path / "fresh-cache"
    monkeypatch.setattr(kafka, "cache_dir", lambda: cache)
    (cache / "cds").mkdir(parents=True)
    stale = cache / "cds" / f"StorageTool-{layout.kafka_version}-0123456789abcdef.jsa"  # of an older JDK or jars
    stale.write_text("")

    assert _random_uuid(layout, log) == 0, log.read_text()[-2000:]
    archives = list((cache / "cds").iterdir())
    # renamed into place, no temporary left, and the stale one replaced
    assert [a.suffix for a in archives] == [".jsa"] and stale not in archives, archives
    made = archives[0].stat().st_mtime_ns

    log.write_text("")
    assert _random_uuid(layout, log) == 0, log.read_text()[-2000:]
    assert archives[0].stat().st_mtime_ns == made  # used, not made again
    assert "[cds" not in log.read_text()  # the JVM took it: a refused archive is a [warning][cds] line


def test_a_cache_without_room_for_the_archive_still_runs_the_tool(tmp_path, monkeypatch):
    layout = StackLayout(dir=tmp_path / "stack", port_base=20290)
    log = tmp_path / "setup.log"
    kafka.ensure_jars(layout, log)
    blocked = tmp_path / "blocked-cache"
    blocked.mkdir()
    (blocked / "cds").write_text("a file where the archive directory would be")
    monkeypatch.setattr(kafka, "cache_dir", lambda: blocked)

    assert _random_uuid(layout, log) == 0, log.read_text()[-2000:]
