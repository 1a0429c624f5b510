"""Benchmark: GET /api/v1/tenants/{t}/health on a real ``kafka-health serve --role api`` (uvicorn) process.

Set-up: 1,000 tenants (slices of 4 shared clusters), 10,000 alert instances (10 per tenant, 60% firing), one
tenant token per tenant; a writer thread refreshes the engine heartbeats every 5 s (``--heartbeat-every``), as the
alert engine would (three times as often as its default 15 s): each refresh is a new evaluation, so every remembered
health answer is dropped and the next request for each tenant recomputes it.
Load: a small asyncio HTTP/1.1 keep-alive client on loopback (its own process), 32 connections, each request a
random tenant with that tenant's token. Three runs:

1. baseline: ``GET /healthz`` (no auth, no database) closed-loop, the framework's own ceiling;
2. closed-loop ``/health`` at concurrency 32: maximum throughput, p50, p99;
3. open-loop ``/health`` at a fixed 500 req/s: latency measured from each request's *scheduled* send time, so a
   stalled server cannot hide queueing (no coordinated omission). The target is p99 < 50 ms here.

Prints figures, the server's CPU time per request (from /proc: comparable on a busy machine, unlike latency) and
the server's RSS (current and peak). Run: ``python bench/api.py [--store-url URL]``.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import random
import socket
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

N_TENANTS = 1000
ALERTS_PER_TENANT = 10
CLUSTERS = ("c0", "c1", "c2", "c3")
CONCURRENCY = 32


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(d: Path, port: int, store_url: str) -> Path:
    lines = ["clusters:"]
    for c in CLUSTERS:
        lines += [f"  - name: {c}", "    bootstrap_servers: 127.0.0.1:1", "    brokers: [{id: 1}, {id: 2}, {id: 3}]"]
    lines += [f"store: {{url: '{store_url}'}}", f"service: {{port: {port}, roles: [api]}}"]
    path = d / "bench.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def seed(config, store) -> tuple[list[tuple[str, str]], float]:
    """Tenants through the service (with its overlap check), alerts and heartbeats; returns (tenant, token) pairs."""
    from alerts.models import AlertInstance, EngineHeartbeat
    from monitor.api import tokens
    from monitor.core.config import TenantConfig
    from monitor.tenants import service

    now = datetime.now(timezone.utc)
    rng = random.Random(1)
    t0 = time.perf_counter()
    pairs = []
    with store.session() as s:
        for i in range(N_TENANTS):
            name = f"tenant-{i:04d}"
            cfg = TenantConfig(
                name=name,
                selectors=[
                    {
                        "cluster": CLUSTERS[i % len(CLUSTERS)],
                        "topic_prefixes": [f"{name}."],
                        "group_prefixes": [f"{name}-"],
                        "client_id_prefixes": [f"{name}-"],
                    }
                ],
            )
            service.create(db_session=s, tenant_in=cfg, clusters=CLUSTERS, now=now)
    create_s = time.perf_counter() - t0
    with store.session() as s:
        for i in range(N_TENANTS):
            name = f"tenant-{i:04d}"
            pairs.append(
                (name, tokens.create(db_session=s, kind=tokens.TokenKind.TENANT, tenant=name, name="bench", now=now)[1])
            )
            cluster = CLUSTERS[i % len(CLUSTERS)]
            for k in range(ALERTS_PER_TENANT):
                state = "firing" if k < 6 else ("pending" if k < 8 else "resolved")
                labels = rng.choice(
                    [
                        {"topic": f"{name}.t{k}"},
                        {"group": f"{name}-g{k}", "topic": f"{name}.t"},
                        {"client_id": f"{name}-app{k}"},
                        {"broker": str(1 + k % 3)},
                    ]
                )
                s.add(
                    AlertInstance(
                        fingerprint=f"{i:04d}{k:02d}".ljust(16, "0"),
                        rule=f"KafkaRule{k}",
                        state=state,
                        severity="critical" if k % 5 == 0 else "warning",
                        cluster=cluster,
                        tenant=name,
                        broker=labels.get("broker"),
                        labels={"cluster": cluster, "tenant": name, **labels},
                        annotations={"summary": f"rule {k} on {name}"},
                        evidence={"value": k * 1.5, "threshold": 1.0},
                        active_at=now - timedelta(minutes=30),
                        fired_at=now - timedelta(minutes=20),
                    )
                )
        for c in CLUSTERS:
            s.add(EngineHeartbeat(cluster=c, evaluated_at=now, data_ok=True, detail=""))
    return pairs, create_s


def heartbeat_writer(store, stop: threading.Event, every: float) -> None:
    from alerts.models import EngineHeartbeat

    while not stop.wait(every):
        with store.session() as s:
            for c in CLUSTERS:
                s.merge(EngineHeartbeat(cluster=c, evaluated_at=datetime.now(timezone.utc), data_ok=True, detail=""))


# ---------------------------------------------------------------------------------------------------------------
# Load generator (runs in its own process)


async def _request(reader, writer, path: str, token: str | None) -> int:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: bench\r\n{auth}\r\n".encode())
    status = int((await reader.readline()).split()[1])
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def _run(port: int, jobs: list[tuple[str, str | None]], duration: float, rate: float | None) -> dict:
    loop = asyncio.get_running_loop()
    results: list[float] = []
    statuses: dict[int, int] = {}
    start = loop.time() + 0.2
    end = start + duration
    counter = iter(range(10**9))

    async def worker() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        rng = random.Random()
        while True:
            i = next(counter)
            if rate is None:
                t_sched = loop.time()
                if t_sched >= end:
                    break
            else:
                t_sched = start + i / rate
                if t_sched >= end:
                    break
                delay = t_sched - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
            path, token = jobs[rng.randrange(len(jobs))]
            status = await _request(reader, writer, path, token)
            results.append(loop.time() - t_sched)
            statuses[status] = statuses.get(status, 0) + 1
        writer.close()

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    elapsed = max(loop.time(), end) - start
    return {"latencies": results, "statuses": statuses, "elapsed": elapsed}


def _loadgen(port, jobs, duration, rate, out) -> None:
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    out.put(asyncio.run(_run(port, jobs, duration, rate)))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far (from /proc): what a request costs, whatever else runs."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(port: int, jobs, duration: float, rate: float | None = None, *, pid: int | None = None) -> dict:
    q: mp.Queue = mp.Queue()
    p = mp.get_context("fork").Process(target=_loadgen, args=(port, jobs, duration, rate, q))
    cpu0 = cpu_seconds(pid) if pid else None
    p.start()
    res = q.get()
    p.join()
    if cpu0 is not None:
        res["server_cpu"] = cpu_seconds(pid) - cpu0
    return res


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def report(label: str, res: dict) -> dict:
    lat = res["latencies"]
    fig = {
        "n": len(lat),
        "rps": len(lat) / res["elapsed"],
        "p50_ms": _pct(lat, 50) * 1000,
        "p99_ms": _pct(lat, 99) * 1000,
        "max_ms": max(lat) * 1000 if lat else float("nan"),
        "statuses": res["statuses"],
        "cpu_ms": res["server_cpu"] / len(lat) * 1000 if lat and "server_cpu" in res else float("nan"),
    }
    print(
        f"{label:<34} {fig['n']:>7} req {fig['rps']:>8.0f} req/s   p50 {fig['p50_ms']:6.1f} ms   "
        f"p99 {fig['p99_ms']:6.1f} ms   max {fig['max_ms']:6.1f} ms   server CPU {fig['cpu_ms']:.2f} ms/req   "
        f"status {fig['statuses']}"
    )
    return fig


def rss_kib(pid: int) -> tuple[int, int]:
    vals = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            vals[key] = int(value.split()[0])
    return vals["VmRSS"], vals["VmHWM"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store-url", default=None, help="SQLAlchemy URL (default: a SQLite file in a temp dir)")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds per run")
    ap.add_argument("--rate", type=float, default=500.0, help="open-loop request rate")
    ap.add_argument(
        "--heartbeat-every",
        type=float,
        default=5.0,
        help="seconds between engine heartbeats (each drops every remembered health answer)",
    )
    args = ap.parse_args()

    from monitor.core.config import load_config
    from monitor.core.store import Store
    from monitor.store.migrate import upgrade
    from monitor.tenants import service
    from tests.harness.launch import serve_process

    d = Path(tempfile.mkdtemp(prefix="kh-bench-api-"))
    port = _free_port()
    cfg_path = write_config(d, port, args.store_url or f"sqlite:///{d / 'bench.db'}")
    config = load_config(cfg_path)
    store = Store(config.store.url)
    upgrade(store)
    with store.session() as s:
        service.sync_config(db_session=s, config=config, now=datetime.now(timezone.utc))
    pairs, create_s = seed(config, store)
    print(f"store: {store.safe_url()}")
    print(
        f"seeded {N_TENANTS} tenants (service.create with overlap check: {create_s:.1f} s, "
        f"{create_s / N_TENANTS * 1000:.1f} ms each), {N_TENANTS * ALERTS_PER_TENANT} alert instances"
    )

    stop = threading.Event()
    writer = threading.Thread(target=heartbeat_writer, args=(store, stop, args.heartbeat_every), daemon=True)
    writer.start()
    try:
        with serve_process(d, cfg_path, port) as pid:
            return run_load(pid, port, pairs, args)
    finally:
        stop.set()
        store.dispose()


def run_load(pid: int, port: int, pairs, args) -> int:
    rss0, _ = rss_kib(pid)
    health_jobs = [(f"/api/v1/tenants/{t}/health", tok) for t, tok in pairs]
    load(port, health_jobs, 3.0)  # warm-up
    print(
        f"\nconcurrency {CONCURRENCY}, {args.duration:.0f} s per run, loopback, {os.cpu_count()} cores shared "
        f"by server and load generator"
    )
    base = report("baseline GET /healthz (closed)", load(port, [("/healthz", None)], args.duration, pid=pid))
    closed = report("GET .../health (closed loop)", load(port, health_jobs, args.duration, pid=pid))
    opened = report(
        f"GET .../health (open, {args.rate:.0f}/s)", load(port, health_jobs, args.duration, args.rate, pid=pid)
    )
    rss, hwm = rss_kib(pid)
    print(
        f"\nserver RSS: {rss0 / 1024:.0f} MiB after start, {rss / 1024:.0f} MiB after load, peak {hwm / 1024:.0f} MiB"
    )
    print(
        f"health throughput vs /healthz baseline: {closed['rps'] / base['rps']:.2f}x; server CPU per request "
        f"{closed['cpu_ms'] / base['cpu_ms']:.2f}x the baseline's"
    )
    ok = opened["p99_ms"] < 50 and opened["rps"] >= 0.95 * args.rate and set(opened["statuses"]) == {200}
    print(
        f"target p99 < 50 ms at {args.rate:.0f} req/s: {'met' if ok else 'NOT met'} "
        f"(p99 {opened['p99_ms']:.1f} ms at {opened['rps']:.0f} req/s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
