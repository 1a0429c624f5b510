"""Alert annotations follow the Prometheus conventions: an absolute ``runbook_url`` beside the docs path, and a
summary that puts its value in words (humanize functions), never a raw ``{{ $value }}`` ("0.3 of its time")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from alerts.rules import load_rules, render_annotations
from monitor.core.config import DEFAULT_RUNBOOK_BASE_URL, RulesSettings, parse_config
from monitor.core.errors import ConfigError

pytestmark = pytest.mark.unit
RAW_VALUE = re.compile(r"\{\{\s*\$value\s*\}\}")


def test_every_rule_links_its_runbook_absolutely_and_words_its_value():
    for rule in load_rules():
        a = rule.annotations
        assert a["runbook_url"] == f"{DEFAULT_RUNBOOK_BASE_URL}#{rule.name.lower()}", rule.name
        assert a["runbook"] == f"docs/alerts.md#{rule.name.lower()}", rule.name
        assert not RAW_VALUE.search(a["summary"]), f"{rule.name}: {a['summary']}"


@pytest.mark.parametrize(
    "name, value, words",
    [
        ("KafkaGcPressure", 0.3, "spends 30 % of its time in GC"),
        ("KafkaRequestHandlerSaturation", 0.1, "are 10 % idle"),
        ("KafkaUnderReplicatedPartitions", 3.0, "leads 3 under-replicated"),
        ("KafkaRequestQueueSaturation", 1234.0, "holds 1.234k requests"),
        ("KafkaLatencyRegression", 0.25, "regressed to 0.25 s"),
        ("KafkaConsumerGroupLag", 5400.0, "(1.5 h behind)"),
    ],
)
def test_summaries_render_the_value_in_words(name, value, words):
    rule = {r.name: r for r in load_rules()}[name]
    assert words in render_annotations(rule.annotations, {"broker": "1", "cluster": "c"}, value)["summary"]


def test_the_runbook_base_url_is_a_setting_and_must_be_absolute():
    rules = load_rules(RulesSettings(runbook_base_url="https://wiki.example/kafka/alerts"))
    assert {r.annotations["runbook_url"] for r in rules if r.name == "KafkaIsrChurn"} == {
        "https://wiki.example/kafka/alerts#kafkaisrchurn"
    }
    with pytest.raises(ConfigError) as exc:
        parse_config("rules: {runbook_base_url: docs/alerts.md}\n")
    assert "runbook_base_url" in str(exc.value)


def _anchors(markdown: str) -> set[str]:
    """The link targets GitHub makes of a markdown file: heading slugs and explicit ``<a id>``s."""
    slugs = {
        re.sub(r"[^a-z0-9 _-]", "", h.strip().lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.+)$", markdown, flags=re.MULTILINE)
    }
    return slugs | set(re.findall(r'<a id="([^"]+)">', markdown))


def test_every_runbook_link_lands_on_its_section():
    anchors = _anchors((Path(__file__).resolve().parents[2] / "docs" / "alerts.md").read_text())
    missing = [r.name for r in load_rules() if r.annotations["runbook_url"].rpartition("#")[2] not in anchors]
    assert not missing
