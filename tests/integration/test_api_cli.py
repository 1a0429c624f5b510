"""``kafka-health tenants ...`` and ``tokens ...`` through ``monitor.cli.main`` on a real SQLite store; the tokens
they print work (and stop working) against the API on the same store."""

from __future__ import annotations

import json
import socket

import httpx
import pytest
from fastapi.testclient import TestClient

from monitor.cli import main
from monitor.core.config import load_config
from monitor.core.store import Store
from tests.api_fixtures import CONFIG_YAML, build_api
from tests.conftest import wait_until
from tests.harness.launch import serve_process

pytestmark = pytest.mark.integration


@pytest.fixture
def cfg(tmp_path):
    path = tmp_path / "kh.yaml"
    path.write_text(CONFIG_YAML + f"store: {{url: 'sqlite:///{tmp_path / 'kh.db'}'}}\n")
    return str(path)


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_tokens_print_once_work_and_revoke(cfg, capsys):
    code, token, err = run(capsys, "tokens", "create", "--tenant", "acme", "--name", "ci", "--config", cfg)
    token = token.strip()
    assert code == 0 and token.startswith("kh_") and "\n" not in token and token not in err
    token_id = token.split("_")[1]
    assert f"token {token_id}" in err

    code, listing, _ = run(capsys, "tokens", "list", "--json", "--config", cfg)
    (row,) = json.loads(listing)
    assert (row["id"], row["kind"], row["tenant"], row["name"], row["revoked_at"]) == (
        token_id,
        "tenant",
        "acme",
        "ci",
        None,
    )
    assert token.split("_", 2)[2] not in listing  # the secret is never shown again

    config = load_config(cfg)
    store = Store(config.store.url)
    with TestClient(build_api(config, store)) as client:
        headers = {"Authorization": f"Bearer {token}"}
        assert client.get("/api/v1/tenants/acme", headers=headers).status_code == 200
        assert run(capsys, "tokens", "revoke", token_id, "--config", cfg)[0] == 0
        wait_until(
            lambda: client.get("/api/v1/tenants/acme", headers=headers).status_code == 401,
            timeout=10,
            interval=0.2,
            what="revoked token refused",
        )
    store.dispose()


def test_tenants_create_list_show_delete(cfg, capsys, tmp_path):
    code, out, _ = run(
        capsys,
        "tenants",
        "create",
        "initech",
        "--topic-prefix",
        "shared:initech.",
        "--group-prefix",
        "shared:initech-",
        "--display-name",
        "Initech",
        "--config",
        cfg,
    )
    assert code == 0 and json.loads(out)["source"] == "api"
    spec = tmp_path / "hooli.yaml"
    spec.write_text("selectors: [{cluster: shared, principals: ['User:hooli']}]\ncontract: {retention_hours: 24}\n")
    assert run(capsys, "tenants", "create", "hooli", "--file", str(spec), "--config", cfg)[0] == 0

    code, out, _ = run(capsys, "tenants", "list", "--config", cfg)
    lines = out.splitlines()[1:]
    assert [line.split()[:2] for line in lines] == [
        ["acme", "config"],
        ["globex", "config"],
        ["hooli", "api"],
        ["initech", "api"],
    ]
    code, out, _ = run(capsys, "tenants", "show", "hooli", "--config", cfg)
    assert json.loads(out)["contract"]["retention_hours"] == 24

    assert run(capsys, "tokens", "create", "--tenant", "initech", "--config", cfg)[0] == 0
    code, out, _ = run(capsys, "tenants", "delete", "initech", "--config", cfg)
    assert code == 0
    code, out, _ = run(capsys, "tokens", "list", "--json", "--config", cfg)
    assert json.loads(out) == []  # its token went with it


def test_real_server_refuses_revoked_and_deleted_tenants_tokens(tmp_path, capsys):
    """A real ``serve --role api``: a token revoked by the CLI (another process) is refused within the server's
    watch interval; a tenant deleted through that server's API takes its tokens at once, from the next request."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = tmp_path / "kh.yaml"
    cfg.write_text(
        CONFIG_YAML.replace("service:\n", f"service:\n  port: {port}\n  roles: [api]\n")
        + f"store: {{url: 'sqlite:///{tmp_path / 'kh.db'}'}}\n"
    )

    def token(*argv) -> str:
        code, out, _ = run(capsys, "tokens", "create", *argv, "--config", str(cfg))
        assert code == 0
        return out.strip()

    operator, acme = token("--operator"), token("--tenant", "acme")
    assert (
        run(capsys, "tenants", "create", "initech", "--topic-prefix", "shared:initech.", "--config", str(cfg))[0] == 0
    )
    initech = token("--tenant", "initech")
    base = f"http://127.0.0.1:{port}/api/v1"

    def get(path: str, tok: str) -> int:
        return httpx.get(base + path, headers={"Authorization": f"Bearer {tok}"}, timeout=10).status_code

    with serve_process(tmp_path, cfg, port):
        assert [get("/tenants/acme/health", acme) for _ in range(3)] == [200, 200, 200]  # remembered by now
        assert run(capsys, "tokens", "revoke", acme.split("_")[1], "--config", str(cfg))[0] == 0
        wait_until(
            lambda: get("/tenants/acme/health", acme) == 401,
            timeout=3,
            interval=0.02,
            what="the token revoked by the CLI refused (watch interval 0.25 s)",
        )
        assert get("/tenants/acme", acme) == 401

        assert [get("/tenants/initech", initech) for _ in range(3)] == [200, 200, 200]
        r = httpx.delete(base + "/tenants/initech", headers={"Authorization": f"Bearer {operator}"}, timeout=10)
        assert r.status_code == 204
        assert get("/tenants/initech", initech) == 401  # the very next request
        assert get("/tenants/initech/health", operator) == 404
    assert "Traceback" not in (tmp_path / "serve.log").read_text()


@pytest.mark.parametrize(
    "argv,message",
    [
        (
            ["tenants", "create", "x", "--topic-prefix", "shared:acme.eu."],
            "overlap on cluster 'shared': topic prefix 'acme.' of 'acme'",
        ),
        (["tenants", "create", "x", "--topic-prefix", "shared"], "--topic-prefix: expected CLUSTER:VALUE"),
        (["tenants", "create", "x", "--topic-prefix", "nowhere:x."], "unknown cluster 'nowhere'"),
        (["tenants", "create", "x"], "a tenant needs whole_clusters or at least one selector"),
        (["tenants", "delete", "acme"], "defined in the config file"),
        (["tenants", "show", "nobody"], "no tenant named 'nobody'"),
        (["tokens", "create", "--tenant", "nobody"], "no tenant named 'nobody'"),
        (["tokens", "revoke", "000000000000"], "no token with id"),
    ],
)
def test_refusals_are_one_line_errors(cfg, capsys, argv, message):
    code, out, err = run(capsys, *argv, "--config", cfg)
    assert code == 1 and out == ""
    assert err.startswith("error: ") and message in err and "Traceback" not in err
