"""A series cap or a round deadline that cuts data is said in the round's message, counted per cause in the
service's own metrics, and raises KafkaHealthDataDropped naming the cluster and the target.

The Admin collector runs real rounds on the fake Admin API of tests/unit/test_collectors_admin_deadline.py (5
groups of tenant alpha), every 15 s for 10 minutes; each round is scraped from the exporter as Prometheus would,
and the scraped counters are the input of ``promtool test rules`` on the exported rule file (the engine evaluates
the same PromQL).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from alerts.rules import export_prometheus, load_rules
from collectors.admin import AdminCollector
from collectors.exporter import KafkaHealthExporter, SnapshotStore
from collectors.outcome import succeeded
from collectors.types import Sample, Target
from tests.unit._deploy import tool
from tests.unit.test_collectors_admin_deadline import CLUSTER, GROUPS, TENANTS, FakeClock, SlowAdmin, values

pytestmark = pytest.mark.unit

INTERVAL = 15.0
ROUNDS = 41  # 10 minutes
JMX = Target("c1", "jmx", "broker-1", broker="1")


def _rounds(collector: AdminCollector, clock: FakeClock) -> tuple[list, dict[str, list[float]]]:
    """Every round's result, and the value of each cut counter series at every scrape (one per round)."""
    store = SnapshotStore()
    registry = CollectorRegistry()
    registry.register(KafkaHealthExporter(store, interval_seconds=INTERVAL, clock=lambda: clock.t + 1e6))
    results, scraped = [], {}
    for i in range(ROUNDS):
        now = 1e6 + i * INTERVAL
        result = collector.collect_target(collector.targets()[0], now=now)
        results.append(result)
        store.put(result)
        # a JMX target under its cap, beside it: it must not fire
        store.put(
            succeeded(
                JMX,
                [Sample("kafka_broker_up", "gauge", "h", (("cluster", "c1"),), 1.0)],
                started_at=now,
                duration=0.1,
                max_series=10,
            )
        )
        clock.t = now - 1e6
        for fam in text_string_to_metric_families(generate_latest(registry).decode()):
            for s in fam.samples:
                if s.name == "kafka_health_scrape_cut_rounds_total":
                    key = (
                        "kafka_health_scrape_cut_rounds_total{"
                        + ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                        + "}"
                    )
                    scraped.setdefault(key, []).append(s.value)
    return results, scraped


def _fired(tmp_path: Path, scraped: dict[str, list[float]], labels: dict[str, str]) -> None:
    """promtool: KafkaHealthDataDropped pending at 3 min, firing with ``labels`` at 7 min, and for nothing else."""
    rules = {r.name: r for r in load_rules()}
    rule = rules["KafkaHealthDataDropped"]
    (tmp_path / "rules.yml").write_text(export_prometheus(list(rules.values())))
    summary = (
        f"Collector {labels['collector']} leaves data of {labels['target']} ({labels['cluster']}) out: cut "
        f"by {labels['cause']}"
    )
    cases = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "15s",
        "tests": [
            {
                "interval": "15s",
                "input_series": [{"series": k, "values": " ".join(f"{v:g}" for v in vs)} for k, vs in scraped.items()],
                "alert_rule_test": [
                    {"eval_time": "3m", "alertname": "KafkaHealthDataDropped", "exp_alerts": []},
                    {
                        "eval_time": "7m",
                        "alertname": "KafkaHealthDataDropped",
                        "exp_alerts": [
                            {
                                "exp_labels": {"severity": "warning", **labels},
                                "exp_annotations": {**rule.annotations, "summary": summary},
                            }
                        ],
                    },
                ],
            }
        ],
    }
    (tmp_path / "cases.yml").write_text(yaml.safe_dump(cases, sort_keys=False))
    res = subprocess.run(
        [tool("promtool", "prometheus"), "test", "rules", "cases.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_series_cap_that_cuts_groups_is_said_counted_and_alerted(tmp_path):
    clock = FakeClock()
    collector = AdminCollector(
        CLUSTER, tenants=TENANTS, admin_factory=lambda c: SlowAdmin(clock), clock=clock, monotonic=clock, max_series=30
    )
    results, scraped = _rounds(collector, clock)
    last = results[-1]
    # the round's message says what the cap cut and the setting to raise
    assert "series cap reached" in last.message and "collection.max_series_per_target" in last.message, last.message
    # 48 series: 2 of them the brokers' request-handler threads
    assert "all series, lag too, of 2 groups" in last.message and "at least 48" in last.message
    got = values(last.samples)
    assert sorted(dict(s.labels)["group"] for s in last.samples if s.name == "kafka_consumergroup_lag") == GROUPS[:3]
    assert got[("kafka_health_admin_skipped_groups", (("cluster", "c1"),))] == 2  # the skipped groups say it too
    assert got[("kafka_health_admin_groups_cut", (("cluster", "c1"), ("cause", "series_cap")))] == 2
    assert got[("kafka_health_admin_groups_cut", (("cluster", "c1"), ("cause", "deadline")))] == 0
    # counted per cause, from 0, for every target
    assert (
        scraped[
            'kafka_health_scrape_cut_rounds_total{cause="series_cap",cluster="c1",collector="admin",target="admin"}'
        ][-1]
        == ROUNDS
    )
    assert set(
        scraped['kafka_health_scrape_cut_rounds_total{cause="deadline",cluster="c1",collector="admin",target="admin"}']
    ) == {0}
    assert set(
        scraped[
            'kafka_health_scrape_cut_rounds_total{cause="series_cap",cluster="c1",collector="jmx",target="broker-1"}'
        ]
    ) == {0}
    _fired(tmp_path, scraped, {"cluster": "c1", "collector": "admin", "target": "admin", "cause": "series_cap"})


def test_a_deadline_that_cuts_groups_is_said_counted_and_alerted(tmp_path):
    clock = FakeClock()
    admin = SlowAdmin(clock, committed=2.0)  # 10 s round: offsets of 3 groups fit before the watermarks' reserve
    collector = AdminCollector(CLUSTER, tenants=TENANTS, admin_factory=lambda c: admin, clock=clock, monotonic=clock)
    results, scraped = _rounds(collector, clock)
    last = results[-1]
    assert "round deadline of 10s reached" in last.message, last.message
    assert "consumer groups' lag not read within the round's 10s" in last.message
    assert "jmx.timeout_seconds of cluster c1" in last.message
    [cut] = last.cuts
    assert str(cut.cause) == "deadline" and cut.groups == 2
    got = values(last.samples)
    assert got[("kafka_health_admin_groups_cut", (("cluster", "c1"), ("cause", "deadline")))] == 2
    assert got[("kafka_health_admin_skipped_groups", (("cluster", "c1"),))] == 2
    _fired(tmp_path, scraped, {"cluster": "c1", "collector": "admin", "target": "admin", "cause": "deadline"})
