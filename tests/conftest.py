"""Shared fixtures.

- ``stack``: the real local stack (KRaft controller + 3 brokers, Prometheus, Alertmanager), secured, up once per
  session, down at the end. Port base from $KAFKA_HEALTH_TEST_PORT_BASE (default 19700) so a developer's demo stack
  can keep running.
- ``pg_url``: a real PostgreSQL server (Debian's package) initialised in a temp dir for the session.
- ``spark``: a local PySpark session.
- ``known_report``: the weekly report of the known-answer lake, run once per session on ``spark``.

Tests marked ``integration``/``e2e`` use these; ``unit`` tests use none.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from monitor.core import kafka_versions
from monitor.stack import Stack, StackLayout
from monitor.stack.layout import resolve_kafka_version


@pytest.fixture(scope="session")
def stack(tmp_path_factory) -> Stack:
    base = int(os.environ.get("KAFKA_HEALTH_TEST_PORT_BASE", "19700"))
    version = resolve_kafka_version(os.environ.get("KAFKA_HEALTH_TEST_KAFKA_VERSION"))
    # Secured as a shared cluster is (SASL_SSL, ACLs, JMX and Jolokia with passwords: what stack.config() points
    # kafka-health at), plus the anonymous PLAINTEXT listener of bootstrap_servers for tests' own clients, whose
    # rights are ACLs (so the authorizer decides for them too).
    layout = StackLayout(
        dir=tmp_path_factory.mktemp("stack"),
        port_base=base,
        kafka_version=version,
        secured=True,
        plaintext_listener=True,
    )
    with running_stack(layout) as s:
        yield s


@contextlib.contextmanager
def running_stack(layout: StackLayout):
    """The stack of ``layout`` up for the block, down after it whatever happens (for a test module that needs a
    stack of its own, e.g. with a client listener)."""
    s = Stack(layout, log=lambda *_: None)
    try:
        s.up(timeout=240)
        yield s
    finally:
        s.down()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pg_bin(name: str) -> str:
    for cand in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
        return str(cand)
    found = shutil.which(name)
    if not found:
        pytest.skip(f"PostgreSQL {name} not installed (run scripts/setup.sh)")
    return found


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory) -> str:
    """A throwaway PostgreSQL cluster on loopback; initdb must not run as root, so it runs as 'postgres'."""
    data = tmp_path_factory.mktemp("pg") / "data"
    port = _free_port()
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    as_pg: list[str] = []
    if os.geteuid() == 0:
        # pytest's temp root is 0700, so 'postgres' could not reach a directory inside it: use one of its own.
        data = Path(tempfile.mkdtemp(prefix="kafka-health-pg-")) / "data"
        data.parent.chmod(0o777)
        as_pg = ["runuser", "-u", "postgres", "--"]
    subprocess.run(
        [*as_pg, initdb, "-D", str(data), "-U", "kh", "--auth=trust", "-E", "UTF8"], check=True, capture_output=True
    )
    sock_dir = data.parent
    subprocess.run(
        [
            *as_pg,
            pg_ctl,
            "-D",
            str(data),
            "-l",
            str(data.parent / "pg.log"),
            "-w",
            "-t",
            "60",
            "-o",
            f"-p {port} -k {sock_dir} -c listen_addresses=127.0.0.1 -c fsync=off",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    url = f"postgresql+psycopg://kh@127.0.0.1:{port}/postgres"
    try:
        yield url
    finally:
        subprocess.run([*as_pg, pg_ctl, "-D", str(data), "-m", "fast", "stop"], capture_output=True)
        if as_pg:
            shutil.rmtree(data.parent, ignore_errors=True)


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("kafka-health-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    yield session
    session.stop()


KNOWN_NOW = datetime(2026, 11, 23, 6, tzinfo=timezone.utc)  # the Monday after the known-answer week, 06:00 UTC


@pytest.fixture(scope="session")
def known_report(tmp_path_factory, spark):
    """The known-answer lake's weekly report (``bench.gen_lake``, every tenant, indexed in a SQLite store), run
    once per session: test_reports_job checks its answers and test_reports_distributed compares a cluster run
    with it (a second identical local run there cost the CI about 40 s)."""
    from bench.gen_lake import KNOWN_WEEK, known_answer_lake
    from monitor.core.store import Store
    from monitor.reports.job import run_report
    from monitor.schema import create_all

    lake = tmp_path_factory.mktemp("known-lake")
    config = known_answer_lake(lake, now=KNOWN_NOW)
    store = Store(f"sqlite:///{lake / 'store.db'}")
    create_all(store)
    messages: list[str] = []
    run = run_report(spark, config, KNOWN_WEEK, now=KNOWN_NOW, store=store, progress=messages.append)
    yield {"lake": lake, "config": config, "store": store, "run": run, "progress": messages}
    store.dispose()


def wait_until(predicate, timeout: float, interval: float = 0.5, what="condition"):
    """Poll ``predicate`` until it returns a truthy value; return it, or fail the test naming ``what`` (a string, or
    a callable giving one: what was seen by then)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what() if callable(what) else what} (last: {last!r})")


_ORDER = {"unit": 0, "integration": 1, "e2e": 2}


def pytest_collection_modifyitems(config, items):
    """Run cheap tests first (unit, then integration, then e2e), then tests marked ``loads_machine`` (their clients
    load the machine: by then scripts/test.sh's background chain, own-stack tests and version lines, has ended; beside
    it the advisor's zoo failed in CI), then tests marked ``warm_up`` (their minutes have passed meanwhile), and tests
    marked ``last`` at the very end: they take the session stack down to prove ``down`` leaves nothing behind."""

    def key(item):
        kind = next((k for k in _ORDER if item.get_closest_marker(k)), "integration")
        return (
            1 if item.get_closest_marker("last") else 0,
            1 if item.get_closest_marker("warm_up") else 0,
            1 if item.get_closest_marker("loads_machine") else 0,
            _ORDER[kind],
        )

    items.sort(key=key)
    _matrix_lines_only(config, items)


def _matrix_lines_only(config, items) -> None:
    """In a run of the version matrix (``-m kafka_versions`` on a release other than the default), a test marked
    ``kafka_versions(lines=(...))`` runs only on the release lines named: what it proves differs from the default
    there and not on the other lines (its marker says why), so their minutes go to what does differ on them."""
    wanted = os.environ.get("KAFKA_HEALTH_TEST_KAFKA_VERSION")
    if not wanted or "kafka_versions" not in (config.option.markexpr or ""):
        return
    line = kafka_versions.release(wanted).line
    if line == kafka_versions.DEFAULT_RELEASE.line:
        return
    off = [
        item
        for item in items
        if (m := item.get_closest_marker("kafka_versions")) is not None and line not in m.kwargs.get("lines", (line,))
    ]
    if off:
        config.hook.pytest_deselected(items=off)
        gone = set(off)
        items[:] = [item for item in items if item not in gone]


# warm_up(cm): the test needs wall time more than anything else (minutes of samples in a Prometheus). ``cm(dir)``, a
# context manager, is entered as soon as the session's tests are collected and left when the session ends; the test
# reads what it yielded from the ``warmed_up`` fixture and runs after the others, so those minutes pass while they run.
_WARM = pytest.StashKey[tuple]()


def pytest_collection_finish(session):
    if session.config.option.collectonly:
        return
    exits, warmed = contextlib.ExitStack(), {}
    for item in session.items:
        marker = item.get_closest_marker("warm_up")
        if marker is None or marker.args[0] in warmed:
            continue
        cm = marker.args[0]
        workdir = Path(tempfile.mkdtemp(prefix=f"kafka-health-{cm.__name__}-"))
        exits.callback(shutil.rmtree, workdir, ignore_errors=True)
        try:
            warmed[cm] = exits.enter_context(cm(workdir))
        except Exception as exc:  # noqa: BLE001 - reported by the test that needs it, not by whichever runs first
            warmed[cm] = exc
    session.config.stash[_WARM] = (exits, warmed)


def pytest_sessionfinish(session):
    exits, _ = session.config.stash.get(_WARM, (None, None))
    if exits is not None:
        exits.close()


@pytest.fixture
def warmed_up(request):
    """What the test's ``warm_up`` context manager yielded (started when the session's tests were collected)."""
    marker = request.node.get_closest_marker("warm_up")
    value = request.config.stash[_WARM][1][marker.args[0]]
    if isinstance(value, Exception):
        raise value
    return value
