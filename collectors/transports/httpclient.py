"""One HTTP client per collector process, for every HTTP read of a target (Jolokia, jmx_exporter, node_exporter).

Building an ``httpx.Client`` loads the CA bundle into a new SSL context: about 35 ms of CPU, which was a third of a
whole Jolokia read of a broker with 10,000 partitions and most of a read of a small one (bench/collector_fleet.py).
A client made once pays that once; its pool keeps a connection to a target open between reads that follow within
``keepalive_expiry`` and closes it after (httpx's default 5 s, well inside any server's own idle timeout).

What a shared client must not share: cookies. A target (or a proxy in front of it) that sets one would have it sent
back with the next read of that host, which may be another cluster's under other credentials; the jar refuses every
cookie. Credentials go with each request, never on the client. A process forked after the client was made (``serve
--workers``) gets a client of its own: a pool's sockets must not be used from two processes.
"""

from __future__ import annotations

import os
import threading
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx

_lock = threading.Lock()
_client: httpx.Client | None = None
_pid = 0


def _no_cookies() -> CookieJar:
    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


def shared_client() -> httpx.Client:
    """The process's client for target reads (made on first use; per-request timeouts and auth)."""
    global _client, _pid
    with _lock:
        if _client is None or _pid != os.getpid():
            _client, _pid = httpx.Client(cookies=_no_cookies()), os.getpid()
        return _client
