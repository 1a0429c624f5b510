"""Fixtures for the REST API and store tests: a migrated store on SQLite or real PostgreSQL, an app, tokens.

Import with ``from tests.api_fixtures import *`` in a test module. Each test gets a fresh database: a new SQLite
file, or a new schema in the session's PostgreSQL (``pg_url``) selected with ``search_path``, dropped afterwards.
Fresh schemas rather than a rolled-back transaction, because the API commits its own units of work, and the
migration tests need DDL from the empty state.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi import FastAPI
from sqlalchemy import create_engine, text

from alerts.models import AlertInstance, EngineHeartbeat, Silence
from monitor.api import tokens
from monitor.api.app import mount_api
from monitor.core.config import Config, parse_config
from monitor.core.store import Store
from monitor.schema import create_all
from monitor.store.migrate import upgrade

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)

CONFIG_YAML = """
service:
  api_rate_limit_per_second: 100000
  api_rate_limit_burst: 100000
clusters:
  - name: shared
    bootstrap_servers: 127.0.0.1:1
    brokers: [{id: 1}, {id: 2}, {id: 3}]
  - name: acme-only
    bootstrap_servers: 127.0.0.1:2
    brokers: [{id: 1}]
  - name: globex-only
    bootstrap_servers: 127.0.0.1:3
    brokers: [{id: 7}]
tenants:
  - name: acme
    whole_clusters: [acme-only]
    selectors:
      - cluster: shared
        topic_prefixes: [acme.]
        principals: ["User:acme"]
        group_prefixes: [acme-]
  - name: globex
    whole_clusters: [globex-only]
    selectors:
      - cluster: shared
        topic_prefixes: [globex.]
        client_id_prefixes: [globex-]
"""  # ends inside the tenants list: make_config(extra) appends tenants


def make_config(extra: str = "") -> Config:
    return parse_config(CONFIG_YAML + extra)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'kh.db'}"
        return
    pg_url = request.getfixturevalue("pg_url")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(pg_url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield f"{pg_url}?options={quote(f'-csearch_path={schema}')}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def store(store_url) -> Store:
    s = Store(store_url)
    upgrade(s)
    yield s
    s.dispose()


@pytest.fixture
def config() -> Config:
    return make_config()


def build_api(config: Config, store: Store, *, now: datetime = NOW) -> FastAPI:
    app = FastAPI(title="kafka-health")
    app.state.clock = lambda: now
    mount_api(app, config=config, store=store)
    return app


def openapi_document() -> dict:
    """The API's OpenAPI document, built on an empty in-memory store (for tests that read the document alone)."""
    store = Store("sqlite://")
    create_all(store)
    try:
        return build_api(make_config(), store).openapi()
    finally:
        store.dispose()


@pytest.fixture
def app(config, store) -> FastAPI:
    return build_api(config, store)


@pytest.fixture
def client(app):
    from fastapi.testclient import TestClient

    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@dataclass
class Tokens:
    operator: str
    acme: str
    globex: str

    def h(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {getattr(self, who)}"}


def new_token(store: Store, tenant: str | None) -> str:
    kind = tokens.TokenKind.TENANT if tenant else tokens.TokenKind.OPERATOR
    with store.session() as s:
        return tokens.create(db_session=s, kind=kind, tenant=tenant, name="test", now=NOW)[1]


def tenant_health_as_tenant(tmp_path: Path, tenant: str, **boards: object) -> dict:
    """GET /tenants/{tenant}/health with that tenant's token on a fresh store, ``boards`` set on the app's state
    (e.g. ``share_board=ShareGroupBoard(lambda c: FakeSource(...))``): the answer's JSON."""
    from fastapi.testclient import TestClient

    store = Store(f"sqlite:///{tmp_path / 'kh.db'}")
    create_all(store)
    try:
        app = build_api(make_config(), store)
        with TestClient(app) as client:
            for name, board in boards.items():
                setattr(app.state, name, board)
            token = new_token(store, tenant)
            return client.get(f"/api/v1/tenants/{tenant}/health", headers={"Authorization": f"Bearer {token}"}).json()
    finally:
        store.dispose()


@pytest.fixture
def tok(app, store) -> Tokens:  # after app: mount_api has synced the config tenants
    return Tokens(operator=new_token(store, None), acme=new_token(store, "acme"), globex=new_token(store, "globex"))


def alert(
    fp: str,
    *,
    rule="KafkaUnderReplicatedPartitions",
    state="firing",
    severity="warning",
    cluster="shared",
    tenant=None,
    broker=None,
    labels=None,
    summary=None,
    evidence=None,
) -> AlertInstance:
    return AlertInstance(
        fingerprint=fp,
        rule=rule,
        state=state,
        severity=severity,
        cluster=cluster,
        broker=broker,
        tenant=tenant,
        labels={"cluster": cluster, **({"tenant": tenant} if tenant else {}), **(labels or {})},
        annotations={"summary": summary or f"{rule} on {cluster}"},
        evidence=evidence or {},
        active_at=NOW - timedelta(minutes=10),
        fired_at=NOW - timedelta(minutes=5),
    )


def beat(cluster: str, *, age_s: float = 5, data_ok: bool = True, detail: str = "") -> EngineHeartbeat:
    return EngineHeartbeat(cluster=cluster, evaluated_at=NOW - timedelta(seconds=age_s), data_ok=data_ok, detail=detail)


def silence(
    sid: str, *, tenant: str | None, matchers: list[dict] | None = None, comment: str = "", hours: float = 24
) -> Silence:
    """A silence active from an hour before NOW for ``hours``; a tenant's is confined by a tenant matcher."""
    matchers = list(matchers or [{"name": "alertname", "value": "KafkaConsumerLag"}])
    if tenant:
        matchers.append({"name": "tenant", "value": tenant})
    return Silence(
        id=sid,
        matchers=[{"is_regex": False, "is_equal": True, **m} for m in matchers],
        starts_at=NOW - timedelta(hours=1),
        ends_at=NOW + timedelta(hours=hours),
        created_by="test",
        comment=comment,
        tenant=tenant,
        created_at=NOW - timedelta(hours=1),
    )


def report(lake: Path, tenant: str, week: str, *, doc: dict, html: str):
    """A weekly report as the job leaves it: its JSON and HTML files in the lake, and its row in the index."""
    from monitor.reports.load import write_report
    from monitor.reports.models import ReportIndex

    json_path, html_path = write_report(lake, {**doc, "week": week}, html, tenant=tenant)
    return ReportIndex(
        tenant=tenant, week=week, status="ok", problems=0, json_path=json_path, html_path=html_path, generated_at=NOW
    )


def add(store: Store, *rows) -> None:
    with store.session() as s:
        s.add_all(rows)


__all__ = [
    "NOW",
    "CONFIG_YAML",
    "make_config",
    "store_url",
    "store",
    "config",
    "build_api",
    "app",
    "client",
    "Tokens",
    "new_token",
    "tok",
    "alert",
    "beat",
    "silence",
    "report",
    "add",
]
