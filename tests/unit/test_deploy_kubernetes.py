"""deploy/kubernetes: every manifest validates against the Kubernetes schemas (kubernetes-validate, strict), and
the parts that must agree do: the config parses as a kafka-health config, shards match replicas, Services select
pods, and secrets only come from the Secret."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml

from monitor.core.config import parse_config
from tests.unit._deploy import DEPLOY

pytestmark = pytest.mark.unit

K8S = DEPLOY / "kubernetes"
KUBERNETES_VERSION = "1.31.0"  # apps.kubernetes.io/pod-index (shard ordinal) needs >= 1.28
FILES = sorted(K8S.glob("*.yaml"))


def _docs() -> list[dict]:
    return [d for f in FILES for d in yaml.safe_load_all(f.read_text()) if d]


def _by_kind(kind: str) -> list[dict]:
    return [d for d in _docs() if d["kind"] == kind]


def test_kubernetes_validate_strict():
    pytest.importorskip("kubernetes_validate")
    res = subprocess.run(
        [sys.executable, "-m", "kubernetes_validate", "--strict", "-k", KUBERNETES_VERSION, *map(str, FILES)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("passed") == len(_docs())


def test_configmap_is_a_valid_kafka_health_config(monkeypatch):
    secret = _by_kind("Secret")[0]
    for key in secret["stringData"]:
        monkeypatch.setenv(key, "x")  # as envFrom provides them
    config = parse_config(_by_kind("ConfigMap")[0]["data"]["config.yaml"], "10-config.yaml")
    assert config.service.host == "0.0.0.0" and config.service.port == 8080
    refs = re.findall(r"env: (KAFKA_HEALTH_[A-Z0-9_]+)", _by_kind("ConfigMap")[0]["data"]["config.yaml"])
    assert refs and set(refs) <= set(secret["stringData"]), "every {env: ...} in the config comes from the Secret"


def test_collector_shards_match_replicas():
    sts = _by_kind("StatefulSet")[0]
    container = sts["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    assert int(env["KAFKA_HEALTH_SHARDS"]["value"]) == sts["spec"]["replicas"]
    assert (
        env["KAFKA_HEALTH_SHARD_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"]
        == "metadata.labels['apps.kubernetes.io/pod-index']"
    )
    args = container["args"]
    assert args[args.index("--shard") + 1] == "$(KAFKA_HEALTH_SHARD_INDEX)/$(KAFKA_HEALTH_SHARDS)"
    assert args[args.index("--role") + 1] == "collector"


def test_each_collector_shard_has_a_standby_that_the_lease_keeps_out(monkeypatch):
    # Issue 31, item 4: a second StatefulSet of the same shards, scraped by the same Prometheus job, and the lease on
    # (on the PostgreSQL store) so that one process of a shard collects.
    main, standby = (
        next(d for d in _by_kind("StatefulSet") if d["metadata"]["name"] == name)
        for name in ("kafka-health-collector", "kafka-health-collector-standby")
    )
    spec = standby["spec"]["template"]["spec"]
    assert spec == main["spec"]["template"]["spec"] and standby["spec"]["replicas"] == main["spec"]["replicas"]
    assert standby["spec"]["selector"]["matchLabels"] != main["spec"]["selector"]["matchLabels"]  # no overlap
    for key in _by_kind("Secret")[0]["stringData"]:
        monkeypatch.setenv(key, "x")
    config = parse_config(_by_kind("ConfigMap")[0]["data"]["config.yaml"], "10-config.yaml")
    assert config.collection.shard_lease and config.store.url.startswith("postgresql")
    services = {s["metadata"]["name"]: s for s in _by_kind("Service")}
    assert services[standby["spec"]["serviceName"]]["spec"]["clusterIP"] == "None"
    job = next(
        j
        for j in yaml.safe_load((DEPLOY / "prometheus" / "prometheus.kubernetes.yml").read_text())["scrape_configs"]
        if j["job_name"] == "kafka-health-collector"
    )
    names = job["dns_sd_configs"][0]["names"]
    assert {f"{sts['spec']['serviceName']}.kafka-health.svc.cluster.local" for sts in (main, standby)} <= set(names)


def test_services_select_pods_that_exist():
    templates = [w["spec"]["template"]["metadata"]["labels"] for w in _by_kind("Deployment") + _by_kind("StatefulSet")]
    for svc in _by_kind("Service"):
        sel = svc["spec"]["selector"]
        assert any(sel.items() <= labels.items() for labels in templates), svc["metadata"]["name"]


def test_report_cronjob_runs_the_weekly_report():
    jobs = {j["metadata"]["name"]: j for j in _by_kind("CronJob")}
    report = jobs["kafka-health-report"]["spec"]
    assert report["schedule"].split()[-1] == "1"  # Mondays
    script = report["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert "kafka-health --log-format json report --week" in script
    # The week expression is GNU date: run it to prove it yields an ISO week.
    week_expr = re.search(r'"\$\((date [^)]*)\)"', script).group(1)
    out = subprocess.run(["sh", "-c", week_expr], capture_output=True, text=True, env={**os.environ, "TZ": "UTC"})
    assert re.fullmatch(r"\d{4}-W\d{2}\n", out.stdout), out.stdout + out.stderr


def test_no_secret_in_args_or_plain_env():
    for doc in _docs():
        job = doc.get("spec", {}).get("jobTemplate", {})
        for c in doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []) + job.get(
            "spec", {}
        ).get("template", {}).get("spec", {}).get("containers", []):
            assert not any("PASSWORD" in a or "TOKEN" in a for a in c.get("args", [])), c["name"]
            assert all("value" not in e or "PASSWORD" not in e["name"] for e in c.get("env", [])), c["name"]


@pytest.mark.parametrize("name, role", [("kafka-health-alerts", "alerts"), ("kafka-health", "api")])
def test_engines_and_api_run_in_pairs_and_a_drain_leaves_one(name, role):
    pair = next(d for d in _by_kind("Deployment") if d["metadata"]["name"] == name)
    pdb = next(p for p in _by_kind("PodDisruptionBudget") if p["metadata"]["name"] == name)
    labels = pair["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    # the PDB selects this pair only (the API's labels are a subset of nobody else's)
    others = [d for d in _by_kind("Deployment") if d["metadata"]["name"] != name]
    assert not any(
        pdb["spec"]["selector"]["matchLabels"].items() <= d["spec"]["template"]["metadata"]["labels"].items()
        for d in others
    )
    assert pair["spec"]["replicas"] >= 2 and 1 <= pdb["spec"]["minAvailable"] < pair["spec"]["replicas"]
    assert pair["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    args = pair["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--role") + 1] == role


def test_only_the_engine_pair_evaluates():
    # The API's Deployment no longer runs an engine of its own: exactly the pair evaluates.
    others = [d for d in _by_kind("Deployment") if d["metadata"]["name"] != "kafka-health-alerts"]
    assert all(
        "alerts" not in c["args"][c["args"].index("--role") + 1].split(",")
        for d in others
        for c in d["spec"]["template"]["spec"]["containers"]
        if "--role" in c["args"]
    )
