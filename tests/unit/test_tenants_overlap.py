"""The one overlap rule for tenant selectors, used by the config file and by the API/CLI."""

from __future__ import annotations

import pytest

from monitor.core.config import TenantConfig, parse_config
from monitor.core.errors import ConfigError
from monitor.core.tenancy import TenantIndex, find_overlaps

pytestmark = pytest.mark.unit


def T(name, whole=(), **sel):
    selectors = []
    if sel:
        selectors = [{"cluster": sel.pop("cluster", "c1"), **sel}]
    return TenantConfig.model_validate({"name": name, "whole_clusters": list(whole), "selectors": selectors})


# (number, tenants, expected overlaps as (cluster, kind, tenant, value, other, other_value))
CASES = [
    (1, [T("a", topic_prefixes=["orders."]), T("b", topic_prefixes=["payments."])], []),
    (
        2,
        [T("a", topic_prefixes=["orders."]), T("b", topic_prefixes=["orders.eu."])],
        [("c1", "topic prefix", "a", "orders.", "b", "orders.eu.")],
    ),
    (
        3,
        [T("a", topic_prefixes=["orders"]), T("b", topic_prefixes=["orders"])],
        [("c1", "topic prefix", "a", "orders", "b", "orders")],
    ),
    # Same prefix on different clusters, or in different kinds, is fine.
    (4, [T("a", topic_prefixes=["x."]), T("b", cluster="c2", topic_prefixes=["x."])], []),
    (5, [T("a", topic_prefixes=["x."]), T("b", group_prefixes=["x."])], []),
    (
        6,
        [T("a", client_id_prefixes=["app"]), T("b", client_id_prefixes=["app-eu"])],
        [("c1", "client-id prefix", "a", "app", "b", "app-eu")],
    ),
    (
        7,
        [T("a", group_prefixes=["g-"]), T("b", group_prefixes=["g-1"]), T("c", group_prefixes=["g-12"])],
        [
            ("c1", "group prefix", "a", "g-", "b", "g-1"),
            ("c1", "group prefix", "a", "g-", "c", "g-12"),
            ("c1", "group prefix", "b", "g-1", "c", "g-12"),
        ],
    ),
    (
        8,
        [T("a", principals=["User:svc"]), T("b", principals=["svc"])],
        [("c1", "principal", "a", "User:svc", "b", "svc")],
    ),
    (
        9,
        [T("a", whole=["c1"]), T("b", topic_prefixes=["x"])],
        [("c1", "whole cluster", "a", "c1", "b", "topic prefix 'x'")],
    ),
    (10, [T("a", whole=["c1"]), T("b", whole=["c1"])], [("c1", "whole cluster", "a", "c1", "b", "c1")]),
    (11, [T("a", whole=["c2"]), T("b", topic_prefixes=["x"])], []),
    # Within one tenant, nested prefixes are harmless.
    (12, [T("a", topic_prefixes=["x", "x.y"])], []),
    # Sorted neighbours that do not share the prefix end the scan; later matches are still found per prefix.
    (
        13,
        [T("a", topic_prefixes=["ab"]), T("b", topic_prefixes=["abc", "b"]), T("c", topic_prefixes=["ac"])],
        [("c1", "topic prefix", "a", "ab", "b", "abc")],
    ),
]


@pytest.mark.parametrize("n,tenants,expected", CASES, ids=[f"case{c[0]}" for c in CASES])
def test_find_overlaps(n, tenants, expected):
    found = [(o.cluster, o.kind, o.tenant, o.value, o.other_tenant, o.other_value) for o in find_overlaps(tenants)]
    assert found == expected


def test_overlap_message_names_both_tenants_and_values():
    (o,) = find_overlaps([T("a", topic_prefixes=["orders."]), T("b", topic_prefixes=["orders.eu."])])
    assert str(o) == (
        "tenants 'a' and 'b' overlap on cluster 'c1': topic prefix 'orders.' of 'a' and "
        "'orders.eu.' of 'b' match the same names"
    )


def test_without_overlaps_every_resource_has_one_owner():
    tenants = [T("a", topic_prefixes=["orders."], principals=["User:a"]), T("b", topic_prefixes=["pay."])]
    assert find_overlaps(tenants) == []
    idx = TenantIndex(tenants)
    assert idx.for_topic("c1", "orders.x") == "a" and idx.for_topic("c1", "pay.x") == "b"
    assert idx.for_topic("c1", "other") is None
    assert idx.for_client("c1", user="a", client_id="whatever") == "a"


CONFIG = """
clusters:
  - {name: c1, bootstrap_servers: "h:1"}
tenants:
  - name: a
    selectors: [{cluster: c1, topic_prefixes: [orders.]}]
  - name: b
    selectors: [{cluster: c1, topic_prefixes: [orders.eu.]}]
"""


def test_config_file_rejects_overlapping_tenants():
    with pytest.raises(ConfigError) as exc:
        parse_config(CONFIG, "kh.yaml")
    assert "tenants 'a' and 'b' overlap on cluster 'c1'" in str(exc.value)


def test_config_file_rejects_empty_prefix_with_location():
    text = CONFIG.replace("[orders.eu.]", "['']")
    with pytest.raises(ConfigError) as exc:
        parse_config(text, "kh.yaml")
    (problem,) = exc.value.problems
    assert problem.line == 8 and problem.path == "tenants[1].selectors[0].topic_prefixes"
    assert "empty entry would match everything" in problem.message
