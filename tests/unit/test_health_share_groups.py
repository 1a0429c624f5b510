"""The tenant health answer lists the tenant's share groups with status and lag (monitor/health/share_groups.py,
issue 29 item 4): its own only (its tenant label on its own clusters), null when Prometheus does not answer."""

from __future__ import annotations

import pytest

from monitor.core.errors import QueryError
from monitor.core.metric_names import M
from monitor.core.prom import InstantSample
from monitor.health.share_groups import ShareGroupBoard, tenant_share_groups
from tests.api_fixtures import NOW, make_config, tenant_health_as_tenant
from tests.harness.fake_source import FakeSource

pytestmark = pytest.mark.unit


def prometheus() -> FakeSource:
    def g(cluster: str, group: str, tenant: str, **extra: str) -> dict[str, str]:
        return {"cluster": cluster, "group": group, "tenant": tenant, **extra}

    return FakeSource(
        {
            M["sharegroup_status"]: [
                InstantSample(g("shared", "acme-share", "acme", status="stalled"), 1),
                InstantSample(g("shared", "globex-share", "globex", status="consuming"), 1),
                InstantSample(g("globex-only", "stray", "acme", status="idle"), 1),  # not a cluster of acme's
            ],
            M["sharegroup_lag"]: [
                InstantSample({"cluster": "shared", "group": "acme-share"}, 60),
                InstantSample({"cluster": "shared", "group": "globex-share"}, 5),
            ],
            M["sharegroup_members"]: [InstantSample({"cluster": "shared", "group": "acme-share"}, 1)],
        }
    )


def test_each_tenant_gets_its_own_share_groups_on_its_own_clusters() -> None:
    config = make_config()
    board = ShareGroupBoard(lambda c: prometheus())
    rows = board.rows(config, NOW)
    acme = tenant_share_groups("acme", {"shared", "acme-only"}, rows)
    assert [g.model_dump() for g in acme or []] == [
        {"cluster": "shared", "group": "acme-share", "status": "stalled", "lag": 60, "members": 1}
    ]
    assert [g.group for g in tenant_share_groups("globex", {"shared", "globex-only"}, rows) or []] == ["globex-share"]
    assert tenant_share_groups("acme", {"shared"}, None) is None


def test_prometheus_down_is_null_and_asked_once_per_ttl() -> None:
    clock = [0.0]
    down = FakeSource(fail=QueryError("Prometheus unreachable at http://p:9090: ConnectError"))
    board = ShareGroupBoard(lambda c: down, ttl=15, clock=lambda: clock[0])
    assert board.rows(make_config(), NOW) is None
    asked = len(down.seen)
    clock[0] = 10.0
    assert board.rows(make_config(), NOW) is None and len(down.seen) == asked
    clock[0] = 16.0
    board.rows(make_config(), NOW)
    assert len(down.seen) > asked


def test_the_health_answer_carries_them_for_the_tenant_token(tmp_path) -> None:
    body = tenant_health_as_tenant(tmp_path, "acme", share_board=ShareGroupBoard(lambda c: prometheus()))
    assert body["share_groups"] == [
        {"cluster": "shared", "group": "acme-share", "status": "stalled", "lag": 60, "members": 1}
    ]
    assert "globex" not in str(body)
