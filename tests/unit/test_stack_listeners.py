"""The stack's optional client listener: off by default, on a given address when asked (pure config rendering)."""

from pathlib import Path

import pytest

from monitor.stack import Stack
from monitor.stack.kafka import node_properties
from monitor.stack.layout import StackLayout

pytestmark = pytest.mark.unit


def _props(layout: StackLayout, node: int) -> dict[str, str]:
    return dict(line.split("=", 1) for line in node_properties(layout, node).splitlines())


def test_loopback_only_by_default():
    layout = StackLayout(dir=Path("/tmp/x"), port_base=30000)
    props = _props(layout, 1)
    assert props["listeners"] == props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:30001"
    assert "CLIENTS" not in props["listener.security.protocol.map"]
    assert Stack(layout).config().clusters[0].brokers[0].listener_ports == (30001,)
    with pytest.raises(ValueError):
        _ = layout.client_bootstrap_servers


def test_client_listener_on_the_given_address_for_brokers_only():
    layout = StackLayout(dir=Path("/tmp/x"), port_base=30000, client_listener_host="10.9.0.1")
    props = _props(layout, 2)
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:30002,CLIENTS://10.9.0.1:30062"
    assert props["advertised.listeners"] == props["listeners"] and props["inter.broker.listener.name"] == "PLAINTEXT"
    assert props["listener.security.protocol.map"].endswith(",CLIENTS:PLAINTEXT")
    assert "CLIENTS" not in _props(layout, 100)["listeners"]  # the controller keeps its own listener only
    assert layout.client_bootstrap_servers == "10.9.0.1:30061,10.9.0.1:30062,10.9.0.1:30063"
    assert Stack(layout).config().clusters[0].brokers[1].listener_ports == (30002, 30062)


def test_a_new_cluster_id_never_reads_as_an_option():
    """One in 64 ids began with "-", and kafka-storage format took it for an option (a stack that failed to start
    at random)."""
    from monitor.stack.kafka import new_cluster_id

    ids = [new_cluster_id() for _ in range(3000)]
    assert not [i for i in ids if i.startswith("-")]
    assert all(len(i) == 22 for i in ids) and len(set(ids)) == len(ids)
