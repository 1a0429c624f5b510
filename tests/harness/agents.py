"""Restart one broker of a local stack with extra JVM arguments (a jmx_prometheus_javaagent, a heap), or back as the
stack starts it: what the exposition fixtures' recorder and bench/sources.py do to put a real agent on a broker."""

from __future__ import annotations

import dataclasses
import time

from monitor.stack import Stack, kafka
from monitor.stack.procs import ProcSpec, port_free


def restart_broker(
    stack: Stack,
    broker: int,
    extra_jvm_args: list[str] | None,
    *,
    ready_seconds: float = 300,
    profile: str | None = None,
    drop_reporter: bool = False,
    heap: str | None = None,
) -> int:
    """Stop ``broker``, wait for its ports to free, and start it again: with ``extra_jvm_args`` before the JVM's own
    arguments (those of the stack's profile, or of ``profile``: two jmx_exporters in one JVM refuse to start), or as
    ``stack up`` starts it when None. ``drop_reporter``: without Strimzi's metrics reporter it ran (its
    server.properties rewritten: the reporter and a jmx_exporter cannot share a JVM, monitor.stack.kafka.jvm_argv).
    ``heap``: the broker's instead of the stack's (an -Xmx among ``extra_jvm_args`` would be overridden by the
    stack's, which comes after). Returns the broker's pid."""
    L = stack.layout
    name = L.node_name(broker)
    stack.procs.stop(name)
    ports = (L.broker_port(broker), L.broker_jmx_port(broker), kafka.jolokia_port(L, broker))
    ports += (L.broker_exporter_port(broker),)  # the agent of a strimzi or msk profile
    if broker in L.reporter_brokers:  # Strimzi's metrics reporter: a broker that cannot bind it does not start
        ports += (L.broker_reporter_port(broker),)
    deadline = time.monotonic() + 60
    while not all(port_free(p) for p in ports) and time.monotonic() < deadline:
        time.sleep(0.5)
    layout = dataclasses.replace(L, profile=profile or L.profile)
    if drop_reporter:
        layout = dataclasses.replace(layout, reporter_brokers=tuple(b for b in L.reporter_brokers if b != broker))
        (L.node_dir(broker) / "server.properties").write_text(kafka.node_properties(layout, broker))
    if extra_jvm_args is None and heap is None:
        stack.up()
    else:
        argv = kafka.jvm_argv(layout, broker, kafka.require_java(), heap=heap)
        argv[1:1] = extra_jvm_args or []
        stack.procs.start(ProcSpec(name, argv, L.logs_dir / f"{name}.out"))
        stack.wait_ready(ready_seconds)
    pid = stack.procs.owned_pid(name)
    assert pid is not None, f"{name} did not start"
    return pid
