"""Declarative base, engine and sessions. SQLite file by default, PostgreSQL supported.

``Store.from_settings`` is the one way to open the store of a configuration (it resolves the password reference);
``monitor.store.open_store`` does that and brings the schema to head. ``UtcDateTime`` is the one column type for a
point in time: every time stored is UTC and every time read back is timezone-aware, on SQLite too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, MetaData, TypeDecorator, create_engine, event
from sqlalchemy.engine import URL, Dialect, Engine, make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

from monitor.core.config import StoreSettings
from monitor.core.errors import StoreError
from monitor.core.times import as_utc

# Stable constraint names so Alembic migrations are identical on SQLite and PostgreSQL.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class UtcDateTime(TypeDecorator[datetime]):
    """``DateTime(timezone=True)`` that hands back aware UTC datetimes: SQLite returns naive ones for such columns.
    The DDL is the plain type's, so the migrations (which name ``sa.DateTime(timezone=True)``) match the models."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else as_utc(value)


def _url(url: str, password: str | None) -> URL:
    u = make_url(url)
    if u.drivername == "postgresql":  # psycopg 3 is the driver we ship
        u = u.set(drivername="postgresql+psycopg")
    if password is not None:
        u = u.set(password=password)
    return u


class Store:
    """Engine and session factory for one database. ``session()`` is a unit of work: commit or roll back."""

    def __init__(self, url: str, *, password: str | None = None, echo: bool = False):
        self.url = _url(url, password)
        kwargs: dict[str, Any] = {"echo": echo, "future": True}
        if self.url.get_backend_name() == "sqlite":
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        else:
            # A database that does not answer must fail requests in seconds, not hang them.
            kwargs.update(
                pool_pre_ping=True, pool_size=10, max_overflow=20, pool_timeout=10, connect_args={"connect_timeout": 5}
            )
        self.engine: Engine = create_engine(self.url, **kwargs)
        if self.url.get_backend_name() == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @classmethod
    def from_settings(cls, settings: StoreSettings) -> Store:
        ref = settings.password
        return cls(settings.url, password=ref.resolve().get_secret_value() if ref is not None else None)

    @contextmanager
    def session(self) -> Iterator[Session]:
        s = self._sessions()
        try:
            yield s
            s.commit()
        except SQLAlchemyError as exc:
            s.rollback()
            # The message names the failing operation, never the URL (which may hold credentials).
            raise StoreError(f"database error: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from exc
        except BaseException:
            s.rollback()
            raise
        finally:
            s.close()

    def dispose(self) -> None:
        self.engine.dispose()

    def safe_url(self) -> str:
        return self.url.render_as_string(hide_password=True)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")  # readers (API) do not block the writer (alert engine)
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()
