"""Pure parts of the API: rate-limit buckets, cursors, token format, validation error field names."""

from __future__ import annotations

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


def test_auth_cache_remembers_valid_principals_until_expiry_only():
    from monitor.api.auth import AuthMiddleware
    from monitor.api.principal import Principal, PrincipalKind

    m = AuthMiddleware(app=None, store=None, limiter=TokenBuckets(rate=1, burst=1), cache_seconds=1.0)
    p = Principal(kind=PrincipalKind.TENANT, token_id="abc", tenant="acme")
    m._remember("k", p, now=10.0)
    assert m._cached("k", now=10.5) is p
    assert m._cached("k", now=11.0) is None  # expired: the next request asks the database again
    assert m._cached("k", now=10.5) is None  # and the entry is gone
    off = AuthMiddleware(app=None, store=None, limiter=TokenBuckets(rate=1, burst=1), cache_seconds=0)
    off._remember("k", p, now=10.0)
    assert off._cached("k", now=10.0) is None
