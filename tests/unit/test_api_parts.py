"""Pure parts of the API: rate-limit buckets, cursors, token format, validation error field names."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from monitor.api.errors import _field
from monitor.api.ratelimit import TokenBuckets
from monitor.api.tokens import _TOKEN_RE
from monitor.core.api.pagination import (
    Paging,
    decode_cursor,
    encode_cursor,
    page_in_memory,
)
from monitor.core.errors import Invalid
from monitor.schema import create_all

pytestmark = pytest.mark.unit


def test_bucket_allows_burst_then_refills_at_rate():
    b = TokenBuckets(rate=2.0, burst=3)
    assert [b.take("t", now=0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert b.take("t", now=0.0) == pytest.approx(0.5)  # one token comes back after 1/rate seconds
    assert b.take("t", now=0.5) == 0.0
    assert b.take("t", now=0.5) > 0
    assert b.take("other", now=0.5) == 0.0  # per key


def test_bucket_never_exceeds_burst_after_idle():
    b = TokenBuckets(rate=10.0, burst=2)
    b.take("t", now=0.0)
    allowed = sum(b.take("t", now=1000.0) == 0.0 for _ in range(5))
    assert allowed == 2


def test_cursor_round_trip_and_garbage():
    assert decode_cursor(encode_cursor("tenant-ä.1")) == "tenant-ä.1"
    with pytest.raises(Invalid) as exc:
        decode_cursor("%%%")
    assert exc.value.field == "cursor"


def test_page_in_memory_walks_all_items_once():
    rows = [f"n{i:02d}" for i in range(7)]
    seen, after = [], None
    while True:
        page = page_in_memory(rows, Paging(limit=3, after=after), key=lambda r: r)
        seen += page.items
        if page.next_cursor is None:
            break
        after = decode_cursor(page.next_cursor)
    assert seen == rows


@pytest.mark.parametrize(
    "loc,expected",
    [
        (("body", "selectors", 0, "cluster"), "selectors[0].cluster"),
        (("query", "limit"), "limit"),
        (("body",), "body"),
        (("path", "tenant"), "tenant"),
    ],
)
def test_validation_field_names(loc, expected):
    assert _field(loc) == expected


def test_token_format_is_what_create_emits():
    from datetime import datetime, timezone

    from monitor.api import tokens
    from monitor.core.store import Store

    store = Store("sqlite://")
    create_all(store)
    with store.session() as s:
        row, token = tokens.create(
            db_session=s, kind=tokens.TokenKind.OPERATOR, tenant=None, name="", now=datetime.now(timezone.utc)
        )
        assert _TOKEN_RE.match(token).group(1) == row.id
        assert token not in row.secret_sha256 and len(row.secret_sha256) == 64
        now = datetime.now(timezone.utc)
        assert tokens.authenticate(db_session=s, presented=token, now=now).is_operator
        assert (
            tokens.authenticate(db_session=s, presented=token[:-1] + ("A" if token[-1] != "A" else "B"), now=now)
            is None
        )


class _Watch:
    """A StoreWatch stand-in: the marks a test sets (None: the store cannot be checked)."""

    def __init__(self, marks):
        self.marks = marks

    def current(self):
        return self.marks


def _marks(registry: int, *beats):
    from monitor.health.watch import Marks

    return Marks(registry=registry, heartbeats=tuple(beats), read_at=0.0)


def _beat(at: datetime):
    from monitor.health.watch import Beat

    return Beat(cluster="c1", evaluated_at=at, data_ok=True, detail="")


def _asgi_get(app, token: str) -> int:
    """Send one GET /api/v1/x with ``token`` through ``app`` (an ASGI callable); the response status."""
    import asyncio

    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/api/v1/x",
        "query_string": b"",
        "headers": [(b"authorization", f"Bearer {token}".encode())],
    }
    asyncio.run(app(scope, receive, send))
    return next(m["status"] for m in sent if m["type"] == "http.response.start")


def test_auth_remembers_a_principal_only_while_the_registry_version_stands_still():
    from starlette.responses import PlainTextResponse

    from monitor.api.auth import AuthMiddleware, Known
    from monitor.api.tokens import Verified
    from monitor.core.api.principal import Principal, PrincipalKind

    valid = {"tok-a"}
    lookups = []

    class Auth(AuthMiddleware):
        def _authenticate(self, presented, now):  # the store, as far as this test is concerned
            lookups.append(presented)
            principal = Principal(kind=PrincipalKind.TENANT, token_id="a", tenant="acme")
            return Known(Verified(principal, None), frozenset({"c1"})) if presented in valid else None

    watch = _Watch(_marks(1))
    m = Auth(PlainTextResponse("ok"), store=None, limiter=TokenBuckets(rate=1000, burst=1000), watch=watch)
    assert [_asgi_get(m, "tok-a") for _ in range(3)] == [200, 200, 200]
    assert lookups == ["tok-a"]  # remembered
    valid.clear()  # revoked in the store ...
    assert _asgi_get(m, "tok-a") == 200  # ... unseen until the version moves (the watch's interval)
    watch.marks = _marks(2)
    assert _asgi_get(m, "tok-a") == 401 and lookups == ["tok-a", "tok-a"]
    assert _asgi_get(m, "tok-b") == 401 and _asgi_get(m, "tok-b") == 401
    assert lookups.count("tok-b") == 2  # failures are never remembered
    valid.add("tok-a")
    watch.marks = None  # marks too old: nothing is trusted from memory
    assert [_asgi_get(m, "tok-a") for _ in range(2)] == [200, 200] and lookups.count("tok-a") == 4


def test_answer_memo_serves_only_under_the_marks_and_before_until():
    from monitor.health.watch import AnswerMemo

    t0 = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
    b1, b2 = _beat(t0), _beat(t0 + timedelta(seconds=15))
    memo = AnswerMemo(max_entries=2)
    until = t0 + timedelta(seconds=45)
    memo.put("acme", registry=1, heartbeats=(b1,), until=until, body=b"A")
    assert memo.get("acme", _marks(1, b1), t0) == b"A"
    assert memo.get("acme", _marks(1, _beat(t0)), until - timedelta(microseconds=1)) == b"A"  # equal, not same
    assert memo.get("acme", _marks(1, b1), until) is None  # time alone changes the answer from here
    assert memo.get("acme", _marks(2, b1), t0) is None  # a tenant or token changed
    assert memo.get("acme", _marks(1, b2), t0) is None  # a new evaluation
    assert memo.get("acme", None, t0) is None  # marks unknown
    assert memo.get("globex", _marks(1, b1), t0) is None
    memo.put("globex", registry=1, heartbeats=(b1,), until=None, body=b"G")  # moves with now: not remembered
    assert memo.get("globex", _marks(1, b1), t0) is None
    for k in ("k1", "k2", "k3"):  # bounded
        memo.put(k, registry=3, heartbeats=(b1,), until=until, body=k.encode())
    assert len(memo._answers) <= 2 and memo.get("k3", _marks(3, b1), t0) == b"k3"


# --- response models: the OpenAPI document types every 2xx answer, and the models describe what the code returns ---

# Endpoints whose answers are dicts built by other packages' code: the component each 2xx answer must name.
TYPED_2XX = {
    ("get", "/api/v1/alerts"): "Page_AlertInstanceRead_",
    ("post", "/api/v1/silences"): "SilenceRead",
    ("get", "/api/v1/silences"): "Page_SilenceRead_",
    ("delete", "/api/v1/silences/{silence_id}"): "SilenceRead",
    ("get", "/api/v1/tenants/{tenant}/reports"): "Page_ReportRead_",
    ("get", "/api/v1/tenants/{tenant}/reports/{week}"): ("TenantReport", "OperatorReport"),
    ("get", "/api/v1/tenants/{tenant}/advice"): "TenantAdvice",
    ("get", "/api/v1/clusters/{cluster}/capacity"): "ClusterCapacity",
}


@pytest.fixture(scope="module")
def openapi() -> dict:
    from tests.api_fixtures import openapi_document

    return openapi_document()


def _refs(schema: dict) -> list[str]:
    """The component names a response schema points at: a $ref, or a oneOf/anyOf of $refs; [] for anything else."""
    options = schema.get("oneOf") or schema.get("anyOf") or [schema]
    return [o["$ref"].rsplit("/", 1)[1] for o in options if "$ref" in o] if all("$ref" in o for o in options) else []


def test_openapi_names_a_typed_schema_for_every_2xx_answer(openapi):
    schemas = openapi["components"]["schemas"]
    problems = []
    for path, ops in openapi["paths"].items():
        if not path.startswith("/api/"):
            continue
        for method, op in ops.items():
            for status, resp in op["responses"].items():
                if not status.startswith("2") or "content" not in resp:
                    continue
                names = _refs(resp["content"]["application/json"]["schema"])
                if not names or any(not schemas[n].get("properties") for n in names):
                    problems.append(f"{method.upper()} {path} {status}: untyped {resp['content']}")
                for n in names:
                    if n.startswith("Page") and "$ref" not in schemas[n]["properties"]["items"]["items"]:
                        problems.append(f"{method.upper()} {path} {status}: {n} holds untyped items")
    assert not problems, "\n".join(problems)
    for (method, path), want in TYPED_2XX.items():
        ((status, resp),) = [(s, r) for s, r in openapi["paths"][path][method]["responses"].items() if s[0] == "2"]
        assert tuple(_refs(resp["content"]["application/json"]["schema"])) == (
            want if isinstance(want, tuple) else (want,)
        ), (method, path)
    report = openapi["paths"]["/api/v1/tenants/{tenant}/reports/{week}"]["get"]["responses"]["200"]
    assert report["content"]["text/html"]["schema"] == {"type": "string"}


def _conforms(openapi: dict, component: str, doc) -> None:
    """``doc`` is valid against the OpenAPI document's schema (what schemathesis checks on a live server)."""
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator(
        {"$ref": f"#/components/schemas/{component}", "components": openapi["components"]}
    ).validate(doc)


def _sent(model, doc, **dump):
    """What FastAPI sends for ``doc`` with ``model`` as the response model, as JSON-ready data."""
    from pydantic import TypeAdapter

    return TypeAdapter(model).dump_python(TypeAdapter(model).validate_python(doc), mode="json", **dump)


def test_alert_and_silence_answers_match_their_models(openapi):
    from alerts.models import AlertInstance, Silence
    from alerts.views import AlertInstanceRead, SilenceRead, alert_json, silence_json
    from monitor.core.api.pagination import Page

    t = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
    alert = AlertInstance(
        fingerprint="fp1",
        rule="KafkaBrokerUnreachable",
        state="firing",
        severity="critical",
        cluster="c1",
        broker="1",
        tenant=None,
        labels={"cluster": "c1", "broker": "1"},
        annotations={"summary": "broker 1 down"},
        evidence={"up": 0, "since": "12:00"},
        value=0.0,
        active_at=t.replace(tzinfo=None),
        fired_at=t,
        resolved_at=None,
        muted_by="s-1",
    )
    page = Page(items=[alert_json(alert)], next_cursor="ZnAx").model_dump()
    assert _sent(Page[AlertInstanceRead], page) == page
    _conforms(openapi, "Page_AlertInstanceRead_", page)
    silence = Silence(
        id="s-1",
        matchers=[{"name": "tenant", "value": "acme", "is_regex": False, "is_equal": True}],
        starts_at=t,
        ends_at=t + timedelta(hours=1),
        created_by="tok",
        comment="",
        tenant="acme",
    )
    doc = silence_json(silence, t)
    assert _sent(SilenceRead, doc) == doc and doc["state"] == "active"
    _conforms(openapi, "SilenceRead", doc)


def _report_rows() -> dict:
    from datetime import date

    t = datetime(2026, 11, 18, 9, 0, tzinfo=timezone.utc)
    compare = [
        {
            "owner": "acme",
            "metric": m,
            "this_week": 10.5,
            "previous_week": 10,
            "previous4_mean": 9.75,
            "previous4_weeks": 4,
            "growth_wow": 0.05,
            "vs_previous4": None,
        }
        for m in ("bytes_in", "lag_max_messages")
    ]
    return dict(
        span={"first": datetime(2026, 11, 16, tzinfo=timezone.utc), "end": datetime(2026, 11, 23, tzinfo=timezone.utc)},
        compare=compare,
        weekly=[{"owner": "acme", "week_start": date(2026, 11, 9), "metric": "bytes_in", "value": 10}],
        storage=[{"owner": "acme", "current": 5e9, "slope_per_week": 1e8, "days": 7, "weeks_until_limit": 50.0}],
        storage_daily=[{"owner": "acme", "date": date(2026, 11, 17), "bytes": 4.9e9}],
        disk=[{"cluster": "shared", "limit": 1e12, "current": 4e11, "slope_per_week": 1e10, "weeks_until_limit": 60.0}],
        members=[{"owner": "acme", "cluster": "shared"}],
        alerts=[
            {
                "owner": "acme",
                "alertname": "KafkaConsumerLag",
                "severity": "warning",
                "raised": 2,
                "firing_minutes": 35,
                "resolved": 2,
                "mean_minutes_to_resolve": 17.5,
                "max_minutes_to_resolve": 20,
            }
        ],
        clients=[
            {
                "owner": "acme",
                "rank": 1,
                "cluster": "shared",
                "user": "acme",
                "client_id": "acme-app",
                "produce_bytes": 1e9,
                "fetch_bytes": 2e9,
                "total_bytes": 3e9,
                "throttled_minutes": 0,
            }
        ],
        daily=[{"owner": "acme", "metric": "bytes_in", "date": date(2026, 11, 17), "value": 1.5}],
        seen=[{"owner": "acme", "first_seen": datetime(2026, 10, 1, tzinfo=timezone.utc), "last_seen": t}],
        clusters=[{"cluster": "shared", "bytes_in": 1e10, "brokers": 3}],
        findings=[
            {
                "owner": "acme",
                "finding": "poor_batching",
                "cluster": "shared",
                "client_id": "acme-app",
                "group": None,
                "minutes": 12,
                "first_seen": t,
                "last_seen": t,
            }
        ],
    )


def test_report_answers_match_their_models(openapi):
    from datetime import date

    from monitor.reports import document as D
    from monitor.reports.views import ReportDocument, ReportRead

    c = D.Collected.from_rows(date(2026, 11, 16), datetime(2026, 11, 23, 1, tzinfo=timezone.utc), [], **_report_rows())
    tenant = D.tenant_document(c, "acme", budget_bytes=10**12, retention_hours=168)
    operator = D.operator_document(c, {"acme": tenant})
    assert tenant["alerts"]["by_name"] and tenant["client_findings"] and operator["tenants"]
    for doc in (tenant, operator):
        doc = json.loads(json.dumps(doc))  # as stored in the lake, and served from there
        assert _sent(ReportDocument, doc) == doc
        _conforms(openapi, "TenantReport" if doc["kind"].endswith("tenant-report") else "OperatorReport", doc)
    row = {
        "tenant": "acme",
        "week": "2026-W47",
        "status": "ok",
        "problems": 0,
        "generated_at": "2026-11-23T01:00:00+00:00",
        "url": "/api/v1/tenants/acme/reports/2026-W47",
    }
    assert _sent(ReportRead, row) == row
    _conforms(openapi, "ReportRead", row)


def test_advice_and_capacity_answers_match_their_models(openapi, monkeypatch):
    from types import SimpleNamespace

    from monitor.advisor import capacity, findings, service
    from monitor.advisor.types import Finding, FindingKind, FindingSeverity
    from monitor.advisor.views import ClusterCapacity, TenantAdvice
    from monitor.core.errors import QueryError
    from tests.api_fixtures import make_config

    now = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
    tenants = make_config().tenants
    finding = Finding(
        kind=FindingKind.POOR_BATCHING,
        severity=FindingSeverity.WARNING,
        cluster="shared",
        tenant="acme",
        client_id="acme-app",
        user="User:acme",
        evidence={"thread_seconds_per_mib": 1.5, "records": 1},
        metrics=("kafka_client_request_time_ratio",),
        cause="one record per request",
        fix="linger.ms=20",
    )

    def snapshot(_source, *, cluster, **_):
        if cluster == "acme-only":
            raise QueryError("prometheus: timeout")
        return SimpleNamespace(has_broker_data=True)

    monkeypatch.setattr(service, "read_snapshot", snapshot)
    monkeypatch.setattr(findings, "advise", lambda snap, thresholds: [finding])
    advice = service.tenant_advice(source=None, tenant=tenants[0], tenants=tenants, now=now)
    assert [c["status"] for c in advice["clusters"]] == ["unavailable", "ok"] and advice["findings"]
    assert _sent(TenantAdvice, advice) == advice
    _conforms(openapi, "TenantAdvice", advice)

    usage = capacity.ClusterUsage(
        cluster="shared",
        replication_factor=3.0,
        other_bytes_in_per_second=1e5,
        brokers=tuple(
            capacity.BrokerUsage(
                str(i),
                disk_size_bytes=1e12,
                disk_avail_bytes=6e11,
                partitions=120,
                leaders=40,
                handler_idle_at_peak=0.7,
                network_idle_at_peak=None,
            )
            for i in (1, 2, 3)
        ),
        tenants=(
            capacity.TenantUsage("acme", 2e6, 4e11, 7 * 86400, budget_bytes=10**12, partitions=30),
            capacity.TenantUsage("globex", 1e6, 1e11, 86400),
        ),
    )
    monkeypatch.setattr(service, "read_usage", lambda *a, **k: usage)
    scenario = service.parse_scenario(["acme:3"], ["newco:5:7:12"])
    for only in (None, "acme"):
        plan = service.cluster_capacity(
            source=None, cluster="shared", tenants=tenants, now=now, only_tenant=only, scenario=scenario
        )
        assert plan["plan"] and plan["what_if"]
        # The route answers with exclude_unset: a field with a default is sent only if the service set it.
        assert _sent(ClusterCapacity, plan, exclude_unset=True) == plan
        _conforms(openapi, "ClusterCapacity", plan)
    assert "brokers_needed" not in plan["plan"]  # a tenant's view: no cluster-wide figures, in the model either
