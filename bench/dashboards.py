"""Cost of the dashboards: rendering them, and what opening each one costs Prometheus.

    /work/venv/bin/python bench/dashboards.py [--runs 5] [--port-base 19600] [--warmup 120] [--render-only]

render: median time to render all dashboards to JSON (what `kafka-health dashboards build` does).
open:   starts the local stack, the service (collector role) and the demo load, waits --warmup seconds, then per
        dashboard runs every panel query as Grafana does on opening it (query_range over the last hour, step 15 s)
        and prints the median wall time per dashboard, and its ratio to a baseline page of as many `up` queries
        (the same HTTP round trips, a trivial PromQL), so the figure is about the queries, not the machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from dashboards.boards import ALL
from dashboards.build import render_all
from dashboards.promql import substitute

VARIABLES = {
    "cluster": ".*",
    "broker": ".*",
    "tenant": ".*",
    "__rate_interval": "1m",
    "__interval": "15s",
    "__range": "1h",
}


def bench_render(runs: int) -> None:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        render_all()
        times.append(time.perf_counter() - t0)
    panels = sum(len(b.panels()) for b in ALL)
    print(
        f"render: {len(ALL)} dashboards, {panels} panels: median {statistics.median(times) * 1000:.1f} ms "
        f"over {runs} runs"
    )


def _page(prom: httpx.Client, exprs: list[str]) -> float:
    end = time.time()
    t0 = time.perf_counter()
    for expr in exprs:
        r = prom.get("/api/v1/query_range", params={"query": expr, "start": end - 3600, "end": end, "step": 15})
        r.raise_for_status()
    return time.perf_counter() - t0


def bench_open(runs: int, port_base: int, warmup: float) -> None:
    import uvicorn

    from monitor.demo.story import DEMO_LOAD, DEMO_TENANTS
    from monitor.loadgen import LoadGenerator
    from monitor.serve import build_app
    from monitor.stack import Stack, StackLayout

    stack = Stack(
        StackLayout(dir=Path(tempfile.mkdtemp(prefix="kh-bench-dash-")), port_base=port_base), log=lambda *_: None
    )
    stack.up(timeout=300)
    server = uvicorn.Server(
        uvicorn.Config(
            build_app(stack.config(tenants=DEMO_TENANTS), ("collector",)),
            host="127.0.0.1",
            port=stack.layout.service_port,
            log_level="warning",
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    load = LoadGenerator(stack.layout.bootstrap_servers, DEMO_LOAD)
    try:
        thread.start()
        load.start()
        time.sleep(warmup)
        prom = httpx.Client(base_url=stack.layout.prometheus_url, timeout=30)
        print(f"open (query_range 1h, step 15s, all clusters/brokers/tenants, {warmup:.0f}s of data, {runs} runs):")
        for board in ALL:
            exprs = [substitute(q.expr, VARIABLES) for p in board.panels() for q in p.queries]
            base = [_page(prom, ["up"] * len(exprs)) for _ in range(runs)]
            real = [_page(prom, exprs) for _ in range(runs)]
            print(
                f"  {board.uid:24s} {len(exprs):3d} queries: median {statistics.median(real) * 1000:7.1f} ms, "
                f"baseline {statistics.median(base) * 1000:6.1f} ms, "
                f"ratio {statistics.median(real) / statistics.median(base):4.1f}x"
            )
        prom.close()
    finally:
        load.stop()
        server.should_exit = True
        thread.join(timeout=15)
        stack.down()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--port-base", type=int, default=19600)
    ap.add_argument("--warmup", type=float, default=120.0)
    ap.add_argument("--render-only", action="store_true")
    args = ap.parse_args()
    bench_render(args.runs)
    if not args.render_only:
        bench_open(args.runs, args.port_base, args.warmup)


if __name__ == "__main__":
    main()
