"""Reading Prometheus through its HTTP API: the engine's only data source.

``Source`` is the seam: the engine and detectors take one and never build URLs themselves, so unit tests pass a small
in-memory source and production passes ``PrometheusSource``. HTTP and PromQL failures are translated here into
``QueryError`` (with Prometheus' own message), so callers never see httpx exceptions. The error's text is the
operator's (the URL in it redacted: no userinfo, no query); tenants get its ``public`` message. Credentials come from
``prometheus.username`` / ``prometheus.password`` as HTTP basic auth, never from the URL (``prometheus_source``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import httpx

from monitor.core.config import PrometheusSettings
from monitor.core.errors import QueryError
from monitor.core.redact import redact_url


@dataclass(frozen=True)
class InstantSample:
    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    times: tuple[float, ...]  # unix seconds
    values: tuple[float, ...]


class Source(Protocol):
    """Implementers must evaluate at the given time (never "now"), return [] for no data, raise QueryError on
    failure (never return [] for a failure: "no data" and "failed" stay distinct)."""

    def query(self, expr: str, at: datetime) -> list[InstantSample]: ...

    def query_range(self, expr: str, start: datetime, end: datetime, step_seconds: float) -> list[Series]: ...


def _num(v: str) -> float:
    x = float(v)
    return x


class PrometheusSource:
    """``auth``: (username, password) for HTTP basic auth. Never put credentials into ``url``: errors show the URL."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 10.0,
        auth: tuple[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ):
        self._client = httpx.Client(base_url=url.rstrip("/"), timeout=timeout, auth=auth, transport=transport)
        self._shown_url = redact_url(url.rstrip("/"))
        self.queries = 0  # counted for the bench and the health metrics

    def close(self) -> None:
        self._client.close()

    def _get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        self.queries += 1
        try:
            resp = self._client.post(path, data=params)
        except httpx.HTTPError as exc:
            raise QueryError(f"Prometheus unreachable at {self._shown_url}: {type(exc).__name__}") from exc
        try:
            body = resp.json()
        except ValueError:
            raise QueryError(f"Prometheus at {self._shown_url} answered HTTP {resp.status_code} without JSON") from None
        if body.get("status") != "success":
            raise QueryError(f"Prometheus query failed: {body.get('errorType', '')}: {body.get('error', '')}"[:500])
        data: dict[str, Any] = body["data"]
        return data

    def query(self, expr: str, at: datetime) -> list[InstantSample]:
        data = self._get("/api/v1/query", {"query": expr, "time": f"{at.timestamp():.3f}"})
        if data["resultType"] == "scalar":
            return [InstantSample({}, _num(data["result"][1]))]
        if data["resultType"] != "vector":
            raise QueryError(f"expected an instant vector from {expr!r}, got {data['resultType']}")
        return [InstantSample(r["metric"], _num(r["value"][1])) for r in data["result"]]

    def query_range_raw(self, expr: str, start: datetime, end: datetime, step_seconds: float) -> list[dict[str, Any]]:
        """Prometheus' own matrix result (``[{"metric": {...}, "values": [[t, "v"], ...]}]``), for callers that
        store it as it is (the archive)."""
        result: list[dict[str, Any]] = self._get(
            "/api/v1/query_range",
            {
                "query": expr,
                "start": f"{start.timestamp():.3f}",
                "end": f"{end.timestamp():.3f}",
                "step": f"{max(step_seconds, 1):.3f}",
            },
        )["result"]
        return result

    def query_range(self, expr: str, start: datetime, end: datetime, step_seconds: float) -> list[Series]:
        out = []
        for r in self.query_range_raw(expr, start, end, step_seconds):
            pts = [(float(t), _num(v)) for t, v in r["values"]]
            pts = [(t, v) for t, v in pts if not math.isnan(v)]
            out.append(Series(r["metric"], tuple(t for t, _ in pts), tuple(v for _, v in pts)))
        return out


def prometheus_source(
    settings: PrometheusSettings, *, transport: httpx.BaseTransport | None = None
) -> PrometheusSource:
    """The source every component builds from the config: URL, timeout and basic auth in one place."""
    return PrometheusSource(
        settings.url, timeout=settings.timeout_seconds, auth=settings.basic_auth(), transport=transport
    )
