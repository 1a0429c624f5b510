"""A real ``kafka-health serve`` with ``reports.schedule`` catches up a missed slot by running a real report
(subprocess, local Spark) on the known-answer lake, and says so in its state file and its /metrics."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest
import yaml

from bench.gen_lake import known_answer_lake
from monitor.reports.schedule import STATE_FILE, latest_slot, read_state, week_for_slot
from tests.conftest import wait_until

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
CRON = "0 2 * * 1"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_catches_up_a_missed_weekly_report(tmp_path):
    lake = tmp_path / "lake"
    config = known_answer_lake(lake)
    data = config.model_dump(mode="json", exclude_defaults=True)
    data.update(
        lake={"path": str(lake)}, store={"url": f"sqlite:///{tmp_path / 'store.db'}"}, reports={"schedule": CRON}
    )
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(data))
    # serve was down over the last slot: the state says the slot before was the last one handled
    now = datetime.now(timezone.utc)
    slot = latest_slot(CRON, now)
    state = lake / STATE_FILE
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"last_slot": (slot - timedelta(days=7)).isoformat()}))
    port = _port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("KAFKA_HEALTH_CONFIG", None)
    serve = subprocess.Popen(
        [sys.executable, "-m", "monitor.cli", "serve", "--config", str(cfg), "--role", "api", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "serve.log", "wb"),
    )
    try:
        done = wait_until(
            lambda: read_state(state).last_result, timeout=600, interval=0.5, what="the scheduled report to finish"
        )
        log = (lake / "reports/_schedule/last-run.log").read_text()
        assert done == "success", (read_state(state), log[-2000:])
        week = week_for_slot(slot)
        assert read_state(state).last_week == week and read_state(state).last_slot == slot.isoformat()
        assert (lake / f"reports/week={week}/tenant=acme/report.json").exists()
        assert "[5/5]" in log  # the report's own progress, kept for the operator
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", headers=_operator(cfg), timeout=10).text
        success = [
            line
            for line in metrics.splitlines()
            if line.startswith("kafka_health_report_last_success_timestamp_seconds ")
        ]
        assert success and float(success[0].split()[1]) >= now.timestamp() - 5
        assert 'kafka_health_report_runs_total{result="success"} 1.0' in metrics
        assert serve.poll() is None  # serve itself is untouched by the run
    finally:
        serve.terminate()
        serve.wait(timeout=30)


def _operator(cfg) -> dict:
    """An operator token on the served store: /metrics of a process serving the API is an operator's to read."""
    from monitor.api import tokens
    from monitor.core.config import load_config
    from monitor.store import open_store

    store = open_store(load_config(cfg).store)
    try:
        with store.session() as s:
            _, secret = tokens.create(
                db_session=s, kind=tokens.TokenKind.OPERATOR, tenant=None, name="test", now=datetime.now(timezone.utc)
            )
    finally:
        store.dispose()
    return {"Authorization": f"Bearer {secret}"}
