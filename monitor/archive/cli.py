"""``kafka-health archive --from --to``: copy a time range of the archive series from Prometheus into the lake."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from monitor.archive.archive import PrometheusClient, archive_range
from monitor.config_source import add_config_args, config_from_args
from monitor.core.errors import KafkaHealthError
from monitor.core.times import as_utc, utc_now


def parse_time(text: str) -> datetime:
    """``2026-11-16`` (midnight UTC) or an ISO time; a time without zone is UTC."""
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date or ISO time: {text!r}") from None
    return as_utc(t)


def register(sub) -> None:
    p = sub.add_parser("archive", help="copy a time range from Prometheus into the Parquet lake")
    p.add_argument("--from", dest="start", type=parse_time, required=True, help="start date/time (UTC), inclusive")
    p.add_argument("--to", dest="end", type=parse_time, required=True, help="end date/time (UTC), exclusive")
    p.add_argument("--replace", action="store_true", help="re-archive days that are already complete")
    add_config_args(p)
    p.set_defaults(func=_archive)


def _archive(args) -> int:
    if args.end <= args.start:
        raise KafkaHealthError("--to must be after --from")
    config = config_from_args(args)
    client = PrometheusClient.from_settings(config.prometheus)
    lake = Path(config.lake.path)
    try:
        summary = archive_range(
            lake,
            client.query_range,
            args.start,
            args.end,
            now=utc_now(),
            replace=args.replace,
            progress=lambda m: print(m, file=sys.stderr, flush=True),
        )
    finally:
        client.close()
    print(
        f"archived {len(summary.written)} day(s), {summary.rows} rows; skipped {len(summary.skipped)} complete "
        f"day(s); lake {lake}"
    )
    return 0
