"""Pure parts of the API: rate-limit buckets, cursors, token format, validation error field names."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from monitor.api.errors import _field
from monitor.api.pagination import Paging, decode_cursor, encode_cursor, page_in_memory
from monitor.api.ratelimit import TokenBuckets
from monitor.api.tokens import _TOKEN_RE
from monitor.errors import Invalid

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
    from monitor.store.base import Store

    store = Store("sqlite://")
    store.create_all()
    with store.session() as s:
        row, token = tokens.create(db_session=s, kind=tokens.TokenKind.OPERATOR, tenant=None, name="",
                                   now=datetime.now(timezone.utc))
        assert _TOKEN_RE.match(token).group(1) == row.id
        assert token not in row.secret_sha256 and len(row.secret_sha256) == 64
        assert tokens.authenticate(db_session=s, presented=token).is_operator
        assert tokens.authenticate(db_session=s, presented=token[:-1] + ("A" if token[-1] != "A" else "B")) is None


class _Watch:
    """A StoreWatch stand-in: the marks a test sets (None: the store cannot be checked)."""

    def __init__(self, marks):
        self.marks = marks

    def current(self):
        return self.marks


def _marks(registry: int, *beats):
    from monitor.api.watch import Marks

    return Marks(registry=registry, heartbeats=tuple(beats), read_at=0.0)


def _beat(at: datetime):
    from monitor.api.watch import Beat

    return Beat(cluster="c1", evaluated_at=at, data_ok=True, detail="")


def _asgi_get(app, token: str) -> int:
    """Send one GET /api/v1/x with ``token`` through ``app`` (an ASGI callable); the response status."""
    import asyncio

    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/api/v1/x", "query_string": b"",
             "headers": [(b"authorization", f"Bearer {token}".encode())]}
    asyncio.run(app(scope, receive, send))
    return next(m["status"] for m in sent if m["type"] == "http.response.start")


def test_auth_remembers_a_principal_only_while_the_registry_version_stands_still():
    from starlette.responses import PlainTextResponse

    from monitor.api.auth import AuthMiddleware
    from monitor.api.principal import Principal, PrincipalKind

    valid = {"tok-a"}
    lookups = []

    class Auth(AuthMiddleware):
        def _authenticate(self, presented):  # the store, as far as this test is concerned
            lookups.append(presented)
            return Principal(kind=PrincipalKind.TENANT, token_id="a", tenant="acme") if presented in valid else None

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
    from monitor.api.watch import AnswerMemo

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
