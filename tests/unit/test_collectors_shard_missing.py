"""A dead collector shard is named (issue 31, item 4): every ``CollectionService`` exports which shard it is and which
shards there should be; ``KafkaHealthCollectorShardMissing`` (exported rule file, evaluated by ``promtool test rules``
as Prometheus and the engine evaluate its PromQL) names the index no process exports.

Input: the real expositions of shards 0/3, 1/3 and 2/3 as Prometheus scrapes them (its ``job``/``instance`` labels
added); shard 1's process dies after 1 minute, so its series stop (stale), as when its target stays listed or its
pod's DNS record goes away.
"""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from alerts.rules import export_prometheus, load_rules
from collectors.component import CollectionService
from monitor.core.config import parse_config
from tests.unit._deploy import promtool_cases
from tests.unit.test_collectors_shard_lease import ScriptedLease

pytestmark = pytest.mark.unit
RULE = "KafkaHealthCollectorShardMissing"


def _scrape(shard: str, *, standby: bool = False) -> dict[str, float]:
    """The shard series of a collector process with ``--shard shard``, labelled as Prometheus stores them;
    ``standby``: a second process of the shard (``collection.shard_lease``) that another process's lease keeps out."""
    config = parse_config("collection: {shard: 'SHARD'}\n".replace("SHARD", shard))
    registry = CollectorRegistry()
    svc = CollectionService(config, registry=registry, collectors=[], lease=ScriptedLease(False) if standby else None)
    svc.take_turn()
    out = {}
    for fam in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in fam.samples:
            if s.name.startswith("kafka_health_collector_shard_"):
                pod = f"collector-{shard[0]}{'-standby' if standby else ''}:8090"
                labels = {**s.labels, "job": "kafka-health-collector", "instance": pod}
                out[s.name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"] = s.value
    return out


def _promtool(tmp_path, input_series: list[dict], checks: list[dict]) -> None:
    (tmp_path / "rules.yml").write_text(export_prometheus(load_rules()))
    test = {"interval": "15s", "input_series": input_series, "alert_rule_test": checks}
    cases = {"rule_files": ["rules.yml"], "evaluation_interval": "15s", "tests": [test]}
    res = promtool_cases(tmp_path, cases)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_dead_shard_is_named_after_two_minutes_and_a_full_set_names_none(tmp_path):
    rule = next(r for r in load_rules() if r.name == RULE)
    series = []
    for shard in ("0/3", "1/3", "2/3"):
        for name, value in _scrape(shard).items():
            # 20 minutes of scrapes every 15 s; shard 1 dies after 1 minute: its series go stale
            values = f"{value:g}x4 stale" if shard == "1/3" else f"{value:g}x80"
            series.append({"series": name, "values": values})
    firing = {
        "exp_labels": {"severity": "critical", "shard": "1"},
        "exp_annotations": {**rule.annotations, "summary": "Collector shard 1 is missing: its targets are not scraped"},
    }
    _promtool(
        tmp_path,
        series,
        [
            {"eval_time": "45s", "alertname": RULE, "exp_alerts": []},  # all three up
            {"eval_time": "2m", "alertname": RULE, "exp_alerts": []},  # missing for 45 s: pending
            {"eval_time": "4m", "alertname": RULE, "exp_alerts": [firing]},  # missing for 2 m 45 s
        ],
    )


def test_a_single_collector_process_expects_only_itself():
    assert sorted(_scrape("0/1").values()) == [1.0, 1.0]
    names = "".join(_scrape("0/1"))
    assert (
        'kafka_health_collector_shard_expected{instance="collector-0:8090",job="kafka-health-collector",shard="0"}'
        in names
    )
    assert 'shard="0",shards="1"' in names


@pytest.mark.parametrize("takes_over", [False, True])
def test_a_standby_is_not_the_shard_until_it_takes_over(tmp_path, takes_over):
    """Shards 0/2 and 1/2 with a standby for shard 1 (``collection.shard_lease``); shard 1's holder dies after 1
    minute. A standby that never takes over (it cannot reach the lease's row, say) must not pass for the shard: the
    alert names shard 1 as if there were no standby. One that takes over (1 m 15 s) exports the shard: no alert."""
    series = []
    for shard in ("0/2", "1/2"):
        for name, value in _scrape(shard).items():
            series.append({"series": name, "values": f"{value:g}x4 stale" if shard == "1/2" else f"{value:g}x80"})
    standby, active = _scrape("1/2", standby=True), _scrape("1/2")
    assert not any(n.startswith("kafka_health_collector_shard_up") for n in standby), standby
    for name, value in standby.items():
        series.append({"series": name, "values": f"{value:g}x80"})
    if takes_over:
        up = next(n for n in active if n.startswith("kafka_health_collector_shard_up"))
        series.append({"series": up.replace("collector-1:", "collector-1-standby:"), "values": "_x5 1x75"})
    firing = [{"exp_labels": {"severity": "critical", "shard": "1"}}] if not takes_over else []
    for alert in firing:
        rule = next(r for r in load_rules() if r.name == RULE)
        alert["exp_annotations"] = {
            **rule.annotations,
            "summary": "Collector shard 1 is missing: its targets are not scraped",
        }
    _promtool(tmp_path, series, [{"eval_time": "4m", "alertname": RULE, "exp_alerts": firing}])
