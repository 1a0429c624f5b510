"""``FakeSource``: the one fake of the Prometheus ``Source`` (monitor/core/prom.py) for unit tests of pure logic.

It answers by table: the first key (a substring) found in the expression, in the table's order, gives the answer;
an expression no key matches has no data (``[]``). An answer is the samples (or series) themselves, an exception to
raise (a failing query), or a function of the query's arguments (an answer that depends on the time asked).

    src = FakeSource({M["broker_up"]: [InstantSample({"cluster": "c1", "broker": "1"}, 0)]})
    src.instant[M["under_min_isr"]] = QueryError("bad_data")     # the tables stay editable
    src.seen                                                     # every expression asked, in order

``present``: metric names the engine's input check (``count by (__name__, cluster)``) finds on ``cluster``, so
rules are not skipped as "input absent". ``at``: the only evaluation time allowed (a decider is given the time, it
never reads the clock). ``fail``: raised by every query (Prometheus down).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from monitor.core.prom import InstantSample, Series

PRESENCE = "count by (__name__, cluster)"  # the engine's input check (alerts.engine)

Answer = Any  # list[InstantSample] | list[Series] | Exception | Callable[..., list]


class FakeSource:
    """Implements ``monitor.core.prom.Source`` (and ``close``) from tables; see the module docstring."""

    def __init__(
        self,
        instant: Mapping[str, Answer] | None = None,
        ranges: Mapping[str, Answer] | None = None,
        *,
        present: Iterable[str] = (),
        cluster: str = "c1",
        at: datetime | None = None,
        fail: Exception | None = None,
    ):
        self.instant: dict[str, Answer] = dict(instant or {})
        self.ranges: dict[str, Answer] = dict(ranges or {})
        self.present: set[str] = set(present)
        self.cluster, self.at, self.fail = cluster, at, fail
        self.seen: list[str] = []
        self.closed = 0

    def _answer(self, table: Mapping[str, Answer], expr: str, *args: Any) -> list[Any]:
        self.seen.append(expr)
        if self.fail is not None:
            raise self.fail
        for key, answer in table.items():
            if key in expr:
                if isinstance(answer, Exception):
                    raise answer
                return list(answer(expr, *args)) if callable(answer) else answer
        return []

    def query(self, expr: str, at: datetime) -> list[InstantSample]:
        if self.at is not None:
            assert at == self.at, f"asked at {at}, not at the time given ({self.at}): a clock was read"
        if self.present and expr.startswith(PRESENCE):
            self.seen.append(expr)
            return [InstantSample({"__name__": m, "cluster": self.cluster}, 1) for m in sorted(self.present)]
        return self._answer(self.instant, expr, at)

    def query_range(self, expr: str, start: datetime, end: datetime, step_seconds: float) -> list[Series]:
        return self._answer(self.ranges, expr, start, end, step_seconds)

    def close(self) -> None:
        self.closed += 1
