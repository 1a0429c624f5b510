"""Transports: jmxquery's output and failure modes contained; Jolokia's bulk response parsed.

The jmxquery subprocess cases run a tiny shell script in place of java: it behaves like the jar in each failure mode
(hangs, refuses, garbles) so the wrapper's handling is proven without a broker. The real jar runs in integration.
"""

import math
import os
import stat
import time

import pytest

from collectors.transports.jmxquery import JmxQueryTransport, parse_output
from collectors.transports.jolokia import parse_response
from collectors.types import Endpoint, MBeanQuery, Reading
from monitor.core.errors import TargetTimeout, TargetUnreachable, TransportError

pytestmark = pytest.mark.unit

REAL_OUTPUT = """[
{"mBeanName" : "java.lang:type=Memory", "attribute" : "HeapMemoryUsage", "attributeKey" : "used", "attributeType" : "Long", "value" : 168218624}, 
{"mBeanName" : "kafka.server:type=raft-metrics", "attribute" : "election-latency-avg", "attributeType" : "Double", "value" : NaN}, 
{"mBeanName" : "kafka.server:type=raft-metrics", "attribute" : "current-state", "attributeType" : "String", "value" : "leader"}, 
{"mBeanName" : "java.lang:name=Metaspace,type=MemoryPool", "attribute" : "CollectionUsage", "attributeType" : "Null"}, 
{"mBeanName" : "kafka.log:type=LogManager,name=LogDirectoryOffline,logDirectory=\\"/d/data\\"", "attribute" : "Value", "attributeType" : "Integer", "value" : 0}]
"""


def test_parse_real_output_with_bare_nan_and_composite_keys():
    r = parse_output(REAL_OUTPUT)
    assert r[0] == Reading("java.lang:type=Memory", "HeapMemoryUsage", 168218624.0, "used")
    assert math.isnan(r[1].value)
    assert r[2].value == "leader"
    assert r[3].value is None
    assert r[4].mbean == 'kafka.log:type=LogManager,name=LogDirectoryOffline,logDirectory="/d/data"'


def test_parse_unescaped_strings_falls_back_to_field_order():
    # The jar does not escape quotes or backslashes inside values, e.g. a client id or a version string.
    text = (
        '[\n{"mBeanName" : "kafka.server:type=socket-server-metrics,clientSoftwareName=we"ird\\x", '
        '"attribute" : "connections", "attributeType" : "Integer", "value" : 3}, \n'
        '{"mBeanName" : "kafka.server:type=app-info,id=1", "attribute" : "Version", "attributeType" : "String", '
        '"value" : "4.1 "beta" \\n"}]'
    )
    r = parse_output(text)
    assert r[0] == Reading('kafka.server:type=socket-server-metrics,clientSoftwareName=we"ird\\x', "connections", 3.0)
    assert r[1].value == '4.1 "beta" \\n'


def test_empty_list_is_no_data_and_garbage_is_malformed():
    assert parse_output("[\n]\n") == []
    with pytest.raises(TransportError):
        parse_output("Exception in thread main java.lang.NullPointerException")
    with pytest.raises(TransportError):
        parse_output("[\n{not json at all}\n]")
    # one bad line among good ones: the good ones are kept
    assert (
        len(
            parse_output(
                '[\n{garbled\n{"mBeanName" : "a:b=c", "attribute" : "Value", "attributeType" : "Long", "value" : 1}]'
            )
        )
        == 1
    )


def fake_java(tmp_path, body: str) -> str:
    script = tmp_path / "java"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


QUERIES = (MBeanQuery("java.lang:type=Memory", ("HeapMemoryUsage",)),)


def test_hung_jvm_times_out_and_leaves_no_process(tmp_path):
    pidfile = tmp_path / "child.pid"
    java = fake_java(tmp_path, f"sleep 60 & echo $! > {pidfile}; wait")
    t = JmxQueryTransport(java=java, jar=tmp_path / "x.jar")
    start = time.monotonic()
    with pytest.raises(TargetTimeout):
        t.read(Endpoint(jmx="127.0.0.1:1"), QUERIES, timeout=0.5)
    assert time.monotonic() - start < 3
    child = int(pidfile.read_text())
    time.sleep(0.1)
    assert not os.path.exists(f"/proc/{child}") or "Z" in open(f"/proc/{child}/stat").read().split()[2]


def test_refused_connection_is_unreachable_and_other_exits_are_transport_errors(tmp_path):
    refused = fake_java(tmp_path, 'echo \'{ "error": "connection-error", "message":"refused"}\'; exit 2')
    with pytest.raises(TargetUnreachable):
        JmxQueryTransport(java=refused, jar=tmp_path / "x.jar").read(Endpoint(jmx="h:1"), QUERIES, timeout=5)
    (tmp_path / "b").mkdir()
    crash = fake_java(tmp_path / "b", "echo boom >&2; exit 1")
    with pytest.raises(TransportError, match="boom"):
        JmxQueryTransport(java=crash, jar=tmp_path / "x.jar").read(Endpoint(jmx="h:1"), QUERIES, timeout=5)


def test_password_is_never_put_on_a_command_line(tmp_path):
    java = fake_java(tmp_path, "echo '[]'")
    t = JmxQueryTransport(java=java, jar=tmp_path / "x.jar")
    with pytest.raises(TransportError, match="jolokia") as info:
        t.read(Endpoint(jmx="h:1", username="u", password="s3cret"), QUERIES, timeout=5)
    assert "s3cret" not in str(info.value)
    assert "s3cret" not in " ".join(t.argv(Endpoint(jmx="h:1", username="u", password="s3cret"), QUERIES))
    # and a query's attributeKey is not needed: every composite item comes back, the catalog picks
    assert "/HeapMemoryUsage;" in t.argv(Endpoint(jmx="h:1"), QUERIES)[-1]


def test_jolokia_bulk_response_patterns_composites_null_and_missing():
    queries = (
        MBeanQuery("kafka.server:type=Produce,*", ("byte-rate",)),
        MBeanQuery("java.lang:type=Memory", ("HeapMemoryUsage",)),
        MBeanQuery("kafka.nosuch:type=X,*", ("Count",)),
        MBeanQuery("kafka.server:type=Fetch,*", ("byte-rate",)),
    )
    payload = [
        {"status": 200, "value": {"kafka.server:client-id=a,type=Produce": {"byte-rate": None}}},
        {"status": 200, "value": {"HeapMemoryUsage": {"used": 5, "max": 9}}},
        {"status": 404, "error": "No MBean with pattern"},
        {"status": 400, "error": "java.lang.IllegalArgumentException : No matching attributes [byte-rate]"},
    ]
    r = parse_response(payload, queries)
    assert r[0].mbean == "kafka.server:client-id=a,type=Produce" and math.isnan(r[0].value)
    assert Reading("java.lang:type=Memory", "HeapMemoryUsage", 5.0, "used") in r
    assert len(r) == 3
    with pytest.raises(TransportError):
        parse_response({"error": "x"}, queries)
    with pytest.raises(TransportError):
        parse_response([{"status": 500}] * 4, queries)


# --- jmx.transport: auto (the default) -----------------------------------------------------------------------------
class _Recording:
    """A transport that answers nothing and records which endpoint it was asked for."""

    def __init__(self, name: str):
        self.name = name
        self.asked: list[str] = []

    def read(self, endpoint, queries, *, timeout):
        self.asked.append(endpoint.jolokia or endpoint.jmx)
        return []


def test_auto_reads_a_broker_with_a_jolokia_url_through_it_and_one_without_through_jmxquery():
    from collectors.catalog import TenantLookup
    from collectors.jmx import JmxCollector
    from monitor.core.config import parse_config

    cfg = parse_config("""
clusters:
  - name: c
    bootstrap_servers: 127.0.0.1:1
    brokers:
      - {id: 1, jmx: "127.0.0.1:11", jolokia: "http://127.0.0.1:41/jolokia"}
      - {id: 2, jmx: "127.0.0.1:12"}
    controller_jmx: ["127.0.0.1:10"]
""")
    (cluster,) = cfg.clusters
    assert cluster.jmx.transport == "auto"  # the default
    bulk, jvm = _Recording("jolokia"), _Recording("jmxquery")
    jc = JmxCollector(
        cluster, transport=bulk, controller_transport=jvm, tenants=TenantLookup(None, "c"), max_series=100
    )
    for target in jc.targets():
        jc.collect_target(target, now=0.0)
    assert bulk.asked == ["http://127.0.0.1:41/jolokia"]
    assert sorted(jvm.asked) == ["127.0.0.1:10", "127.0.0.1:12"]
