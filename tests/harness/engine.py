"""The alert engine watching a real stack, as every e2e module sets it up (``watched``): a config with the module's
tenants and a throwaway SQLite store, its topics, and the real collectors running in a process of their own, scraped
by the stack's Prometheus, until the series the module needs are there.

    @pytest.fixture(scope="module")
    def watched(stack, tmp_path_factory):
        tmp = tmp_path_factory.mktemp("faults")
        config = watched_config(stack, tmp, TENANTS, rules=RulesSettings(files=(...,)))
        create_topics(stack, [NewTopic("orders.rf3", num_partitions=3, replication_factor=3)])
        with watching(stack, config, tmp, lambda: prom_query(stack, "kafka_cluster_broker_up == 1")):
            yield config

``engine`` (tests/e2e/conftest.py) then gives each test a fresh ``AlertService`` on that config.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

from monitor.core.config import CollectionSettings, Config, RulesSettings, TenantConfig
from tests.harness import REPO_ROOT


def watched_config(
    stack: Any,
    tmp: Path,
    tenants: Iterable[TenantConfig],
    *,
    collection: CollectionSettings | None = None,
    rules: RulesSettings | None = None,
) -> Config:
    """The stack's config for ``tenants`` with its store in ``tmp/alerts.db``; collection every 5 s unless
    ``collection`` says otherwise; ``rules`` replaces the rule settings when given."""
    config = stack.config(tenants=tuple(tenants), store_url=f"sqlite:///{tmp / 'alerts.db'}")
    update: dict[str, Any] = {"collection": collection or CollectionSettings(interval_seconds=5)}
    if rules is not None:
        update["rules"] = rules
    result: Config = config.model_copy(update=update)
    return result


def create_topics(stack: Any, topics: Iterable[Any]) -> None:
    """Create each ``NewTopic`` (one per request: librdkafka refuses explicit assignments mixed with partition
    counts); one already there from an earlier run of the session is fine."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": stack.layout.bootstrap_servers})
    for topic in topics:
        for f in admin.create_topics([topic], operation_timeout=30).values():
            try:
                f.result(60)
            except Exception as exc:  # only "already there" is fine, the rest is raised
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise


def pinned_topics(prefix: str, broker: int, partitions: int, *, per_topic: int = 1000) -> list[Any]:
    """``partitions`` partitions of RF 1, all on ``broker``: ``NewTopic``s ``{prefix}-0``, ``{prefix}-1``, ... of at
    most ``per_topic`` each, for ``create_topics`` (one request each). KRaft refuses a request of more than 10,000
    records ("excessively large batch operation"): one topic of 10,000 partitions is more."""
    from confluent_kafka.admin import NewTopic

    sizes = [min(per_topic, partitions - start) for start in range(0, partitions, per_topic)]
    # librdkafka wants num_partitions = len(assignment) (not -1 as the binding's docstring says)
    return [
        NewTopic(f"{prefix}-{i}", num_partitions=n, replication_factor=-1, replica_assignment=[[broker]] * n)
        for i, n in enumerate(sizes)
    ]


@contextmanager
def running_collectors(config: Config, workdir: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``serve --role collector`` for ``config`` as a process (its exporter on the config's service port, which the
    stack's Prometheus scrapes); yields that process (its log is workdir/collector.log). Stopped, with its children,
    on exit."""
    cfg_file = workdir / "kafka-health.yaml"
    cfg_file.write_text(yaml.safe_dump(config.model_dump(mode="json", exclude_none=True)))
    # Without the CLI's module discovery (which could pick other packages' commands up from an editable install of
    # another checkout).
    run = (
        "import sys; from monitor.core.config import load_config; from monitor.serve import run; "
        "c = load_config(sys.argv[1]); run(c, ('collector',), c.service.host, c.service.port)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", run, str(cfg_file)],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=open(workdir / "collector.log", "wb"),
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def prom_query(stack: Any, expr: str) -> list[dict[str, Any]]:
    """The stack's Prometheus's answer to an instant query, now: its ``result`` list."""
    r = httpx.get(f"{stack.layout.prometheus_url}/api/v1/query", params={"query": expr}, timeout=5).json()
    result: list[dict[str, Any]] = r["data"]["result"]
    return result


@contextmanager
def watching(
    stack: Any,
    config: Config,
    tmp: Path,
    ready: Callable[[], object] | None = None,
    *,
    timeout: float = 120,
    what: str = "collectors' series in Prometheus",
) -> Iterator[subprocess.Popen[bytes]]:
    """The collectors running for ``config`` until exit; yields their process once ``ready()`` is true (default:
    every broker up in Prometheus)."""
    from tests.conftest import wait_until

    ready = ready or (lambda: len(prom_query(stack, "kafka_cluster_broker_up == 1")) == len(stack.layout.broker_ids))
    with running_collectors(config, tmp) as proc:
        wait_until(ready, timeout, interval=2, what=what)
        yield proc


@contextmanager
def engine_pair(
    config: Config, workdir: Path, store_url: str, roles: tuple[str, ...] = ("api", "alerts")
) -> Iterator[list[tuple[subprocess.Popen[bytes], int]]]:
    """Two ``serve --role api,alerts`` processes (or ``roles``: two collectors of one shard) for ``config`` on the
    PostgreSQL store ``store_url`` (issue 31: one evaluates and notifies, or collects, the other stands by), each on a
    free port of 127.0.0.1 with its log in workdir/engine-N.log; yields [(process, port)]. Killed, with their
    children, on exit."""
    import socket

    procs: list[tuple[subprocess.Popen[bytes], int]] = []
    run = (
        "import sys; from monitor.core.config import load_config; from monitor.serve import run; "
        "c = load_config(sys.argv[1]); run(c, tuple(sys.argv[3].split(',')), '127.0.0.1', int(sys.argv[2]))"
    )
    try:
        for n in range(2):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            own = config.model_copy(
                update={
                    "store": config.store.model_copy(update={"url": store_url}),
                    "lake": config.lake.model_copy(update={"path": str(workdir / f"lake-{n}")}),
                }
            )
            cfg_file = workdir / f"engine-{n}.yaml"
            cfg_file.write_text(yaml.safe_dump(own.model_dump(mode="json", exclude_none=True)))
            proc = subprocess.Popen(
                [sys.executable, "-c", run, str(cfg_file), str(port), ",".join(roles)],
                cwd=REPO_ROOT,
                env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                stdout=subprocess.DEVNULL,
                stderr=open(workdir / f"engine-{n}.log", "wb"),
                start_new_session=True,
            )
            procs.append((proc, port))
        yield procs
    finally:
        for proc, _ in procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:  # killed by the test already, with no child left
                pass
            proc.wait(30)


def engine_role(port: int, component: str = "alerts") -> str | None:
    """``active`` or ``standby``: what the engine (or ``component``: the collector) of the process on ``port`` says
    on /readyz; None if it does not answer."""
    try:
        role = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).json().get("roles", {}).get(component)
    except httpx.HTTPError:
        return None
    return role if isinstance(role, str) else None
