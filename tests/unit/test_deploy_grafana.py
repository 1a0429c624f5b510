"""deploy/grafana: provisioning points at the datasource uid the dashboards default to, and provisions the folder
`kafka-health dashboards build` writes. (Grafana cannot run here; its provisioning schema is checked by shape.)"""

from __future__ import annotations

import json

import pytest
import yaml

from dashboards.build import JSON_DIR
from dashboards.render import DEFAULT_DATASOURCE_UID
from tests.unit._deploy import DEPLOY

pytestmark = pytest.mark.unit

PROV = DEPLOY / "grafana" / "provisioning"


def test_datasource_is_the_dashboards_default():
    doc = yaml.safe_load((PROV / "datasources" / "kafka-health.yml").read_text())
    assert doc["apiVersion"] == 1
    (ds,) = doc["datasources"]
    assert ds["type"] == "prometheus" and ds["uid"] == DEFAULT_DATASOURCE_UID and ds["url"].startswith("http")
    for path in JSON_DIR.glob("*.json"):
        variables = json.loads(path.read_text())["templating"]["list"]
        (dsvar,) = [v for v in variables if v["type"] == "datasource"]
        assert dsvar["query"] == "prometheus" and dsvar["current"]["value"] == DEFAULT_DATASOURCE_UID, path.name


def test_dashboard_provider_is_a_file_provider():
    doc = yaml.safe_load((PROV / "dashboards" / "kafka-health.yml").read_text())
    assert doc["apiVersion"] == 1
    (provider,) = doc["providers"]
    assert provider["type"] == "file" and provider["options"]["path"].startswith("/")
    assert provider["allowUiUpdates"] is False  # the JSON in git is the source of truth
