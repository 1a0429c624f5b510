"""Where everything of one local stack lives: directories, ports, versions. Pure data, no I/O."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from monitor.config_source import DEMO_CONFIG_NAME
from monitor.core import kafka_versions
from monitor.core.kafka_versions import KafkaRelease

DEFAULT_KAFKA_VERSION = kafka_versions.DEFAULT_RELEASE.version
DEFAULT_PORT_BASE = 19100
CONTROLLER_ID = 100
BROKER_IDS = (1, 2, 3)
# How the brokers are run, as users run theirs (``stack up --profile``): our Jolokia agent (the default); Strimzi's
# jmx_prometheus_javaagent with its kafka-metrics.yaml rules; MSK's open monitoring (the same agent with no rules, plus
# a node_exporter); no agent at all (Admin API, DescribeLogDirs and the probe only). The kafka-health config the stack
# gives (``Stack.config``) reads each the way a user's would.
PROFILES = ("jolokia", "strimzi", "msk", "protocol")
# Alertmanagers of the stack: a pair gossiping on loopback (silences and notification log shared, so the pair notifies
# once), as issue 31 asks of every anchor that pages. The first keeps its old name, port and directory.
ALERTMANAGERS = 2


def default_stack_dir() -> Path:
    env = os.environ.get("KAFKA_HEALTH_STACK_DIR")
    return Path(env) if env else Path.home() / ".kafka-health" / "stack"


def cache_dir() -> Path:
    env = os.environ.get("KAFKA_HEALTH_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "kafka-health"


def resolve_kafka_version(v: str | None) -> str:
    """The exact version of ``v`` (``4.4``, ``3.9.1``, ``4``; None: the current release). What each supported
    release differs in: monitor/core/kafka_versions.py."""
    return kafka_versions.release(v).version


@dataclass(frozen=True)
class StackLayout:
    """Ports are offsets from one base so that several stacks (tests, demo, a helper's) can coexist on loopback."""

    dir: Path
    port_base: int = DEFAULT_PORT_BASE
    kafka_version: str = DEFAULT_KAFKA_VERSION
    scrape_interval_seconds: int = 5
    broker_ids: tuple[int, ...] = field(default=BROKER_IDS)
    # An extra listener per broker on this (non-loopback) address, for clients that cannot reach loopback: a client
    # in a network namespace (fault tests). The address must exist when the brokers start. None: loopback only.
    client_listener_host: str | None = None
    # Secured mode (monitor.stack.security): clients authenticate with SASL SCRAM-SHA-512 over TLS on the SASL_SSL
    # listener, brokers and the controller talk over mutual TLS, StandardAuthorizer ACLs decide, JMX and Jolokia
    # ask for a password. The demo runs secured; PLAINTEXT stays available for tests that need it.
    secured: bool = False
    # An anonymous PLAINTEXT listener on broker_port. Always there when not secured; in secured mode only when asked
    # for (the test session stack keeps it for tests written against plaintext: ANONYMOUS then holds ACLs, not
    # super-user rights, so the authorizer still decides).
    plaintext_listener: bool = True
    profile: str = "jolokia"
    # Brokers that run Strimzi's metrics reporter (a metric.reporters plugin serving the Prometheus exposition on
    # broker_reporter_port; dialect strimzi_reporter) instead of the profile's jmx_exporter, if it has one (the two
    # cannot share a JVM: kafka.jvm_argv): one cluster can carry every dialect.
    reporter_brokers: tuple[int, ...] = ()
    # The controller runs the reporter too (on controller_reporter_port, instead of the profile's jmx_exporter): where
    # the controller fixture of dialect strimzi_reporter is recorded (tests/fixtures/exposition/record.py)
    reporter_controller: bool = False

    # --- ports -------------------------------------------------------------------------------------------------
    @property
    def controller_port(self) -> int:
        return self.port_base

    def broker_port(self, broker_id: int) -> int:
        return self.port_base + broker_id

    def client_listener_port(self, broker_id: int) -> int:
        return self.port_base + 60 + broker_id

    def sasl_port(self, broker_id: int) -> int:
        """The SASL_SSL listener of a broker (secured mode): what tenants and the monitoring principal use."""
        return self.port_base + 50 + broker_id

    def internal_port(self, broker_id: int) -> int:
        """The inter-broker listener of a broker in secured mode (mutual TLS, node certificates)."""
        return self.port_base + 70 + broker_id

    @property
    def controller_jolokia_port(self) -> int:
        """The controller's Jolokia agent (secured mode: remote JMX wants a password, which jmxquery cannot give
        without putting it in argv)."""
        return self.port_base + 40

    @property
    def controller_jmx_port(self) -> int:
        return self.port_base + 10

    def broker_jmx_port(self, broker_id: int) -> int:
        return self.port_base + 10 + broker_id

    def broker_jolokia_port(self, broker_id: int) -> int:
        """The broker's Jolokia agent (the collectors' bulk JMX transport), beside its JMX port."""
        return self.port_base + 40 + broker_id

    def broker_exporter_port(self, broker_id: int) -> int:
        """The broker's jmx_prometheus_javaagent (profiles strimzi and msk)."""
        return self.port_base + 80 + broker_id

    @property
    def controller_exporter_port(self) -> int:
        """The controller's jmx_prometheus_javaagent (profiles strimzi and msk), beside its brokers' (+81..+83)."""
        return self.port_base + 80

    @property
    def controller_reporter_port(self) -> int:
        """The listener of Strimzi's metrics reporter on the controller (``reporter_controller``)."""
        return self.port_base + 90

    def broker_reporter_port(self, broker_id: int) -> int:
        """The listener of Strimzi's metrics reporter on a broker of ``reporter_brokers``."""
        return self.port_base + 90 + broker_id

    @property
    def node_exporter_port(self) -> int:
        """The machine's node_exporter (profile msk)."""
        return self.port_base + 89

    @property
    def prometheus_port(self) -> int:
        return self.port_base + 20

    @property
    def alertmanager_port(self) -> int:
        """The first Alertmanager's web port (``alertmanager_web_port(0)``)."""
        return self.alertmanager_web_port(0)

    def alertmanager_web_port(self, i: int) -> int:
        """The API and UI of Alertmanager ``i`` of the pair: +21, +22."""
        return self.port_base + 21 + i

    def alertmanager_cluster_port(self, i: int) -> int:
        """The gossip port of Alertmanager ``i`` of the pair (loopback, TCP and UDP): +23, +24."""
        return self.port_base + 23 + i

    @staticmethod
    def alertmanager_name(i: int) -> str:
        return "alertmanager" if i == 0 else f"alertmanager-{i + 1}"

    @property
    def service_port(self) -> int:
        return self.port_base + 30

    # --- addresses ---------------------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """The anonymous PLAINTEXT listener (see ``plaintext_listener``)."""
        if not self.has_plaintext:
            raise ValueError("this secured stack has no PLAINTEXT listener: use sasl_bootstrap_servers")
        return ",".join(f"127.0.0.1:{self.broker_port(b)}" for b in self.broker_ids)

    @property
    def security_mode(self) -> str:
        """``sasl_ssl``, ``plaintext`` or ``both`` (``stack up --security``)."""
        if not self.secured:
            return "plaintext"
        return "both" if self.plaintext_listener else "sasl_ssl"

    @property
    def has_plaintext(self) -> bool:
        return self.plaintext_listener or not self.secured

    @property
    def sasl_bootstrap_servers(self) -> str:
        """The SASL_SSL listener (secured mode)."""
        if not self.secured:
            raise ValueError("this stack is not secured: it has no SASL_SSL listener")
        return ",".join(f"127.0.0.1:{self.sasl_port(b)}" for b in self.broker_ids)

    @property
    def client_bootstrap(self) -> str:
        """Where kafka-health's own clients (and the demo's tenants) connect: SASL_SSL when secured."""
        return self.sasl_bootstrap_servers if self.secured else self.bootstrap_servers

    @property
    def client_bootstrap_servers(self) -> str:
        """Bootstrap servers of the extra client listener (``client_listener_host``)."""
        if self.client_listener_host is None:
            raise ValueError("this stack has no client listener (client_listener_host is not set)")
        return ",".join(f"{self.client_listener_host}:{self.client_listener_port(b)}" for b in self.broker_ids)

    @property
    def prometheus_url(self) -> str:
        return f"http://127.0.0.1:{self.prometheus_port}"

    @property
    def alertmanager_url(self) -> str:
        """The first Alertmanager of the pair (``alertmanager_urls[0]``)."""
        return f"http://127.0.0.1:{self.alertmanager_port}"

    @property
    def alertmanager_urls(self) -> tuple[str, ...]:
        """Every Alertmanager of the stack: the engine sends each alert to each (config ``alertmanager.urls``)."""
        return tuple(f"http://127.0.0.1:{self.alertmanager_web_port(i)}" for i in range(ALERTMANAGERS))

    @property
    def service_url(self) -> str:
        return f"http://127.0.0.1:{self.service_port}"

    # --- directories -------------------------------------------------------------------------------------------
    @property
    def release(self) -> KafkaRelease:
        """What this stack's Kafka version differs in (tool classes, plugin interface, features)."""
        return kafka_versions.release(self.kafka_version)

    @property
    def jars_dir(self) -> Path:
        return cache_dir() / f"kafka-{self.kafka_version}" / "libs"

    def node_name(self, node_id: int) -> str:
        return "controller" if node_id == CONTROLLER_ID else f"broker-{node_id}"

    def node_dir(self, node_id: int) -> Path:
        return self.dir / "kafka" / self.node_name(node_id)

    def log_dir(self, node_id: int) -> Path:
        """The Kafka data directory (log.dirs) of a node. Fault tests may mount a small filesystem here."""
        return self.node_dir(node_id) / "data"

    @property
    def logs_dir(self) -> Path:
        return self.dir / "logs"

    @property
    def prometheus_dir(self) -> Path:
        return self.dir / "prometheus"

    @property
    def prometheus_rules_dir(self) -> Path:
        return self.prometheus_dir / "rules"

    @property
    def scrape_token_file(self) -> Path:
        """Bearer token Prometheus scrapes the service with (an operator token, written by the demo)."""
        return self.prometheus_dir / "service-token"

    @property
    def alertmanager_dir(self) -> Path:
        return self.alertmanager_instance_dir(0)

    def alertmanager_instance_dir(self, i: int) -> Path:
        """Config and data (silences, notification log) of Alertmanager ``i``: ``alertmanager``, ``alertmanager-2``."""
        return self.dir / self.alertmanager_name(i)

    @property
    def security_dir(self) -> Path:
        """CA, node keystore, passwords (files of mode 0600) of a secured stack."""
        return self.dir / "security"

    @property
    def clients_dir(self) -> Path:
        """Client properties per principal (``admin.properties``, ``<tenant>.properties``) of a secured stack."""
        return self.dir / "clients"

    @property
    def config_file(self) -> Path:
        """The kafka-health config YAML the demo runs on (written by the demo, for ``--config``)."""
        return self.dir / DEMO_CONFIG_NAME

    def all_ports(self) -> dict[str, int]:
        """Every port of this layout by name (docs/architecture.md lists the same offsets)."""
        ports = {"controller": self.controller_port, "controller-jmx": self.controller_jmx_port}
        if self.secured:
            ports["controller-jolokia"] = self.controller_jolokia_port
        if self.reporter_controller:
            ports["controller-reporter"] = self.controller_reporter_port
        elif self.profile in ("strimzi", "msk"):
            ports["controller-exporter"] = self.controller_exporter_port
        for b in self.broker_ids:
            if self.has_plaintext:
                ports[f"broker-{b}"] = self.broker_port(b)
            if self.secured:
                ports[f"broker-{b}-sasl-ssl"] = self.sasl_port(b)
                ports[f"broker-{b}-internal"] = self.internal_port(b)
            ports[f"broker-{b}-jmx"] = self.broker_jmx_port(b)
            if self.profile == "jolokia":
                ports[f"broker-{b}-jolokia"] = self.broker_jolokia_port(b)
            elif self.profile in ("strimzi", "msk") and b not in self.reporter_brokers:  # kafka.jvm_argv: not both
                ports[f"broker-{b}-exporter"] = self.broker_exporter_port(b)
            if b in self.reporter_brokers:
                ports[f"broker-{b}-reporter"] = self.broker_reporter_port(b)
            if self.client_listener_host:
                ports[f"broker-{b}-clients"] = self.client_listener_port(b)
        if self.profile == "msk":
            ports["node-exporter"] = self.node_exporter_port
        ports["prometheus"] = self.prometheus_port
        for i in range(ALERTMANAGERS):
            ports[self.alertmanager_name(i)] = self.alertmanager_web_port(i)
            ports[f"{self.alertmanager_name(i)}-cluster"] = self.alertmanager_cluster_port(i)
        ports["service"] = self.service_port
        return ports
