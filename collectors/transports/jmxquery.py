"""The jmxquery transport, with jmxquery's defects contained here.

We use jmxquery's jar and its query syntax (``JMXQuery.to_query_string``) but not ``JMXConnection``, because that
wrapper: puts the JMX password on the java command line (visible in ``ps``); on timeout logs and returns ``[]``
(a hung broker would look like "no metrics") or raises AttributeError decoding a ``None`` output; leaves the child
JVM's own children behind. So this module runs the jar itself:

- all queries of one target in one JVM (the jar's JVM start-up dominates the cost, so one call per target);
- a hard timeout that kills the child's whole process group and raises ``TargetTimeout``;
- a refused connection (the jar prints ``{"error": "connection-error"}`` and exits 2) -> ``TargetUnreachable``;
- output parsed leniently (``parse_output``): the jar writes one object per line without escaping strings and
  writes ``NaN`` bare, so each line is parsed on its own, first as JSON, then by a field-order regex;
- the jar ignores the ``attributeKey`` filter and returns every key of a composite: harmless, the catalog picks.

Authentication: only JMX without a password is supported, because the jar accepts the password only as an argv
argument. A target configured with credentials fails with a clear message pointing at the jolokia transport.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from collectors.types import Endpoint, MBeanQuery, Reading
from monitor.core.errors import TargetTimeout, TargetUnreachable, TransportError


def _jar() -> Path:
    import jmxquery

    jars = sorted(Path(jmxquery.__file__).parent.glob("JMXQuery-*.jar"))
    if not jars:
        raise TransportError("jmxquery's JMXQuery jar is missing from its package; reinstall jmxquery")
    return jars[-1]


def query_string(queries: Sequence[MBeanQuery]) -> str:
    """jmxquery's ``-q`` argument: ``mbean/attribute;`` for every (pattern, attribute)."""
    from jmxquery import JMXQuery

    return "".join(JMXQuery(q.mbean, attr).to_query_string() + ";" for q in queries for attr in q.attributes)


class JmxQueryTransport:
    name = "jmxquery"

    def __init__(self, *, java: str = "java", jar: Path | None = None):
        self._java = java
        self._jar = jar

    def argv(self, endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[str]:
        url = f"service:jmx:rmi:///jndi/rmi://{endpoint.jmx}/jmxrmi"
        # A small, quick-starting client JVM: C1 only, serial GC, tiny heap.
        return [
            self._java,
            "-Xmx64m",
            "-Xss512k",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-jar",
            str(self._jar or _jar()),
            "-url",
            url,
            "-json",
            "-q",
            query_string(queries),
        ]

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery], *, timeout: float) -> list[Reading]:
        if not endpoint.jmx:
            raise TransportError("no JMX address configured for this target")
        if endpoint.username or endpoint.password:
            raise TransportError(
                "the jmxquery transport supports only JMX without authentication (its jar takes the password on "
                "the command line); use jmx.transport: jolokia for authenticated JMX"
            )
        argv = self.argv(endpoint, queries)
        try:
            proc = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            raise TransportError(f"cannot run java for jmxquery: {exc.strerror}") from exc
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise TargetTimeout(f"JMX {endpoint.jmx} did not answer within {timeout:g}s") from None
        text = out.decode("utf-8", errors="replace")
        if proc.returncode != 0:
            if '"connection-error"' in text:
                raise TargetUnreachable(f"JMX {endpoint.jmx} refused the connection")
            first = (err.decode("utf-8", errors="replace").strip().splitlines() or [text.strip()[:200]])[0]
            raise TransportError(f"jmxquery exited {proc.returncode} for {endpoint.jmx}: {first[:200]}")
        return parse_output(text)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


# Field order as the jar prints it; used only when a line is not valid JSON (unescaped quotes, backslashes).
_LINE = re.compile(
    r'^\{"mBeanName" : "(?P<mbean>.*)", "attribute" : "(?P<attr>[^"]*)"'
    r'(?:, "attributeKey" : "(?P<key>[^"]*)")?, "attributeType" : "(?P<type>[^"]*)"'
    r'(?:, "value" : (?P<value>.*))?\}$'
)


def _value(raw: object) -> float | str | None:
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, (int, float)):
        return float(raw)
    if isinstance(raw, str):
        return raw
    return None


def _raw_value(text: str | None) -> float | str | None:
    if text is None:
        return None
    text = text.strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return text[1:-1]
    try:
        return float(text)  # also NaN, Infinity
    except ValueError:
        return None


def parse_output(text: str) -> list[Reading]:
    """Pure: the jar's ``-json`` output -> readings. Raises ``TransportError`` if it is not that output at all.

    Lines that cannot be parsed even leniently are skipped; if there were lines and none parsed, the whole output
    is malformed.
    """
    body = text.strip()
    if not body.startswith("[") or not body.endswith("]"):
        raise TransportError(f"jmxquery output is not a JSON list: {body[:80]!r}")
    readings: list[Reading] = []
    bad = 0
    for line in body[1:-1].splitlines():
        line = line.strip().rstrip(",").strip()
        if not line:
            continue
        try:
            obj = json.loads(line)  # Python's json accepts the bare NaN the jar writes
            readings.append(
                Reading(obj["mBeanName"], obj["attribute"], _value(obj.get("value")), obj.get("attributeKey"))
            )
            continue
        except (ValueError, KeyError, TypeError):
            pass
        m = _LINE.match(line)
        if not m:
            bad += 1
            continue
        mbean = m["mbean"].replace('\\"', '"')
        readings.append(Reading(mbean, m["attr"], _raw_value(m["value"]), m["key"]))
    if bad and not readings:
        raise TransportError(f"jmxquery output malformed: {bad} unparseable line(s)")
    return readings
