"""The version table: what users type resolves to one release, the current release is the default, and a version
the project has not proven is refused with the list of those it has."""

from __future__ import annotations

import pytest

from collectors import catalog
from monitor.core.errors import Invalid
from monitor.core.kafka_versions import DEFAULT_RELEASE, RELEASES, KafkaRelease, release, supported_versions

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, "4.4.0"),
        ("4.4", "4.4.0"),
        ("4.4.0", "4.4.0"),
        ("4", "4.4.0"),
        ("4.1", "4.1.1"),
        ("4.1.1", "4.1.1"),
        ("3.9", "3.9.1"),
        ("3", "3.9.1"),
    ],
)
def test_what_users_type_resolves_to_one_release(given, expected):
    assert release(given).version == expected


def test_the_current_release_is_the_default_and_the_newest():
    assert DEFAULT_RELEASE is release(None)
    newest = max(RELEASES, key=lambda r: tuple(int(x) for x in r.version.split(".")))
    assert DEFAULT_RELEASE == newest


@pytest.mark.parametrize("bad", ["4.2", "2.8", "latest", "", "4.4.0; rm -rf /"])
def test_an_unproven_version_is_refused_naming_the_supported_ones(bad):
    with pytest.raises(Invalid) as exc:
        release(bad)
    assert all(v in str(exc.value) for v in supported_versions())


def test_every_version_specific_choice_is_in_the_row():
    by_line = {r.line: r for r in RELEASES}
    # 4.4 moved ConfigCommand into kafka-tools, which only its Maven profile resolves
    assert by_line["4.4"].config_command.startswith("org.apache.kafka.tools.")
    assert "tools" in by_line["4.4"].maven_profiles and "tools" not in by_line["4.1"].maven_profiles
    assert by_line["3.9"].maven_profiles == ("kafka3",)
    assert by_line["4.4"].telemetry_interface == "ClientTelemetryExporterProvider"
    assert {by_line[v].telemetry_interface for v in ("3.9", "4.1")} == {"ClientTelemetry"}
    assert by_line["4.4"].has("share_groups") and not by_line["4.1"].has("share_groups")


def test_absent_metrics_name_catalog_metrics():
    """A typo in absent_metrics would excuse nothing and hide nothing: every name is a catalog metric."""
    known = {r.metric for r in catalog.BROKER_RULES + catalog.CONTROLLER_RULES}
    for r in RELEASES:
        assert r.absent_metrics <= known, (r.version, r.absent_metrics - known)


def test_a_feature_the_table_does_not_know_is_an_error():
    with pytest.raises(ValueError):
        KafkaRelease(
            version="9.9.9",
            maven_profiles=("kafka4",),
            config_command="x",
            telemetry_interface="ClientTelemetry",
            features=frozenset({"time_travel"}),
        )
    with pytest.raises(ValueError):
        DEFAULT_RELEASE.has("time_travel")
