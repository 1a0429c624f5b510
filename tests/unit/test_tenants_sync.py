"""Operator safety in the registry: where a command's configuration comes from, what a sync would remove and what
that still owns, and whether a running service synced from another configuration."""

from __future__ import annotations

import argparse
from datetime import datetime, timedelta, timezone

import pytest

from monitor import config_source
from monitor.api import tokens
from monitor.config_source import add_config_args, find_config
from monitor.core.config import parse_config
from monitor.core.errors import Invalid
from monitor.core.store import Store
from monitor.schema import create_all
from monitor.stack.cli import LOCAL_STACK
from monitor.tenants import service

pytestmark = pytest.mark.unit

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
BASE = "clusters: [{name: local, bootstrap_servers: '127.0.0.1:1', brokers: [{id: 1}]}]\n"
PAYMENTS = (
    "tenants: [{name: payments, selectors: [{cluster: local, topic_prefixes: [payments.]}]}, "
    "{name: search, selectors: [{cluster: local, topic_prefixes: [search.]}]}]\n"
)


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_config_args(p)
    return p.parse_args(list(argv))


@pytest.mark.parametrize(
    "n, given, env, demo_file, expect_how",
    [
        (1, True, True, True, "--config"),
        (2, False, True, True, "$KAFKA_HEALTH_CONFIG"),
        (3, False, False, True, "written by the demo"),
        (4, False, False, False, "none written in the stack directory"),
    ],
)
def test_find_config_order(n, given, env, demo_file, expect_how, tmp_path, monkeypatch):
    monkeypatch.setattr(config_source, "_local", LOCAL_STACK)  # as monitor.cli plugs it in
    stack_dir = tmp_path / "stack"
    stack_dir.mkdir()
    if demo_file:
        (stack_dir / "kafka-health.yaml").write_text(BASE)
    (tmp_path / "given.yaml").write_text(BASE)
    (tmp_path / "env.yaml").write_text(BASE)
    monkeypatch.delenv("KAFKA_HEALTH_CONFIG", raising=False)
    if env:
        monkeypatch.setenv("KAFKA_HEALTH_CONFIG", str(tmp_path / "env.yaml"))
    argv = ["--dir", str(stack_dir)] + (["--config", str(tmp_path / "given.yaml")] if given else [])
    choice = find_config(_args(*argv))
    assert expect_how in choice.how, n
    if n == 4:
        assert choice.file is None and "embedded default" in choice.label
    else:
        assert choice.file is not None and choice.file.is_file()


def test_without_the_local_stack_a_file_must_be_named(tmp_path, monkeypatch):
    """config_source alone (a library use) knows no stack directory: no --config and no environment is an error."""
    monkeypatch.setattr(config_source, "_local", None)
    monkeypatch.delenv("KAFKA_HEALTH_CONFIG", raising=False)
    with pytest.raises(Invalid, match="--config"):
        find_config(_args())
    with pytest.raises(SystemExit):  # the stack's options come with the stack
        _args("--dir", str(tmp_path))
    (tmp_path / "given.yaml").write_text(BASE)
    assert find_config(_args("--config", str(tmp_path / "given.yaml"))).how == "--config"


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'kh.db'}")
    create_all(s)
    yield s
    s.dispose()


def test_plan_lists_what_a_sync_would_remove_and_what_it_still_owns(store):
    demo = parse_config(BASE + PAYMENTS)
    empty = parse_config(BASE)
    with store.session() as s:
        service.sync_config(db_session=s, config=demo, now=T0)
        tokens.create(db_session=s, kind=tokens.TokenKind.TENANT, tenant="payments", name="app", now=T0)
    with store.session() as s:
        plan = service.plan_sync(db_session=s, config=empty)
        assert plan.removed == ("payments", "search")
        assert plan.dependents == {"payments": {"tokens": 1}}  # search owns nothing: removing it needs no --yes
        assert service.plan_sync(db_session=s, config=demo).changes is False
    with store.session() as s:  # planning wrote nothing
        assert {r.name for r in service.get_page(db_session=s, after=None, limit=10)} == {"payments", "search"}


def test_a_running_service_is_known_by_its_recent_mark_and_its_configuration(store):
    demo = parse_config(BASE + PAYMENTS)
    origin = service.ConfigOrigin.of(demo, "/demo/kafka-health.yaml")
    other = service.ConfigOrigin.of(parse_config(BASE), "/elsewhere.yaml")
    assert origin.digest != other.digest
    assert origin.digest == service.ConfigOrigin.of(parse_config(BASE + PAYMENTS), "/same/tenants.yaml").digest
    with store.session() as s:
        assert service.running_service_source(db_session=s, now=T0) is None  # never synced
        service.sync_config(db_session=s, config=demo, now=T0, origin=origin, by="serve")
    with store.session() as s:
        seen = service.running_service_source(db_session=s, now=T0 + timedelta(seconds=60))
        assert seen is not None and seen.config_digest == origin.digest and seen.config_path == origin.path
        assert service.running_service_source(db_session=s, now=T0 + service.SERVICE_ALIVE * 2) is None
        service.mark_service_alive(db_session=s, now=T0 + service.SERVICE_ALIVE * 2)
        assert service.running_service_source(db_session=s, now=T0 + service.SERVICE_ALIVE * 2) is not None
    with store.session() as s:  # a CLI sync beside the running service keeps the service's record
        service.sync_config(db_session=s, config=demo, now=T0 + service.SERVICE_ALIVE * 2, origin=origin, by="cli")
        seen = service.running_service_source(db_session=s, now=T0 + service.SERVICE_ALIVE * 2)
        assert seen is not None and seen.synced_by == "serve"
    with store.session() as s:  # once the service is gone, a CLI sync is recorded as the CLI's: no running service
        later = T0 + service.SERVICE_ALIVE * 5
        service.sync_config(db_session=s, config=demo, now=later, origin=other, by="cli")
        assert service.running_service_source(db_session=s, now=later) is None


def test_config_tenants_are_selectors_not_just_names():
    # The digest follows what the tenants own, not only their names.
    a = service.ConfigOrigin.of(parse_config(BASE + PAYMENTS), "x")
    changed = parse_config(BASE + PAYMENTS.replace("[search.]", "[search2.]"))
    assert service.ConfigOrigin.of(changed, "x").digest != a.digest


def test_a_writing_command_only_adds_the_config_tenants_the_store_lacks(store):
    demo = parse_config(BASE + PAYMENTS)
    with store.session() as s:
        service.sync_config(db_session=s, config=demo, now=T0)
    # Another file: no search, payments redefined, a new tenant billing.
    other = parse_config(
        BASE
        + PAYMENTS.replace("[payments.]", "[payments2.]").replace(
            "{name: search, selectors: [{cluster: local, topic_prefixes: [search.]}]}",
            "{name: billing, selectors: [{cluster: local, topic_prefixes: [billing.]}]}",
        )
    )
    with store.session() as s:
        assert service.add_missing_config_tenants(db_session=s, config=other, now=T0) == ("billing",)
    with store.session() as s:
        assert {r.name for r in service.get_page(db_session=s, after=None, limit=10)} == {
            "payments",
            "search",
            "billing",
        }
        kept = service.get_config(db_session=s, name="payments")
        assert kept.selectors[0].topic_prefixes == ("payments.",)  # not redefined by the other file
        assert service.add_missing_config_tenants(db_session=s, config=other, now=T0) == ()
