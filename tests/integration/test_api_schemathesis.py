"""schemathesis against ``/openapi.json`` of a real ``kafka-health serve --role api`` process on loopback.

Zero 5xx, every response matches its documented status, content type, headers and schema; invalid input is
rejected; missing auth is refused. ``positive_data_acceptance`` is excluded on purpose: some schema-valid requests
are rightly refused by business rules the schema cannot express (an unknown cluster name, overlapping selectors, a
cursor this API never issued), and those answer a documented 409/422. Bounded: fixed seed, a few hundred cases.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest

from monitor.api import tokens
from monitor.core.config import load_config
from monitor.core.store import Store
from monitor.store.migrate import upgrade
from monitor.tenants import service
from tests.api_fixtures import CONFIG_YAML, alert, beat
from tests.harness.launch import serve_process

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("api-server")
    port = _free_port()
    cfg_path = d / "kh.yaml"
    # CONFIG_YAML has a service section already: add the port and the api role to it.
    # Schemathesis sends many deliberately invalid tokens from one address (both runs share this server): the
    # failed-authentication limit, which would rightly answer 429, is set out of its way here.
    cfg_path.write_text(
        CONFIG_YAML.replace(
            "service:\n", f"service:\n  port: {port}\n  roles: [api]\n  auth_failure_burst_per_address: 1000000\n"
        )
        + f"store: {{url: 'sqlite:///{d / 'kh.db'}'}}\n"
    )
    config = load_config(cfg_path)
    store = Store(config.store.url)
    upgrade(store)
    now = datetime.now(timezone.utc)
    with store.session() as s:
        service.sync_config(db_session=s, config=config, now=now)
        _, op = tokens.create(db_session=s, kind=tokens.TokenKind.OPERATOR, tenant=None, name="st", now=now)
        _, acme = tokens.create(db_session=s, kind=tokens.TokenKind.TENANT, tenant="acme", name="st", now=now)
        rows = [
            beat("shared"),
            beat("acme-only", data_ok=False, detail="no broker metrics"),
            alert("a1", tenant="acme", labels={"group": "acme-x", "topic": "acme.t"}, evidence={"lag": 5}),
            alert("a2", tenant="acme", severity="critical", broker="1", cluster="acme-only"),
            alert("g1", tenant="globex", labels={"client_id": "globex-app"}),
        ]
        for r in rows:
            if hasattr(r, "evaluated_at"):
                r.evaluated_at = now  # fresh for the live server's clock
        s.add_all(rows)
    store.dispose()
    with serve_process(d, cfg_path, port):
        yield f"http://127.0.0.1:{port}", op, acme, d
    assert "Traceback" not in (d / "serve.log").read_text(), (d / "serve.log").read_text()[-3000:]


def _schemathesis(base: str, token: str, *, examples: int, seed: int, cwd: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or "schemathesis"
    return subprocess.run(
        [
            exe,
            "run",
            f"{base}/openapi.json",
            "-H",
            f"Authorization: Bearer {token}",
            "--checks",
            "all",
            "--exclude-checks",
            "positive_data_acceptance",
            "--max-examples",
            str(examples),
            "--seed",
            str(seed),
            "--workers",
            "1",
            "--no-shrink",
            "--warnings",
            "off",
            "--request-timeout",
            "10",
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.mark.parametrize("who,examples", [("operator", 30), ("tenant", 10)])
def test_schemathesis_finds_no_5xx_and_no_schema_violation(server, who, examples):
    base, op, acme, d = server
    result = _schemathesis(base, op if who == "operator" else acme, examples=examples, seed=7, cwd=d)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "No issues found" in result.stdout


def test_openapi_documents_every_endpoint_auth_and_errors(server):
    base, *_ = server
    spec = httpx.get(f"{base}/openapi.json").json()
    paths = spec["paths"]
    for path in (
        "/api/v1/tenants",
        "/api/v1/tenants/{tenant}",
        "/api/v1/tenants/{tenant}/health",
        "/api/v1/tenants/{tenant}/alerts",
        "/api/v1/clusters",
        "/api/v1/clusters/{cluster}/health",
        "/api/v1/clusters/{cluster}/brokers",
    ):
        assert path in paths
        for op in paths[path].values():
            assert op["security"] == [{"bearer": []}]
            for status in ("401", "404", "422", "429", "500"):
                assert op["responses"][status]["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/ErrorBody"
                }
    health = spec["components"]["schemas"]["TenantHealth"]["properties"]
    assert {"tenant", "status", "score", "as_of", "components"} <= set(health)
    assert spec["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}


def test_live_health_through_the_real_server(server):
    base, _, acme, _ = server
    r = httpx.get(f"{base}/api/v1/tenants/acme/health", headers={"Authorization": f"Bearer {acme}"})
    body = r.json()
    assert r.status_code == 200 and body["status"] == "critical"
    kinds = {(c["kind"], c["id"], c["status"]) for c in body["components"]}
    assert ("cluster", "acme-only", "unknown") in kinds and ("broker", "1", "critical") in kinds
    assert datetime.fromisoformat(body["as_of"]).tzinfo is not None
    assert datetime.now(timezone.utc) - datetime.fromisoformat(body["as_of"]) < timedelta(minutes=5)
