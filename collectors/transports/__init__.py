"""JMX transports: jmxquery (a JVM subprocess per call, remote JMX/RMI) and jolokia (one HTTP POST per call).

Both implement ``collectors.types.Transport`` and return raw readings; ``transport_for`` picks one by config name.
"""

from __future__ import annotations

from collectors.types import Transport


def transport_for(name: str) -> Transport:
    if name == "jmxquery":
        from collectors.transports.jmxquery import JmxQueryTransport

        return JmxQueryTransport()
    if name == "jolokia":
        from collectors.transports.jolokia import JolokiaTransport

        return JolokiaTransport()
    raise ValueError(f"unknown JMX transport {name!r}")
