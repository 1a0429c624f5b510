"""Alembic migrations, run programmatically: ``upgrade(store)`` brings a database to head (``serve`` and every
command that opens the store call it, through ``monitor.store.open_store``).

The Alembic environment lives in ``monitor/store/migrations``. Upgrading runs the revision files only and needs no
model: so this package imports no domain, and every domain may open the store. Autogenerating a new revision
compares the migrations with every domain's models, which only ``monitor.schema`` gathers::

    python -m monitor.schema revision -m "alerts: silences and outbox" --url sqlite:////tmp/x.db

(the URL names a scratch database, which is first upgraded to head, then compared with the models). SQLite gets
batch mode (table copy) for ALTERs it does not support, so one revision file serves both databases.
"""

from __future__ import annotations

import argparse
import fcntl
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# Alembic logs a line per plugin each time it sets up; that is noise at every start of every command.
logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)

from alembic import command  # noqa: E402 - after alembic's logger is quieted
from alembic.config import Config as AlembicConfig  # noqa: E402 - after alembic's logger is quieted
from alembic.runtime.migration import MigrationContext  # noqa: E402 - after alembic's logger is quieted
from alembic.script import ScriptDirectory  # noqa: E402 - after alembic's logger is quieted
from sqlalchemy import MetaData  # noqa: E402 - after alembic's logger is quieted

from monitor.core.errors import StoreError  # noqa: E402 - after alembic's logger is quieted
from monitor.core.store import Store  # noqa: E402 - after alembic's logger is quieted

MIGRATIONS = Path(__file__).with_name("migrations")


def _alembic_config(store: Store, metadata: MetaData | None = None) -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    # No URL in the config (it may carry a password): env.py takes the store's engine from attributes.
    cfg.attributes["store"] = store
    cfg.attributes["metadata"] = metadata  # the models, for autogenerate only
    return cfg


# Alembic keeps its running environment in module globals: one migration at a time per process.
_IN_PROCESS = threading.Lock()


@contextmanager
def _exclusive(store: Store) -> Iterator[None]:
    """One migration at a time per database, across processes too (roles split over processes all upgrade at
    start). PostgreSQL: an advisory lock taken in env.py. A SQLite file: an flock on a file beside it."""
    with _IN_PROCESS:
        db = store.url.database
        if store.url.get_backend_name() != "sqlite" or not db or db == ":memory:":
            yield
            return
        if not Path(db).parent.is_dir():
            raise StoreError(
                f"the store's directory {Path(db).parent} does not exist (store.url); create it or "
                "point store.url elsewhere"
            )
        with open(f"{db}.migrate-lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def upgrade(store: Store, revision: str = "head") -> None:
    """Bring the database to ``revision`` (default: the newest). Idempotent; safe at every start, concurrently."""
    with _exclusive(store):
        command.upgrade(_alembic_config(store), revision)


def downgrade(store: Store, revision: str) -> None:
    with _exclusive(store):
        command.downgrade(_alembic_config(store), revision)


def current(store: Store) -> str | None:
    with store.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head() -> str:
    return ScriptDirectory(str(MIGRATIONS)).get_current_head()


def revisions() -> list[str]:
    """Revision ids from the first to head."""
    return [r.revision for r in reversed(list(ScriptDirectory(str(MIGRATIONS)).walk_revisions()))]


def revision(store: Store, *, message: str, metadata: MetaData) -> None:
    """Autogenerate a revision file from the difference between ``store`` (upgraded first) and ``metadata``."""
    upgrade(store)
    command.revision(_alembic_config(store, metadata), message=message, autogenerate=True)


def _main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m monitor.store.migrate")
    sub = p.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("upgrade", help="upgrade a database to head (new revisions: python -m monitor.schema)")
    u.add_argument("--url", required=True)
    args = p.parse_args(argv)
    upgrade(Store(args.url))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
