"""stop_all: every component is asked at once, the wait is bounded in all, and the busy ones are named."""

from __future__ import annotations

import threading

import pytest

from monitor.core.lifecycle import stop_all

pytestmark = pytest.mark.unit


class Fake:
    def __init__(self, name: str, *, hang: threading.Event | None = None, fail: bool = False):
        self.name, self.hang, self.fail = name, hang, fail
        self.stopped = threading.Event()

    def start(self) -> None:
        pass

    def ready(self) -> bool:
        return True

    def stop(self) -> None:
        if self.fail:
            raise RuntimeError("boom")
        if self.hang is not None:
            self.hang.wait()  # stuck mid-cycle until the test lets go
        self.stopped.set()


def test_every_component_stops_and_none_is_abandoned():
    comps = [Fake("a"), Fake("b"), Fake("c")]
    assert stop_all(comps, bound_seconds=5) == []
    assert all(c.stopped.is_set() for c in comps)


def test_a_stuck_component_is_abandoned_and_named_and_the_others_still_stop(caplog):
    release = threading.Event()
    stuck, fine = Fake("alerts", hang=release), Fake("collector")
    try:
        assert stop_all([stuck, fine], bound_seconds=0.2) == ["alerts"]
        assert fine.stopped.is_set() and not stuck.stopped.is_set()
        assert "alerts" in caplog.text and "abandoned" in caplog.text
    finally:
        release.set()


def test_components_are_asked_in_parallel_so_one_stuck_one_does_not_starve_the_next():
    release = threading.Event()
    first, second = Fake("first", hang=release), Fake("second")
    try:
        stop_all([first, second], bound_seconds=0.2)
        assert second.stopped.is_set()  # asked although the first never returned
    finally:
        release.set()


def test_a_component_whose_stop_raises_counts_as_stopped(caplog):
    assert stop_all([Fake("bad", fail=True), Fake("ok")], bound_seconds=5) == []
    assert "bad failed while stopping" in caplog.text
