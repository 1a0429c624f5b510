"""Failover of the alert engine (issue 31) on a real PostgreSQL store: how long after the active engine stops (no
release: what kill -9 or a freeze leaves) a standby takes over, against the evaluation interval; and what the lease
costs each cycle (ratio to the same cycle without it).

    .venv/bin/python bench/failover.py --store-url postgresql+psycopg://kh@127.0.0.1:PORT/postgres \
        [--interval 2] [--reps 3] [--cycles 30]

The two engines are ``AlertService`` loops in this process (their real threads, their own lease holders and
connections) fed by an in-memory source with one broker down (one firing instance for one tenant, a local webhook
receiver); "killing" the active one stops its thread without giving the lease up. Prints the median of ``--reps``
takeovers in seconds and in intervals, and the median wall time of a cycle with and without the lease.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client import CollectorRegistry

from alerts.component import AlertService
from monitor.core.store import Base, Store
from monitor.core.times import utc_now
from monitor.schema import create_all
from tests.integration.alerts_helpers import ScriptedSource, WebhookReceiver
from tests.integration.test_alerts_restart import _config


def _services(store: Store, url: str, hook: WebhookReceiver, interval: float, tmp: Path) -> list[AlertService]:
    config = _config(tmp, hook.url, url)
    config = config.model_copy(
        update={"rules": config.rules.model_copy(update={"evaluation_interval_seconds": interval})}
    )
    src = ScriptedSource()
    src.down = {"2"}
    return [AlertService(config, store=store, registry=CollectorRegistry(), source=src) for _ in range(2)]


def failover(store: Store, url: str, hook: WebhookReceiver, interval: float, tmp: Path) -> float:
    """Seconds from the stop of the active engine to the standby's takeover."""
    a, b = _services(store, url, hook, interval, tmp)
    a.start()
    while a.role != "active":
        time.sleep(0.01)
    b.start()
    time.sleep(2.5 * interval)
    active, standby = (a, b) if a.role == "active" else (b, a)
    active._stop.set()  # killed: its thread ends, the lease is not released
    if active._thread is not None:
        active._thread.join()
    killed = time.monotonic()
    while standby.role != "active":
        time.sleep(0.01)
    took = time.monotonic() - killed
    standby.stop()
    return took


def cycle_cost(store: Store, url: str, hook: WebhookReceiver, cycles: int, tmp: Path) -> tuple[float, float]:
    """Median seconds of ``run_once`` with the lease, and with it held trivially (no lease statements)."""
    svc, _ = _services(store, url, hook, 15.0, tmp)
    out = []
    for trivially in (False, True):
        if trivially:
            svc.lease.shared, svc.lease.epoch = False, 0
        times = []
        for _ in range(cycles):
            t0 = time.perf_counter()
            svc.run_once(utc_now())
            times.append(time.perf_counter() - t0)
        out.append(statistics.median(times))
    return out[0], out[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store-url", required=True, help="a PostgreSQL database the bench may wipe")
    ap.add_argument("--interval", type=float, default=2.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cycles", type=int, default=30)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/kh-failover"))
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    store = Store(args.store_url)
    hook = WebhookReceiver().start()
    try:
        takes = []
        for _ in range(args.reps):
            Base.metadata.drop_all(store.engine)
            create_all(store)
            takes.append(failover(store, args.store_url, hook, args.interval, args.dir))
        med = statistics.median(takes)
        print(
            f"failover after the active engine stopped: median {med:.2f} s = {med / args.interval:.2f} intervals "
            f"(interval {args.interval} s; each: {', '.join(f'{t:.2f}' for t in takes)})"
        )
        Base.metadata.drop_all(store.engine)
        create_all(store)
        with_lease, without = cycle_cost(store, args.store_url, hook, args.cycles, args.dir)
        print(
            f"cycle with the lease: median {with_lease * 1000:.1f} ms; without: {without * 1000:.1f} ms; "
            f"ratio {with_lease / without:.2f}"
        )
    finally:
        hook.stop()
        store.dispose()


if __name__ == "__main__":
    main()
