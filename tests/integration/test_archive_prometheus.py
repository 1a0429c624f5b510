"""``kafka-health archive`` against a real Prometheus of its own.

That Prometheus (the local stack's, alone, beside the session stack's ports) scrapes 127.0.0.1:<service_port>/metrics
every 5 s, where this module serves its own small prometheus_client registry with metrics named as the archive series
expect (a topic byte counter and a consumer-group lag gauge). The test archives a short range of today through the
CLI, re-archives it with --replace, and interrupts a run. A whole minute with a full 2-minute rate window takes about
three minutes of samples: the feed is a ``warm_up`` of the session, so they pass while the other tests run.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pyarrow.dataset as ds
import pytest
import yaml
from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

import monitor.cli
from monitor.archive import lake as lakefs
from monitor.archive.archive import PrometheusClient, archive_range
from monitor.core.errors import QueryError
from monitor.stack import StackLayout, observability
from monitor.stack.procs import ProcessTable
from tests.conftest import wait_until

pytestmark = [pytest.mark.integration]


def cli(argv: list[str]) -> int:
    return monitor.cli.main(argv)


def _port_base() -> int:
    # Clear of the session stack (+0), a module's second stack (+100) and the 3.9 stack (19860 by default).
    return int(os.environ.get("KAFKA_HEALTH_TEST_PORT_BASE", "19700")) + 250


@contextlib.contextmanager
def archive_feed(workdir: Path) -> Iterator[str]:
    """This module's exporter on a service port and a Prometheus scraping it; yields that Prometheus' URL."""
    registry = CollectorRegistry()
    bytes_in = Counter("kafka_topic_bytes_in", "test traffic", ["cluster", "topic", "tenant"], registry=registry)
    lag = Gauge("kafka_consumergroup_lag", "test lag", ["cluster", "group", "topic"], registry=registry)
    lag.labels("local", "acme-consumers", "acme.orders").set(42)
    stop = threading.Event()

    def traffic():  # 1000 B/s by the clock, however late this thread is scheduled on a busy machine
        last = time.monotonic()
        while not stop.wait(0.5):
            now = time.monotonic()
            bytes_in.labels("local", "acme.orders", "acme").inc(1000 * (now - last))
            last = now

    layout = StackLayout(dir=workdir, port_base=_port_base())
    binary = observability.ensure_installed(["prometheus"], layout.logs_dir / "setup.log")["prometheus"]
    procs = ProcessTable(layout.dir)
    server, _thread = start_http_server(layout.service_port, addr="127.0.0.1", registry=registry)
    pump = threading.Thread(target=traffic, daemon=True)
    pump.start()
    try:
        procs.start(observability.prometheus_spec(layout, binary))
        yield layout.prometheus_url
    finally:
        procs.stop("prometheus")
        stop.set()
        server.shutdown()
        server.server_close()


def _full_rate_window_at_a_past_minute(url: str) -> bool:
    """A whole minute whose 2-minute rate window is full of samples (5 s scrapes: ~24; a partial window
    under-estimates the rate)."""
    minute = datetime.now(timezone.utc).replace(second=0, microsecond=0)
    # Two whole minutes (the test asserts on at least two archived rows), each with its rate window full.
    for at in (minute, minute - timedelta(minutes=1)):
        try:
            r = httpx.get(
                f"{url}/api/v1/query",
                params={
                    "query": 'count_over_time(kafka_topic_bytes_in_total{topic="acme.orders"}[2m]) >= 18',
                    "time": at.timestamp(),
                },
                timeout=5,
            )
        except httpx.TransportError:  # still starting
            return False
        if not r.json()["data"]["result"]:
            return False
    return True


@pytest.mark.warm_up.with_args(archive_feed)  # with_args: a lone callable would be taken for the decorated function
def test_archive_replace_and_interrupted_run(warmed_up, tmp_path):
    url = warmed_up
    wait_until(
        lambda: _full_rate_window_at_a_past_minute(url),
        timeout=300,
        interval=2,
        what="Prometheus to have two minutes of samples before a whole minute",
    )
    lake = tmp_path / "lake"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"prometheus": {"url": url}, "lake": {"path": str(lake)}}))
    now = datetime.now(timezone.utc)
    start = now - timedelta(minutes=10)
    if start.date() != now.date():  # just after midnight: stay within one day so the test reads one partition
        start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    argv = ["archive", "--from", start.isoformat(), "--to", now.isoformat(), "--config", str(config)]
    assert cli(argv) == 0

    day = now.date()
    marker = lakefs.read_marker(lake, day)
    assert marker is not None and not marker.complete and marker.clusters == ("local",)
    table = ds.dataset(lakefs.day_dir(lake, day), format="parquet", partitioning="hive").to_table()
    rows = table.to_pylist()
    assert {r["cluster"] for r in rows} == {"local"}
    traffic = [r for r in rows if r["series"] == "topic_bytes_in_rate" and r["topic"] == "acme.orders"]
    assert traffic
    raw = httpx.get(f"{url}/api/v1/query", params={"query": "kafka_topic_bytes_in_total[15m]"}, timeout=5).json()
    assert all(r["value"] > 0 for r in traffic)
    assert len(traffic) >= 2, (start, now, traffic, raw)
    # 1000 B/s once the window is full; scrapes a loaded 2-core machine delays make Prometheus' rate wobble.
    assert 500 <= max(traffic, key=lambda r: r["ts"])["value"] <= 1500
    assert all(r["ts"].second == 0 for r in traffic)  # one-minute steps
    lag = [r for r in rows if r["series"] == "group_lag_messages" and r["group"] == "acme-consumers"]
    assert lag and lag[0]["value"] == 42

    # re-archiving replaces the day: no duplicates, at least as many minutes as before
    assert cli(argv + ["--replace"]) == 0
    again = ds.dataset(lakefs.day_dir(lake, day), format="parquet", partitioning="hive").to_table().to_pylist()
    keys = [(r["ts"], r["series"], r["topic"], r["group"]) for r in again]
    assert len(keys) == len(set(keys)) and len(again) >= len(rows)

    # an interrupted run leaves the last good day in place; the next run completes
    client = PrometheusClient(url)
    calls = {"n": 0}

    def dying(*a):
        calls["n"] += 1
        if calls["n"] == 3:
            raise QueryError("connection lost (test)")
        return client.query_range(*a)

    with pytest.raises(QueryError):
        archive_range(lake, dying, start, now, now=datetime.now(timezone.utc))
    assert lakefs.read_marker(lake, day).rows == len(again)
    assert not [p for p in lakefs.metrics_dir(lake).iterdir() if p.name.startswith((".staging", ".old"))]
    done = archive_range(lake, client.query_range, start, now, now=datetime.now(timezone.utc))
    assert done.written == [day]
    client.close()


def test_archive_reports_an_unreachable_prometheus_in_one_line(tmp_path, capsys):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"prometheus": {"url": "http://127.0.0.1:9"}, "lake": {"path": str(tmp_path)}}))
    code = cli(["archive", "--from", "2026-11-16", "--to", "2026-11-17", "--config", str(config)])
    err = capsys.readouterr().err
    assert code == 1 and "error: Prometheus unreachable at http://127.0.0.1:9" in err and "Traceback" not in err
