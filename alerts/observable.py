"""Rule inputs no configured source of a cluster can give: said once as "not observable on this cluster: enable X",
never paged as no data (collectors.capabilities decides from the config which source gives which signal).

The engine's no-data check finds a rule input without series on a cluster; ``split`` takes out those the cluster's
sources cannot give at all (a protocol-only cluster has no broker JMX: KafkaRequestHandlerSaturation's idle ratio is
not "missing", it is not observable there). What stays is real no data: a source that is configured and silent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from alerts.types import Observation
from collectors.capabilities import unobservable
from monitor.core.config import ClusterConfig, Config

log = logging.getLogger(__name__)


@dataclass
class NotObservable:
    """Per (cluster, rule, input) the hint, logged once per process when first met."""

    said: set[tuple[str, str, str]] = field(default_factory=set)

    def split(self, config: Config, missing: list[Observation]) -> tuple[list[Observation], dict[str, str]]:
        """(the no-data observations to keep, rule -> "not observable on this cluster ...: enable X" for the rules
        whose missing input no source of that cluster can give)."""
        clusters = {c.name: c for c in config.clusters}
        cache: dict[str, dict[str, str]] = {}
        keep: list[Observation] = []
        why: dict[str, str] = {}
        for o in missing:
            cluster = clusters.get(o.labels.get("cluster", ""))
            metric = o.labels.get("metric", "")
            if cluster is None:
                keep.append(o)
                continue
            if cluster.name not in cache:
                cache[cluster.name] = unobservable(cluster, {m.labels.get("metric", "") for m in missing})
            hint = cache[cluster.name].get(metric)
            if hint is None:
                keep.append(o)
                continue
            rule = o.labels.get("rule", "")
            why[rule] = f"{metric} not observable on cluster {cluster.name}: {hint}"
            key = (cluster.name, rule, metric)
            if key not in self.said:
                self.said.add(key)
                log.warning("rule %s: %s", rule, why[rule])
        return keep, why

    @staticmethod
    def observable(cluster: ClusterConfig, metrics: list[str]) -> list[str]:
        """``metrics`` less those no source of ``cluster`` can give."""
        gone = unobservable(cluster, metrics)
        return [m for m in metrics if m not in gone]
