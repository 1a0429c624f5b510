"""``kafka-health advice --tenant T`` and ``kafka-health capacity [--cluster C] [--grow T:F] [--add N:MB:DAYS]``.

Both read the configuration every command finds (``monitor.config_source.find_config``) and its Prometheus; tenants
are the config file's and those created through the API or CLI (read from the store, never written).
"""

from __future__ import annotations

import json
import re

from monitor.advisor import service
from monitor.config_source import add_config_args, config_from_args
from monitor.core.errors import Invalid
from monitor.core.prom import prometheus_source
from monitor.core.times import utc_now
from monitor.store import open_store
from monitor.tenants.live import with_stored_tenants


def _common(p) -> None:
    p.add_argument("--json", action="store_true", help="print the JSON document the API serves")
    add_config_args(p)


def register(sub) -> None:
    a = sub.add_parser("advice", help="what a tenant's clients should change (batching, storms, rebalances...)")
    a.add_argument("--tenant", required=True)
    a.add_argument("--window", default="10m", help="look-back window (default 10m)")
    _common(a)
    a.set_defaults(func=_advice)

    c = sub.add_parser("capacity", help="storage, disk and broker plan per cluster and tenant; what-if")
    c.add_argument("--cluster", default=None, help="default: every configured cluster")
    c.add_argument("--grow", action="append", default=[], metavar="TENANT:FACTOR", help="what-if, e.g. shop:3")
    c.add_argument(
        "--add",
        action="append",
        default=[],
        metavar="NAME:MB_PER_S:DAYS[:PARTITIONS]",
        help="what-if new tenant, e.g. newco:5:7:48",
    )
    c.add_argument("--window", default="1h", help="look-back window (default 1h)")
    _common(c)
    c.set_defaults(func=_capacity)


def _setup(args):
    if not re.match(service.WINDOW, args.window):
        raise Invalid(f"expected a duration like 10m, 1h, 7d; got {args.window!r}", field="--window")
    config = config_from_args(args)
    return config, prometheus_source(config.prometheus)


def _registry(config) -> tuple:
    """Every tenant the service knows: the config file's and those created through the API or CLI (read only)."""
    store = open_store(config.store)
    try:
        return with_stored_tenants(config, store).tenants
    finally:
        store.dispose()


def _advice(args) -> int:
    config, source = _setup(args)
    tenants = _registry(config)
    tenant = next((t for t in tenants if t.name == args.tenant), None)
    if tenant is None:
        source.close()
        raise Invalid(f"no tenant {args.tenant!r} in the config or the store", field="--tenant")
    try:
        doc = service.tenant_advice(source=source, tenant=tenant, tenants=tenants, now=utc_now(), window=args.window)
    finally:
        source.close()
    print(json.dumps(doc, indent=2) if args.json else format_advice(doc))
    return 1 if any(c["status"] != "ok" for c in doc["clusters"]) else 0


# How a cluster that is not "ok" is shown (DataStatus values): never as "no findings" alone.
_NOT_OK = {"unavailable": "UNAVAILABLE", "no_data": "NO DATA"}


def format_advice(doc: dict) -> str:
    lines = [f"advice for tenant {doc['tenant']} (window {doc['window']}, as of {doc['as_of']})"]
    for c in doc["clusters"]:
        if c["status"] != "ok":
            lines.append(f"  cluster {c['cluster']}: {_NOT_OK.get(c['status'], c['status'])}: {c['message']}")
    checked = sum(c["status"] == "ok" for c in doc["clusters"])
    if not doc["findings"]:
        lines.append(
            "  no findings"
            if checked == len(doc["clusters"])
            else f"  no findings on the {checked} cluster(s) with data"
            if checked
            else "  no findings, but no cluster had data: nothing was checked"
        )
    for f in doc["findings"]:
        who = (
            f["client_id"]
            or (f"group {f['group']}" if f["group"] else "")
            or (f"suspects {', '.join(f['suspects'])}" if f["suspects"] else "cluster-wide")
        )
        user = f" (user {f['user']})" if f["user"] else ""
        lines += [
            f"- [{f['severity']}] {f['kind']} on {f['cluster']}: {who}{user}",
            f"    evidence: {json.dumps(f['evidence'])}",
            f"    from:     {', '.join(f['metrics'])}",
            f"    cause:    {f['cause']}",
            f"    change:   {f['fix']}",
        ]
    return "\n".join(lines)


def _capacity(args) -> int:
    config, source = _setup(args)
    tenants = _registry(config)
    scenario = service.parse_scenario(args.grow, args.add)
    names = [c.name for c in config.clusters]
    if args.cluster and args.cluster not in names:
        raise Invalid(f"no cluster {args.cluster!r} in the config", field="--cluster")
    docs = []
    try:
        for cluster in [args.cluster] if args.cluster else names:
            docs.append(
                service.cluster_capacity(
                    source=source,
                    cluster=cluster,
                    tenants=tenants,
                    now=utc_now(),
                    window=args.window,
                    scenario=scenario,
                )
            )
    finally:
        source.close()
    print(json.dumps(docs, indent=2) if args.json else "\n".join(format_capacity(d) for d in docs))
    return 1 if any(d["status"] != "ok" for d in docs) else 0


def _bytes(v) -> str:
    if v is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(v) < 1024 or unit == "TiB":
            return f"{v:.1f} {unit}"
        v /= 1024


def _when(seconds) -> str:
    if seconds is None:
        return "never at this rate"
    return "now" if seconds <= 0 else f"in {seconds / 86400:.1f} days"


def _times(v) -> str:
    return "unknown" if v is None else f"x{v}"


def format_capacity(doc: dict) -> str:
    if doc["status"] != "ok":
        return f"cluster {doc['cluster']}: {_NOT_OK.get(doc['status'], doc['status'])}: {doc['message']}"
    out = []
    for title, p in (("plan", doc["plan"]), ("what-if", doc["what_if"])):
        if p is None:
            continue
        missing = p["missing"]
        # A constraint whose input is missing is left out of brokers_needed: the others give a lower bound.
        at_least = "at least " if missing.keys() - {"topics"} else ""
        out.append(
            f"cluster {doc['cluster']} {title} (window {doc['window']}), replication factor "
            f"{p['replication_factor']}: brokers {p['brokers']}, required {at_least}{p['brokers_required']} "
            f"{p['brokers_needed']}"
        )
        full = "unknown" if "disk_size" in missing else _when(p["disk_full_in_seconds"])
        out.append(
            f"  disk: {_bytes(p['disk_used_bytes'])} used of {_bytes(p['disk_total_bytes'])}, steady state "
            f"{_bytes(p['steady_storage_bytes'])}, {p['limits']['max_disk_fill']:.0%} full {full}"
        )
        out.append(
            f"  partitions/broker max {p['partitions_per_broker_max']} (limit "
            f"{p['limits']['max_partitions_per_broker']}), leaders/broker max {p['leaders_per_broker_max']} "
            f"(limit {p['limits']['max_leaders_per_broker']}); thread headroom "
            f"{_times(p['handler_headroom'])} handler, {_times(p['network_headroom'])} network"
        )
        out += [f"  {why}" for why in missing.values()]
        for t in p["tenants"]:
            out.append(
                f"  tenant {t['tenant']}: {_bytes(t['bytes_in_per_second'])}/s in, "
                f"{_bytes(t['stored_bytes'])} stored, steady {_bytes(t['steady_storage_bytes'])} "
                f"(retention {t['retention_seconds'] / 86400:.1f} d), budget {_bytes(t['budget_bytes'])} "
                f"full {_when(t['budget_full_in_seconds']) if t['budget_bytes'] else '-'}"
            )
    return "\n".join(out)
