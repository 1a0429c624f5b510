"""Logging for the console script: levels, the two line formats, and redaction on every line.

    configure_logging(level, fmt)   our loggers at ``level`` (INFO by default, DEBUG with -v), libraries at WARNING,
                                    one handler on stderr writing ``text`` or ``json`` lines through RedactingFilter
    JsonFormatter                   one JSON object per line: time, level, logger, message (and exception), for log
                                    shippers (journald, Kubernetes, Loki) that should not parse prose
    divert_to_file(path)            the same records to a file, the console only errors (the demo's console)

Libraries log what they were called with: httpx every request URL at INFO (a webhook's path is its token), uvicorn
every request line, alembic and py4j their chatter, librdkafka each connection. They stay at WARNING whatever the
level asked: ``-v`` and ``--log-level`` are for this project's code, whose INFO lines are few (startup, config
changes, scheduled work), so an operator's console and a log store hold what matters.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Literal

from monitor.core.redact import RedactingFilter

LIBRARY_LOGGERS = (
    "httpx",
    "httpcore",
    "urllib3",
    "uvicorn",
    "uvicorn.access",
    "uvicorn.error",
    "alembic",
    "kafka",
    "py4j",
    "asyncio",
    "multipart",
    "filelock",
    "watchfiles",
)
LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("text", "json")
LogFormat = Literal["text", "json"]
_HANDLER_NAME = "kafka-health"
_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON: ``{"time", "level", "logger", "message"[, "exception"]}``. The message is the
    rendered one (arguments applied, as the redaction filter left it); newlines inside stay escaped, so a
    traceback never splits a record over lines."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            # exc_text first: RedactingFilter leaves the redacted traceback there
            doc["exception"] = record.exc_text or self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False, default=str)


class _Stderr(logging.StreamHandler[IO[str]]):
    """Writes to whatever ``sys.stderr`` is at the time of the record (as logging's own last resort does), so a
    redirected or captured stderr gets the lines."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self) -> IO[str]:  # type: ignore[override]  # read at each record, never set
        return sys.stderr


def configure_logging(level: str = "info", fmt: LogFormat = "text", *, stream: IO[str] | None = None) -> None:
    """Our loggers at ``level``, libraries at WARNING (or above ``level``), one handler writing ``fmt`` lines to
    ``stream`` (stderr by default) through ``RedactingFilter``. Called again, it replaces its own handler.

    Where the host process already configured the root logger (pytest, an application embedding ``main``) and no
    ``stream`` is given, only the library levels are set: handlers and the root level stay the host's."""
    numeric = getattr(logging, level.upper())
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, numeric))
    root = logging.getLogger()
    ours = [h for h in root.handlers if h.get_name() == _HANDLER_NAME]
    if stream is None and len(ours) < len(root.handlers):
        return
    for h in ours:
        root.removeHandler(h)
    handler = logging.StreamHandler(stream) if stream is not None else _Stderr()
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(_TEXT))
    handler.addFilter(RedactingFilter())
    root.addHandler(handler)
    root.setLevel(numeric)


# Libraries whose errors are the cluster's weather, already handled and said by our own code (a round's message, a
# target's status): kafka-python logs every request that timed out or connection that dropped at ERROR. A console a
# person reads gets them in the file only.
FILE_ONLY_LOGGERS = ("kafka",)


def _ours_or_fatal(record: logging.LogRecord) -> bool:
    library = any(record.name == n or record.name.startswith(n + ".") for n in FILE_ONLY_LOGGERS)
    return not library or record.levelno >= logging.CRITICAL


def divert_to_file(path: Path, *, console_level: str = "error") -> logging.Handler:
    """Every record that passes the configured levels also goes to ``path`` (text lines, redacted); the console
    handler keeps only ``console_level`` and above, and of ``FILE_ONLY_LOGGERS`` only CRITICAL. For a console that a
    person reads while the service runs (the demo): its URLs and status stay on screen, the details are a
    ``tail -f`` away. Returns the file handler."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(_TEXT))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    for h in root.handlers:
        if h.get_name() == _HANDLER_NAME:
            h.setLevel(getattr(logging, console_level.upper()))
            h.addFilter(_ours_or_fatal)
    root.addHandler(handler)
    logging.captureWarnings(True)  # Python's warnings (deprecations) print to stderr otherwise
    return handler
