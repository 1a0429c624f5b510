"""Benchmark: the tenant boundary's limits (issue 15, items 6, 7, 9, 10) on a real ``kafka-health serve --role api``.

One server (uvicorn) on a SQLite store, three clusters (``a-only`` owned by tenant ``a``, ``b-only`` by ``b``,
``shared``), a stand-in Prometheus (a threaded HTTP server on loopback that answers every query with an empty vector
after ``--prom-delay`` seconds: the shape of a Prometheus busy with long windows, without one). Four measurements,
all printed, none asserted:

1. item 10: tenant ``a``'s token asks for a cluster it is not on (``b-only``) and for one that does not exist,
   interleaved, ``--n`` times each: the median of each and their ratio (1.0 = the timing tells nothing);
2. item 6: tenant ``b`` polls ``GET /api/v1/tenants/b`` while tenant ``a`` keeps 45 advice calls in flight (its own
   process, closed loop, every call a new window so nothing is remembered): b's median and worst, against the
   same poll on the idle server, and what a's calls were answered;
3. item 9: 600 wrong tokens from one address: how they were answered, and how long they took;
4. item 7: a 64 MiB silence body: the answer and the server's RSS (current, peak) before and after.

Run: ``.venv/bin/python bench/api_limits.py``. Run the same file from a checkout of older code to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slow_prometheus(delay: float) -> tuple[ThreadingHTTPServer, list[int]]:
    """A stand-in for Prometheus' query API: an empty instant vector for every query, after ``delay`` seconds."""
    count = [0]
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            count[0] += 1
            time.sleep(delay)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", _free_port()), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, count


def write_config(d: Path, port: int, prom_port: int) -> Path:
    path = d / "bench.yaml"
    path.write_text(f"""
service: {{port: {port}, roles: [api], api_rate_limit_per_second: 100000, api_rate_limit_burst: 100000}}
prometheus: {{url: 'http://127.0.0.1:{prom_port}', timeout_seconds: 30}}
store: {{url: 'sqlite:///{d / "kh.db"}'}}
clusters:
  - {{name: a-only, bootstrap_servers: '127.0.0.1:1', brokers: [{{id: 1}}]}}
  - {{name: b-only, bootstrap_servers: '127.0.0.1:2', brokers: [{{id: 1}}]}}
  - {{name: shared, bootstrap_servers: '127.0.0.1:3', brokers: [{{id: 1}}, {{id: 2}}]}}
tenants:
  - name: a
    whole_clusters: [a-only]
    selectors: [{{cluster: shared, topic_prefixes: [a.]}}]
  - name: b
    whole_clusters: [b-only]
    selectors: [{{cluster: shared, topic_prefixes: [b.]}}]
""")
    return path


def make_tokens(cfg: Path) -> dict[str, str]:
    from monitor.api import tokens
    from monitor.core.config import load_config
    from monitor.core.store import Store
    from monitor.core.times import utc_now

    store = Store(load_config(str(cfg)).store.url)
    try:
        with store.session() as s:
            return {
                t: tokens.create(db_session=s, kind=tokens.TokenKind.TENANT, tenant=t, name="bench", now=utc_now())[1]
                for t in ("a", "b")
            }
    finally:
        store.dispose()


def rss_mib(pid: int) -> tuple[float, float]:
    vals = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            vals[key] = int(rest.split()[0]) / 1024
    return vals["VmRSS"], vals["VmHWM"]


def ms(xs: list[float]) -> str:
    return f"median {statistics.median(xs) * 1000:.2f} ms"


# --- 1. item 10 --------------------------------------------------------------------------------------------------


def cluster_404s(base: str, token: str, n: int) -> None:
    import httpx

    times: dict[str, list[float]] = {"b-only": [], "nowhere": []}
    bodies = set()
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        for _ in range(50):  # warm: the token remembered, connections open
            http.get(f"{base}/clusters/nowhere/health")
        for i in range(n):
            for cluster in ("b-only", "nowhere") if i % 2 else ("nowhere", "b-only"):
                t0 = time.perf_counter()
                r = http.get(f"{base}/clusters/{cluster}/health")
                times[cluster].append(time.perf_counter() - t0)
                bodies.add((r.status_code, r.text))
    on, absent = statistics.median(times["b-only"]), statistics.median(times["nowhere"])
    print(
        f"[10] 404 for a cluster tenant a is not on: {ms(times['b-only'])}; for one that does not exist: "
        f"{ms(times['nowhere'])}; ratio {on / absent:.2f} (n={n} each, interleaved); distinct answers: "
        f"{len(bodies)} {sorted(bodies)[:2]}"
    )


# --- 2. item 6 ---------------------------------------------------------------------------------------------------


async def _advice_flood(base: str, token: str, concurrency: int, duration: float) -> dict:
    import httpx

    statuses: Counter = Counter()
    stop = time.monotonic() + duration
    windows = iter(range(1, 10**9))

    async def worker(http) -> None:
        while time.monotonic() < stop:
            try:
                r = await http.get(f"{base}/tenants/a/advice", params={"window": f"{next(windows) % 1440 + 1}m"})
                statuses[r.status_code] += 1
                if r.status_code in (429, 503):
                    await asyncio.sleep(float(r.headers.get("retry-after", "1")))  # a client that obeys
            except httpx.HTTPError as exc:
                statuses[type(exc).__name__] += 1

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120, limits=limits) as http:
        await asyncio.gather(*(worker(http) for _ in range(concurrency)))
    return dict(statuses)


def _flood_process(base, token, concurrency, duration, out) -> None:
    out.put(asyncio.run(_advice_flood(base, token, concurrency, duration)))


def poll(base: str, token: str, duration: float) -> list[float]:
    import httpx

    times = []
    stop = time.monotonic() + duration
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=300) as http:
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            assert http.get(f"{base}/tenants/b").status_code == 200
            times.append(time.perf_counter() - t0)
            time.sleep(0.02)
    return times


def starvation(base: str, tokens: dict[str, str], duration: float, prom_count: list[int]) -> None:
    idle = poll(base, tokens["b"], 3)
    ctx = mp.get_context("spawn")  # not fork: this process runs threads (the stand-in Prometheus)
    out = ctx.Queue()
    before = prom_count[0]
    flood = ctx.Process(target=_flood_process, args=(base, tokens["a"], 45, duration, out))
    flood.start()
    time.sleep(1)  # let the 45 calls get in
    loaded = poll(base, tokens["b"], duration - 2)
    statuses = out.get(timeout=duration + 300)
    flood.join()
    print(
        f"[6] tenant b's GET /tenants/b: idle {ms(idle)}; while tenant a keeps 45 advice calls in flight "
        f"{ms(loaded)}, max {max(loaded) * 1000:.0f} ms, "
        f"ratio of medians {statistics.median(loaded) / statistics.median(idle):.1f} "
        f"(n={len(loaded)}); a's calls answered {statuses}; Prometheus queries {prom_count[0] - before}"
    )


# --- 3. item 9 ---------------------------------------------------------------------------------------------------


def wrong_tokens(base: str) -> None:
    import httpx

    statuses: Counter = Counter()
    t0 = time.perf_counter()
    with httpx.Client(timeout=30) as http:
        for i in range(600):
            r = http.get(f"{base}/tenants", headers={"Authorization": f"Bearer kh_{i:012x}_" + "A" * 43})
            statuses[r.status_code] += 1
    print(f"[9] 600 wrong tokens from one address in {time.perf_counter() - t0:.2f} s: {dict(statuses)}")


# --- 4. item 7 ---------------------------------------------------------------------------------------------------


def big_body(base: str, pid: int, operator_token: str) -> None:
    import httpx

    before = rss_mib(pid)
    body = json.dumps(
        {"matchers": [{"name": "alertname", "value": "x"}], "duration_seconds": 60, "comment": "x" * (64 * 1024 * 1024)}
    )
    r = httpx.post(
        f"{base}/silences",
        content=body,
        timeout=120,
        headers={"Authorization": f"Bearer {operator_token}", "Content-Type": "application/json"},
    )
    after = rss_mib(pid)
    print(
        f"[7] a 64 MiB silence: HTTP {r.status_code} {r.text[:90]}; server RSS {before[0]:.0f} -> {after[0]:.0f} "
        f"MiB, peak {before[1]:.0f} -> {after[1]:.0f} MiB"
    )


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=1000, help="requests per kind for the 404 comparison")
    p.add_argument("--prom-delay", type=float, default=0.05, help="seconds the stand-in Prometheus takes per query")
    p.add_argument("--duration", type=float, default=15, help="seconds of advice flood")
    args = p.parse_args()

    from monitor.api import tokens as token_service
    from monitor.core.config import load_config
    from monitor.core.store import Store
    from monitor.core.times import utc_now
    from tests.harness.launch import serve_process

    prom, prom_count = slow_prometheus(args.prom_delay)
    with tempfile.TemporaryDirectory(prefix="kh-bench-limits-") as tmp:
        d = Path(tmp)
        port = _free_port()
        cfg = write_config(d, port, prom.server_address[1])
        with serve_process(d, cfg, port) as pid:
            tokens = make_tokens(cfg)
            store = Store(load_config(str(cfg)).store.url)
            with store.session() as s:
                operator = token_service.create(
                    db_session=s, kind=token_service.TokenKind.OPERATOR, tenant=None, name="bench", now=utc_now()
                )[1]
            store.dispose()
            base = f"http://127.0.0.1:{port}/api/v1"
            print(f"server pid {pid}, stand-in Prometheus {args.prom_delay * 1000:.0f} ms per query")
            cluster_404s(base, tokens["a"], args.n)
            starvation(base, tokens, args.duration, prom_count)
            big_body(base, pid, operator)
            wrong_tokens(base)  # last: it blocks this address's failures for a while
    prom.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
