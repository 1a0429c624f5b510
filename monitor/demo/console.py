"""The demo's console, for a person: the first screen (``demo_text``: URLs, tokens, client configs, where the log
is), one line per story event, and a status line (``Console``, ``status_text``) redrawn in place on a terminal, a
line at most every 30 s otherwise. Pure text and a stream: the tests read what it would print."""

from __future__ import annotations

import logging
import shlex
import shutil
import sys
import time
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TextIO

from monitor.demo.story import STORY_WINDOW, story_line
from monitor.stack.kcat import KcatLine, clients_accepted
from monitor.stack.layout import StackLayout
from monitor.stack.packaged import dashboards_json_dir, grafana_provisioning_dir

STATUS_EVERY_SECONDS = 5.0  # how often the status line asks the API
PIPE_STATUS_EVERY_SECONDS = 30.0  # not a terminal: a status line at most this often


def status_text(firing: list[dict] | None, tenants: int | None, clients: int, warnings: int, *, now: datetime) -> str:
    """The one status line: alerts firing (the watchdog apart: it always fires, to prove the pipeline lives),
    tenants, load clients, warnings in the log. Pure, for the tests."""
    if firing is None:
        alerts = "alerts: API not answering"
    else:
        named = [a for a in firing if a["alertname"] != "KafkaHealthWatchdog"]
        alerts = f"alerts firing: {len(named)}"
        if named:
            alerts += " (" + ", ".join(_alert_label(a) for a in named[:2]) + (", ..." if len(named) > 2 else "") + ")"
    parts = [now.strftime("%H:%M:%S"), alerts, f"tenants: {'?' if tenants is None else tenants}", f"clients: {clients}"]
    if warnings:
        parts.append(f"log: {warnings} warning{'s' if warnings != 1 else ''}")
    return " | ".join(parts)


def _alert_label(a: dict) -> str:
    labels = a.get("labels") or {}
    who = "/".join(v for v in (labels.get("tenant"), labels.get("client_id") or labels.get("broker")) if v)
    return f"{a['alertname']} {who}".strip()


class WarningCount(logging.Handler):
    """Counts WARNING and above records: the console does not show them (they are in the log file); the status line
    says how many there are."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


class Console:
    """The demo's screen: lines that stay (``say``) and one status line (``status``). On a terminal the status line
    is redrawn in place below the lines; on anything else (a pipe, a file, CI) it is printed as a line of its own
    at most every ``every`` seconds, so a captured console stays short."""

    def __init__(
        self, stream: TextIO, *, tty: bool | None = None, every: float = PIPE_STATUS_EVERY_SECONDS, clock=time.monotonic
    ):
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.every = every
        self.clock = clock
        self._status = ""
        self._printed_at: float | None = None

    def say(self, text: str) -> None:
        self._clear()
        self.stream.write(text + "\n")
        self._draw()
        self.stream.flush()

    def status(self, text: str) -> None:
        if self.tty:
            self._clear()
            self._status = text
            self._draw()
        else:
            now = self.clock()
            if self._printed_at is None or now - self._printed_at >= self.every:
                self._printed_at = now
                self.stream.write(text + "\n")
        self.stream.flush()

    def end_status(self) -> None:
        """No status line from here on (the demo stops): the last one is wiped on a terminal."""
        self._clear()
        self._status = ""
        self.stream.flush()

    def _clear(self) -> None:
        if self.tty and self._status:
            self.stream.write("\r\x1b[2K")

    def _draw(self) -> None:
        if self.tty and self._status:
            width = shutil.get_terminal_size((120, 24)).columns
            self.stream.write(self._status[: width - 1])


def cli_command() -> str:
    """How to call this kafka-health in a shell, so the printed commands work verbatim (venv active or not)."""
    venv_script = Path(sys.executable).parent / "kafka-health"
    on_path = shutil.which("kafka-health")
    if on_path and (not venv_script.exists() or Path(on_path).resolve() == venv_script.resolve()):
        return "kafka-health"
    if venv_script.exists():
        return shlex.quote(str(venv_script))
    return f"{shlex.quote(sys.executable)} -m monitor.cli"


def _tenant_line(L: StackLayout, t: str) -> str:
    principal = f", principal User:{t}-app" if L.secured else ""
    return f"{t} (topics {t}.*, clients {t}-*{principal})"


def _security_lines(L: StackLayout, kcat: KcatLine | None) -> str:
    if not L.secured:
        return "  Kafka security:          none (PLAINTEXT, anonymous clients)\n"
    kcat = kcat or KcatLine(f"kcat -F {shlex.quote(str(L.clients_dir / 'payments.properties'))} -L")
    return (
        f"  Kafka security:          secured: SASL_SSL with SCRAM-SHA-512, ACLs, per-tenant user quotas\n"
        f"  Client configs:          {L.clients_dir}/ (NAME: admin, payments, search)\n"
        f"                           {clients_accepted(L.kafka_version)}\n"
        f"  payments' topics (kcat): {kcat.command}\n"
        + (f"                           ({kcat.note})\n" if kcat.note else "")
    )


def as_user(demo_tokens: dict[str, tuple[str, str]], who: str) -> str:
    return f'curl -H "Authorization: Bearer {demo_tokens.get(who, ("", "<none>"))[1]}"'


def demo_text(
    L: StackLayout,
    demo_tokens: dict[str, tuple[str, str]],
    config_file: Path,
    *,
    today: date,
    cli: str,
    log_file: Path,
    calm: bool = False,
    kcat: KcatLine | None = None,
) -> str:
    """What the demo prints once it runs: where everything is, and what to try. Pure, for the tests: ``kcat`` is the
    line to list payments' topics with (``monitor.stack.kcat.printed_kcat_line``; None: the plain one)."""
    url = L.service_url
    op = demo_tokens.get("operator", ("", "<none>"))[1]
    pay = demo_tokens.get("payments", ("", "<none>"))[1]
    year, week_no, _ = today.isocalendar()
    week = f"{year}-W{week_no:02d}"
    cfg = shlex.quote(str(config_file))
    as_pay, as_op = as_user(demo_tokens, "payments"), as_user(demo_tokens, "operator")
    return f"""
kafka-health demo is running (Ctrl-C stops everything it started)

  Service (API, /metrics): {url}
    health:                {url}/healthz
    metrics:               {url}/metrics (operator token; Prometheus scrapes it with its own)
    API docs:              {url}/docs
  Prometheus:              {L.prometheus_url}
  Alertmanager:            {L.alertmanager_url}
  Kafka bootstrap:         {L.client_bootstrap}
{_security_lines(L, kcat)}  Config (YAML):           {config_file}
  Log (service, clients):  {log_file} (the console shows errors only)

  Tenants: {_tenant_line(L, "payments")}, {_tenant_line(L, "search")}

  Demo API tokens (valid until the demo stops):
    operator:        {op}
    tenant payments: {pay}

  Try the API (the tenant token sees payments only, the operator token everything):
    health:            {as_pay} {url}/api/v1/tenants/payments/health
    client advice:     {as_pay} "{url}/api/v1/tenants/payments/advice?window={STORY_WINDOW}"
    alerts:            {as_op} {url}/api/v1/alerts
    cluster capacity:  {as_op} {url}/api/v1/clusters/local/capacity
    weekly reports:    {as_pay} {url}/api/v1/tenants/payments/reports

  A weekly report from the demo's data (in another terminal while the demo runs; Spark takes a minute or two):
    {cli} archive --config {cfg} --from {today} --to {today + timedelta(days=1)}
    {cli} report --config {cfg} --week {week}
    {as_pay} -H "Accept: text/html" {url}/api/v1/tenants/payments/reports/{week} > payments-{week}.html

  Grafana dashboards (Grafana itself is not part of the demo):
    JSON:          {dashboards_json_dir()}/*.json
    provisioning:  {grafana_provisioning_dir()}/ (set the datasource url to {L.prometheus_url})

{story_line(calm=calm)}
"""
