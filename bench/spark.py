"""Benchmark of the weekly report on a synthetic lake, local[2].

For each history length (default 1, 2 and 4 weeks) it generates a realistic lake (bench/gen_lake.py) and runs the
whole report (extract -> transforms -> documents -> HTML -> lake; no store index), printing wall time, rows read,
rows per second and the peak memory of the driver (JVM high-water RSS + Python max RSS).

Two baselines, measured in the same run so that a loaded machine does not fake the figures:

- the *scan floor*: one Spark aggregation over every row of the same lake (sum and count per series), the least
  any report must do. ``report / scan`` says how many full scans the report costs;
- the 1-week run: later runs are also given as ratios to it (how the time grows with history);
- with ``--compare-ref REF``, the report as written at that git ref, run on the same lake in a subprocess just
  before the current code (before/after under the same load). Only its ``run_report`` call is timed.

These runs read every day from the lake (``use_cache=False``, as before the reductions cache). ``--cache-runs N``
instead times, N times each and interleaved on one lake of ``--weeks`` weeks, what a weekly schedule sees:

- *cold*: the report of the last week with the cache off (all 35 days reduced from the raw rows);
- *fill*: the cache emptied, the report of the week before (last week's scheduled run: it caches its days);
- *warm*: the report of the last week on that cache (28 days from the cache, its own 7 from the lake, then cached);

and prints the medians, warm / cold, and whether warm and cold documents are equal.

    python bench/spark.py --brokers 100 --topics 5000 --tenants 500            # the issue's size
    python bench/spark.py --scale 0.1                                          # 10 brokers, 500 topics, 50 tenants
    python bench/spark.py --scale 0.05 --weeks 5 --cache-runs 3                # cold vs warm (cached) reports
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gen_lake import realistic
from monitor.archive import lake as lakefs
from monitor.reports.extract import week_name
from monitor.reports.job import run_report, spark_session


def _jvm_pids() -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(os.getpid())], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _hwm_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class PeakMemory:
    """Samples the driver JVM's VmHWM (it is a high-water mark already; sampling only finds the pid)."""

    def __init__(self):
        self.peak_kib = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(0.5):
            for pid in _jvm_pids():
                self.peak_kib = max(self.peak_kib, _hwm_kib(pid))

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def rows_in(lake: Path) -> int:
    total = 0
    for m in (lakefs.metrics_dir(lake) / "_markers").glob("*.json"):
        total += lakefs.read_marker(lake, date.fromisoformat(m.stem)).rows
    return total


def scan_floor(spark, lake: Path) -> float:
    """Seconds for one aggregation over every row of the lake's metrics (the floor of any report)."""
    from pyspark.sql import functions as F

    t0 = time.monotonic()
    files = [str(f) for f in lakefs.metrics_dir(lake).rglob("*.parquet")]
    spark.read.parquet(*files).groupBy("series").agg(F.sum("value"), F.count("*")).collect()
    return time.monotonic() - t0


REF_RUNNER = """
import sys, time, yaml
from datetime import datetime
sys.path.insert(0, sys.argv[1])
from monitor.core.config import Config
from monitor.reports.job import run_report, spark_session
config = Config.model_validate(yaml.safe_load(open(sys.argv[2])))
spark = spark_session("local[2]")
spark.sparkContext.setLogLevel("ERROR")
t0 = time.monotonic()
run_report(spark, config, sys.argv[3], now=datetime.fromisoformat(sys.argv[4]), lake=sys.argv[5])
print(f"REF_WALL {time.monotonic() - t0:.3f}")
spark.stop()
"""


def ref_wall(ref: str, root: Path, config, lake: Path, week: str, now: datetime) -> float:
    """Wall seconds of ``run_report`` as written at git ``ref``, on ``lake``, in a fresh process."""
    import yaml

    code = root / f"ref-{ref.replace('/', '_')}"
    if not code.exists():
        code.mkdir(parents=True)
        repo = Path(__file__).resolve().parents[1]
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", ref, "monitor", "alerts", "collectors"], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
    cfg = root / "bench-config.yaml"
    cfg.write_text(yaml.safe_dump(config.model_dump(mode="json", exclude_defaults=True)))
    done = subprocess.run(
        [sys.executable, "-c", REF_RUNNER, str(code), str(cfg), week, now.isoformat(), str(lake)],
        capture_output=True,
        text=True,
        cwd=code,
    )
    for line in done.stdout.splitlines():
        if line.startswith("REF_WALL "):
            return float(line.split()[1])
    raise SystemExit(f"the {ref} report failed:\n{done.stderr[-3000:]}")


def cache_runs(spark, config, lake: Path, end_week: date, now: datetime, runs: int) -> None:
    """Cold (no cache) against warm (cache filled by the previous week's report) reports, ``runs`` times each."""
    week, before = week_name(end_week), week_name(end_week - timedelta(days=7))
    walls: dict[str, list[float]] = {"cold": [], "fill": [], "warm": []}
    loads: list[float] = []
    equal = True

    def timed(kind: str, week_text: str, use_cache: bool):
        loads.append(os.getloadavg()[0])
        t0 = time.monotonic()
        run = run_report(
            spark,
            config,
            week_text,
            now=now,
            lake=lake,
            use_cache=use_cache,
            progress=lambda m: print("   ", m, flush=True),
        )
        walls[kind].append(time.monotonic() - t0)
        loads.append(os.getloadavg()[0])
        print(f"  {kind} #{len(walls[kind])}: {walls[kind][-1]:.1f}s (load average {loads[-1]:.1f})", flush=True)
        return run

    for _ in range(runs):
        cold = timed("cold", week, False)
        shutil.rmtree(lakefs.reduced_dir(lake), ignore_errors=True)
        timed("fill", before, True)
        warm = timed("warm", week, True)
        equal = equal and warm.documents == cold.documents and warm.operator == cold.operator
    med = {k: statistics.median(v) for k, v in walls.items()}
    every = "; ".join(f"{k} " + " ".join(f"{x:.1f}" for x in v) for k, v in walls.items())
    cached = sum(f.stat().st_size for f in lakefs.reduced_dir(lake).rglob("*.parquet"))
    print(
        f"cache: medians of {runs} run(s): cold {med['cold']:.1f}s, warm {med['warm']:.1f}s, warm / cold "
        f"{med['warm'] / med['cold']:.2f} (x{med['cold'] / med['warm']:.2f}); fill (the week before: its days "
        f"reduced and cached) {med['fill']:.1f}s",
        flush=True,
    )
    print(
        f"cache: every run (s): {every}; warm documents equal cold: {equal}; cache {cached / 2**20:.1f} MiB; "
        f"load average {min(loads):.1f} to {max(loads):.1f}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--brokers", type=int, default=100)
    p.add_argument("--topics", type=int, default=5000)
    p.add_argument("--tenants", type=int, default=500)
    p.add_argument("--scale", type=float, default=1.0, help="multiply brokers, topics and tenants")
    p.add_argument("--weeks", default="1,2,4", help="history lengths to run, comma-separated")
    p.add_argument("--week", default="2026-W47")
    p.add_argument("--dir", type=Path, default=None, help="where to put the lakes (default: a temp dir, removed)")
    p.add_argument("--master", default="local[2]")
    p.add_argument(
        "--compare-ref",
        default=None,
        help="also time the report as written at this git ref (02a3647: before reduce-then-attribute)",
    )
    p.add_argument(
        "--cache-runs",
        type=int,
        default=0,
        help="time cold (no cache) against warm (cache of the previous week's report) N times each",
    )
    a = p.parse_args(argv)
    brokers, topics, tenants = (max(1, round(x * a.scale)) for x in (a.brokers, a.topics, a.tenants))
    y, w = a.week.split("-W")
    end_week = date.fromisocalendar(int(y), int(w), 1)
    now = datetime.combine(end_week + timedelta(days=7), datetime.min.time(), tzinfo=timezone.utc)
    root = a.dir or Path(tempfile.mkdtemp(prefix="kh-bench-spark-"))
    print(f"size: {brokers} brokers, {topics} topics, {tenants} tenants; one-minute resolution; master {a.master}")
    spark = spark_session(a.master)
    spark.sparkContext.setLogLevel("ERROR")
    results = []
    try:
        for weeks in [int(x) for x in a.weeks.split(",")]:
            lake = root / f"lake-{weeks}w"
            shutil.rmtree(lake, ignore_errors=True)
            t0 = time.monotonic()
            config, _ = realistic(
                lake,
                brokers=brokers,
                topics=topics,
                tenants=tenants,
                weeks=weeks,
                end_week=end_week,
                progress=lambda _m: None,
            )
            gen = time.monotonic() - t0
            rows = rows_in(lake)
            size = sum(f.stat().st_size for f in lakefs.metrics_dir(lake).rglob("*.parquet"))
            if a.cache_runs:
                print(
                    f"weeks={weeks}: {rows:,} rows ({size / 2**20:.0f} MiB Parquet, generated in {gen:.0f}s)",
                    flush=True,
                )
                cache_runs(spark, config, lake, end_week, now, a.cache_runs)
                if a.dir is None:
                    shutil.rmtree(lake, ignore_errors=True)
                continue
            before = ref_wall(a.compare_ref, root, config, lake, week_name(end_week), now) if a.compare_ref else None
            scan = scan_floor(spark, lake)
            t0 = time.monotonic()
            with PeakMemory() as mem:
                run = run_report(
                    spark,
                    config,
                    week_name(end_week),
                    now=now,
                    lake=lake,
                    use_cache=False,
                    progress=lambda m: print("   ", m, flush=True),
                )
            wall = time.monotonic() - t0
            py_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            results.append((weeks, rows, wall, scan))
            if before is not None:
                print(
                    f"weeks={weeks}: report at {a.compare_ref}: {before:.1f}s; this code: {wall:.1f}s; "
                    f"speed-up x{before / wall:.2f} (same lake, same run)",
                    flush=True,
                )
            print(
                f"weeks={weeks}: {rows:,} rows ({size / 2**20:.0f} MiB Parquet, generated in {gen:.0f}s); "
                f"report wall {wall:.1f}s; {rows / wall:,.0f} rows/s; scan floor {scan:.1f}s "
                f"(report = {wall / scan:.2f} scans); driver JVM peak RSS "
                f"{mem.peak_kib / 1024:.0f} MiB, Python peak RSS {py_peak:.0f} MiB; "
                f"{len(run.documents)} tenant reports; load average {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            if a.dir is None:
                shutil.rmtree(lake, ignore_errors=True)
    finally:
        spark.stop()
        if a.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    if not results:
        return 0
    base_weeks, base_rows, base_wall, _ = results[0]
    for weeks, rows, wall, scan in results:
        print(
            f"weeks={weeks}: rows x{rows / base_rows:.2f}, wall x{wall / base_wall:.2f} of {base_weeks} week(s); "
            f"report / scan floor x{wall / scan:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
