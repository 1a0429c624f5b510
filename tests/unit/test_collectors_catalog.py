"""The JMX catalog: ObjectName parsing, pattern matching, readings -> samples (aggregation, traps, tenants)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors import catalog
from collectors.catalog import (
    convert,
    derive_rates,
    parse_object_name,
    queries_for,
)
from collectors.types import Reading
from monitor.core.config import TenantConfig, TenantSelector
from monitor.core.tenancy import TenantIndex

pytestmark = pytest.mark.unit

BASE = (("cluster", "c1"), ("broker", "1"))


def tenants():
    idx = TenantIndex(
        [
            TenantConfig(
                name="alpha",
                selectors=(
                    TenantSelector(
                        cluster="c1",
                        topic_prefixes=("alpha.",),
                        client_id_prefixes=("alpha-",),
                        principals=("User:svc-a",),
                    ),
                ),
            ),
        ]
    )
    return catalog.TenantLookup(idx, "c1")


def by_key(samples):
    return {(s.name, s.labels): s.value for s in samples}


def test_parse_object_name_unquotes_values_with_separators():
    domain, props = parse_object_name('kafka.server:type=Fetch,user="a,b=c",client-id=x\\"y')
    assert domain == "kafka.server"
    assert dict(props) == {"type": "Fetch", "user": "a,b=c", "client-id": 'x\\"y'}
    domain, props = parse_object_name('kafka.log:type=LogManager,logDirectory="/d/\\"q\\"",name=X')
    assert dict(props)["logDirectory"] == '/d/"q"'


def test_pattern_exact_versus_property_list_pattern():
    exact = catalog._Pattern.of("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec")
    per_topic = catalog._Pattern.of("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=*")
    open_ = catalog._Pattern.of("kafka.server:type=Produce,*")
    broker_wide = {"type": "BrokerTopicMetrics", "name": "BytesInPerSec"}
    topic = {**broker_wide, "topic": "t"}
    assert exact.admits(broker_wide) and not exact.admits(topic)
    assert per_topic.admits(topic) and not per_topic.admits(broker_wide)
    assert open_.admits({"type": "Produce", "client-id": "x"}) and not open_.admits({"client-id": "x"})
    assert open_.domain == "kafka.server"  # the domain is compared by the caller (convert: once per MBean shape)


def test_per_partition_log_sizes_sum_per_topic_with_tenant():
    readings = [
        Reading("kafka.log:type=Log,name=Size,topic=alpha.orders,partition=0", "Value", 100.0),
        Reading("kafka.log:type=Log,name=Size,topic=alpha.orders,partition=1", "Value", 250.0),
        Reading("kafka.log:type=Log,name=Size,topic=other,partition=0", "Value", 7.0),
    ]
    got = by_key(convert(readings, catalog.BROKER_RULES, base=BASE, tenants=tenants()))
    assert got[("kafka_topic_log_size_bytes", BASE + (("topic", "alpha.orders"), ("tenant", "alpha")))] == 350.0
    assert got[("kafka_topic_log_size_bytes", BASE + (("topic", "other"), ("tenant", "")))] == 7.0


def test_requests_summed_over_api_versions_and_broker_versus_topic_meters():
    readings = [
        Reading("kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce,version=9", "Count", 5.0),
        Reading("kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce,version=11", "Count", 7.0),
        Reading("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", "Count", 1000.0),
        Reading("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=alpha.x", "Count", 600.0),
    ]
    got = by_key(convert(readings, catalog.BROKER_RULES, base=BASE, tenants=tenants()))
    assert got[("kafka_broker_requests_total", BASE + (("request", "Produce"),))] == 12.0
    assert got[("kafka_broker_bytes_in_total", BASE)] == 1000.0
    assert got[("kafka_topic_bytes_in_total", BASE + (("topic", "alpha.x"), ("tenant", "alpha")))] == 600.0


def test_idle_meter_count_is_exported_in_seconds_and_the_ratio_is_its_rate():
    mbean = "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent"
    first = convert(
        [Reading(mbean, "Count", 10e9), Reading(mbean, "MeanRate", 0.99)],
        catalog.BROKER_RULES,
        base=BASE,
        tenants=tenants(),
    )
    second = convert([Reading(mbean, "Count", 16e9)], catalog.BROKER_RULES, base=BASE, tenants=tenants())
    assert by_key(first) == {("kafka_broker_request_handler_idle_seconds_total", BASE): 10.0}  # MeanRate ignored
    ratio = derive_rates(second, first, elapsed_seconds=10.0)
    assert [(s.name, s.value) for s in ratio] == [("kafka_broker_request_handler_idle_ratio", pytest.approx(0.6))]
    assert derive_rates(second, None, 10.0) == []  # first collection: no ratio rather than a wrong one
    assert derive_rates(first, second, 10.0) == []  # counter went down (broker restarted): no ratio
    assert (
        derive_rates(
            convert([Reading(mbean, "Count", 100e9)], catalog.BROKER_RULES, base=BASE, tenants=tenants()), first, 10.0
        )[0].value
        == 1.0
    )  # clamped


def test_quota_nan_is_zero_and_client_tenant_from_principal_then_client_id():
    readings = [
        Reading("kafka.server:type=Produce,user=svc-a,client-id=anything", "throttle-time", math.nan),
        Reading("kafka.server:type=Produce,client-id=alpha-app", "byte-rate", 2048.0),
        Reading("kafka.server:type=Produce", "queue-size", 0.0),
        Reading("kafka.network:type=RequestChannel,name=RequestQueueSize", "Value", math.nan),
    ]
    got = by_key(convert(readings, catalog.BROKER_RULES, base=BASE, tenants=tenants()))
    assert (
        got[
            (
                "kafka_client_produce_throttle_time_seconds",
                BASE + (("user", "svc-a"), ("client_id", "anything"), ("tenant", "alpha")),
            )
        ]
        == 0.0
    )
    assert (
        got[
            (
                "kafka_client_produce_bytes_per_second",
                BASE + (("user", ""), ("client_id", "alpha-app"), ("tenant", "alpha")),
            )
        ]
        == 2048.0
    )
    assert not any(k[0] == "kafka_broker_request_queue_size" for k in got)  # NaN on a plain gauge: skipped


def test_latency_quantiles_in_seconds_and_string_state_as_label():
    readings = [
        Reading("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "99thPercentile", 12.5),
        Reading("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "Count", 3.0),
        Reading("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=ElectLeaders", "99thPercentile", 1.0),
        Reading("kafka.server:type=raft-metrics", "current-state", "leader"),
    ]
    got = by_key(convert(readings, catalog.CONTROLLER_RULES + catalog.BROKER_RULES, base=BASE, tenants=tenants()))
    key = (
        "kafka_broker_request_latency_seconds",
        BASE + (("request", "Produce"), ("phase", "total"), ("quantile", "0.99")),
    )
    assert got[key] == pytest.approx(0.0125)
    assert got[("kafka_cluster_raft_state", BASE + (("state", "leader"),))] == 1.0
    assert not any("ElectLeaders" in str(k) for k in got)  # not a busy API: counted, not broken down


def test_composite_keys_pick_only_the_wanted_item():
    readings = [
        Reading("java.lang:type=Memory", "HeapMemoryUsage", v, k)
        for k, v in (("used", 10.0), ("max", 40.0), ("committed", 20.0))
    ]
    readings += [
        Reading("java.lang:type=MemoryPool,name=G1 Old Gen", "CollectionUsage", 5.0, "used"),
        Reading("java.lang:type=MemoryPool,name=G1 Survivor Space", "CollectionUsage", 1.0, "used"),
        Reading("java.lang:type=MemoryPool,name=Metaspace", "CollectionUsage", None),
    ]
    got = by_key(convert(readings, catalog.BROKER_RULES, base=BASE, tenants=tenants()))
    assert got[("kafka_jvm_heap_used_bytes", BASE)] == 10.0
    assert got[("kafka_jvm_heap_max_bytes", BASE)] == 40.0
    assert got[("kafka_jvm_heap_after_gc_used_bytes", BASE)] == 6.0


def test_queries_cover_every_rule_once_per_pattern():
    qs = queries_for(catalog.BROKER_TARGET_RULES)
    patterns = [q.mbean for q in qs]
    assert len(patterns) == len(set(patterns))
    assert catalog.BTM_QUERY in patterns
    for rule in catalog.BROKER_TARGET_RULES:
        assert any(rule.attribute in q.attributes and q.mbean == (rule.query or rule.mbean) for q in qs)


def test_label_names_are_uniform_per_metric():
    names: dict[str, tuple] = {}
    for rule in catalog.BROKER_TARGET_RULES + catalog.CONTROLLER_RULES:
        assert names.setdefault(rule.metric, rule.label_names()) == rule.label_names(), rule.metric
        assert rule.metric.startswith(
            ("kafka_broker_", "kafka_cluster_", "kafka_topic_", "kafka_client_", "kafka_jvm_")
        )
        assert (rule.kind == "counter") == rule.metric.endswith("_total"), rule.metric


def test_docs_embed_the_generated_jmx_table_and_name_every_other_metric():
    from pathlib import Path

    docs = (Path(__file__).parents[2] / "docs" / "metrics.md").read_text()
    assert catalog.markdown_table() in docs, "docs/metrics.md is stale: regenerate with python -m collectors.catalog"
    import re

    import collectors.admin as admin
    import collectors.admin_convert as admin_convert
    import collectors.exporter as exporter
    import collectors.host as host

    for module in (admin, admin_convert, exporter, host):
        source = Path(module.__file__).read_text()
        for name in set(re.findall(r'"(kafka_(?:host|cluster|broker|topic|consumergroup|health)_[a-z_]+)"', source)):
            shown = name if name in docs else name + "_total"  # counters are documented with their _total
            assert shown in docs, f"{name} ({module.__name__}) is not documented in docs/metrics.md"


def test_deprecated_requests_by_api_version_and_client_software():
    mbean = (
        "kafka.network:type=RequestMetrics,name=DeprecatedRequestsPerSec,request=Produce,version={v},"
        "clientSoftwareName=librdkafka,clientSoftwareVersion=1.5.0"
    )
    readings = [
        Reading(mbean.format(v=2), "Count", 4.0),
        Reading(mbean.format(v=1), "Count", 1.0),
        # the plain per-version meter of the same request is a different metric
        Reading("kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce,version=2", "Count", 9.0),
    ]
    got = by_key(convert(readings, catalog.BROKER_RULES, base=BASE, tenants=tenants()))
    sw = (("client_software_name", "librdkafka"), ("client_software_version", "1.5.0"))
    deprecated = "kafka_broker_deprecated_requests_total"
    assert got[(deprecated, BASE + (("request", "Produce"), ("api_version", "2")) + sw)] == 4.0
    assert got[(deprecated, BASE + (("request", "Produce"), ("api_version", "1")) + sw)] == 1.0
    assert got[("kafka_broker_requests_total", BASE + (("request", "Produce"),))] == 9.0
    assert any("DeprecatedRequestsPerSec" in q.mbean for q in queries_for(catalog.BROKER_RULES))


def test_share_partition_metrics_are_summed_per_group_and_topic_and_owned_by_the_groups_tenant():
    """KIP-1103's per share-partition meters (Kafka 4.4): partitions summed per (group, topic); the tenant is the
    group's prefix owner, else the topic's owner (a share group reading another tenant's topic stays its own)."""
    idx = TenantIndex(
        [
            TenantConfig(name="alpha", selectors=(TenantSelector(cluster="c1", topic_prefixes=("alpha.",)),)),
            TenantConfig(name="beta", selectors=(TenantSelector(cluster="c1", group_prefixes=("beta-",)),)),
        ]
    )
    spm = "kafka.server:type=SharePartitionMetrics,name={name},group={group},topic={topic},partition={p}"
    readings = [
        Reading(
            spm.format(name="AcquisitionLockTimeoutPerSec", group="workers", topic="alpha.jobs", p=0), "Count", 3.0
        ),
        Reading(
            spm.format(name="AcquisitionLockTimeoutPerSec", group="workers", topic="alpha.jobs", p=1), "Count", 4.0
        ),
        Reading(spm.format(name="AcquisitionLockTimeoutPerSec", group="beta-x", topic="alpha.jobs", p=0), "Count", 1.0),
        Reading(spm.format(name="InFlightMessageCount", group="beta-x", topic="alpha.jobs", p=0), "Value", 9.0),
        Reading(spm.format(name="InFlightMessageCount", group="beta-x", topic="alpha.jobs", p=1), "Value", 2.0),
        Reading("kafka.server:type=ShareGroupMetrics,name=DeadLetterQueueRecordCount,group=beta-x", "Count", 5.0),
    ]
    got = by_key(convert(readings, catalog.BROKER_RULES, base=BASE, tenants=catalog.TenantLookup(idx, "c1")))
    timeouts = "kafka_broker_share_lock_timeouts_total"
    assert got[(timeouts, BASE + (("group", "workers"), ("topic", "alpha.jobs"), ("tenant", "alpha")))] == 7.0
    assert got[(timeouts, BASE + (("group", "beta-x"), ("topic", "alpha.jobs"), ("tenant", "beta")))] == 1.0
    inflight = (
        "kafka_broker_share_inflight_records",
        BASE + (("group", "beta-x"), ("topic", "alpha.jobs"), ("tenant", "beta")),
    )
    assert got[inflight] == 11.0
    assert (
        got[("kafka_broker_share_dead_letter_records_total", BASE + (("group", "beta-x"), ("tenant", "beta")))] == 5.0
    )
    assert len(got) == 4
    assert any("SharePartitionMetrics" in q.mbean for q in queries_for(catalog.BROKER_RULES))


# The read path's fast parts (issue 33, item 5: 500 brokers of 10,000 partitions per collector core) must answer
# exactly what the general ones do.

_WORD = st.text(alphabet="abcXYZ09._-/ *=,", min_size=1, max_size=8)


@settings(deadline=None)  # no per-example time limit: a loaded CI machine is not a failure
@given(st.lists(st.tuples(_WORD, _WORD, st.booleans()), min_size=1, max_size=5))
def test_properties_fast_split_is_the_scan(props):
    # values quoted or not, with the characters that matter (",", "=", "*"): the split must agree or step aside
    body = ",".join(f"{k.replace('=', '')}={f'{chr(34)}{v}{chr(34)}' if quoted else v}" for k, v, quoted in props)
    name = f"kafka.server:{body}"
    assert catalog._properties(name) == ("kafka.server", dict(parse_object_name(name)[1]))


def _concrete(pattern: str) -> str:
    """An MBean a pattern matches: every '*' value filled in, a trailing ',*' as one more property."""
    domain, props = parse_object_name(pattern)
    parts = [f"{k}={'x1' if v == '*' else v}" for k, v in props if k != "*"]
    if any(k == "*" for k, _ in props):
        parts.append("extra=y")
    return f"{domain}:{','.join(parts)}"


@pytest.mark.parametrize("rules", [catalog.BROKER_TARGET_RULES, catalog.CONTROLLER_RULES], ids=["broker", "controller"])
def test_the_type_and_name_sieve_keeps_every_rule_a_full_match_keeps(rules):
    # the sieve (per MBean shape) and admits (the rest, per MBean) together decide as the whole pattern does: for a
    # name each pattern matches, and for the same name with one property more (only an open pattern takes it)
    table = catalog._compile(rules)
    for rule in rules:
        for concrete in {_concrete(rule.mbean), _concrete(rule.query or rule.mbean)}:
            for mbean in (concrete, concrete + ",zz=1"):
                domain, props = catalog._properties(mbean)
                sieved = [
                    c.rule for c in table.candidates(rule.attribute, rule.key, domain, props) if c.rest.admits(props)
                ]
                full = [
                    c.rule
                    for c in table.by_attribute[(rule.attribute, rule.key)]
                    if c.rule.pattern.domain == domain and c.rule.pattern.admits(props)
                ]
                assert sieved == full, mbean


_PARTITION_RULES = (
    # summed per topic (the per-partition log size's shape), read through a NaN as zero
    catalog.MBeanRule(
        "t_size",
        "gauge",
        "h",
        "kafka.log:type=Log,name=Size,topic=*,partition=*",
        "Value",
        labels=(("topic", "topic"),),
        tenant="topic",
        nan="zero",
    ),
    # labelled by partition: every partition its own series
    catalog.MBeanRule(
        "t_per_partition",
        "gauge",
        "h",
        "kafka.log:type=Log,name=Size,topic=*,partition=*",
        "Value",
        labels=(("topic", "topic"), ("partition", "partition")),
    ),
    # partition 0 only, on another MBean name
    catalog.MBeanRule("t_first", "gauge", "h", "kafka.log:type=Log,name=Offset,topic=*,partition=0", "Value"),
    # any partition of that name, summed, NaN skipped
    catalog.MBeanRule(
        "t_offsets", "gauge", "h", "kafka.log:type=Log,name=Offset,topic=*,partition=*", "Value", scale=2.0
    ),
)


@settings(deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Size", "Offset"]),
            st.sampled_from(["alpha.orders", "other", "alpha.x"]),
            st.integers(0, 3),
            st.sampled_from([1.0, 2.5, float("nan"), "str"]),
            st.booleans(),  # JMX order (partition last) or Jolokia's canonical one (partition in the middle)
        ),
        max_size=30,
    ),
    st.sampled_from([_PARTITION_RULES, _PARTITION_RULES[2:], catalog.BROKER_TARGET_RULES]),
)
def test_partitions_of_a_topic_decided_once_sum_as_each_read_alone(readings, rules):
    # convert remembers what a partition's name decides for the other partitions of its topic (issue 33, item 5):
    # only where no candidate rule reads or constrains the partition, with every value kind, in both name orders
    made = [
        Reading(
            f"kafka.log:type=Log,name={n},topic={t},partition={p}"
            if jmx_order
            else f"kafka.log:name={n},partition={p},topic={t},type=Log",
            "Value",
            v,
        )
        for n, t, p, v, jmx_order in readings
    ]
    together = by_key(convert(made, rules, base=BASE, tenants=tenants()))
    alone: dict = {}
    for r in made:
        for k, v in by_key(convert([r], rules, base=BASE, tenants=tenants())).items():
            alone[k] = alone.get(k, 0.0) + v
    assert together.keys() == alone.keys()
    assert all(together[k] == pytest.approx(alone[k]) for k in alone), (together, alone)
