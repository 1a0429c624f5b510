"""``kafka-health report --week 2026-W47 [--tenant T] [--master URL] [--no-cache]``: the weekly per-tenant Spark
report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from monitor.config_source import add_config_args, config_from_args
from monitor.core.times import iso_week_monday, utc_now
from monitor.store import open_store
from monitor.tenants.live import with_stored_tenants


def _week(text: str) -> str:
    """Checked when the arguments are parsed (a usage error, exit 2), not after Spark has started."""
    try:
        iso_week_monday(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def register(sub) -> None:
    p = sub.add_parser("report", help="weekly per-tenant trend report (Spark) from the Parquet lake")
    p.add_argument("--week", required=True, type=_week, help="ISO week, e.g. 2026-W47")
    p.add_argument("--tenant", default=None, help="only this tenant's report (default: every tenant + operator)")
    p.add_argument(
        "--master",
        default=None,
        help="Spark master URL, e.g. spark://host:7077 (default: reports.spark_master, local[2])",
    )
    p.add_argument("--no-index", action="store_true", help="write the reports to the lake but not the store index")
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="reduce every day from the raw lake rows; neither read "
        "nor write the cached daily reductions (lake/reduced)",
    )
    add_config_args(p)
    p.set_defaults(func=_report)


def _report(args) -> int:
    # PySpark is imported when a report runs, not at every start of the command line.
    from monitor.reports.job import run_report, spark_session

    config = config_from_args(args)
    master = args.master or config.reports.spark_master

    def progress(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    store = None if args.no_index else open_store(config.store)
    if store is not None:  # every tenant of the registry gets its report, not only the file's
        config = with_stored_tenants(config, store)
    progress(f"starting Spark ({master}) ...")
    spark = spark_session(master)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        run = run_report(
            spark,
            config,
            args.week,
            tenant=args.tenant,
            now=utc_now(),
            store=store,
            lake=Path(config.lake.path),
            use_cache=not args.no_cache,
            progress=progress,
        )
    finally:
        spark.stop()
        if store is not None:
            store.dispose()
    for name, (_rel_json, rel_html) in sorted(run.paths.items()):
        status = (run.documents.get(name) or run.operator or {}).get("status", "?")
        print(f"{name}\t{status}\t{Path(config.lake.path) / rel_html}")
    return 0
