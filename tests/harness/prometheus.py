"""A Prometheus of a test's or bench's own (Debian's ``prometheus`` binary), beside the stack's: the platform's
Prometheus that already scrapes the exporters (tests/e2e/test_profiles.py, bench/sources.py), or one scraping a test's
exporters (tests/integration/alerts_helpers.py ``own_prometheus``)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx
import yaml

from tests.conftest import _free_port

# A scrape job's targets: (host:port, the labels its relabelling would give it)
Targets = Sequence[tuple[str, Mapping[str, str]]]


def start_prometheus(home: Path, jobs: Mapping[str, Targets], *, interval: str) -> tuple[subprocess.Popen, int]:
    """Prometheus on a free loopback port, its data and log under ``home``, scraping each job's targets every
    ``interval`` (``5s``, ``1000ms``; the scrape timeout is capped to it); returned once ready. The caller stops it."""
    home.mkdir(parents=True, exist_ok=True)
    config = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": [t], "labels": dict(labels)} for t, labels in targets]}
            for job, targets in jobs.items()
        ],
    }
    (home / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = _free_port()
    proc = subprocess.Popen(
        [
            shutil.which("prometheus") or "prometheus",
            f"--config.file={home / 'prometheus.yml'}",
            f"--storage.tsdb.path={home / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=(home / "log").open("w"),
        stderr=subprocess.STDOUT,
    )
    wait_ready(proc, f"http://127.0.0.1:{port}", home / "log")
    return proc, port


def wait_ready(proc: subprocess.Popen, url: str, log: Path) -> None:
    """Until ``url``/-/ready answers 200 (Prometheus, Alertmanager); the process killed if it exits or takes 60 s."""

    def ready() -> bool:
        try:
            return httpx.get(f"{url}/-/ready", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    deadline = time.monotonic() + 60
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"{url} did not start: {log.read_text()[-2000:]}")
        time.sleep(0.2)
