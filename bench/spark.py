"""Benchmark of the weekly report on a synthetic lake, local[2].

For each history length (default 1, 2 and 4 weeks) it generates a realistic lake (bench/gen_lake.py) and runs the
whole report (extract -> transforms -> documents -> HTML -> lake; no store index), printing wall time, rows read,
rows per second and the peak memory of the driver (JVM high-water RSS + Python max RSS). The 1-week run is the
baseline: later runs are also given as ratios to it.

    python bench/spark.py --brokers 100 --topics 5000 --tenants 500            # the issue's size
    python bench/spark.py --scale 0.1                                          # 10 brokers, 500 topics, 50 tenants
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gen_lake import realistic  # noqa: E402
from monitor.archive import lake as lakefs  # noqa: E402
from monitor.reports.extract import week_name  # noqa: E402
from monitor.reports.job import run_report, spark_session  # noqa: E402


def _jvm_pids() -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(__import__("os").getpid())], capture_output=True, text=True).stdout
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
            config, _ = realistic(lake, brokers=brokers, topics=topics, tenants=tenants, weeks=weeks,
                                  end_week=end_week, progress=lambda _m: None)
            gen = time.monotonic() - t0
            rows = rows_in(lake)
            size = sum(f.stat().st_size for f in lakefs.metrics_dir(lake).rglob("*.parquet"))
            t0 = time.monotonic()
            with PeakMemory() as mem:
                run = run_report(spark, config, week_name(end_week), now=now, lake=lake,
                                 progress=lambda m: print("   ", m, flush=True))
            wall = time.monotonic() - t0
            py_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            results.append((weeks, rows, wall))
            print(f"weeks={weeks}: {rows:,} rows ({size / 2**20:.0f} MiB Parquet, generated in {gen:.0f}s); "
                  f"report wall {wall:.1f}s; {rows / wall:,.0f} rows/s; driver JVM peak RSS "
                  f"{mem.peak_kib / 1024:.0f} MiB, Python peak RSS {py_peak:.0f} MiB; "
                  f"{len(run.documents)} tenant reports", flush=True)
            if a.dir is None:
                shutil.rmtree(lake, ignore_errors=True)
    finally:
        spark.stop()
        if a.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    base_weeks, base_rows, base_wall = results[0]
    for weeks, rows, wall in results:
        print(f"ratio to {base_weeks} week(s): rows x{rows / base_rows:.2f}, wall x{wall / base_wall:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
