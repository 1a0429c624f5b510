"""Real clients of other languages for the stack tests: kafkajs 2.2.4 (Node.js, from the npm registry) and franz-go
1.22.3 (Go, through the Go module proxy), each a small producer program shipped beside this module
(``clients/kafkajs_producer.js``, ``clients/franz_producer/``), built or installed once into the cache
(``~/.cache/kafka-health/clients``) by ``ensure_kafkajs`` / ``ensure_franz`` (``scripts/setup.sh`` runs both through
``python -m tests.harness.polyglot``, so a fresh machine has them before the suite; the fixtures call them too).

``PolyglotProducer`` runs one at ``rate`` records a second, its settings in a 0600 JSON file named by
``$KH_CLIENT_CONFIG`` (never argv); it stops when its stdin closes, so it never outlives the test. Plaintext
listeners only (no SASL settings are passed).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from monitor.core.errors import DependencyMissing
from monitor.stack.layout import cache_dir

HERE = Path(__file__).parent / "clients"
KAFKAJS_VERSION = "2.2.4"
FRANZ_VERSION = "1.22.3"
_ACKED = re.compile(rb"acked=(\d+)")


def _clients_dir() -> Path:
    return cache_dir() / "clients"


def ensure_kafkajs(log: Path | None = None) -> Path:
    """The directory holding kafkajs in node_modules, installed once with npm (a marker file says it is complete)."""
    where = _clients_dir() / f"kafkajs-{KAFKAJS_VERSION}"
    marker = where / ".complete"
    if marker.exists():
        return where
    npm = shutil.which("npm")
    if not npm or not shutil.which("node"):
        raise DependencyMissing("node and npm are needed for the kafkajs client (apt-get install nodejs npm)")
    where.mkdir(parents=True, exist_ok=True)
    _run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(where), f"kafkajs@{KAFKAJS_VERSION}"], log)
    marker.touch()
    return where


def ensure_franz(log: Path | None = None) -> Path:
    """The franz-go producer binary, built once with the Go toolchain (modules from the Go module proxy). Its name
    carries a digest of the program's source, so a changed program is built anew."""
    source = hashlib.sha256(
        b"".join((HERE / "franz_producer" / f).read_bytes() for f in ("main.go", "go.mod", "go.sum"))
    ).hexdigest()[:12]
    binary = _clients_dir() / f"franz-producer-{FRANZ_VERSION}-{source}"
    if binary.exists():
        return binary
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    if not go:
        raise DependencyMissing("the Go toolchain is needed for the franz-go client")
    binary.parent.mkdir(parents=True, exist_ok=True)
    partial = binary.with_suffix(".partial")
    _run([go, "build", "-o", str(partial), "."], log, cwd=HERE / "franz_producer")
    partial.rename(binary)
    return binary


def _run(argv: list[str], log: Path | None, cwd: Path | None = None) -> None:
    out = subprocess.run(argv, cwd=cwd, capture_output=True, timeout=900)
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(out.stdout + out.stderr)
    if out.returncode != 0:
        raise DependencyMissing(f"{Path(argv[0]).name} {argv[1]} failed: {out.stderr.decode(errors='replace')[-500:]}")


class PolyglotProducer:
    """``kind`` "kafkajs" (``mode`` "await-each" or "batch") or "franz" (``mode`` "default" or "sync-each").
    ``acks``: the acknowledgement the producer asks for; None leaves the library's default (every in-sync replica,
    for both). kafkajs: -1, 0 or 1 (send()'s acks); franz-go: 1 (the leader's alone, idempotent writes off).
    ``concurrency``: kafkajs "await-each" only, that many sends in flight, each awaited (still one record a request).
    """

    def __init__(
        self,
        *,
        kind: str,
        client_id: str,
        topic: str,
        brokers: str,
        rate: float,
        log: Path,
        mode: str,
        record_bytes: int = 20,
        acks: int | None = None,
        concurrency: int = 1,
    ):
        if kind not in ("kafkajs", "franz"):
            raise ValueError(f"unknown client kind {kind!r}")
        if acks is not None and acks not in ((-1, 0, 1) if kind == "kafkajs" else (1,)):
            raise ValueError(f"acks {acks!r}: kafkajs takes -1, 0 or 1, franz-go 1 (else its default)")
        if concurrency != 1 and (kind, mode) != ("kafkajs", "await-each") or not 1 <= concurrency <= 64:
            raise ValueError("concurrency (1..64) is for kafkajs' await-each only")
        self.kind, self.client_id, self.topic, self.mode, self.log = kind, client_id, topic, mode, log
        self.config = {
            "brokers": brokers.split(","),
            "clientId": client_id,
            "topic": topic,
            "rate": rate,
            "recordBytes": record_bytes,
            "mode": mode,
            **({"acks": acks} if acks is not None else {}),
            "concurrency": concurrency,
        }
        self.properties = {"client.id": client_id}  # as JavaClient's, for tests that look clients up by id
        self.proc: subprocess.Popen | None = None
        self._dir: tempfile.TemporaryDirectory | None = None
        self._acked = 0
        self._reader: threading.Thread | None = None

    def start(self) -> PolyglotProducer:
        if self.kind == "kafkajs":
            modules = ensure_kafkajs(self.log.with_suffix(".install.log")) / "node_modules"
            argv = ["node", str(HERE / "kafkajs_producer.js")]
            env = {**os.environ, "NODE_PATH": str(modules)}
        else:
            argv = [str(ensure_franz(self.log.with_suffix(".build.log")))]
            env = dict(os.environ)
        self._dir = tempfile.TemporaryDirectory(prefix="kh-polyglot-")
        conf = Path(self._dir.name) / "client.json"
        conf.touch(mode=0o600)
        conf.write_text(json.dumps(self.config))
        env["KH_CLIENT_CONFIG"] = str(conf)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        err = open(self.log, "ab")  # kept open for the child's lifetime, closed by stop()
        self._err = err
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env)
        self._reader = threading.Thread(target=self._read, daemon=True, name=f"{self.kind}-{self.client_id}")
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self.proc and self.proc.stdout
        for line in self.proc.stdout:
            m = _ACKED.search(line)
            if m:
                self._acked = int(m.group(1))

    def counts(self) -> dict[str, int]:
        return {"acked": self._acked}

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 15.0) -> int | None:
        """Close its stdin (it stops), kill it if it has not within ``timeout``. Its exit code."""
        if self.proc is None:
            return None
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait(5)
        if self._reader:
            self._reader.join(5)
        self._err.close()
        if self._dir:
            self._dir.cleanup()
            self._dir = None
        return rc


def main(argv: list[str]) -> int:
    """``python -m tests.harness.polyglot ensure``: install kafkajs and build the franz-go producer into the cache."""
    if argv[1:] != ["ensure"]:
        print("usage: python -m tests.harness.polyglot ensure", file=sys.stderr)
        return 2
    print(ensure_kafkajs(), ensure_franz(), sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))


__all__ = ["FRANZ_VERSION", "KAFKAJS_VERSION", "PolyglotProducer", "ensure_franz", "ensure_kafkajs"]
