"""Tenant SLOs: the minute, availability and burn-rate maths of alerts/slo.py on hand-computed cases, the burn-rate
detector's verdicts and evidence, the Admin collector's per-tenant leader series, and the contract's objective."""

from datetime import datetime, timezone

import pytest

from alerts import slo
from alerts.detectors import DetectorContext
from alerts.detectors import slo as slo_detector
from alerts.rules import load_rules
from alerts.slo import MinuteStatus as S
from collectors.admin_convert import cluster_samples
from collectors.catalog import TenantLookup
from collectors.contract import contract_families
from collectors.types import ClusterState, PartitionState
from monitor.core.config import parse_config
from monitor.core.errors import ConfigError, QueryError
from monitor.core.metric_names import M
from monitor.core.prom import InstantSample
from monitor.core.tenancy import TenantIndex
from monitor.health.slo import SloBoard, tenant_slo
from tests.harness.fake_source import FakeSource

pytestmark = pytest.mark.unit
NOW = datetime(2026, 11, 24, 3, 0, tzinfo=timezone.utc)
CONFIG_TEXT = """
clusters: [{name: c1, bootstrap_servers: "localhost:9092"}, {name: c2, bootstrap_servers: "localhost:9093"}]
slo: {objective: 0.999, window_days: 28}
tenants:
  - name: shop
    selectors: [{cluster: c1, topic_prefixes: [orders.]}]
  - name: ads
    selectors: [{cluster: c1, topic_prefixes: [clicks.]}]
    contract: {availability_objective: 0.99}"""
CONFIG = parse_config(CONFIG_TEXT)
RULES = {r.name: r for r in load_rules(CONFIG.rules)}


# ---------------------------------------------------------------------------------------- one minute


@pytest.mark.parametrize(
    "n, probe_up, unavailable, leaders, failing, expected",
    [
        (1, True, False, {"1", "2"}, set(), S.GOOD),
        (2, True, False, {"1", "2"}, {"3"}, S.GOOD),  # a broker leading none of its partitions fails: not its minute
        (3, True, False, {"1", "2"}, {"2"}, S.BAD),
        (4, True, True, {"1"}, set(), S.BAD),  # offline or under min ISR, the probe notwithstanding
        (5, False, True, {"1"}, {"1"}, S.UNKNOWN),  # the probe not up: we could not see, which is not an outage
        (6, True, False, set(), {"1"}, S.GOOD),  # no leader known (all offline would be case 4)
    ],
)
def test_minute_status(n, probe_up, unavailable, leaders, failing, expected):
    assert (
        slo.minute_status(
            probe_up=probe_up, partitions_unavailable=unavailable, leaders=leaders, failing_brokers=failing
        )
        is expected
    ), n


# ---------------------------------------------------------------------------------------- windows and burn


def test_availability_leaves_unknown_minutes_out():
    hour = [S.GOOD] * 50 + [S.BAD] * 2 + [S.UNKNOWN] * 8
    assert slo.availability(hour) == pytest.approx(50 / 52)
    assert slo.availability([S.UNKNOWN] * 5) is None
    assert slo.availability([]) is None


@pytest.mark.parametrize(
    "avail, objective, burn",
    [
        (0.999, 0.999, 1.0),  # exactly the budget's pace
        (0.99, 0.999, 10.0),
        (1.0, 0.999, 0.0),
        (0.9856, 0.999, 14.4),  # the workbook's page: 2 % of a 30-day budget in one hour
        (0.5, 0.99, 50.0),
    ],
)
def test_burn_rate(avail, objective, burn):
    assert slo.burn_rate(avail, objective) == pytest.approx(burn)


def test_error_budget_remaining():
    # 28 days = 40320 minutes at 99.9 %: 40.32 minutes of budget. 10 bad minutes leave 1 - 10/40.32 of it.
    assert slo.error_budget_remaining(1 - 10 / 40320, 0.999) == pytest.approx(1 - 10 / 40.32)
    assert slo.error_budget_remaining(1.0, 0.999) == 1.0
    assert slo.error_budget_remaining(0.998, 0.999) == pytest.approx(-1.0)  # spent twice over


@pytest.mark.parametrize(
    "n, long_avail, short_avail, factor, fires",
    [
        # one bad minute pages fast: 1h 1/60 -> 16.7x, 5m 1/6 (6 minute samples, both ends) -> 166.7x
        (1, 1 - 1 / 60, 1 - 1 / 6, 14.4, True),
        (2, 1 - 1 / 60, 1.0, 14.4, False),  # over, but no longer going on: the short window says so
        (3, 1 - 1 / 120, 0.0, 14.4, False),  # going on, but 8.3x over the long window: not yet significant
        (4, 1 - 0.0144, 0.0, 14.4, False),  # exactly the factor: not faster than it
        (5, 1 - 0.007, 1 - 0.007, 6.0, True),  # 6h and 30m at 7x
        (6, None, 0.0, 1.0, False),  # no known minute in the long window
    ],
)
def test_burning(n, long_avail, short_avail, factor, fires):
    assert slo.burning(long_avail, short_avail, objective=0.999, factor=factor) is fires, n


def test_each_tenant_is_judged_against_its_own_objective():
    long_avail = {("c1", "shop"): 0.98, ("c1", "ads"): 0.98, ("c1", "gone"): 0.0}
    short_avail = {("c1", "shop"): 0.9, ("c1", "ads"): 0.9, ("c1", "gone"): 0.0}
    objectives = {t.name: slo.objective_for(t, CONFIG.slo) for t in CONFIG.tenants}
    assert objectives == {"shop": 0.999, "ads": 0.99}
    verdicts = slo_detector.judge(long_avail, short_avail, objectives, factor=14.4)
    # shop: 0.02 / 0.001 = 20x and 100x; ads: 0.02 / 0.01 = 2x; a tenant not registered: nobody's alert
    assert [(k, round(lb, 6), round(sb, 6)) for k, lb, sb in verdicts] == [(("c1", "shop"), 20.0, 100.0)]


def test_the_rules_burn_at_the_workbooks_factors_over_recorded_windows():
    got = {
        n: (r.params["long"], r.params["short"], r.params["factor"], r.severity.value)
        for n, r in RULES.items()
        if r.detector == "slo_burn"
    }
    assert got == {
        "KafkaTenantSloFastBurn": ("1h", "5m", 14.4, "critical"),
        "KafkaTenantSloSlowBurn": ("6h", "30m", 6, "critical"),
        "KafkaTenantSloBudgetBurn": ("3d", "6h", 1, "warning"),
    }
    for long_w, short_w, *_ in got.values():  # the exported exprs read these records
        assert {long_w, short_w} <= set(slo.WINDOWS)


# ---------------------------------------------------------------------------------------- the detector


def test_fast_burn_names_the_tenant_its_failing_brokers_and_evidence_and_nothing_of_others():
    def avail(shop, ads):
        return [
            InstantSample({"cluster": "c1", "tenant": "shop"}, shop),
            InstantSample({"cluster": "c1", "tenant": "ads"}, ads),
        ]

    src = FakeSource(
        {
            "[1h:1m]": avail(1 - 2 / 61, 1.0),
            "[5m:1m]": avail(1 - 2 / 6, 1.0),
            M["probe_messages"]: [
                InstantSample({"cluster": "c1", "broker": "2", "result": "lost"}, 11.6),
                InstantSample({"cluster": "c1", "broker": "2", "result": "error"}, 3.0),
                InstantSample({"cluster": "c1", "broker": "3", "result": "error"}, 1.0),
            ],
            M["tenant_partition_leaders"]: [
                InstantSample({"cluster": "c1", "tenant": "shop", "broker": "2"}, 3),
                InstantSample({"cluster": "c1", "tenant": "shop", "broker": "1"}, 1),
                InstantSample({"cluster": "c1", "tenant": "ads", "broker": "3"}, 2),
            ],
            M["topic_offline_partitions"]: [
                InstantSample({"cluster": "c1", "tenant": "shop", "topic": "orders.eu"}, 1)
            ],
        }
    )
    ctx = DetectorContext(source=src, now=NOW, config=CONFIG, tenants=TenantIndex(CONFIG.tenants))
    [obs] = slo_detector.detect(RULES["KafkaTenantSloFastBurn"], ctx)
    assert obs.labels == {"cluster": "c1", "tenant": "shop"}
    assert obs.value == pytest.approx(round((2 / 61) / 0.001, 3))
    assert obs.evidence["brokers"] == ["2"]  # broker 3 fails too, but leads ads' partitions only
    assert obs.evidence["probe_failures"] == {"2": {"lost": 12, "error": 3}}
    assert obs.evidence["topics"] == {"orders.eu": {"offline": 1}}
    assert obs.evidence["burn_rate"] == {"1h": pytest.approx(32.787, abs=1e-3), "5m": pytest.approx(333.333, abs=1e-3)}
    assert obs.evidence["objective"] == 0.999 and obs.evidence["factor"] == 14.4
    # the engine's queries are the one definition's, at 1-minute steps, not another spelling of it
    assert slo.availability_query("1h") in src.seen and slo.MINUTE_EXPR in src.seen[0]


def test_no_burn_asks_for_no_evidence():
    src = FakeSource(
        {
            "[1h:1m]": [InstantSample({"cluster": "c1", "tenant": "shop"}, 1.0)],
            "[5m:1m]": [InstantSample({"cluster": "c1", "tenant": "shop"}, 0.0)],
        }
    )
    ctx = DetectorContext(source=src, now=NOW, config=CONFIG, tenants=TenantIndex(CONFIG.tenants))
    assert slo_detector.detect(RULES["KafkaTenantSloFastBurn"], ctx) == []
    assert len(src.seen) == 2


# ---------------------------------------------------------------------------------------- inputs


def test_admin_collector_counts_each_tenants_led_partitions_per_broker():
    tenants = TenantLookup(TenantIndex(CONFIG.tenants), "c1")
    state = ClusterState(
        brokers=(1, 2, 3),
        controller_id=100,
        partitions=(
            PartitionState("orders.eu", 0, 1, (1, 2), (1, 2)),
            PartitionState("orders.eu", 1, 2, (1, 2), (1, 2)),
            PartitionState("orders.us", 0, 2, (2, 3), (2, 3)),
            PartitionState("orders.us", 1, -1, (3,), ()),  # offline: led by nobody
            PartitionState("clicks.x", 0, 3, (3,), (3,)),
            PartitionState("internal", 0, 1, (1,), (1,)),  # no tenant's: no series
        ),
    )
    got = {
        (dict(s.labels)["tenant"], dict(s.labels)["broker"]): s.value
        for s in cluster_samples(state, base=(("cluster", "c1"),), configured=[1, 2, 3], tenants=tenants)
        if s.name == "kafka_cluster_tenant_led_partitions"
    }
    assert got == {("shop", "1"): 1, ("shop", "2"): 2, ("ads", "3"): 1}


def test_contract_objectives_are_series_and_the_export_defaults_the_others():
    samples = {(f.name, s.labels["tenant"]): s.value for f in contract_families(CONFIG.tenants) for s in f.samples}
    assert samples[(M["tenant_objective"], "ads")] == 0.99
    assert (M["tenant_objective"], "shop") not in samples and (M["tenant_info"], "shop") in samples
    [objective] = [r for r in slo.recording_rules(0.995)["rules"] if r["record"] == slo.OBJECTIVE_RECORD]
    assert objective["expr"].endswith("* 0 + 0.995")  # shop's: the exporting config's slo.objective


@pytest.mark.parametrize(
    "text",
    [
        "tenants: [{name: a, whole_clusters: [c1], contract: {availability_objective: 1.0}}]",
        "tenants: [{name: a, whole_clusters: [c1], contract: {availability_objective: 99.9}}]",
        "slo: {objective: 0}",
        "slo: {window_days: 0}",
    ],
)
def test_objectives_must_be_shares_below_one(text):
    with pytest.raises(ConfigError):
        parse_config("clusters: [{name: c1, bootstrap_servers: 'h:9092'}]\n" + text)


def test_tenant_slo_view_of_the_window():
    got = slo.TenantSlo.of(objective=0.999, window_days=28, avail=1 - 10 / 40320)
    assert (got.window, got.availability) == ("28d", round(1 - 10 / 40320, 6))
    assert got.error_budget_remaining == pytest.approx(1 - 10 / 40.32, abs=1e-6)
    assert slo.TenantSlo.of(objective=0.999, window_days=28, avail=None).error_budget_remaining is None


# ---------------------------------------------------------------------------------------- the API's view


def test_tenant_slo_is_the_worst_of_its_own_clusters_and_nobody_elses():
    config = parse_config(CONFIG_TEXT + "\n  - name: shop2\n    whole_clusters: [c2]\n")
    shop = next(t for t in config.tenants if t.name == "shop")
    avail = {("c1", "shop"): 0.9995, ("c2", "shop"): 0.998, ("c1", "ads"): 0.5}
    got = tenant_slo(shop, {"c1"}, avail, config)
    assert (got.objective, got.window, got.availability) == (0.999, "28d", 0.9995)
    assert got.error_budget_remaining == pytest.approx(0.5)
    assert tenant_slo(shop, {"c1", "c2"}, avail, config).error_budget_remaining == pytest.approx(-1.0)
    ads = next(t for t in config.tenants if t.name == "ads")
    assert tenant_slo(ads, {"c1"}, None, config).model_dump() == {
        "objective": 0.99,
        "window": "28d",
        "availability": None,
        "error_budget_remaining": None,
    }


def test_slo_board_asks_prometheus_once_per_ttl_and_remembers_a_failure_as_long():
    clock = [0.0]
    src = FakeSource({"[28d:1m]": [InstantSample({"cluster": "c1", "tenant": "shop"}, 0.9995)]})
    board = SloBoard(lambda config: src, ttl=60, clock=lambda: clock[0])
    assert board.availability(CONFIG, NOW) == {("c1", "shop"): 0.9995}
    clock[0] = 59
    board.availability(CONFIG, NOW)
    assert len(src.seen) == 1 and src.closed == 1
    clock[0] = 61
    board.availability(CONFIG, NOW)
    assert len(src.seen) == 2
    down = FakeSource(fail=QueryError("Prometheus unreachable at http://p:9090: ConnectError"))
    board = SloBoard(lambda config: down, ttl=60, clock=lambda: clock[0])
    assert board.availability(CONFIG, NOW) is None and board.availability(CONFIG, NOW) is None
    assert len(down.seen) == 1 and down.closed == 1


def test_weekly_report_slo_section_hand_computed():
    from monitor.reports.document import slo_section

    cmp = {
        "slo_availability_ratio": {"this_week": 0.99, "previous_week": 1.0},
        "slo_bad_minutes": {"this_week": 6.0},
        "slo_known_minutes": {"this_week": 600.0},
    }
    history = [
        {"week": "2026-W46", "slo_availability_ratio": 1.0, "slo_bad_minutes": 0.0},
        {"week": "2026-W47", "slo_availability_ratio": 0.99, "slo_bad_minutes": 6.0},
        {"week": "2026-W45", "slo_availability_ratio": None, "slo_bad_minutes": None},
    ]
    got = slo_section(cmp, history, objective=0.999, window_days=28)
    # 1 % bad against 0.1 % allowed: 10x; the 28-day budget is 40.32 minutes, 6 of them spent: 14.88 %
    assert (got["availability"], got["met"], got["burn_rate"]) == (0.99, False, pytest.approx(10.0))
    assert got["budget_spent"] == pytest.approx(6 / 40.32)
    assert [(w["week"], w["burn_rate"], w["budget_spent"]) for w in got["weeks"]] == [
        ("2026-W46", 0.0, 0.0),
        ("2026-W47", pytest.approx(10.0), pytest.approx(6 / 40.32)),
        ("2026-W45", None, None),
    ]
