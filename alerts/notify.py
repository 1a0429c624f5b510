"""Delivery: routing instances to targets, the outbox dispatcher, and the notifiers.

    Notifier.notify(alerts) -> (retry, error)   Alertmanager's contract: ``error`` None means delivered; otherwise
                                                 ``retry`` says whether trying again can help (5xx, connection
                                                 refused, timeout) or not (4xx: the payload itself is refused).
    AlertmanagerNotifier   POST /api/v2/alerts (on-call routing, grouping and inhibition of Alertmanager apply),
                           to each Alertmanager of ``alertmanager.urls``: every one is its own outbox target
                           (``alertmanager``, ``alertmanager#2``, ...), so one that is down delays only its own rows
    WebhookNotifier        POST of an Alertmanager-webhook-shaped JSON group (version "4") to any URL

The outbox (``alerts.repo``) makes delivery at-least-once and ordered per target: rows are sent oldest first in
batches per (target, group key), each batch claimed ``FOR UPDATE SKIP LOCKED`` so two engines never send one row,
deleted only after the target accepted them, retried with exponential backoff and dead-lettered after
``max_attempts``. Nothing is dropped silently: a dead letter is counted in ``kafka_health_alert_dead_letters`` and
replayable with ``kafka-health outbox replay``.

A webhook URL is a secret as a whole (its path is often the token): logs and error texts name a webhook by
``monitor.core.redact.target_id`` (``https://host/...#<hash>``), and what a webhook answers is scrubbed of its URL
before it is logged or stored. Alertmanager's credentials come from ``alertmanager.username`` / ``.password``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

import httpx

from alerts import repo
from alerts.engine import Notification
from alerts.lease import Lease
from alerts.types import AlertState, Decision
from monitor.core.config import DELIVERY_HOLD_SECONDS, AlertmanagerSettings, Config
from monitor.core.redact import redact_url, scrub, target_id
from monitor.core.store import Store

log = logging.getLogger(__name__)
ALERTMANAGER = "alertmanager"
GROUP_BY = ("alertname", "cluster", "tenant")


class Notifier(Protocol):
    def notify(self, alerts: list[dict], *, now: datetime) -> tuple[bool, str | None]: ...


def _iso(dt: datetime | None) -> str | None:
    return dt.isoformat().replace("+00:00", "Z") if dt else None


def payload(n: Notification, *, generator_url: str = "") -> dict:
    inst = n.instance
    ann = {k: str(v) for k, v in inst.annotations.items()}
    ann["evidence"] = json.dumps(inst.evidence, sort_keys=True, default=str)[:4000]
    return {
        "status": "resolved" if inst.state is AlertState.RESOLVED else "firing",
        "labels": dict(inst.labels),
        "annotations": ann,
        "evidence": inst.evidence,
        "startsAt": _iso(inst.fired_at or inst.active_at),
        "endsAt": _iso(inst.resolved_at),
        "fingerprint": inst.fingerprint,
        "generatorURL": generator_url,
        "value": inst.value,
    }


def group_key(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={labels.get(k, '')}" for k in GROUP_BY)


def alertmanager_target(index: int) -> str:
    """The outbox target of the configured Alertmanager at ``index``: ``alertmanager`` for the first (the name its
    rows had before a cluster could be listed), ``alertmanager#2``, ``#3``... for the others."""
    return ALERTMANAGER if index == 0 else f"{ALERTMANAGER}#{index + 1}"


def alertmanager_index(target: str) -> int | None:
    """The position in ``alertmanager.endpoints()`` an outbox target names; None for a webhook URL."""
    if target == ALERTMANAGER:
        return 0
    m = re.fullmatch(rf"{ALERTMANAGER}#([0-9]+)", target)
    return int(m.group(1)) - 1 if m and int(m.group(1)) > 1 else None


def targets_for(labels: dict[str, str], decision: Decision, config: Config) -> list[str]:
    """Every Alertmanager (unless the tenant opted out) and the tenant's webhooks; refreshes go to Alertmanager only.
    The Alertmanagers of a cluster each get every alert (they share silences and notification log, not alerts): a
    row per Alertmanager, delivered, retried and dead-lettered on its own."""
    tenant = next((t for t in config.tenants if t.name == labels.get("tenant")), None)
    out = []
    if tenant is None or tenant.receivers.alertmanager:
        out.extend(alertmanager_target(i) for i in range(len(config.alertmanager.endpoints())))
    if tenant is not None and decision is not Decision.REFRESH:
        out.extend(tenant.receivers.webhooks)
    return out


def enqueue_notifications(notes: list[Notification], config: Config, *, now: datetime, session) -> int:
    n = 0
    for note in notes:
        body = payload(note)
        kind = "refresh" if note.decision is Decision.REFRESH else body["status"]
        for target in targets_for(note.instance.labels, note.decision, config):
            repo.enqueue(
                target, note.instance.fingerprint, group_key(note.instance.labels), kind, body, now=now, session=session
            )
            n += 1
    return n


def _classify(resp: httpx.Response) -> tuple[bool, str | None]:
    if resp.status_code < 300:
        return False, None
    return resp.status_code >= 500 or resp.status_code == 429, f"HTTP {resp.status_code}: {resp.text[:200]}"


class AlertmanagerNotifier:
    """``auth``: (username, password) for HTTP basic auth; never put credentials into ``url``."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 10.0,
        ttl_seconds: float = 300.0,
        auth: tuple[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ):
        self._client = httpx.Client(base_url=url.rstrip("/"), timeout=timeout, auth=auth, transport=transport)
        self._url = url
        self._ttl = ttl_seconds

    @classmethod
    def from_settings(
        cls, settings: AlertmanagerSettings, *, index: int = 0, transport: httpx.BaseTransport | None = None
    ) -> Notifier:
        """The notifier of the Alertmanager at ``index`` of ``settings.endpoints()``; for an index the config no
        longer has (rows queued before it was removed), one that refuses them: dead letters, replayable."""
        urls = settings.endpoints()
        if index >= len(urls):
            return _Unconfigured(f"no Alertmanager #{index + 1} in alertmanager.url/urls any more")
        return cls(urls[index], timeout=settings.timeout_seconds, auth=settings.basic_auth(), transport=transport)

    def notify(self, alerts: list[dict], *, now: datetime) -> tuple[bool, str | None]:
        body = []
        for a in alerts:
            ends = a["endsAt"] if a["status"] == "resolved" else _iso(now + timedelta(seconds=self._ttl))
            body.append(
                {
                    "labels": a["labels"],
                    "annotations": a["annotations"],
                    "startsAt": a["startsAt"],
                    "endsAt": ends,
                    "generatorURL": a.get("generatorURL") or "",
                }
            )
        try:
            resp = self._client.post("/api/v2/alerts", json=body)
        except httpx.HTTPError as exc:
            return True, f"Alertmanager unreachable at {redact_url(self._url)}: {type(exc).__name__}"
        return _classify(resp)


@dataclass(frozen=True)
class _Unconfigured:
    reason: str

    def notify(self, alerts: list[dict], *, now: datetime) -> tuple[bool, str | None]:
        return False, self.reason


class WebhookNotifier:
    def __init__(self, url: str, *, timeout: float = 10.0, transport: httpx.BaseTransport | None = None):
        self._url = url
        self._client = httpx.Client(timeout=timeout, transport=transport)

    def notify(self, alerts: list[dict], *, now: datetime) -> tuple[bool, str | None]:
        common = dict(alerts[0]["labels"])
        for a in alerts[1:]:
            common = {k: v for k, v in common.items() if a["labels"].get(k) == v}
        doc = {
            "version": "4",
            "receiver": "kafka-health",
            "groupKey": group_key(alerts[0]["labels"]),
            "status": "firing" if any(a["status"] == "firing" for a in alerts) else "resolved",
            "groupLabels": {k: alerts[0]["labels"].get(k, "") for k in GROUP_BY},
            "commonLabels": common,
            "alerts": alerts,
        }
        try:
            resp = self._client.post(self._url, json=doc)
        except httpx.HTTPError as exc:
            return True, f"webhook {target_id(self._url)} unreachable: {type(exc).__name__}"
        retry, error = _classify(resp)
        # The receiver's answer may echo the URL it was called with (the token in its path): scrub it.
        return retry, (scrub(error, self._url) if error else None)


@dataclass(frozen=True)
class DeliveryPolicy:
    max_attempts: int = 8
    base_backoff_seconds: float = 2.0
    max_backoff_seconds: float = 300.0
    batch_limit: int = 500
    # How long an engine may hold a claimed group without a word to the database (its send included): an engine
    # frozen there (SIGSTOP, a paused VM) has its transaction ended by the server after this, its rows unlocked, and
    # the engine that took over sends them (a duplicate rather than a miss). Keep it above every notifier's timeout
    # (10 s by default; config validation refuses an alertmanager.timeout_seconds at or above it): a live sender
    # slower than this would send its group again.
    hold_seconds: float = DELIVERY_HOLD_SECONDS


@dataclass
class DeliveryReport:
    delivered: int = 0
    failed: int = 0
    dead: int = 0


def deliver_due(
    store: Store,
    notifier_for: Callable[[str], Notifier],
    *,
    now: datetime,
    policy: DeliveryPolicy = DeliveryPolicy(),
    lease: Lease | None = None,
) -> DeliveryReport:
    """Send every due outbox row once, one (target, group key) at a time, each in its own transaction: its rows are
    claimed ``FOR UPDATE SKIP LOCKED`` (``repo.claim_group``), so two engines never send the same row, and deleted or
    rescheduled in that transaction once the target answered. With a ``lease``, each send is preceded by the check
    that the lease is still this engine's (``Lease.check``, after the claim; ``Deposed`` stops the delivery), and the
    claiming transaction is ended by the server if it stays idle ``policy.hold_seconds`` (a frozen engine's rows do not
    stay locked for ever: the engine that took over sends them). A crash, or a freeze past the hold, between the send
    and the commit leaves the rows to be sent again: at least once."""
    with store.session() as s:
        groups = repo.due_groups(now, session=s, limit=policy.batch_limit)
    report = DeliveryReport()
    blocked: set[str] = set()
    for target, gk in groups:
        if target in blocked:  # the target is down this round: keep order, do not hammer it
            continue
        with store.session() as s:
            rows = repo.claim_group(target, gk, now, session=s, limit=policy.batch_limit)
            if not rows:
                continue
            if lease is not None:  # last, right before the send: a frozen engine's window is this line to the POST
                lease.check(s, hold_seconds=policy.hold_seconds)
            ids = [r.id for r in rows]
            retry, error = notifier_for(target).notify([r.payload for r in rows], now=now)
            if error is None:
                repo.delivered(ids, session=s)
                report.delivered += len(ids)
                continue
            if alertmanager_index(target) is None:  # whatever the notifier wrote, keep the webhook's URL out of logs
                error = scrub(error, target)
            log.warning("delivery to %s failed (%s, retry=%s)", _safe_target(target), error, retry)
            report.failed += len(ids)
            report.dead += repo.failed(
                ids,
                error,
                recoverable=retry,
                now=now,
                max_attempts=policy.max_attempts,
                base_backoff=policy.base_backoff_seconds,
                max_backoff=policy.max_backoff_seconds,
                session=s,
            )
        if retry:
            blocked.add(target)
    return report


def _safe_target(target: str) -> str:
    """How a target appears in logs: 'alertmanager' ('alertmanager#2'...), or a webhook's host and hash, never its
    path."""
    return target if alertmanager_index(target) is not None else target_id(target)
