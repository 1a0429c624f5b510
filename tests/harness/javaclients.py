"""Real Apache Kafka Java clients for the stack tests: ``kafka-clients`` at a chosen version from Maven Central.

``ensure_client_jars`` resolves one version once into the cache (``deploy/kafka/clients-pom.xml``; a marker file
says it is complete, a second call downloads nothing). ``JavaClient`` runs ``deploy/kafka/KhClient.java`` (a
single-file source program: ``java -cp JARS/* KhClient.java``) as a producer at a given rate or a consumer, with
every client setting in a 0600 properties file, never in argv: SASL credentials included. The JVM reads its stdin
and stops when it closes, so a client never outlives the test that started it.

Versions known to work: 2.3.1 (older than KIP-511: it sends no client software name, the broker labels its
connections ``unknown``) and 3.9.1.

``StreamsApp`` runs a real Kafka Streams application (``deploy/kafka/KhStreams.java``, kafka-streams from
``deploy/kafka/streams-pom.xml``; 4.4.0 known to work) that copies one topic to another, with its settings
(``group.protocol=streams`` for a KIP-1071 streams group) in the same 0600 file; it closes, leaving its group, when its
stdin closes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from monitor.core.errors import DependencyMissing
from monitor.stack.kafka import DEPLOY_KAFKA, require_java, resolve_jars
from monitor.stack.layout import cache_dir

CLIENTS_POM = DEPLOY_KAFKA / "clients-pom.xml"
CLIENT_SOURCE = DEPLOY_KAFKA / "KhClient.java"
STREAMS_POM = DEPLOY_KAFKA / "streams-pom.xml"
STREAMS_SOURCE = DEPLOY_KAFKA / "KhStreams.java"
VERSION = re.compile(r"^\d+\.\d+\.\d+$")
HEAP = "64m"
_COUNTS = re.compile(r"(\w+)=(\d+)")


def client_jars_dir(version: str) -> Path:
    return cache_dir() / "clients" / version / "jars"


def ensure_client_jars(version: str, log: Path) -> Path:
    """kafka-clients ``version`` and its runtime dependencies, resolved once (marker file + Maven's own cache)."""
    if not VERSION.match(version):
        raise ValueError(f"kafka-clients version must look like 3.9.1, not {version!r}")
    return resolve_jars(
        CLIENTS_POM,
        client_jars_dir(version),
        log,
        expect="kafka-clients-*.jar",
        what=f"kafka-clients {version}",
        args=(f"-Dkafka.clients.version={version}",),
    )


def ensure_streams_jars(version: str, log: Path) -> Path:
    """kafka-streams ``version`` with kafka-clients, RocksDB and a logging backend, resolved once."""
    if not VERSION.match(version):
        raise ValueError(f"kafka-streams version must look like 4.4.0, not {version!r}")
    return resolve_jars(
        STREAMS_POM,
        cache_dir() / "clients" / f"streams-{version}" / "jars",
        log,
        expect="kafka-streams-*.jar",
        what=f"kafka-streams {version}",
        args=(f"-Dkafka.streams.version={version}",),
    )


def write_properties(path: Path, props: dict[str, object]) -> Path:
    """``key=value`` lines in a file only its owner can read (it may hold a SASL password)."""
    for k, v in props.items():
        if any(c in f"{k}{v}" for c in "\r\n"):
            raise ValueError(f"client property {k!r}: no line breaks allowed")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        # Properties.load reads backslashes as escapes: a JAAS line or a Windows path keeps them doubled.
        f.write("".join(f"{k}={str(v).replace(chr(92), chr(92) * 2)}\n" for k, v in props.items()))
    return path


def _close_and_wait(proc: subprocess.Popen, timeout: float) -> int:
    """Close the process's stdin (the clients here stop on EOF) and wait; kill it after ``timeout``."""
    try:
        if proc.stdin:
            proc.stdin.close()
    except OSError:
        pass
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(10)


class JavaClient:
    """One Java producer or consumer process. ``start()`` then ``stop()``; ``counts()`` is its last printed line
    (``sent``/``acked``/``errors`` or ``consumed``). ``process_ms``: a consumer's work per record, in milliseconds
    (slept, one record after another, before its next poll: an application that is its own bottleneck)."""

    def __init__(
        self,
        *,
        version: str,
        mode: str,
        topic: str,
        properties: dict[str, object],
        log: Path,
        rate: float = 0.0,
        record_bytes: int = 100,
        process_ms: float = 0.0,
    ):
        if mode not in ("produce", "consume"):
            raise ValueError(f"mode must be produce or consume, not {mode!r}")
        if not (0 <= rate <= 1_000_000) or not (0 < record_bytes <= 1_048_576):
            raise ValueError("rate must be 0..1e6 records/s and record_bytes 1..1 MiB")
        if not (0 <= process_ms <= 60_000) or (process_ms and mode != "consume"):
            raise ValueError("process_ms must be 0..60000 ms, and only for a consumer")
        self.process_ms = float(process_ms)
        self.version, self.mode, self.topic, self.rate, self.record_bytes = version, mode, topic, rate, record_bytes
        self.properties, self.log = dict(properties), log
        self.proc: subprocess.Popen | None = None
        self._dir: tempfile.TemporaryDirectory | None = None
        self._last: dict[str, int] = {}
        self._reader: threading.Thread | None = None

    def argv(self, java: str, jars: Path, props_file: Path) -> list[str]:
        return [
            java,
            f"-Xmx{HEAP}",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-Xss512k",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            f"{jars}/*",
            str(CLIENT_SOURCE),
            self.mode,
            str(props_file),
            self.topic,
            repr(float(self.rate)),
            str(self.record_bytes),
            *([repr(self.process_ms)] if self.process_ms else []),
        ]

    def jars(self) -> Path:
        return ensure_client_jars(self.version, self.log.with_suffix(".mvn.log"))

    def start(self) -> JavaClient:
        java = require_java()
        jars = self.jars()
        self._dir = tempfile.TemporaryDirectory(prefix="kh-client-")
        props = write_properties(Path(self._dir.name) / "client.properties", self.properties)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        err = open(self.log, "ab")
        try:
            self.proc = subprocess.Popen(
                self.argv(java, jars, props), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err
            )
        finally:
            err.close()
        self._reader = threading.Thread(target=self._read, daemon=True, name=f"javaclient-{self.mode}")
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self.proc and self.proc.stdout
        for line in self.proc.stdout:
            counts = {k: int(v) for k, v in _COUNTS.findall(line.decode(errors="replace"))}
            if counts:
                self._last = counts

    def counts(self) -> dict[str, int]:
        return dict(self._last)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 15.0) -> int | None:
        """Close its stdin (it flushes and exits), kill it if it has not within ``timeout``. Its exit code."""
        if self.proc is None:
            return None
        rc = _close_and_wait(self.proc, timeout)
        if self._reader:
            self._reader.join(5)
        if self._dir:
            self._dir.cleanup()
            self._dir = None
        return rc

    def __enter__(self) -> JavaClient:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class KcatProducer:
    """kcat (librdkafka's own CLI, ``apt-get install kcat``) producing ``rate`` records per second of ``record_bytes``
    bytes to ``topic``: one line per record on its stdin, paced here. librdkafka settings (``linger.ms``,
    ``batch.num.messages``, SASL ...) go in a 0600 file read with ``-F``, never argv."""

    def __init__(self, *, topic: str, properties: dict[str, object], log: Path, rate: float, record_bytes: int = 100):
        if not (0 < rate <= 100_000) or not (0 < record_bytes <= 65536):
            raise ValueError("rate must be 0..1e5 records/s and record_bytes 1..64 KiB")
        self.topic, self.properties, self.log, self.rate, self.record_bytes = (
            topic,
            dict(properties),
            log,
            rate,
            record_bytes,
        )
        self.proc: subprocess.Popen | None = None
        self.sent = 0
        self._stop = threading.Event()
        self._dir: tempfile.TemporaryDirectory | None = None
        self._pacer: threading.Thread | None = None

    def start(self) -> KcatProducer:
        kcat = shutil.which("kcat") or shutil.which("kafkacat")
        if not kcat:
            raise DependencyMissing("kcat not found on PATH: apt-get install kcat")
        self._dir = tempfile.TemporaryDirectory(prefix="kh-kcat-")
        conf = write_properties(Path(self._dir.name) / "kcat.conf", self.properties)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as err:
            self.proc = subprocess.Popen(
                [kcat, "-P", "-F", str(conf), "-t", self.topic], stdin=subprocess.PIPE, stdout=err, stderr=err
            )
        self._pacer = threading.Thread(target=self._pace, daemon=True, name="kcat-pacer")
        self._pacer.start()
        return self

    def _pace(self) -> None:
        import time

        assert self.proc and self.proc.stdin
        line = b"x" * self.record_bytes + b"\n"
        start = time.monotonic()
        while not self._stop.is_set() and self.proc.poll() is None:
            due = int((time.monotonic() - start) * self.rate)
            try:
                if due > self.sent:
                    self.proc.stdin.write(line * (due - self.sent))
                    self.proc.stdin.flush()  # else Python's buffer, not linger.ms, would batch the records
                    self.sent = due
            except (BrokenPipeError, ValueError):
                return
            self._stop.wait(0.002)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 15.0) -> int | None:
        """Stop pacing and close kcat's stdin (it flushes and exits); kill it if it has not within ``timeout``."""
        if self.proc is None:
            return None
        self._stop.set()
        if self._pacer:
            self._pacer.join(5)
        rc = _close_and_wait(self.proc, timeout)
        if self._dir:
            self._dir.cleanup()
            self._dir = None
        return rc


__all__ = ["JavaClient", "KcatProducer", "client_jars_dir", "ensure_client_jars", "write_properties"]


class StreamsApp(JavaClient):
    """One Kafka Streams application instance copying ``topic`` to ``output`` (``deploy/kafka/KhStreams.java``).
    ``properties`` carry application.id, bootstrap.servers and ``group.protocol``; ``counts()`` has ``processed``.
    ``stop()`` closes it: it leaves its group (a streams group of no member) and exits."""

    def __init__(self, *, version: str, topic: str, output: str, properties: dict[str, object], log: Path):
        super().__init__(version=version, mode="consume", topic=topic, properties=properties, log=log)
        self.output = output

    def jars(self) -> Path:
        return ensure_streams_jars(self.version, self.log.with_suffix(".mvn.log"))

    def argv(self, java: str, jars: Path, props_file: Path) -> list[str]:
        return [
            java,
            "-Xmx96m",  # RocksDB is off-heap; a stateless topology needs little heap
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            f"{jars}/*",
            str(STREAMS_SOURCE),
            str(props_file),
            self.topic,
            self.output,
        ]
