"""The Jolokia transport: every query of a target in one bulk HTTP POST to the broker's Jolokia JVM agent.

No JVM is started per call and the agent serialises MBeans in-process, which is why it scales to brokers with
many thousands of partitions. ``ignoreErrors`` makes a pattern read skip MBeans that lack an attribute instead of
failing the whole read. Credentials (if configured) go in an HTTP basic-auth header, never on a command line.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import httpx
import orjson

from collectors.transports.httpclient import shared_client
from collectors.types import Endpoint, MBeanQuery, Reading
from monitor.core.errors import (
    TargetAuthFailed,
    TargetForbidden,
    TargetTimeout,
    TargetUnreachable,
    TransportError,
)
from monitor.core.redact import redact_url


def _num(v: object) -> float | str | None:
    if v is None:
        return float("nan")  # Jolokia renders a Double NaN as null (jmxquery prints NaN): same reading for both
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        # Jolokia renders a Double NaN/Infinity as a string
        if v in ("NaN", "Infinity", "-Infinity"):
            return float(v)
        return v
    return None


# A reading made without a Python frame (Reading(...) and Reading._make run one): a broker of 10,000 partitions gives
# that many a read.
_reading = partial(tuple.__new__, Reading)


def _flatten(mbean: str, attrs: dict, out: list[Reading]) -> None:
    for attr, v in attrs.items():
        if type(v) is float or type(v) is int:  # the common case first: thousands of per-partition gauges
            out.append(_reading((mbean, attr, float(v), None)))
        elif isinstance(v, dict):  # CompositeData: one reading per key, like jmxquery
            for key, item in v.items():
                if not isinstance(item, (dict, list)):
                    out.append(Reading(mbean, attr, _num(item), key))
        elif not isinstance(v, list):
            out.append(Reading(mbean, attr, _num(v)))


def parse_response(payload: object, queries: Sequence[MBeanQuery]) -> list[Reading]:
    """Pure: Jolokia's bulk response -> readings. "No MBean matched" (404, or 400 "No matching attributes" on a
    pattern) is "nothing", not an error."""
    if not isinstance(payload, list) or len(payload) != len(queries):
        raise TransportError("Jolokia answered with something other than one result per query")
    out: list[Reading] = []
    failed = 0
    for q, item in zip(queries, payload):
        if not isinstance(item, dict):
            raise TransportError("Jolokia result is not an object")
        status = item.get("status")
        if status == 404 or (status == 400 and "No matching attributes" in str(item.get("error", ""))):
            continue  # no MBean matched, or none of the matches has the attributes (yet): nothing, not an error
        if status != 200:
            failed += 1
            continue
        value = item.get("value")
        if not isinstance(value, dict):
            continue
        if "*" in q.mbean or "?" in q.mbean:  # pattern read: {mbean: {attr: value}}
            for mbean, attrs in value.items():
                if isinstance(attrs, dict):
                    _flatten(mbean, attrs, out)
        else:  # plain read with an attribute list: {attr: value}
            _flatten(q.mbean, value, out)
    if failed and failed == len(queries):
        raise TransportError(f"Jolokia refused all {failed} reads")
    return out


class JolokiaTransport:
    name = "jolokia"

    def __init__(self, *, client: httpx.Client | None = None):
        self._client = client

    @staticmethod
    def body(queries: Sequence[MBeanQuery]) -> list[dict]:
        return [
            {
                "type": "read",
                "mbean": q.mbean,
                "attribute": list(q.attributes),
                "config": {"ignoreErrors": True, "serializeException": False},
            }
            for q in queries
        ]

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery], *, timeout: float) -> list[Reading]:
        if not endpoint.jolokia:
            raise TransportError("no Jolokia URL configured for this target")
        url = endpoint.jolokia.rstrip("/") + "/"
        shown = redact_url(url)  # errors are logged: no userinfo or query from a hand-built Endpoint
        auth = (endpoint.username, endpoint.password) if endpoint.username else None
        client = self._client or shared_client()
        try:
            resp = client.post(url, json=self.body(queries), auth=auth, timeout=httpx.Timeout(timeout))
        except httpx.TimeoutException:
            raise TargetTimeout(f"Jolokia {shown} did not answer within {timeout:g}s") from None
        except httpx.TransportError as exc:
            raise TargetUnreachable(f"Jolokia {shown} unreachable: {type(exc).__name__}") from None
        if resp.status_code == 401:
            how = "wrong jmx.username or jmx.password" if auth else "it wants jmx.username and jmx.password"
            raise TargetAuthFailed(f"Jolokia {shown} refused the login (HTTP 401): {how}")
        if resp.status_code == 403:
            raise TargetForbidden(f"Jolokia {shown} answered HTTP 403: user {endpoint.username!r} may not read MBeans")
        if resp.status_code != 200:
            raise TransportError(f"Jolokia {shown} answered HTTP {resp.status_code}")
        try:
            payload = orjson.loads(resp.content)  # a 10,000-partition broker's answer: 3.7 against 7.9 ms with json
        except ValueError:  # orjson.JSONDecodeError is one
            raise TransportError(f"Jolokia {shown} answered with invalid JSON") from None
        return parse_response(payload, queries)
