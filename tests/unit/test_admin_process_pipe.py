"""The Admin child's pipe under concurrent writers (collectors.admin_process): the child answers from its main
thread while other threads log (kafka-python's connection made in the background, librdkafka's callbacks), and
every log record crosses the same pipe. Unlocked, two sends interleaved their bytes and the parent read
``UnpicklingError: invalid load key`` (CI, the watermark test's first round). The child here is a real process; only
the client is a stand-in that logs from threads while it answers."""

from __future__ import annotations

import logging
import threading

import pytest

from collectors.admin_process import IsolatedAdmin

pytestmark = pytest.mark.unit

PAYLOAD = 400_000  # an answer larger than a pipe's buffer, so its send is written in several parts


class ChattyAdmin:
    """Answers ``groups`` with a large value while four threads log long records all the time."""

    stale_coordinator = False
    replace_client = False

    def __init__(self, settings, *, timeout):
        self._stop = threading.Event()
        for i in range(4):
            threading.Thread(target=self._chatter, args=(i,), daemon=True).start()

    def _chatter(self, i: int) -> None:
        log = logging.getLogger(f"kafka.net.chatter{i}")
        while not self._stop.is_set():
            log.warning("%s", "x" * 20_000)

    def groups(self, *, timeout):
        return ["g" * 100] * (PAYLOAD // 100)


def test_answers_arrive_whole_while_other_threads_of_the_child_log():
    admin = IsolatedAdmin({}, timeout=10, client=ChattyAdmin)
    try:
        for _ in range(30):
            assert admin.groups(timeout=10) == ["g" * 100] * (PAYLOAD // 100)
    finally:
        admin.close()
