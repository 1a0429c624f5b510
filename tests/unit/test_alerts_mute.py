"""Inhibition and silences: the built-in inhibition rules, one numbered case per question (which firing source mutes
which target); silence matchers (RE2, full match) and how a silence is confined to its tenant's alerts and capped;
what creating a silence refuses."""

from datetime import datetime, timedelta, timezone

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from alerts import repo
from alerts.mute import (
    DEFAULT_INHIBIT_RULES,
    MAX_ACTIVE_SILENCES_PER_TENANT,
    MAX_REGEX_LENGTH,
    Inhibitor,
    Matcher,
    PatternError,
    Silencer,
    SilenceView,
    compile_regex,
)
from alerts.types import AlertState, Instance, Severity
from alerts.views import router
from monitor.api.errors import install_error_handlers
from monitor.core.api.principal import Principal, PrincipalKind
from monitor.core.store import Store
from monitor.schema import create_all

pytestmark = pytest.mark.unit
DOWN = "KafkaBrokerUnreachable"


def _inst(alertname: str, state: AlertState = AlertState.FIRING, **labels: str) -> Instance:
    return Instance(rule=alertname, labels={"alertname": alertname, **labels}, state=state, severity=Severity.WARNING)


CASES = [
    # (no, source instances, target labels, expected reason)
    # URP is reported by the surviving leaders, never by the dead broker: any broker of the cluster is muted.
    (
        1,
        [_inst(DOWN, cluster="c1", broker="1", tenant="shop")],
        {"alertname": "KafkaUnderReplicatedPartitions", "cluster": "c1", "broker": "2", "tenant": "ads"},
        f"inhibited:{DOWN}",
    ),
    # Another cluster's under-replication is news.
    (
        2,
        [_inst(DOWN, cluster="c1", broker="1")],
        {"alertname": "KafkaUnderReplicatedPartitions", "cluster": "c2", "broker": "1"},
        None,
    ),
    # Only a firing broker-down inhibits: a pending one may be a restart.
    (
        3,
        [_inst(DOWN, AlertState.PENDING, cluster="c1", broker="1")],
        {"alertname": "KafkaUnderReplicatedPartitions", "cluster": "c1", "broker": "2"},
        None,
    ),
    (
        4,
        [_inst(DOWN, AlertState.RESOLVED, cluster="c1", broker="1")],
        {"alertname": "KafkaUnderReplicatedPartitions", "cluster": "c1", "broker": "2"},
        None,
    ),
    # Under-min-ISR means acks=all writes fail: it pages even while the broker-down alert fires.
    (
        5,
        [_inst(DOWN, cluster="c1", broker="1")],
        {"alertname": "KafkaUnderMinIsrPartitions", "cluster": "c1", "broker": "2"},
        None,
    ),
    (
        6,
        [_inst(DOWN, cluster="c1", broker="1")],
        {"alertname": "KafkaUnderMinIsrPartitions", "cluster": "c1", "broker": "1"},
        None,
    ),
    # A failing scrape explains the cluster's missing inputs.
    (
        7,
        [_inst("KafkaHealthScrapeFailing", cluster="c1", collector="jmx", target="b1:9999")],
        {"alertname": "KafkaHealthRuleNoData", "cluster": "c1", "rule": "KafkaIsrChurn"},
        "inhibited:KafkaHealthScrapeFailing",
    ),
    (
        8,
        [_inst("KafkaHealthScrapeFailing", cluster="c2", collector="jmx", target="b1:9999")],
        {"alertname": "KafkaHealthRuleNoData", "cluster": "c1", "rule": "KafkaIsrChurn"},
        None,
    ),
]


@pytest.mark.parametrize("no,sources,target,expected", CASES, ids=[f"case{c[0]}" for c in CASES])
def test_default_inhibition(no, sources, target, expected):
    assert Inhibitor(DEFAULT_INHIBIT_RULES, sources).mutes(target) == expected


# ------------------------------------------------------------------------------------------------ silences

T0 = datetime(2026, 11, 22, 1, 0, tzinfo=timezone.utc)
HOUR = timedelta(hours=1)
LONG_A = "a" * 50_000 + "b"  # the input that makes a backtracking engine take exponential time on (a+)+$


MATCHER_CASES = [
    # (no, matcher, labels, matches): regexes are RE2 and full-matched, as Alertmanager's ^(?:pattern)$
    (1, Matcher("broker", "1"), {"broker": "1"}, True),
    (2, Matcher("broker", "1"), {"broker": "10"}, False),
    (3, Matcher("broker", "1", is_equal=False), {"broker": "10"}, True),
    (4, Matcher("topic", "orders", is_regex=True), {"topic": "orders.eu"}, False),  # no partial match
    (5, Matcher("topic", "orders.*", is_regex=True), {"topic": "orders.eu"}, True),
    (6, Matcher("topic", "a|ab", is_regex=True), {"topic": "ab"}, True),  # anchored around the alternation
    (7, Matcher("topic", ".+", is_regex=True), {}, False),  # a missing label is ""
    (8, Matcher("topic", ".*", is_regex=True, is_equal=False), {"topic": "x"}, False),
    (9, Matcher("topic", "(?i)ORDERS", is_regex=True), {"topic": "orders"}, True),
    # catastrophic for a backtracking engine; RE2 answers in time linear in the label's length
    (10, Matcher("topic", "(a+)+$", is_regex=True), {"topic": LONG_A}, False),
    (11, Matcher("topic", "(a|aa)+", is_regex=True), {"topic": LONG_A}, False),
    (12, Matcher("topic", "(a|aa)+b", is_regex=True), {"topic": LONG_A}, True),
    (13, Matcher("topic", "(.*a){20}", is_regex=True), {"topic": "a" * 30_000 + "!"}, False),
]


@pytest.mark.parametrize("no,matcher,labels,expected", MATCHER_CASES, ids=[f"case{c[0]}" for c in MATCHER_CASES])
def test_matcher(no, matcher, labels, expected):
    assert matcher.matches(labels) is expected


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?=x)x", "(?<!a)b", "(", "a{1001}", "x" * (MAX_REGEX_LENGTH + 1)])
def test_a_pattern_re2_refuses_is_a_pattern_error(pattern):
    with pytest.raises(PatternError):
        compile_regex(pattern)


class Reads(dict):
    """Labels that record which label names were read."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.read: list[str] = []

    def get(self, key, default=None):
        self.read.append(key)
        return super().get(key, default)


def _sil(sid, *matchers, tenant=None, start=T0 - HOUR):
    ms = [Matcher(*m) if isinstance(m, tuple) else m for m in matchers]
    if tenant:
        ms.append(Matcher("tenant", tenant))
    return SilenceView(sid, tuple(ms), start, T0 + HOUR, tenant)


def test_a_tenants_silence_never_examines_another_tenants_alerts():
    hostile = _sil("h", Matcher("alertname", "(a+)+$", is_regex=True), tenant="shop")
    silencer = Silencer([hostile], T0)
    theirs = Reads(alertname=LONG_A, tenant="ads")
    assert silencer.mutes(theirs) is None
    assert theirs.read == ["tenant"]  # picked by tenant before any matcher ran: alertname was never read
    ours = Reads(alertname=LONG_A, tenant="shop")
    assert silencer.mutes(ours) is None and "alertname" in ours.read
    assert silencer.mutes({"alertname": "aaa", "tenant": "shop"}) == "silence:h"


def test_an_operators_silence_on_a_tenant_matcher_is_filed_under_that_tenant():
    silencer = Silencer([_sil("op", ("alertname", "X")), _sil("op-ads", ("tenant", "ads"))], T0)
    assert silencer.mutes({"alertname": "X", "tenant": "shop"}) == "silence:op"
    assert silencer.mutes({"alertname": "Y", "tenant": "ads"}) == "silence:op-ads"
    assert silencer.mutes(Reads(alertname="Y", tenant="shop")) is None
    assert silencer.mutes({"alertname": "Y"}) is None


def test_a_silence_with_a_pattern_re2_refuses_is_inert_and_the_others_still_mute(caplog):
    stored = [_sil("py-only", Matcher("broker", r"(1)\1", is_regex=True)), _sil("ok", ("broker", "2"))]
    silencer = Silencer(stored, T0)
    assert silencer.mutes({"broker": "11"}) is None
    assert silencer.mutes({"broker": "2"}) == "silence:ok"
    assert "py-only" in caplog.text and "inert" in caplog.text


def test_the_engine_uses_a_tenants_oldest_silences_up_to_the_cap():
    n = MAX_ACTIVE_SILENCES_PER_TENANT
    oldest = [
        _sil(f"s{i:03}", ("alertname", f"A{i}"), tenant="shop", start=T0 - HOUR + timedelta(seconds=i))
        for i in range(n)
    ]
    newest = _sil("late", ("alertname", "Late"), tenant="shop", start=T0 - timedelta(minutes=1))
    other = _sil("ads", ("alertname", "Late"), tenant="ads", start=T0 - timedelta(minutes=1))
    silencer = Silencer(oldest + [newest, other], T0)
    assert silencer.mutes({"alertname": f"A{n - 1}", "tenant": "shop"}) == f"silence:s{n - 1:03}"
    assert silencer.mutes({"alertname": "Late", "tenant": "shop"}) is None  # the 101st: not used
    assert silencer.mutes({"alertname": "Late", "tenant": "ads"}) == "silence:ads"  # another tenant's cap


def test_a_regex_answer_remembered_for_a_label_value_is_the_answer_for_that_value_only():
    silencer = Silencer([_sil("s", Matcher("topic", "orders\\..*", is_regex=True), tenant="shop")], T0)
    answers = [silencer.mutes({"topic": t, "tenant": "shop"}) for t in ("orders.eu", "clicks", "orders.eu", "clicks")]
    assert answers == ["silence:s", None, "silence:s", None]


def test_a_tenant_whose_silences_exhaust_its_budget_is_not_muted_by_them_for_the_rest_of_the_cycle():
    ticks = iter(range(10_000))
    clock = lambda: next(ticks) * 0.03  # noqa: E731 - every reading 30 ms later than the one before
    shop = [_sil(f"h{i}", Matcher("topic", f"x{i}.*", is_regex=True), tenant="shop") for i in range(3)]
    shop.append(_sil("catch", Matcher("topic", ".*", is_regex=True), ("alertname", "Y"), tenant="shop"))
    ads = [_sil("ads", Matcher("topic", ".*", is_regex=True), tenant="ads")]
    operators = [_sil("op", ("alertname", "Z"))]
    silencer = Silencer(shop + ads + operators, T0, budget_seconds=0.1, clock=clock)
    # the first alert's three regex silences take 3 x 30 ms; the fourth reading puts shop over 100 ms
    assert silencer.mutes({"alertname": "X", "topic": "t", "tenant": "shop"}) is None
    assert silencer.over_budget == ["shop"]
    # shop's own silence would mute this one, but shop is out of budget; the other tenant and operators are not
    assert silencer.mutes({"alertname": "Y", "topic": "t", "tenant": "shop"}) is None
    assert silencer.mutes({"alertname": "Z", "topic": "t", "tenant": "shop"}) == "silence:op"
    assert silencer.mutes({"alertname": "Y", "topic": "t", "tenant": "ads"}) == "silence:ads"


def test_expired_and_pending_silences_mute_nothing():
    done = SilenceView("done", (Matcher("a", "b"),), T0 - 2 * HOUR, T0)
    later = SilenceView("later", (Matcher("a", "b"),), T0 + HOUR, T0 + 2 * HOUR)
    assert Silencer([done, later], T0).mutes({"a": "b"}) is None


# ------------------------------------------------------------------------------------- creating silences


@pytest.fixture
def api(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'api.db'}")
    create_all(store)
    app = FastAPI()
    app.state.store = store
    app.state.clock = lambda: T0
    app.include_router(router)

    @app.middleware("http")
    async def principal(request, call_next):
        who = request.headers.get("x-test-principal")
        request.state.principal = (
            Principal(PrincipalKind.OPERATOR, "op-token")
            if who == "operator"
            else Principal(PrincipalKind.TENANT, f"{who}-token", tenant=who)
        )
        return await call_next(request)

    install_error_handlers(app)
    with TestClient(app) as c:
        c.store = store
        yield c
    store.dispose()


def _post(api, who, *matchers):
    return api.post(
        "/api/v1/silences",
        headers={"x-test-principal": who},
        json={"matchers": list(matchers), "duration_seconds": 3600},
    )


@pytest.mark.parametrize(
    "pattern,fragment",
    [
        (r"(a)\1", "invalid escape sequence"),
        ("(?=x)x", "invalid perl operator"),
        ("y" * (MAX_REGEX_LENGTH + 1), f"longer than {MAX_REGEX_LENGTH}"),
    ],
)
def test_a_regex_re2_cannot_run_is_refused_422_naming_the_field(api, pattern, fragment):
    r = _post(api, "shop", {"name": "alertname", "value": "X"}, {"name": "topic", "value": pattern, "is_regex": True})
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert fragment in err["message"] and [f["field"] for f in err["fields"]] == ["matchers[1].value"]


def test_a_catastrophic_but_valid_regex_is_accepted_and_stored_as_given(api):
    r = _post(api, "shop", {"name": "alertname", "value": "(a+)+$", "is_regex": True})
    assert r.status_code == 201, r.text
    assert r.json()["matchers"][0] == {"name": "alertname", "value": "(a+)+$", "is_regex": True, "is_equal": True}


def test_a_tenant_beyond_its_cap_of_silences_gets_409_until_it_expires_one(api):
    with api.store.session() as s:
        for i in range(MAX_ACTIVE_SILENCES_PER_TENANT):
            repo.create_silence(
                [
                    {"name": "alertname", "value": f"A{i}", "is_regex": False, "is_equal": True},
                    {"name": "tenant", "value": "shop", "is_regex": False, "is_equal": True},
                ],
                T0,
                T0 + HOUR,
                created_by="shop-token",
                comment="",
                tenant="shop",
                now=T0,
                session=s,
            )
        repo.create_silence(
            [{"name": "alertname", "value": "old", "is_regex": False, "is_equal": True}],
            T0 - 2 * HOUR,
            T0 - HOUR,
            created_by="shop-token",
            comment="",
            tenant="shop",
            now=T0,
            session=s,
        )  # expired: not counted
    r = _post(api, "shop", {"name": "alertname", "value": "One more"})
    assert r.status_code == 409, r.text
    assert r.json()["error"]["code"] == "conflict"
    assert f"({MAX_ACTIVE_SILENCES_PER_TENANT})" in r.json()["error"]["message"]
    assert _post(api, "ads", {"name": "alertname", "value": "One more"}).status_code == 201  # its own count
    assert _post(api, "operator", {"name": "alertname", "value": "One more"}).status_code == 201
    first = next(
        i["id"]
        for i in api.get("/api/v1/silences", headers={"x-test-principal": "shop"}).json()["items"]
        if i["state"] == "active"
    )
    assert api.delete(f"/api/v1/silences/{first}", headers={"x-test-principal": "shop"}).status_code == 200
    assert _post(api, "shop", {"name": "alertname", "value": "One more"}).status_code == 201
