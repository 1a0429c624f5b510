"""Two real ``kafka-health serve --role collector --shard 0/1`` processes of one shard on a throwaway PostgreSQL
database, with ``collection.shard_lease`` (issue 31, item 4): exactly one collects (its /metrics has the shard's
scrape series, its probe and ``shard_up``), the other stands by (``shard_standby 1`` and nothing measured); killed -9,
the holder's shard is taken over by the other, under the lease's next epoch.

No Kafka: the cluster's broker and bootstrap address are a closed loopback port, so the holder's targets fail fast
(``scrape_success 0``: collected, and said) and no JVM starts (Jolokia transport). Harness: ``engine_pair`` with the
collector role (tests/harness/engine.py), PostgreSQL from ``pg_url`` (tests/conftest.py).
"""

from __future__ import annotations

import os
import signal
import time
import uuid

import httpx
import pytest
from sqlalchemy import create_engine, text

from monitor.core.config import parse_config
from tests.conftest import wait_until
from tests.harness.engine import engine_pair, engine_role

pytestmark = pytest.mark.integration

CONFIG = """
clusters:
  - name: c1
    bootstrap_servers: "127.0.0.1:1"
    jmx: {transport: jolokia, timeout_seconds: 1}
    brokers: [{id: 1, jolokia: "http://127.0.0.1:1/jolokia"}]
collection: {interval_seconds: 1, shard: "0/1", shard_lease: true}
store: {url: "%s"}
"""


def _metrics(port: int) -> str:
    return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text


def _collects(text: str) -> bool:
    return (
        'kafka_health_collector_shard_up{shard="0",shards="1"} 1.0' in text and "kafka_health_scrape_success{" in text
    )


def _stands_by(text: str) -> bool:
    return (
        'kafka_health_collector_shard_standby{shard="0",shards="1"} 1.0' in text
        and "kafka_health_collector_shard_up{" not in text
        and "kafka_health_scrape_" not in text
        and "kafka_health_probe_up{" not in text
    )


def _epoch(url: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as c:
            return c.execute(text("SELECT epoch FROM engine_lease WHERE name = 'collector-shard-0-of-1'")).scalar_one()
    finally:
        engine.dispose()


def test_two_collectors_of_one_shard_one_collects_and_the_other_takes_over_when_it_is_killed(tmp_path, pg_url):
    db = f"kh_shard_{uuid.uuid4().hex[:8]}"
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f"CREATE DATABASE {db}"))
    admin.dispose()
    url = pg_url.rsplit("/", 1)[0] + f"/{db}"
    config = parse_config(CONFIG % url)
    with engine_pair(config, tmp_path, url, roles=("collector",)) as pair:
        logs = lambda: [(tmp_path / f"engine-{n}.log").read_text()[-2000:] for n in range(2)]  # noqa: E731 - detail
        roles = lambda: sorted(str(engine_role(port, "collector")) for _, port in pair)  # noqa: E731 - polled
        assert wait_until(lambda: roles() == ["active", "standby"], timeout=90, what=logs)
        (holder, holder_port), (other, other_port) = sorted(
            pair, key=lambda p: engine_role(p[1], "collector") != "active"
        )
        assert wait_until(lambda: _collects(_metrics(holder_port)), timeout=30, what=lambda: _metrics(holder_port))
        assert 'kafka_health_probe_up{cluster="c1"}' in _metrics(holder_port)
        assert _stands_by(_metrics(other_port)), _metrics(other_port)
        before = _epoch(url)

        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(30)
        t0 = time.monotonic()
        assert wait_until(lambda: engine_role(other_port, "collector") == "active", timeout=30, what=logs)
        takeover = time.monotonic() - t0
        assert wait_until(lambda: _collects(_metrics(other_port)), timeout=30, what=lambda: _metrics(other_port))
        assert 'kafka_health_collector_shard_standby{shard="0",shards="1"} 0.0' in _metrics(other_port)
        assert _epoch(url) > before  # a takeover is a new term
        print(f"takeover {takeover:.2f} s after the kill (interval 1 s, bound 1.75 s after the last renewal)")
