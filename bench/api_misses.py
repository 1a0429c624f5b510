"""Benchmark: what the health answers cost after one engine evaluation, per tenant, in-process (no HTTP, no load
generator, so it holds on a busy machine): bench/api.py's store (1,000 tenants, 10,000 alert instances, 60 % firing).

Each round writes new heartbeats (a new evaluation), refreshes the store watch (timed: the marks and, since 244cfb9,
every firing instance in one query), then computes every tenant's answer three ways, CPU time (``process_time``):

1. **store**: a miss as before 244cfb9, the thread path's function (``_tenant_health_json``: the tenant's heartbeats
   and firing instances read from the store, assessed, serialized), without the thread hop;
2. **memory, assessed**: from the watch's firing instances, assessed and serialized (a tenant whose alerts changed);
3. **memory, re-stamped**: from the watch's firing instances when nothing of the tenant changed but the time.

Prints the median per tenant of each over ``--rounds`` and the ratios to the store path. Prometheus is not running:
its parts are remembered as unknown, as in bench/api.py. The store path's CPU time leaves out the time waiting for the
store (on PostgreSQL, two round trips per tenant). Run: ``python bench/api_misses.py [--rounds 5] [--store-url URL]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--store-url", default=None, help="an empty database's SQLAlchemy URL (default: a SQLite file)")
    args = ap.parse_args()

    import api as bench  # bench/api.py: the same store

    from alerts.models import EngineHeartbeat
    from monitor.core.config import load_config
    from monitor.core.store import Store
    from monitor.health import views
    from monitor.health.share_groups import ShareGroupBoard
    from monitor.health.slo import SloBoard
    from monitor.health.streams_groups import StreamsGroupBoard
    from monitor.health.watch import AnswerMemo, StoreWatch
    from monitor.store.migrate import upgrade
    from monitor.tenants import service

    d = Path(tempfile.mkdtemp(prefix="kh-bench-misses-"))
    config = load_config(bench.write_config(d, 1, args.store_url or f"sqlite:///{d / 'bench.db'}"))
    store = Store(config.store.url)
    upgrade(store)
    with store.session() as s:
        service.sync_config(db_session=s, config=config, now=datetime.now(timezone.utc))
    names = [name for name, _ in bench.seed(config, store)[0]]

    class State:  # what the route reads of app.state
        pass

    state = State()
    state.config, state.store, state.health_memo = config, store, AnswerMemo()
    state.store_watch = StoreWatch(store)
    ttl = 3600.0  # Prometheus is down: its parts are remembered as unknown for the whole run
    state.slo_board, state.share_board, state.streams_board = (
        SloBoard(ttl=ttl),
        ShareGroupBoard(ttl=ttl),
        StreamsGroupBoard(ttl=ttl),
    )
    boards = (state.slo_board, state.share_board, state.streams_board)

    walls: dict[str, list[float]] = {}

    def cpu(fn, label: str = "") -> float:
        """``fn``'s CPU time; its wall time (with the store's round trips) kept under ``label``."""
        t0, w0 = time.process_time(), time.perf_counter()
        fn()
        walls.setdefault(label, []).append(time.perf_counter() - w0)
        return time.process_time() - t0

    def store_path(marks, now) -> None:
        for n in names:
            views._tenant_health_json(store, AnswerMemo(), n, marks, config, now, *boards)

    def memory(marks, now) -> None:
        for n in names:
            assert views._from_memory(state, n, marks, config, now) is not None

    rows: dict[str, list[float]] = {
        "watch refresh (ms)": [],
        "store": [],
        "memory, assessed": [],
        "memory, re-stamped": [],
    }
    marks = state.store_watch.refresh()
    now = datetime.now(timezone.utc)
    for n in names:  # Prometheus asked once (unreachable: remembered), every definition and answer remembered
        views._tenant_health_json(store, state.health_memo, n, marks, config, now, *boards)
    memory(marks, now)  # remembered from the watch's rows: the base the first round re-stamps
    for _ in range(args.rounds):
        with store.session() as s:
            for c in bench.CLUSTERS:
                s.merge(EngineHeartbeat(cluster=c, evaluated_at=datetime.now(timezone.utc), data_ok=True, detail=""))
        now = datetime.now(timezone.utc)
        holder = {}
        rows["watch refresh (ms)"].append(cpu(lambda: holder.update(m=state.store_watch.refresh())) * 1000)
        marks = holder["m"]
        rows["store"].append(cpu(lambda: store_path(marks, now), "store") / len(names))
        rows["memory, re-stamped"].append(cpu(lambda: memory(marks, now), "memory, re-stamped") / len(names))
        kept, state.health_memo = state.health_memo, AnswerMemo()  # nothing to re-stamp: every answer assessed
        for n in names:  # the definitions remembered, as they are between registry changes
            state.health_memo.input(n, marks, lambda n=n: kept.known_input(n, marks)[1])
        rows["memory, assessed"].append(cpu(lambda: memory(marks, now), "memory, assessed") / len(names))
        state.health_memo = kept
        memory(marks, now)  # the re-stamp base for the next round
    store.dispose()
    base = statistics.median(rows["store"])
    print(f"store: {store.safe_url()}; {len(names)} tenants, {args.rounds} evaluations; CPU time, median of the rounds")
    refresh, refresh_wall = statistics.median(rows["watch refresh (ms)"]), statistics.median(walls[""]) * 1000
    print(
        f"watch refresh after an evaluation (marks + every firing instance): {refresh:.1f} ms ({refresh_wall:.1f} wall)"
    )
    for label in ("store", "memory, assessed", "memory, re-stamped"):
        m = statistics.median(rows[label])
        print(
            f"{label:<22} {m * 1e6:8.1f} us per tenant   {base / m:6.1f}x the store path   "
            f"(wall {statistics.median(walls[label]) / len(names) * 1e6:.1f} us)   rounds: "
            + ", ".join(f"{x * 1e6:.0f}" for x in rows[label])
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
