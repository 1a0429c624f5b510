"""kafka-health: multi-tenant health monitoring for Apache Kafka clusters.

Package map (see docs/architecture.md):

- ``monitor.core.config``   one strict, immutable config object, loaded once and passed down
- ``monitor.core.errors``   the exception tree shared by every package
- ``monitor.cli``      the ``kafka-health`` console script; one place wires the subcommands
- ``monitor.stack``    the local real stack (KRaft controller + 3 brokers, Prometheus, Alertmanager)
- ``monitor.serve``    wires API, collectors' exporter and alert engine into one process
"""

__version__ = "0.1.0"
