"""``kafka-health sources [--cluster NAME] [--json]``: which catalog signals each configured source of a cluster gives,
and which none does, with what would enable it (collectors.capabilities). From the config alone: nothing is
contacted."""

from __future__ import annotations

import json

from collectors.capabilities import capability_table, configured_sources, render
from monitor.config_source import add_config_args, config_from_args
from monitor.core.errors import Invalid


def register(sub) -> None:
    p = sub.add_parser(
        "sources",
        help="the capability table: which signals each configured source of a cluster "
        "gives, and what is not observable",
    )
    p.add_argument("--cluster", default=None, help="one cluster (default: every cluster of the config)")
    p.add_argument("--json", action="store_true", help="one object per cluster: sources, and every signal's")
    add_config_args(p)
    p.set_defaults(func=_sources)


def _sources(args) -> int:
    cfg = config_from_args(args)
    clusters = [c for c in cfg.clusters if args.cluster in (None, c.name)]
    if args.cluster is not None and not clusters:
        raise Invalid(f"no cluster {args.cluster!r} in the config")
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "cluster": c.name,
                        "sources": list(configured_sources(c)),
                        "signals": [
                            {
                                "signal": s.signal,
                                "sources": list(s.sources),
                                **({} if s.observable else {"not_observable": s.hint()}),
                            }
                            for s in capability_table(c)
                        ],
                    }
                    for c in clusters
                ],
                indent=2,
            )
        )
    else:
        print("\n\n".join(render(c) for c in clusters))
    return 0
