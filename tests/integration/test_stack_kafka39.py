"""Users run old brokers: the 3.9 variant of the local stack must come up as a real cluster too."""

import pytest
from confluent_kafka.admin import AdminClient
from jmxquery import JMXConnection, JMXQuery

from monitor.stack import Stack, StackLayout

pytestmark = pytest.mark.integration


def test_kafka_39_cluster_comes_up_and_answers_jmx(tmp_path):
    stack = Stack(StackLayout(dir=tmp_path / "s39", port_base=19860, kafka_version="3.9.1"), log=lambda *_: None)
    try:
        stack.up(timeout=240)
        md = AdminClient({"bootstrap.servers": stack.layout.bootstrap_servers}).list_topics(timeout=10)
        assert sorted(md.brokers) == [1, 2, 3]
        conn = JMXConnection(f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{stack.layout.broker_jmx_port(1)}/jmxrmi")
        (m,) = conn.query([JMXQuery("kafka.server:type=app-info", attribute="version")], timeout=60)
        assert m.value == "3.9.1"
    finally:
        stopped = stack.down()
    assert len(stopped) == 6
