"""A TCP path that a test can cut: a forwarder on loopback to one upstream (a database, say) whose ``cut()`` resets
every connection it carries and refuses new ones until ``mend()``, as a lost network path or a restarted database
looks to the client (a reset, then refused connects), while the upstream itself keeps running for everyone else.

    path = CuttablePath("127.0.0.1", 5432).start()
    url = f"postgresql+psycopg://u@127.0.0.1:{path.port}/db"   # give the process under test this address
    path.cut()     # the fault: its connections reset, new ones refused
    path.mend()    # connections accepted again
    path.stop()    # always

Why a forwarder and not ``pg_terminate_backend``: a pool reconnects at once, so terminating the backends cuts a
connection for a millisecond, never for as long as a lease lasts.
"""

from __future__ import annotations

import socket
import struct
import threading


def _reset(sock: socket.socket) -> None:
    """Close with RST (SO_LINGER 0), as a broken path looks to the peer, not an orderly FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.shutdown(socket.SHUT_RD)  # wakes the pump blocked in recv() on it; sends nothing
    except OSError:
        pass
    sock.close()


class CuttablePath:
    def __init__(self, upstream_host: str, upstream_port: int):
        self.upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open = True
        self._lock = threading.Lock()
        self._socks: set[socket.socket] = set()
        self.cuts = 0  # connections reset or refused while cut

    def start(self) -> CuttablePath:
        threading.Thread(target=self._accept, name=f"cuttable-{self.port}", daemon=True).start()
        return self

    def cut(self) -> None:
        with self._lock:
            self._open = False
            socks, self._socks = self._socks, set()
        for s in socks:
            _reset(s)
        self.cuts += len(socks)

    def mend(self) -> None:
        with self._lock:
            self._open = True

    def stop(self) -> None:
        self.cut()
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # stopped
                return
            with self._lock:
                refused = not self._open
            if refused:
                self.cuts += 1
                _reset(client)
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _reset(client)
                continue
            server.settimeout(None)
            with self._lock:
                self._socks |= {client, server}
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        with self._lock:
            self._socks -= {src, dst}
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
