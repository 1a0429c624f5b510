"""``kafka-health report --master spark://...`` on a real Spark standalone master and worker started from the PySpark
installation on loopback; the documents must equal those of local mode (the session's ``known_report``, run on the
session ``spark`` fixture).

The cluster run is a subprocess (one SparkContext per process: the session's stays local). Master and worker start
when the session's tests are collected and are stopped at its end, whatever happens.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pyspark
import pytest
import yaml

from bench.gen_lake import KNOWN_WEEK
from tests.conftest import wait_until

pytestmark = pytest.mark.integration
# base+35..37: free in the stack's layout (monitor/stack/layout.py), so they never meet the session stack's ports.
_BASE = int(os.environ.get("KAFKA_HEALTH_TEST_PORT_BASE", "19700"))
MASTER_PORT, MASTER_UI, WORKER_UI = _BASE + 35, _BASE + 36, _BASE + 37


def _spark_env(tmp: Path) -> dict:
    home = Path(pyspark.__file__).parent
    return {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOG_DIR": str(tmp / "logs"),
        "SPARK_WORKER_DIR": str(tmp / "work"),
        "SPARK_NO_DAEMONIZE": "1",
    }


@contextlib.contextmanager
def standalone_cluster(workdir: Path):
    """A master and a 2-core worker, started when the session's tests are collected (``warm_up``): their JVMs start
    and the worker registers while the other tests run (a wait of 16 s in the CI when this test started them).
    Yields the master's URL and a function that waits for the worker."""
    env = _spark_env(workdir)
    spark_class = str(Path(env["SPARK_HOME"]) / "bin" / "spark-class")
    logs = workdir / "logs"
    logs.mkdir()
    procs = []

    def start(args, log):
        procs.append(
            subprocess.Popen(
                [spark_class, *args],
                env=env,
                stdout=open(logs / log, "wb"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )

    try:
        start(
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(MASTER_PORT),
                "--webui-port",
                str(MASTER_UI),
            ],
            "master.log",
        )
        url = f"spark://127.0.0.1:{MASTER_PORT}"
        start(
            [
                "org.apache.spark.deploy.worker.Worker",
                url,
                "--host",
                "127.0.0.1",
                "--cores",
                "2",
                "--memory",
                "1g",
                "--webui-port",
                str(WORKER_UI),
                "--work-dir",
                str(workdir / "work"),
            ],
            "worker.log",
        )

        def alive_workers():
            try:
                state = httpx.get(f"http://127.0.0.1:{MASTER_UI}/json/", timeout=2).json()
            except (httpx.HTTPError, ValueError):
                return 0
            return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

        def ready() -> str:
            wait_until(alive_workers, timeout=120, interval=1, what="a Spark worker registered with the master")
            return url

        yield ready
    finally:
        for p in reversed(procs):  # our own processes only, by process group
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(p.pid, signal.SIGKILL)


def _docs(lake: Path) -> dict[str, dict]:
    out = {}
    for f in sorted((lake / "reports" / f"week={KNOWN_WEEK}").glob("tenant=*/report.json")):
        doc = json.loads(f.read_text())
        doc.pop("generated_at")
        out[f.parent.name] = doc
    return out


@pytest.mark.warm_up.with_args(standalone_cluster)  # with_args: a lone callable would be taken for the test
def test_cluster_run_equals_local_run(warmed_up, known_report, tmp_path):
    """The local run is the session's (``known_report``: the same lake, config and ``now``)."""
    config, local_lake, cluster_lake = known_report["config"], known_report["lake"], tmp_path / "cluster"
    shutil.copytree(local_lake / "metrics", cluster_lake / "metrics")
    standalone = warmed_up()

    cfg = tmp_path / "config.yaml"
    data = config.model_dump(mode="json", exclude_defaults=True)
    data["lake"] = {"path": str(cluster_lake)}
    cfg.write_text(yaml.safe_dump(data))
    env = {**_spark_env(tmp_path), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    # The real CLI entry point.
    entry = "import sys, monitor.cli as c; sys.exit(c.main(sys.argv[1:]))"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            entry,
            "report",
            "--week",
            KNOWN_WEEK,
            "--master",
            standalone,
            "--config",
            str(cfg),
            "--no-index",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[5/5]" in done.stderr and "done:" in done.stderr  # progress while it runs
    local, cluster = _docs(local_lake), _docs(cluster_lake)
    assert set(local) == {
        "tenant=acme",
        "tenant=beta",
        "tenant=gamma",
        "tenant=empty",
        "tenant=delta",
        "tenant=_operator",
    }
    for name in local:  # generated_at differs (KNOWN_NOW vs the wall clock): everything else must be equal
        assert cluster[name] == local[name], name
