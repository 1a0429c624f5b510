"""Cursor pagination shared by every list endpoint: ``?limit=&cursor=`` in, ``{items, next_cursor}`` out.

The cursor is opaque to clients (base64url of the last item's sort key); pass ``next_cursor`` back until it is null.
Keyset rather than offset pagination: stable while rows are added, and cheap at any depth.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Depends, Query
from pydantic import BaseModel

from monitor.core.errors import Invalid

T = TypeVar("T")
MAX_LIMIT = 500


class Page(BaseModel, Generic[T]):
    items: list[T]
    next_cursor: str | None = None


@dataclass(frozen=True)
class Paging:
    limit: int
    after: str | None  # decoded cursor: the sort key of the last item already returned


def encode_cursor(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    try:
        return base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise Invalid("not a cursor this API returned", field="cursor") from None


async def _paging(
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="items per page")] = 100,
    cursor: Annotated[str | None, Query(max_length=400, description="next_cursor of the previous page")] = None,
) -> Paging:
    return Paging(limit=limit, after=decode_cursor(cursor) if cursor else None)


PagingParams = Annotated[Paging, Depends(_paging)]


def page_of(
    rows: Sequence[Any], paging: Paging, key: Callable[[Any], str], convert: Callable[[Any], Any] = lambda r: r
) -> Page[Any]:
    """A page from rows already filtered by ``key > paging.after`` and fetched with ``limit + 1`` (to know if more)."""
    more = len(rows) > paging.limit
    rows = rows[: paging.limit]
    return Page(items=[convert(r) for r in rows], next_cursor=encode_cursor(key(rows[-1])) if more and rows else None)


def page_in_memory(
    rows: Sequence[Any], paging: Paging, key: Callable[[Any], str], convert: Callable[[Any], Any] = lambda r: r
) -> Page[Any]:
    """Paginate a small in-memory list (e.g. clusters from the config) the same way."""
    rows = sorted(rows, key=key)
    if paging.after is not None:
        rows = [r for r in rows if key(r) > paging.after]
    return page_of(rows[: paging.limit + 1], paging, key, convert)
