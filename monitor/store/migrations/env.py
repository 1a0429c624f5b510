"""Alembic environment: online only, on the engine of the ``Store`` handed over in ``config.attributes``."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

# The models, handed over only to autogenerate (``monitor.schema``); upgrades run the revision files alone.
target_metadata = context.config.attributes.get("metadata")


def run_migrations_online() -> None:
    store = context.config.attributes["store"]
    with store.engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            # SQLite cannot ALTER most things; batch mode rebuilds the table, so one revision fits both databases.
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            if connection.dialect.name == "postgresql":
                # Roles split over processes (api, alerts) all upgrade at start: one at a time.
                connection.execute(text("SELECT pg_advisory_xact_lock(7243110)"))
            context.run_migrations()
        connection.commit()


if context.is_offline_mode():
    raise SystemExit("offline (SQL script) migrations are not supported; run upgrade against a database")
run_migrations_online()
