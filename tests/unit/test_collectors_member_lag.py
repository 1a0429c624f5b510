"""Which member lags: per (client id, host, topic) the partitions assigned and their lag, from a group's description
and the round's offsets (collectors/admin_convert.py, ``member_lag_samples``)."""

import pytest

from collectors.admin_convert import GroupOffsets, WatermarkHistory, group_samples
from collectors.catalog import TenantLookup
from collectors.types import GroupInfo
from monitor.core.config import TenantConfig, TenantSelector
from monitor.core.tenancy import TenantIndex

pytestmark = pytest.mark.unit

TENANTS = TenantLookup(
    TenantIndex(
        [
            TenantConfig(
                name="alpha",
                selectors=(TenantSelector(cluster="c1", topic_prefixes=("alpha.",), group_prefixes=("alpha-",)),),
            )
        ]
    ),
    "c1",
)


def test_each_member_gets_its_partitions_and_their_lag():
    info = GroupInfo(
        "alpha-g",
        "stable",
        3,
        member_assignments=(
            ("a", "/10.0.0.1", (("alpha.t", 0),)),
            ("a", "/10.0.0.1", (("alpha.t", 1),)),  # same client id and host: summed
            ("b", "/10.0.0.2", (("alpha.t", 2), ("alpha.t", 3))),
            ("c", "/10.0.0.3", ()),
        ),
    )  # joined, nothing assigned yet
    committed = {("alpha.t", 0): 90, ("alpha.t", 1): 95, ("alpha.t", 2): 10, ("alpha.t", 3): -1001}
    wm = {("alpha.t", 0): 100, ("alpha.t", 1): 100, ("alpha.t", 2): 100, ("alpha.t", 3): 100}
    samples = group_samples(
        [GroupOffsets(info, committed)], wm, WatermarkHistory(), now=0.0, base=(("cluster", "c1"),), tenants=TENANTS
    )
    got = {
        (s.name, dict(s.labels)["client_id"]): s.value
        for s in samples
        if "client_id" in dict(s.labels) and s.name != "kafka_consumergroup_member_info"
    }
    assert got == {
        ("kafka_consumergroup_member_partitions", "a"): 2,
        ("kafka_consumergroup_member_lag", "a"): 15,
        # partition 3 has no commit: counted as assigned, its lag unknown (not zero)
        ("kafka_consumergroup_member_partitions", "b"): 2,
        ("kafka_consumergroup_member_lag", "b"): 90,
    }
    labels = next(s.labels for s in samples if s.name == "kafka_consumergroup_member_lag")
    assert labels == (
        ("cluster", "c1"),
        ("group", "alpha-g"),
        ("topic", "alpha.t"),
        ("client_id", "a"),
        ("client_host", "10.0.0.1"),
        ("tenant", "alpha"),
    )


def test_a_member_whose_partitions_have_no_lag_figure_has_partitions_only():
    info = GroupInfo("alpha-g", "stable", 1, member_assignments=(("a", "h", (("alpha.t", 0),)),))
    samples = group_samples(
        [GroupOffsets(info, {})], {}, WatermarkHistory(), now=0.0, base=(("cluster", "c1"),), tenants=TENANTS
    )
    assert {s.name for s in samples if "client_id" in dict(s.labels)} == {"kafka_consumergroup_member_partitions"}
