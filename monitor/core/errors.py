"""The exception tree of kafka-health.

Every error a user can meet is one of these, with a message that says what failed and what to do. Third-party errors
are translated at the seam that calls the library (``raise XError(...) from exc``), so the rest of the code never
catches a library's own exception types.

    KafkaHealthError                 base; the CLI prints ``error: <message>`` and exits 1 (never a traceback)
    ├── ConfigError                  invalid config; carries every problem with file:line; CLI exits 2
    ├── StackError                   local stack could not be set up or started
    │   ├── DependencyMissing        java, maven, a Debian package... not installed and could not be installed
    │   ├── PortInUse                a port the stack needs is taken by another process
    │   └── ComponentFailed          a component did not become ready; names it and its log file
    ├── CollectorError               one scrape target failed (contained: becomes a *_scrape_success=0 series)
    │   ├── TargetTimeout            the target did not answer within its timeout
    │   ├── TargetUnreachable        connection refused / host down
    │   └── TransportError           the transport answered with something unusable (malformed output)
    ├── QueryError                   Prometheus query failed (HTTP error, bad PromQL, timeout); ``public`` is
    │                                the generic message for tenants, ``str(exc)`` the operator's detail
    ├── NotifyError                  a notification target failed; ``recoverable`` says whether to retry
    ├── StoreError                   database problem
    │   ├── NotFound                 the resource does not exist (or belongs to another tenant)
    │   └── Conflict                 clashes with what exists (duplicate name, overlapping tenant selectors)
    ├── Invalid                      a request is well-formed but refers to what cannot be (unknown cluster);
    │                                ``field`` names the offending field
    └── ReportError                  weekly report could not be produced
"""

from __future__ import annotations

from dataclasses import dataclass


class KafkaHealthError(Exception):
    """Base of every error kafka-health raises on purpose. ``str(exc)`` is safe to show to an operator: no secrets
    (URLs pass through ``monitor.core.redact``). What a tenant may read is narrower: see ``QueryError.public``."""

    exit_code = 1


@dataclass(frozen=True)
class ConfigProblem:
    """One problem in a config file, located as precisely as the YAML allows."""

    file: str
    line: int | None
    path: str  # dotted path to the offending key, e.g. clusters[0].brokers[1].jmx
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class ConfigError(KafkaHealthError):
    exit_code = 2

    def __init__(self, problems: list[ConfigProblem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class StackError(KafkaHealthError):
    pass


class DependencyMissing(StackError):
    pass


class PortInUse(StackError):
    pass


class ComponentFailed(StackError):
    def __init__(self, component: str, reason: str, log: str | None = None):
        self.component, self.reason, self.log = component, reason, log
        where = f" (log: {log})" if log else ""
        super().__init__(f"{component} failed: {reason}{where}")


class CollectorError(KafkaHealthError):
    pass


class TargetTimeout(CollectorError):
    pass


class TargetUnreachable(CollectorError):
    pass


class TransportError(CollectorError):
    pass


class TargetAuthFailed(CollectorError):
    """The target refused who we are: a wrong password, an expired or untrusted certificate (reason
    ``authentication``). The message says which credential to check, never its value."""


class TargetForbidden(CollectorError):
    """The target knows who we are and refuses what we asked: a missing ACL (reason ``authorization``). The message
    names the principal's missing permission."""


class QueryError(KafkaHealthError):
    """Prometheus could not answer. Two messages, because two audiences read it:

    - ``str(exc)``: the operator's detail (what failed, where, Prometheus' own words; URLs redacted): logs, the CLI,
      the engine's own rule-health evidence;
    - ``public``: what a tenant may read (advice, capacity, health): names no URL, host, query or selector, since
      the query may be about other tenants and the URL is the operator's infrastructure.
    """

    PUBLIC = "metrics backend unavailable"

    def __init__(self, detail: str, *, public: str = PUBLIC):
        self.public = public
        super().__init__(detail)


class NotifyError(KafkaHealthError):
    def __init__(self, message: str, *, recoverable: bool):
        self.recoverable = recoverable
        super().__init__(message)


class StoreError(KafkaHealthError):
    pass


class NotFound(StoreError):
    pass


class Conflict(StoreError):
    pass


class Invalid(KafkaHealthError):
    def __init__(self, message: str, *, field: str | None = None):
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)


class ReportError(KafkaHealthError):
    pass
