"""The consumer-lag benches' set-up (bench/lag_crash.py, bench/checkpoint_committer.py): the real stack on shipped
defaults, as production runs it.

Prometheus scrapes and evaluates every 15 s (deploy/prometheus/prometheus.yml) with the bench's own rule file beside
the shipped ones; one 3-partition topic of tenant ``bench`` (topics and groups prefixed ``bench.``); the collectors at
the shipped 15 s in their own process (``serve --role collector``); the alert engine with the built-in catalog on a
SQLite store, for the bench to run (``run_once``) at its own pace. Stopped and removed on exit.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from prometheus_client import CollectorRegistry

from alerts.component import AlertService
from monitor.core.config import CollectionSettings, TenantConfig, TenantSelector
from monitor.core.store import Store
from monitor.schema import create_all
from monitor.stack import Stack, StackLayout
from tests.harness.engine import running_collectors
from tests.harness.producer import SteadyProducer

# Strimzi's consumer-lag rule (``for: 10s`` like bench/alerts.py's), the one most clusters run: every lag bench
# compares the engine with it in the same Prometheus.
STRIMZI_LAG_RULE = """
      - alert: PromConsumerGroupLag
        expr: kafka_consumergroup_lag > 1000
        for: 10s"""


@contextmanager
def shipped_lag_stack(
    *, name: str, topic: str, port_base: int, stack_dir: Path | None, rules: str = ""
) -> Iterator[tuple[Stack, AlertService]]:
    """(stack, engine) as the module says. Prometheus evaluates ``STRIMZI_LAG_RULE`` and ``rules`` (more rules of
    the same rule group, indented as it is) from ``name``.yml."""
    tmp = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    stack = Stack(
        StackLayout(dir=stack_dir or tmp / "stack", port_base=port_base, scrape_interval_seconds=15),
        log=lambda *_: None,
    )
    L = stack.layout
    try:
        print("starting the stack ...", flush=True)
        stack.up(timeout=300)
        text = f"groups:\n  - name: {name}\n    rules:{STRIMZI_LAG_RULE}{rules}\n"
        (L.prometheus_rules_dir / f"{name}.yml").write_text(text)
        httpx.post(f"{L.prometheus_url}/-/reload", timeout=10).raise_for_status()
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": L.bootstrap_servers})
        for f in admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)]).values():
            f.result(60)
        tenant = TenantConfig(
            name="bench",
            selectors=(TenantSelector(cluster="local", topic_prefixes=("bench.",), group_prefixes=("bench.",)),),
        )
        config = stack.config(tenants=(tenant,), store_url=f"sqlite:///{tmp / 'alerts.db'}")
        config = config.model_copy(update={"collection": CollectionSettings()})  # shipped: 15 s
        store = Store(config.store.url)
        create_all(store)
        svc = AlertService(config, store=store, registry=CollectorRegistry())
        with running_collectors(config, tmp):  # `serve --role collector` in its own process, as in production
            yield stack, svc
    finally:
        stack.down()
        shutil.rmtree(tmp, ignore_errors=True)


def stop_consumers(
    feeder: SteadyProducer, consumers: list[subprocess.Popen[str]] | list[subprocess.Popen[bytes]]
) -> None:
    """The bench's producer stopped and its consumer processes (each in a session of its own) killed and reaped."""
    feeder.stop()
    for c in consumers:
        if c.poll() is None:
            os.killpg(c.pid, signal.SIGKILL)
        c.wait(10)
