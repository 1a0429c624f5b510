"""False alarms of the full alert catalog over healthy demo load and a zoo of real clients (target: zero).

    .venv/bin/python bench/false_alarms.py --minutes 30 [--rolling-restart-at 15] [--dir /tmp/fa-stack]
                                           [--port-base 21000] [--no-zoo]

Starts the local stack (or reuses one already running in --dir), the demo's two tenants with their producer and
consumer load, the real collectors (scraped by the stack's Prometheus) and the alert engine with the built-in
catalog and default thresholds, evaluated every ``rules.evaluation_interval_seconds`` as `serve --role alerts`
does, delivering to the stack's Alertmanager. Nothing is broken on purpose; routine work is done as operators do
it: at ``--rolling-restart-at`` minutes (default half-way, 0: none) a rolling restart of every broker (each one
SIGTERM, start, partitions back in sync before the next), which must page nothing. At the end it prints every
alert that fired other than the watchdog (each firing transition counts once), rules that erred, and alerts that
went pending but never fired (near misses, for information). Exit status 1 when something fired.

The client zoo (bench/client_zoo.py, issue 28; ``--no-zoo`` leaves it out): beside the demo load, good clients of
Java, confluent-kafka, kcat, kafkajs and franz-go, well configured or on their defaults at modest rates, and the
known-bad ones (one record a request), the demo story's payments-batch-import among them. With it the alert engine
runs KafkaClientHurtsOtherTenants as ``make demo`` ships it (window 2m, for 30s: monitor/demo/story.py), and the
advisor is read every 30 s on that window. It prints the alerts naming a good client (pending or firing: must be 0)
and findings that page naming one (must be 0), and for each bad client the time from its start to the first finding
naming it, to the alert naming it pending and firing, or "never" (a finding below the material cost is advice at
info and pages nobody: its requests per second are printed). Exit status 1 also when a good client was named.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client import CollectorRegistry

from alerts.component import AlertService
from alerts.types import AlertState
from bench import client_zoo
from monitor import serve
from monitor.core.store import Store
from monitor.demo.story import DEMO_LOAD, DEMO_TENANTS, with_story_rule
from monitor.loadgen import LoadGenerator
from monitor.stack import Stack, StackLayout
from monitor.store.migrate import upgrade
from tests.harness.faults import rolling_restart

WATCHDOG = "KafkaHealthWatchdog"


def _key(inst) -> str:
    skip = {"alertname", "severity", "cluster"}
    return inst.rule + "{" + ",".join(f"{k}={v}" for k, v in sorted(inst.labels.items()) if k not in skip) + "}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "kafka-health-false-alarms")
    ap.add_argument("--port-base", type=int, default=21000)
    ap.add_argument(
        "--rolling-restart-at",
        type=float,
        default=None,
        help="minutes into the run for a rolling restart of all brokers (default: half-way; 0: none)",
    )
    ap.add_argument("--no-zoo", action="store_true", help="the demo load only, without the client zoo")
    args = ap.parse_args()
    restart_at = args.minutes / 2 if args.rolling_restart_at is None else args.rolling_restart_at

    stack = Stack(StackLayout(dir=args.dir, port_base=args.port_base), log=lambda *_: None)
    already_up = all(s.healthy for s in stack.status())
    if not already_up:
        print(f"starting the stack in {args.dir} ...", flush=True)
        stack.up(timeout=240)
    tmp = Path(tempfile.mkdtemp(prefix="false-alarms-"))
    tenants = DEMO_TENANTS if args.no_zoo else (*DEMO_TENANTS, *client_zoo.tenants())
    config = stack.config(tenants=tenants, store_url=f"sqlite:///{tmp / 'alerts.db'}")
    if not args.no_zoo:  # KafkaClientHurtsOtherTenants as make demo ships it
        config = with_story_rule(config, tmp)
    store = Store(config.store.url)
    upgrade(store)
    load = LoadGenerator(stack.layout.bootstrap_servers, DEMO_LOAD)
    stop = threading.Event()
    collector = threading.Thread(
        target=serve.run,
        args=(config, ("collector",), "127.0.0.1", stack.layout.service_port),
        kwargs={"stop_event": stop},
        name="collector",
        daemon=True,
    )
    fired: collections.Counter[str] = collections.Counter()
    evidence: dict[str, dict] = {}
    pending_only: set[str] = set()
    errors: collections.Counter[str] = collections.Counter()
    seen_firing: set[tuple[str, object]] = set()
    cycles = 0
    restarts: dict = {}
    zoo = contextlib.ExitStack()
    blame: client_zoo.Blame | None = None
    next_advice = 0.0

    def restart_all() -> None:  # routine work, beside the load: every broker in turn
        t0 = time.monotonic()
        try:
            restarts["took"] = rolling_restart(stack)
        except Exception as exc:  # noqa: BLE001 - reported with the figures
            restarts["error"] = repr(exc)
        restarts["seconds"] = time.monotonic() - t0

    restarter = threading.Timer(restart_at * 60, restart_all) if restart_at > 0 else None
    try:
        load.start()
        collector.start()
        if not args.no_zoo:
            started = zoo.enter_context(client_zoo.running(stack.layout.bootstrap_servers, tmp / "zoo"))
            blame = client_zoo.Blame(client_zoo.good_client_ids(), client_zoo.bad_client_ids(), started)
            print(f"client zoo: {len(started)} clients started (logs in {tmp / 'zoo'})", flush=True)
        svc = AlertService(config, store=store, registry=CollectorRegistry())
        interval = config.rules.evaluation_interval_seconds
        deadline = time.monotonic() + args.minutes * 60
        print(
            f"healthy demo load, full catalog every {interval:.0f}s for {args.minutes:g} min"
            + (f", a rolling restart at {restart_at:g} min" if restarter else "")
            + " ...",
            flush=True,
        )
        if restarter:
            restarter.daemon = True
            restarter.start()
        while time.monotonic() < deadline:
            t0 = time.monotonic()
            result = svc.run_once()
            cycles += 1
            if result is not None:
                for name, st in result.rules.items():
                    if st.health.value == "err":
                        errors[name] += 1
                for inst in result.instances.values():
                    if inst.rule == WATCHDOG:
                        continue
                    key = _key(inst)
                    if inst.state is AlertState.FIRING and (key, inst.fired_at) not in seen_firing:
                        seen_firing.add((key, inst.fired_at))
                        fired[key] += 1
                        evidence[key] = inst.evidence
                        print(f"  fired: {key} evidence={inst.evidence}", flush=True)
                    elif inst.state is AlertState.PENDING:
                        pending_only.add(key)
                if blame is not None:
                    blame.alerts(result.instances.values(), time.monotonic())
            if blame is not None and time.monotonic() >= next_advice:
                next_advice = time.monotonic() + 30
                blame.advice(stack.layout.prometheus_url, tenants, time.monotonic())
            time.sleep(max(0.0, interval - (time.monotonic() - t0)))
    finally:
        if restarter:
            restarter.cancel()
            restarter.join(600)
        zoo.close()
        stop.set()
        load.stop()
        collector.join(15)
        if not already_up:
            stack.down()

    print(
        f"\n{cycles} cycles over {args.minutes:g} min; produced {sum(load.produced.values())}, "
        f"consumed {sum(load.consumed.values())} messages"
    )
    if restarter:
        took = ", ".join(f"{t:.0f}" for t in restarts.get("took", []))
        print(
            f"rolling restart at {restart_at:g} min: "
            + (
                f"failed: {restarts['error']}"
                if "error" in restarts
                else f"brokers restarted in {took} s, {restarts.get('seconds', 0):.0f} s in all"
            )
        )
    print(f"false alarms (fired, other than {WATCHDOG}): {sum(fired.values())}")
    for key, n in fired.most_common():
        print(f"  {n:3d}  {key}")
    if errors:
        print("rules that erred (cycles): " + ", ".join(f"{k}={v}" for k, v in errors.most_common()))
    near = sorted(pending_only - set(fired))
    if near:
        print("pending but never fired: " + ", ".join(near))
    good = True
    if blame is not None:
        lines, good = blame.report()
        print("\n".join(lines))
    return 1 if fired or not good else 0


if __name__ == "__main__":
    sys.exit(main())
