"""The API's limits, through the real app on a SQLite store (issue 15, items 6-11): what a caller can make the server
do is bounded, and every refusal is the API's error body with the right status.

- request bodies: 413 before reading past 64 KiB (item 7);
- failed authentications: 429 per client address and per token id, before the store is asked (item 9);
- a cluster the tenant is not on is refused without reading the store, like one that does not exist (item 10);
- tokens expire (item 11);
- what-if figures and windows are bounded (items 8, 6); costly requests are admitted a few per token and per server,
  with a deadline, and advice answers are remembered briefly (item 6).

No assertion here is on time: the cost figures are bench/api_limits.py's.
"""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from monitor.advisor import service as advisor_service
from monitor.advisor import views as advisor_views
from monitor.api import tokens
from monitor.core.api.deps import CostlyGate, CostlyLimits
from monitor.core.errors import Invalid
from monitor.core.prom import InstantSample
from monitor.core.store import Store
from monitor.store.migrate import upgrade
from monitor.tenants import service as tenant_service
from tests.api_fixtures import NOW, build_api, make_config, new_token

pytestmark = pytest.mark.unit

KIB = 1024
UNKNOWN = {"error": {"code": "unauthorized", "message": "missing or invalid bearer token"}}


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'kh.db'}")
    upgrade(s)
    yield s
    s.dispose()


class Clock:
    """A settable clock: ``app.state.clock`` (datetimes) or a gate's (monotonic seconds)."""

    def __init__(self, value):
        self.value = value

    def __call__(self):
        return self.value


@pytest.fixture
def wall():
    return Clock(NOW)


@pytest.fixture
def app(store, wall):
    app = build_api(make_config(), store)
    app.state.clock = wall
    return app


@pytest.fixture
def client(app):
    with TestClient(app, raise_server_exceptions=False) as c:  # lifespan: the store watch runs (tokens remembered)
        yield c


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Statements:
    """SQL statements the store ran that mention ``table`` (the store watch's own polling names other tables)."""

    def __init__(self, store: Store, table: str):
        self.seen: list[str] = []
        self.store, self.table = store, table

    def __enter__(self):
        event.listen(self.store.engine, "before_cursor_execute", self._record)
        return self

    def __exit__(self, *exc):
        event.remove(self.store.engine, "before_cursor_execute", self._record)

    def _record(self, conn, cursor, statement, params, context, executemany):
        if f"FROM {self.table}" in statement or f'FROM "{self.table}"' in statement:
            self.seen.append(statement)


def call_asgi(app, method: str, path: str, *, headers: dict[str, str], chunks: list[bytes]) -> tuple[int, dict, int]:
    """One request straight through the ASGI app, its body offered in ``chunks``: (status, JSON body, chunks the app
    asked for). Shows how much of a body the server read, which no HTTP client can."""
    read = 0
    sent: list[dict] = []

    async def receive():
        nonlocal read
        if read < len(chunks):
            read += 1
            return {"type": "http.request", "body": chunks[read - 1], "more_body": read < len(chunks)}
        await asyncio.sleep(3600)  # the client has nothing more to say (a disconnect would end the request)

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "scheme": "http",
        "client": ("192.0.2.1", 4000),
        "server": ("testserver", 80),
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    asyncio.run(asyncio.wait_for(app(scope, receive, send), timeout=30))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(body), read


# --- 7. request bodies -------------------------------------------------------------------------------------------


def test_a_body_declared_over_64_kib_is_413_before_a_byte_of_it_is_read(app, store):
    op = new_token(store, None)
    chunks = [b"x" * (64 * KIB)] * 16  # 1 MiB offered, as declared
    status, body, read = call_asgi(
        app,
        "POST",
        "/api/v1/silences",
        chunks=chunks,
        headers={**bearer(op), "content-type": "application/json", "content-length": str(16 * 64 * KIB)},
    )
    assert (status, body["error"]["code"], read) == (413, "too_large", 0)
    assert body["error"]["message"] == "request body larger than 65536 bytes"


def test_a_chunked_body_is_refused_once_it_passes_64_kib_and_read_no_further(app, store):
    op = new_token(store, None)
    chunks = [b"x" * (16 * KIB)] * 64  # 1 MiB, no length declared
    status, body, read = call_asgi(
        app, "POST", "/api/v1/silences", chunks=chunks, headers={**bearer(op), "content-type": "application/json"}
    )
    assert (status, body["error"]["code"]) == (413, "too_large")
    assert read == 5  # 4 chunks are 64 KiB exactly; the fifth crosses the limit and nothing after it is asked for


def test_bodies_within_the_limit_are_read_and_judged_as_before(client, store):
    op = new_token(store, None)
    r = client.post("/api/v1/silences", headers=bearer(op), content=b"{" + b" " * (64 * KIB - 2) + b"}")
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid"  # read and parsed: a body, not too large
    r = client.post(
        "/api/v1/silences",
        headers=bearer(op),
        json={"matchers": [{"name": "alertname", "value": "KafkaConsumerLag"}], "duration_seconds": 600},
    )
    assert r.status_code == 201, r.text


def test_an_oversized_body_is_413_with_the_error_body_even_without_a_token(client):
    r = client.post("/api/v1/tenants", content=b"{}" + b" " * (64 * KIB))
    assert r.status_code == 413 and r.json() == {
        "error": {"code": "too_large", "message": "request body larger than 65536 bytes"}
    }


# --- 9. failed authentications ------------------------------------------------------------------------------------


def forged(i: int) -> str:
    return f"kh_{i:012x}_" + "A" * 43


def test_failed_authentications_from_one_address_are_limited_before_the_store_is_asked(client, store):
    with Statements(store, "api_tokens") as lookups:
        answers = [client.get("/api/v1/tenants", headers=bearer(forged(i))) for i in range(30)]
    statuses = [r.status_code for r in answers]
    assert statuses == [401] * 20 + [429] * 10
    assert len(lookups.seen) == 20  # a refused caller costs the store nothing
    refused = answers[-1]
    assert refused.json()["error"]["code"] == "rate_limited" and int(refused.headers["retry-after"]) >= 1
    assert answers[0].json() == UNKNOWN


def test_failures_for_one_token_id_are_limited_across_addresses(app, store):
    real = new_token(store, "acme")
    wrong = real[:-4] + ("AAAA" if not real.endswith("AAAA") else "BBBB")
    statuses = [
        TestClient(app, client=(f"198.51.100.{i}", 5000)).get("/api/v1/tenants", headers=bearer(wrong)).status_code
        for i in range(8)
    ]
    assert statuses == [401] * 5 + [429] * 3
    # Another id from those addresses is still only judged on its own.
    other = TestClient(app, client=("198.51.100.1", 5000)).get("/api/v1/tenants", headers=bearer(forged(7)))
    assert other.status_code == 401


def test_a_working_token_is_not_held_back_by_failures_from_its_address(client, store):
    acme = new_token(store, "acme")
    assert client.get("/api/v1/tenants/acme", headers=bearer(acme)).status_code == 200  # remembered from here on
    for i in range(25):
        client.get("/api/v1/tenants", headers=bearer(forged(i)))
    assert client.get("/api/v1/tenants", headers=bearer(forged(99))).status_code == 429
    assert client.get("/api/v1/tenants/acme", headers=bearer(acme)).status_code == 200


def test_requests_without_a_token_are_not_counted_as_failures(client):
    assert {client.get("/api/v1/tenants").status_code for _ in range(30)} == {401}


# --- 10. cluster visibility ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["health", "brokers", "capacity"])
def test_a_cluster_the_tenant_is_not_on_is_refused_without_reading_the_store(client, store, path):
    # Marks older than max_age (2 s) are not trusted and every request reads the store: a machine at load 48 starved
    # the watch's thread that long and this failed with both requests read from the store (seen once, 20:17 UTC
    # 2026-11-27). What is checked here is the decision from a remembered token, not the marks' freshness.
    client.app.state.store_watch.max_age = 3600.0
    acme = new_token(store, "acme")
    assert client.get("/api/v1/tenants/acme", headers=bearer(acme)).status_code == 200  # token remembered
    with Statements(store, "tenants") as reads:
        not_on = client.get(f"/api/v1/clusters/globex-only/{path}", headers=bearer(acme))
        absent = client.get(f"/api/v1/clusters/nowhere/{path}", headers=bearer(acme))
    assert (
        (not_on.status_code, not_on.json())
        == (absent.status_code, absent.json())
        == (404, {"error": {"code": "not_found", "message": "cluster not found"}})
    )
    assert reads.seen == []  # both decided from what the token's lookup established


def test_a_tenant_still_sees_the_clusters_it_is_on(client, store):
    acme = new_token(store, "acme")
    for cluster in ("shared", "acme-only"):
        assert client.get(f"/api/v1/clusters/{cluster}/brokers", headers=bearer(acme)).status_code == 200
    op = new_token(store, None)
    assert client.get("/api/v1/clusters/globex-only/brokers", headers=bearer(op)).status_code == 200


def test_a_tenant_moved_to_another_cluster_sees_the_new_one_at_the_next_registry_version(store, wall):
    from monitor.core.config import TenantConfig, TenantSelector, parse_config
    from tests.api_fixtures import CONFIG_YAML

    spare = "  - name: spare\n    bootstrap_servers: 127.0.0.1:4\n    brokers: [{id: 9}]\ntenants:"
    config = parse_config(CONFIG_YAML.replace("tenants:", spare, 1))
    names = [c.name for c in config.clusters]

    def initech(cluster: str) -> TenantConfig:
        return TenantConfig(name="initech", selectors=(TenantSelector(cluster=cluster, topic_prefixes=("ini.",)),))

    app = build_api(config, store)
    with TestClient(app, raise_server_exceptions=False) as client:
        with store.session() as s:
            tenant_service.create(db_session=s, tenant_in=initech("shared"), clusters=names, now=NOW)
        token = new_token(store, "initech")
        app.state.store_watch.refresh()
        seen = {
            c: client.get(f"/api/v1/clusters/{c}/brokers", headers=bearer(token)).status_code
            for c in ("shared", "spare")
        }
        assert seen == {"shared": 200, "spare": 404}
        with store.session() as s:  # as another process would: the server learns it from the registry version
            tenant_service.update(
                db_session=s,
                tenant=tenant_service.get(db_session=s, name="initech"),
                tenant_in=initech("spare"),
                clusters=names,
                now=NOW,
            )
        app.state.store_watch.refresh()
        seen = {
            c: client.get(f"/api/v1/clusters/{c}/brokers", headers=bearer(token)).status_code
            for c in ("shared", "spare")
        }
        assert seen == {"shared": 404, "spare": 200}


# --- 11. token expiry ----------------------------------------------------------------------------------------------


def _token(store: Store, tenant: str | None, *, created: datetime, expires_at: datetime | None) -> str:
    kind = tokens.TokenKind.TENANT if tenant else tokens.TokenKind.OPERATOR
    with store.session() as s:
        return tokens.create(db_session=s, kind=kind, tenant=tenant, name="t", now=created, expires_at=expires_at)[1]


def test_an_expired_token_answers_exactly_like_an_unknown_one(client, store):
    expired = _token(store, "acme", created=NOW - timedelta(days=2), expires_at=NOW - timedelta(days=1))
    r = client.get("/api/v1/tenants/acme", headers=bearer(expired))
    assert (r.status_code, r.json(), r.headers["www-authenticate"]) == (401, UNKNOWN, "Bearer")


def test_a_remembered_token_stops_working_at_its_expiry(client, store, wall):
    token = _token(store, "acme", created=NOW, expires_at=NOW + timedelta(hours=1))
    assert client.get("/api/v1/tenants/acme", headers=bearer(token)).status_code == 200
    wall.value = NOW + timedelta(minutes=59)
    assert client.get("/api/v1/tenants/acme", headers=bearer(token)).status_code == 200
    wall.value = NOW + timedelta(hours=1)  # nothing changed in the store: only the time
    r = client.get("/api/v1/tenants/acme", headers=bearer(token))
    assert (r.status_code, r.json()) == (401, UNKNOWN)


def test_a_token_cannot_be_born_expired(store):
    with store.session() as s, pytest.raises(Invalid) as exc:
        tokens.create(db_session=s, kind=tokens.TokenKind.OPERATOR, tenant=None, name="", now=NOW, expires_at=NOW)
    assert exc.value.field == "expires_at"


def test_tokens_cli_creates_with_an_expiry_and_lists_it(tmp_path, capsys):
    from monitor.cli import main
    from tests.api_fixtures import CONFIG_YAML

    cfg = tmp_path / "kh.yaml"
    cfg.write_text(CONFIG_YAML + f"store: {{url: 'sqlite:///{tmp_path / 'kh.db'}'}}\n")

    def create(*flags: str) -> str:
        assert main(["tokens", "create", "--operator", *flags, "--config", str(cfg)]) == 0
        return capsys.readouterr().out.strip()

    token = create("--name", "month", "--expires-in", "30d")
    create("--name", "fixed", "--expires-at", "2099-01-31T00:00:00")
    create("--name", "forever")
    assert main(["tokens", "list", "--json", "--config", str(cfg)]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    month = rows["month"]
    assert month["id"] == token.split("_")[1]
    created, expires = (datetime.fromisoformat(month[k]) for k in ("created_at", "expires_at"))
    assert expires - created == pytest.approx(timedelta(days=30), abs=timedelta(seconds=5))
    assert rows["fixed"]["expires_at"] == "2099-01-31T00:00:00Z"  # no offset given: UTC
    assert rows["forever"]["expires_at"] is None
    assert main(["tokens", "list", "--config", str(cfg)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert "expires" in table[0]
    assert any("2099-01-31 00:00:00" in line for line in table)
    assert sum(line.split()[-2:] == ["-", "-"] for line in table[1:]) == 1  # the token without an end
    assert main(["tokens", "create", "--operator", "--expires-in", "0s", "--config", str(cfg)]) == 1
    assert "--expires-in" in capsys.readouterr().err
    assert main(["tokens", "create", "--operator", "--expires-at", "2000-01-01", "--config", str(cfg)]) == 1
    assert "expires_at must be in the future" in capsys.readouterr().err


# --- 8. what-if figures --------------------------------------------------------------------------------------------


@pytest.fixture
def prometheus(monkeypatch):
    source = FakePrometheus()
    monkeypatch.setattr(advisor_views, "_source", lambda config: source)
    yield source
    source.released.set()  # a failed test must not leave a request waiting (the client's exit would wait for it)


class FakePrometheus:
    """Broker and topic series for any cluster, so a plan is made; ``hold`` makes each query wait for ``release``;
    ``tick`` advances ``clock`` by that much per query (a slow Prometheus, without sleeping)."""

    def __init__(self):
        self.queries: list[str] = []
        self.hold = False
        self.entered, self.released = threading.Event(), threading.Event()
        self.clock: Clock | None = None
        self.tick = 0.0

    def query(self, expr: str, at: datetime) -> list[InstantSample]:
        self.queries.append(expr)
        if self.hold:
            self.entered.set()
            if not self.released.wait(10):  # a test gone wrong: stop holding anyone
                self.released.set()
        if self.clock is not None:
            self.clock.value += self.tick
        if "by (broker)" in expr:
            return [InstantSample({"broker": b}, 1e12 if "size" in expr else 0.5) for b in ("1", "2", "3")]
        if "by (topic)" in expr:
            return [InstantSample({"topic": "acme.orders"}, 1e6)]
        return []

    def query_range(self, *a):
        raise AssertionError("instant queries only")

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    "param,value",
    [
        ("grow", "acme:1e308"),
        ("grow", "acme:inf"),
        ("grow", "acme:nan"),
        ("grow", "acme:-1"),
        ("grow", "acme:1001"),
        ("add", "newco:1e308:7"),
        ("add", "newco:5:1e308"),
        ("add", "newco:5:7:1e308"),
        ("add", "newco:nan:7"),
        ("add", "newco:5:7:2.5"),
        ("add", "newco:5:0"),
        ("add", "n" * 65 + ":5:7"),
    ],
)
def test_absurd_what_if_figures_are_422_naming_the_parameter(client, store, prometheus, param, value):
    op = new_token(store, None)
    r = client.get("/api/v1/clusters/shared/capacity", headers=bearer(op), params={param: value})
    assert r.status_code == 422, r.text
    assert [f["field"] for f in r.json()["error"]["fields"]] == [param]
    assert prometheus.queries == []  # refused before any work


def test_what_if_at_its_bounds_is_planned(client, store, prometheus):
    op = new_token(store, None)
    r = client.get(
        "/api/v1/clusters/shared/capacity",
        headers=bearer(op),
        params={"grow": "acme:1000", "add": "newco:100000:3650:1000000"},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "ok" and body["what_if"]["brokers_required"] >= body["plan"]["brokers_required"]


# --- 6. costly requests ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path,window",
    [
        ("/api/v1/tenants/acme/advice", "2d"),
        ("/api/v1/tenants/acme/advice", "99999d"),
        ("/api/v1/tenants/acme/advice", "1441m"),
        ("/api/v1/clusters/shared/capacity", "8d"),
        ("/api/v1/clusters/shared/capacity", "169h"),
    ],
)
def test_windows_past_their_bound_are_422_naming_window(client, store, prometheus, path, window):
    r = client.get(path, headers=bearer(new_token(store, None)), params={"window": window})
    assert r.status_code == 422, r.text
    assert [f["field"] for f in r.json()["error"]["fields"]] == ["window"]
    assert prometheus.queries == []


@pytest.mark.parametrize(
    "path,window", [("/api/v1/tenants/acme/advice", "1d"), ("/api/v1/clusters/shared/capacity", "7d")]
)
def test_windows_at_their_bound_are_answered(client, store, prometheus, path, window):
    r = client.get(path, headers=bearer(new_token(store, None)), params={"window": window})
    assert r.status_code == 200, r.text
    assert r.json()["window"] == window


def _in_background(client, path: str, token: str) -> tuple[threading.Thread, list]:
    out: list = []
    t = threading.Thread(target=lambda: out.append(client.get(path, headers=bearer(token))))
    t.start()
    return t, out


def test_a_token_gets_429_past_its_costly_requests_in_flight_and_others_go_on(client, store, prometheus):
    client.app.state.costly_gate = CostlyGate(CostlyLimits(per_token=1, shared=2))
    acme, globex = new_token(store, "acme"), new_token(store, "globex")
    prometheus.hold = True
    first, out = _in_background(client, "/api/v1/clusters/shared/capacity", acme)
    assert prometheus.entered.wait(10)
    r = client.get("/api/v1/tenants/acme/advice", headers=bearer(acme))
    assert r.status_code == 429 and r.json()["error"]["code"] == "rate_limited" and r.headers["retry-after"] == "1"
    assert "costly requests" in r.json()["error"]["message"]
    prometheus.released.set()
    assert client.get("/api/v1/tenants/globex/advice", headers=bearer(globex)).status_code == 200
    first.join(10)
    assert out[0].status_code == 200, out[0].text
    assert client.get("/api/v1/tenants/acme/advice", headers=bearer(acme)).status_code == 200  # its slot is back


def test_when_every_shared_slot_is_taken_the_next_costly_request_is_503(client, store, prometheus):
    client.app.state.costly_gate = gate = CostlyGate(CostlyLimits(per_token=2, shared=1, queue_seconds=0))
    acme, globex = new_token(store, "acme"), new_token(store, "globex")
    prometheus.hold = True
    first, out = _in_background(client, "/api/v1/tenants/acme/advice", acme)
    assert prometheus.entered.wait(10)
    r = client.get("/api/v1/tenants/globex/advice", headers=bearer(globex))
    assert r.status_code == 503 and r.json()["error"]["code"] == "unavailable" and r.headers["retry-after"] == "1"
    assert client.get("/api/v1/tenants/globex", headers=bearer(globex)).status_code == 200  # cheap ones go on
    prometheus.released.set()
    first.join(10)
    assert out[0].status_code == 200 and gate.running == 0


def test_a_costly_request_past_its_deadline_is_504_and_stops_querying(client, store, prometheus):
    seconds = Clock(1000.0)
    client.app.state.costly_gate = gate = CostlyGate(CostlyLimits(deadline_seconds=20), clock=seconds)
    prometheus.clock, prometheus.tick = seconds, 8.0  # each query "takes" 8 s
    r = client.get("/api/v1/tenants/acme/advice", headers=bearer(new_token(store, "acme")))
    assert r.status_code == 504, r.text
    assert r.json() == {
        "error": {
            "code": "timeout",
            "message": (
                "the answer was not ready within the request's deadline (20 s); retry later, or with a shorter window"
            ),
        }
    }
    assert len(prometheus.queries) == 3  # at 1000, 1008, 1016; the fourth would start at 1024, past 1020
    assert gate.running == 0


def test_the_gate_answers_504_at_the_deadline_even_if_the_work_does_not(client, store, prometheus):
    client.app.state.costly_gate = gate = CostlyGate(CostlyLimits(deadline_seconds=0))
    r = client.get("/api/v1/clusters/shared/capacity", headers=bearer(new_token(store, None)))
    assert r.status_code == 504 and r.json()["error"]["code"] == "timeout"
    assert gate.running == 0 and gate.in_flight("x") == 0


def test_advice_is_remembered_per_tenant_and_window_until_its_ttl_or_a_registry_change(client, store, prometheus):
    seconds = Clock(0.0)
    client.app.state.advice_cache = advisor_service.AnswerCache(ttl=15, max_entries=8, clock=seconds)
    acme, op = new_token(store, "acme"), new_token(store, None)
    client.app.state.store_watch.refresh()

    def asked(token=acme, **params) -> int:
        before = len(prometheus.queries)
        r = client.get("/api/v1/tenants/acme/advice", headers=bearer(token), params=params)
        assert r.status_code == 200, r.text
        return len(prometheus.queries) - before

    assert asked() > 0
    assert asked() == 0
    assert asked(op) == 0  # the same tenant's advice, whoever asks
    assert asked(window="5m") > 0 and asked(window="5m") == 0
    seconds.value = 15.0
    assert asked() > 0
    with store.session() as s:
        tenant_service.bump_version(db_session=s)  # a tenant changed somewhere
    client.app.state.store_watch.refresh()
    assert asked() > 0


def test_answer_cache_is_bounded_and_drops_the_oldest():
    seconds = Clock(0.0)
    cache = advisor_service.AnswerCache(ttl=10, max_entries=3, clock=seconds)
    for i in range(5):
        cache.put(("t", str(i)), 1, {"i": i})
    assert len(cache) == 3
    assert [cache.get(("t", str(i)), 1) for i in range(5)] == [None, None, {"i": 2}, {"i": 3}, {"i": 4}]
    assert cache.get(("t", "4"), 2) is None
