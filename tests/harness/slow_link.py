"""A slow network path for one client: a network namespace joined to the host by a veth pair, with ``tc netem``
(or ``tbf`` where the kernel lacks netem) on the host side, so only traffic *to* the namespace (broker responses)
is delayed and rate-limited.

    link = SlowLink("khslow", "10.220.0.1", "10.220.0.2").create()
    link.slow(delay_ms=100, rate="256kbit")   # the fault
    link.popen([...])                           # a process inside the namespace
    link.fast()                                 # the fault removed
    link.destroy()                              # always: processes, qdisc, veth, namespace

Needs root and iproute2 (``ip``, ``tc``). Brokers must listen on ``host_addr`` (StackLayout.client_listener_host):
a process in the namespace cannot reach the host's loopback.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator


def available() -> str | None:
    """Why a slow link cannot be built here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, tc)"
    missing = [t for t in ("ip", "tc") if shutil.which(t) is None]
    return f"missing {', '.join(missing)} (apt-get install iproute2)" if missing else None


def _run(*argv: str) -> None:
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip()}")


class SlowLink:
    def __init__(self, name: str, host_addr: str, ns_addr: str):
        self.name = name
        self.host_addr, self.ns_addr = host_addr, ns_addr
        self.host_dev, self.ns_dev = f"{name}-h", f"{name}-n"
        self._procs: list[subprocess.Popen] = []

    def create(self) -> SlowLink:
        self.destroy()  # leftovers of a run that was killed
        _run("ip", "netns", "add", self.name)
        _run("ip", "link", "add", self.host_dev, "type", "veth", "peer", "name", self.ns_dev)
        _run("ip", "link", "set", self.ns_dev, "netns", self.name)
        _run("ip", "addr", "add", f"{self.host_addr}/30", "dev", self.host_dev)
        _run("ip", "link", "set", self.host_dev, "up")
        for cmd in (
            ("ip", "addr", "add", f"{self.ns_addr}/30", "dev", self.ns_dev),
            ("ip", "link", "set", self.ns_dev, "up"),
            ("ip", "link", "set", "lo", "up"),
        ):
            _run("ip", "netns", "exec", self.name, *cmd)
        return self

    def slow(self, *, delay_ms: int, rate: str) -> str:
        """A qdisc on the host side's egress: what the brokers send to the namespace is delayed and rate-limited
        (``netem``). Kernels built without sch_netem (some VMs) get ``tbf``: the same rate, no added delay, which
        is what makes a reader slow anyway. Returns the qdisc used."""
        try:
            _run(
                "tc", "qdisc", "replace", "dev", self.host_dev, "root", "netem", "delay", f"{delay_ms}ms", "rate", rate
            )
            return "netem"
        except RuntimeError as exc:
            if "unknown" not in str(exc).lower():
                raise
        _run(
            "tc",
            "qdisc",
            "replace",
            "dev",
            self.host_dev,
            "root",
            "tbf",
            "rate",
            rate,
            "burst",
            "16kb",
            "latency",
            "2s",
        )
        return "tbf"

    def fast(self) -> None:
        subprocess.run(["tc", "qdisc", "del", "dev", self.host_dev, "root"], capture_output=True)

    def popen(self, argv: list[str], **kw) -> subprocess.Popen:
        p = subprocess.Popen(["ip", "netns", "exec", self.name, *argv], start_new_session=True, **kw)
        self._procs.append(p)
        return p

    def stop_processes(self) -> None:
        for p in self._procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(10)
        self._procs.clear()

    def destroy(self) -> None:
        """Idempotent: processes, then the qdisc and the veth pair (deleting one end deletes both), then the
        namespace."""
        self.stop_processes()
        self.fast()
        subprocess.run(["ip", "link", "del", self.host_dev], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


@contextlib.contextmanager
def slow_port(port: int, *, delay_ms: int = 200, rate: str = "64kbit", dev: str = "lo") -> Iterator[str]:
    """What leaves local ``port`` (one broker listener's responses: not its replication, which has a listener of its
    own on the secured stack) delayed by ``delay_ms`` and limited to ``rate`` on ``dev`` for the block, everything
    else on ``dev`` untouched: an htb root whose default class is unlimited in practice, one class at ``rate`` for
    the port (a u32 filter on the source port), and under it ``netem`` where the kernel has it. Without sch_netem
    (some VMs: this machine's kernel) the class's rate alone slows the port, as ``SlowLink.slow`` falls back to tbf.
    Yields the qdisc that slows it ("netem" or "htb"). Refuses to replace a root qdisc it did not put there; the
    root qdisc is removed on exit whatever happens. Needs root and iproute2."""
    shown = subprocess.run(["tc", "qdisc", "show", "dev", dev], capture_output=True, text=True).stdout
    if "htb 7fa1:" in shown:  # our own, left by a run that was killed
        subprocess.run(["tc", "qdisc", "del", "dev", dev, "root"], capture_output=True)
    elif shown.strip() and not shown.startswith("qdisc noqueue"):
        raise RuntimeError(f"{dev} already has a root qdisc of someone else's: {shown.strip()}")
    try:
        _run("tc", "qdisc", "add", "dev", dev, "root", "handle", "7fa1:", "htb", "default", "1", "r2q", "1000")
        _run("tc", "class", "add", "dev", dev, "parent", "7fa1:", "classid", "7fa1:1", "htb", "rate", "30gbit")
        _run(
            "tc",
            "class",
            "add",
            "dev",
            dev,
            "parent",
            "7fa1:",
            "classid",
            "7fa1:2",
            "htb",
            "rate",
            rate,
            "ceil",
            rate,
            "quantum",
            "1514",
        )
        kind = "htb"
        try:
            _run(
                "tc",
                "qdisc",
                "add",
                "dev",
                dev,
                "parent",
                "7fa1:2",
                "handle",
                "7fa2:",
                "netem",
                "delay",
                f"{delay_ms}ms",
            )
            kind = "netem"
        except RuntimeError as exc:
            if "unknown" not in str(exc).lower():
                raise
        _run(
            "tc",
            "filter",
            "add",
            "dev",
            dev,
            "parent",
            "7fa1:",
            "protocol",
            "ip",
            "prio",
            "1",
            "u32",
            "match",
            "ip",
            "sport",
            str(port),
            "0xffff",
            "flowid",
            "7fa1:2",
        )
        yield kind
    finally:
        subprocess.run(["tc", "qdisc", "del", "dev", dev, "root", "handle", "7fa1:"], capture_output=True)
