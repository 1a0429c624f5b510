"""The Admin API client in a process of its own, so that a librdkafka crash costs one round, not the collector.

librdkafka 2.16 has open faults that kill the process using it (docs/metrics.md, "Known librdkafka faults"): an
abort after describe timeouts when a group's coordinator dies (librdkafka#4605) and a segfault when an admin
OffsetFetch answers NOT_COORDINATOR (librdkafka#5040). In the collector's own process either one takes every
collector of the process down, and with them the broker-down alert exactly when a broker dies.

``IsolatedAdmin`` implements ``collectors.types.AdminApi``, as ``KafkaAdmin`` (``collectors.admin_client``) does;
each call is a message over a pipe to a child process (multiprocessing, spawn: no copy of the collector's threads or
sockets) that runs the client it was given, in production a ``KafkaAdmin``. This module does not import
``collectors.admin_client`` (nor it this one): the collector passes the class, which the child imports by name. The
child forwards its log records and answers with the plain data or the error the client raised. When the child dies
during a call, or does not answer within the call's timeout plus ``GRACE_SECONDS``, the call raises a
``CollectorError`` that says so (with the signal, e.g. SIGSEGV or SIGABRT), the child is killed and ``broken`` is
set: the ``AdminCollector`` reports the round as a failed Admin target and starts a fresh child for the next round.
Secrets in the client settings go to the child through the pipe, never in its argv.

The child exits when the pipe closes (the collector stopped or died), so it never outlives its collector.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from multiprocessing.connection import Connection

from collectors.types import TP, AdminApi, ClusterState, GroupInfo
from monitor.core.errors import (
    CollectorError,
    TargetAuthFailed,
    TargetForbidden,
    TargetTimeout,
    TargetUnreachable,
    TransportError,
)

log = logging.getLogger(__name__)

GRACE_SECONDS = 5.0  # beyond a call's own timeout, before the child is taken for hung
START_SECONDS = 60.0  # the child imports confluent-kafka and the collectors; slow on a loaded machine
STOP_SECONDS = 5.0
CLOSE_SECONDS = 1.0  # a client has no state to save: one that does not exit at once is killed
ERRORS = {
    cls.__name__: cls for cls in (TargetTimeout, TargetUnreachable, TransportError, TargetAuthFailed, TargetForbidden)
}

# What the child runs: called as client(settings, timeout=timeout). It crosses to the child pickled, so it must be
# importable by name (a module-level class or function, e.g. collectors.admin_client.KafkaAdmin).
ClientFactory = Callable[..., AdminApi]


class _Outbox:
    """The child's one way to write to the pipe. A ``Connection`` is not thread-safe, and the child writes from
    several threads: its answers from the main thread, log records from any thread that logs (kafka-python's
    connection made in the background, librdkafka's callbacks). Two unlocked sends interleave their bytes, and the
    parent read ``UnpicklingError: invalid load key`` (CI, the watermark test's first round)."""

    def __init__(self, conn: Connection):
        self._conn, self._lock = conn, threading.Lock()

    def send(self, message: object) -> None:
        with self._lock:
            self._conn.send(message)


class _PipeLogHandler(logging.Handler):
    def __init__(self, outbox: _Outbox):
        super().__init__(logging.INFO)
        self._outbox = outbox

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._outbox.send(("log", (record.name, record.levelno, record.getMessage())))
        except Exception:  # noqa: BLE001 - the parent is gone: the next recv ends the child
            pass


def _serve(conn: Connection, settings: dict[str, str], timeout: float, client: ClientFactory) -> None:
    """The child: the client (a KafkaAdmin) answering calls until the pipe closes or it receives None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the collector, which closes the pipe
    outbox = _Outbox(conn)
    root = logging.getLogger()
    root.handlers[:] = [_PipeLogHandler(outbox)]
    root.setLevel(logging.INFO)
    try:
        admin = client(settings, timeout=timeout)
    except CollectorError as exc:
        outbox.send(("err", (type(exc).__name__, str(exc), (False, False))))
        return
    except Exception as exc:  # noqa: BLE001 - e.g. a setting librdkafka refuses
        outbox.send(
            ("err", ("TransportError", f"Admin client not created: {type(exc).__name__}: {exc}", (False, False)))
        )
        return
    outbox.send(("ready", None))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        name, args, kwargs = msg
        try:
            value = getattr(admin, name)(*args, **kwargs)
        except CollectorError as exc:
            reply = ("err", (type(exc).__name__, str(exc), _flags(admin)))
        except Exception:  # noqa: BLE001 - a bug: the parent raises it as one, with the child's traceback
            reply = ("bug", (traceback.format_exc(), _flags(admin)))
        else:
            reply = ("ok", (value, _flags(admin)))
        try:
            outbox.send(reply)
        except (EOFError, OSError):
            return


def _flags(admin: AdminApi) -> tuple[bool, bool]:
    return admin.stale_coordinator, admin.replace_client


def _how(exitcode: int | None) -> str:
    if exitcode is None:
        return "it is still running"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


class IsolatedAdmin:
    """The ``AdminApi`` calls, answered by ``client`` (a ``KafkaAdmin``) in a child process. Not thread-safe: the
    ``AdminCollector`` makes one call at a time (its round lock)."""

    def __init__(self, settings: dict[str, str], *, timeout: float, client: ClientFactory):
        self.stale_coordinator = False  # KafkaAdmin's flags, as of the child's last answer
        self.replace_client = False
        self.broken = False  # the child died or hung: the collector replaces this client
        ctx = multiprocessing.get_context("spawn")
        self._conn, child_conn = ctx.Pipe()
        self._proc = ctx.Process(
            target=_serve, args=(child_conn, settings, timeout, client), name="kafka-health-admin", daemon=True
        )
        self._proc.start()
        child_conn.close()
        self._receive("start the Admin client", START_SECONDS, expect="ready")

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    def _receive(self, what: str, wait: float, *, expect: str = "ok"):
        end = time.monotonic() + wait
        while True:
            left = end - time.monotonic()
            try:
                if left <= 0 or not self._conn.poll(left):
                    self._kill()
                    raise TargetTimeout(
                        f"Admin API {what}: the Admin client process did not answer within "
                        f"{wait:g}s; it was stopped, a fresh one starts next round"
                    )
                kind, payload = self._conn.recv()
            except (EOFError, OSError):
                self._proc.join(STOP_SECONDS)
                code = self._proc.exitcode
                self._kill()
                log.error("the Admin client process (pid %s) died during %s: %s", self._proc.pid, what, _how(code))
                raise TransportError(
                    f"Admin API {what}: the Admin client process died ({_how(code)}), a librdkafka "
                    "fault (docs/metrics.md, 'Known librdkafka faults'); a fresh one starts next "
                    "round"
                ) from None
            if kind == "log":
                name, level, message = payload
                logging.getLogger(name).log(level, "%s", message)
                continue
            if kind == expect:
                if expect == "ready":
                    return None
                value, (self.stale_coordinator, self.replace_client) = payload
                return value
            if kind == "err":
                cls, message, (self.stale_coordinator, self.replace_client) = payload
                if expect == "ready":
                    self._kill()
                raise ERRORS.get(cls, TransportError)(message)
            if kind == "bug":
                text, (self.stale_coordinator, self.replace_client) = payload
                raise RuntimeError(f"Admin client process failed during {what}:\n{text}")
            self._kill()
            raise TransportError(f"Admin API {what}: the Admin client process answered {kind!r}")

    def _ask(self, name: str, what: str, timeout: float, *args, **kwargs):
        if self.broken:
            raise TransportError(f"Admin API {what}: the Admin client process is gone; a fresh one starts next round")
        try:
            self._conn.send((name, args, {"timeout": timeout, **kwargs}))
        except (EOFError, OSError):
            pass  # the child is dead already: _receive says how
        return self._receive(what, timeout + GRACE_SECONDS)

    def cluster(self, *, timeout: float) -> ClusterState:
        return self._ask("cluster", "metadata", timeout)

    def min_insync_replicas(self, topics: Iterable[str], *, timeout: float) -> dict[str, int]:
        return self._ask("min_insync_replicas", "describe configs", timeout, list(topics))

    def handler_threads(self, brokers: Iterable[int], *, timeout: float) -> dict[int, int | CollectorError]:
        return self._ask("handler_threads", "broker configs", timeout, list(brokers))

    def groups(self, *, timeout: float) -> list[GroupInfo]:
        return self._ask("groups", "list groups", timeout)

    def committed(
        self, groups: Sequence[str], *, timeout: float, group_timeout: float
    ) -> dict[str, dict[TP, int] | CollectorError]:
        return self._ask("committed", "group offsets", timeout, list(groups), group_timeout=group_timeout)

    def high_watermarks(self, tps: Iterable[TP], *, timeout: float) -> dict[TP, int]:
        return self._ask("high_watermarks", "list offsets", timeout, list(tps))

    def _kill(self) -> None:
        self.broken = True
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(STOP_SECONDS)
        self._conn.close()

    def close(self) -> None:
        """Stop the child: asked to exit, killed if it does not within CLOSE_SECONDS (destroying a librdkafka client
        with requests to a dead broker can block, or abort)."""
        if self.broken:
            return
        self.broken = True
        try:
            self._conn.send(None)
        except (EOFError, OSError):
            pass
        self._proc.join(CLOSE_SECONDS)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(STOP_SECONDS)
        self._conn.close()
