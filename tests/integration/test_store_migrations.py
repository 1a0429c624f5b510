"""Alembic migrations on SQLite and real PostgreSQL: from empty, from every previous revision with data in it,
down and up again, and the models match what the migrations build (so a model change without a revision fails)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from monitor import schema
from monitor.core.store import Store
from monitor.store import migrate
from tests.api_fixtures import store_url  # noqa: F401 - the fixture, by its name

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


@pytest.fixture
def empty(store_url) -> Store:  # noqa: F811 - the imported fixture, by its name
    s = Store(store_url)
    yield s
    s.dispose()


def _tables(store: Store) -> set[str]:
    return set(inspect(store.engine).get_table_names()) - {"alembic_version"}


def test_upgrade_empty_database_to_head_and_models_match(empty):
    assert migrate.current(empty) is None
    migrate.upgrade(empty)
    assert migrate.current(empty) == migrate.head()
    assert {"tenants", "api_tokens", "alert_instances", "engine_heartbeats"} <= _tables(empty)
    with empty.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), schema.metadata())
    assert diff == [], f"models and migrations differ; autogenerate a revision: {diff}"
    migrate.upgrade(empty)  # idempotent
    assert migrate.current(empty) == migrate.head()


def _seed_0001(store: Store) -> None:
    """Rows as revision 0001 defines them, written without the current models (which may have moved on)."""
    tenants = sa.table(
        "tenants",
        *(sa.column(c) for c in ("name", "display_name", "source", "created_at", "updated_at")),
        sa.column("spec", sa.JSON),
    )
    tokens = sa.table(
        "api_tokens", *(sa.column(c) for c in ("id", "name", "kind", "tenant", "secret_sha256", "created_at"))
    )
    with store.engine.begin() as conn:
        conn.execute(
            tenants.insert().values(
                name="acme",
                display_name="Acme",
                source="api",
                created_at=T0,
                updated_at=T0,
                spec={"whole_clusters": ["c1"], "selectors": []},
            )
        )
        conn.execute(
            tokens.insert().values(
                id="0123456789ab", name="ci", kind="tenant", tenant="acme", secret_sha256="0" * 64, created_at=T0
            )
        )


@pytest.mark.parametrize("previous", migrate.revisions()[:-1] or ["base"])
def test_upgrade_from_each_previous_revision_keeps_data(empty, previous):
    migrate.upgrade(empty, previous)
    assert migrate.current(empty) == (None if previous == "base" else previous)
    if previous != "base":
        _seed_0001(empty)
    migrate.upgrade(empty)
    assert migrate.current(empty) == migrate.head()
    if previous != "base":
        from monitor.tenants import service

        with empty.session() as s:
            row = service.get(db_session=s, name="acme")
            assert row.display_name == "Acme" and row.to_config().whole_clusters == ("c1",)
            assert s.execute(text("SELECT tenant FROM api_tokens")).scalar_one() == "acme"


def test_down_to_base_and_up_again(empty):
    migrate.upgrade(empty)
    for rev in reversed(["base", *migrate.revisions()[:-1]]):
        migrate.downgrade(empty, rev)
        assert migrate.current(empty) == (None if rev == "base" else rev)
    assert _tables(empty) == set()
    migrate.upgrade(empty)
    assert migrate.current(empty) == migrate.head()


def test_deleting_a_tenant_cascades_to_its_tokens_in_the_migrated_schema(empty):
    migrate.upgrade(empty)
    _seed_0001(empty)
    with empty.engine.begin() as conn:
        conn.execute(text("DELETE FROM tenants WHERE name = 'acme'"))
        assert conn.execute(text("SELECT count(*) FROM api_tokens")).scalar_one() == 0


def test_concurrent_upgrades_from_split_roles_all_succeed(store_url):  # noqa: F811 - the imported fixture, by its name
    """Split roles (api, alerts) are separate processes that all upgrade at start, at the same moment."""
    import subprocess
    import sys

    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "monitor.store.migrate", "upgrade", "--url", store_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(3)
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], "\n".join(outputs)
    store = Store(store_url)
    assert migrate.current(store) == migrate.head()
    store.dispose()
