"""The tenant health answer lists the tenant's Kafka Streams groups (KIP-1071) with state, members and lag
(monitor/health/streams_groups.py, issue 29 item 4): its own only (its tenant label on its own clusters), an empty
list when there are none, null when Prometheus does not answer."""

from __future__ import annotations

import pytest

from monitor.core.errors import QueryError
from monitor.core.metric_names import M
from monitor.core.prom import InstantSample
from monitor.health.streams_groups import StreamsGroupBoard, tenant_streams_groups
from tests.api_fixtures import NOW, make_config, tenant_health_as_tenant
from tests.harness.fake_source import FakeSource

pytestmark = pytest.mark.unit

ACME_APP = {"cluster": "shared", "group": "acme-app", "state": "stable", "members": 2, "lag": 148}


def prometheus() -> FakeSource:
    def g(cluster: str, group: str, **extra: str) -> dict[str, str]:
        return {"cluster": cluster, "group": group, **extra}

    # Table order matters: the lag and members queries also name kafka_group_info (their "and on"), so they come first.
    return FakeSource(
        {
            M["group_lag"]: [
                InstantSample(g("shared", "acme-app"), 148),
                InstantSample(g("shared", "globex-app"), 7),
            ],
            M["group_members"]: [InstantSample(g("shared", "acme-app"), 2)],
            M["group_info"]: [
                InstantSample(g("shared", "acme-app", tenant="acme", state="stable"), 1),
                InstantSample(g("shared", "globex-app", tenant="globex", state="empty"), 1),
                InstantSample(g("globex-only", "stray", tenant="acme", state="stable"), 1),  # not a cluster of acme's
            ],
        }
    )


def test_each_tenant_gets_its_own_streams_groups_on_its_own_clusters() -> None:
    source = prometheus()
    rows = StreamsGroupBoard(lambda c: source).rows(make_config(), NOW)
    assert [g.model_dump() for g in tenant_streams_groups("acme", {"shared", "acme-only"}, rows) or []] == [ACME_APP]
    globex = tenant_streams_groups("globex", {"shared", "globex-only"}, rows) or []
    # globex-app's describe failed: members unknown (null), never 0
    assert [g.model_dump() for g in globex] == [
        {"cluster": "shared", "group": "globex-app", "state": "empty", "members": None, "lag": 7}
    ]
    assert all('type="streams"' in q for q in source.seen)  # only streams groups are asked, not every consumer group


def test_no_series_is_an_empty_list_and_prometheus_down_is_null() -> None:
    assert (
        tenant_streams_groups("acme", {"shared"}, StreamsGroupBoard(lambda c: FakeSource()).rows(make_config(), NOW))
        == []
    )
    down = FakeSource(fail=QueryError("Prometheus unreachable at http://p:9090: ConnectError"))
    assert tenant_streams_groups("acme", {"shared"}, StreamsGroupBoard(lambda c: down).rows(make_config(), NOW)) is None


def test_the_health_answer_carries_them_for_the_tenant_token(tmp_path) -> None:
    body = tenant_health_as_tenant(tmp_path, "acme", streams_board=StreamsGroupBoard(lambda c: prometheus()))
    assert body["streams_groups"] == [ACME_APP]
    assert "globex" not in str(body)
