"""Collectors: broker JMX, host and Kafka Admin API metrics, exported on ``/metrics``.

Start at ``collectors.types`` (protocols and data), then ``collectors.component`` (the one place that wires and
schedules). docs/metrics.md lists every exported metric with its source.
"""
