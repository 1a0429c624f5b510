"""The weekly report end to end on real Spark (session ``spark``): known-answer lake -> JSON + HTML in the lake ->
index in the store -> REST API. One report run per session (``known_report``, shared with test_reports_distributed)
keeps the wall time small."""

from __future__ import annotations

import json
import re
import shutil
from datetime import date, datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient

from bench.gen_lake import KNOWN, KNOWN_WEEK
from monitor.archive import lake as lakefs
from monitor.core.api.principal import Principal, PrincipalKind
from monitor.core.config import TenantConfig, TenantSelector
from monitor.core.errors import NotFound
from monitor.reports.job import run_report
from monitor.reports.models import ReportIndex
from monitor.reports.views import router
from tests.conftest import KNOWN_NOW

pytestmark = pytest.mark.integration
NOW = KNOWN_NOW


@pytest.fixture(scope="module")
def known(known_report):
    """The session's run (tests/conftest.py), shared with test_reports_distributed."""
    return known_report


def test_known_answers_come_out_exactly(known):
    acme = known["run"].documents["acme"]
    assert acme["status"] == "ok" and acme["problems"] == []
    bytes_in = acme["throughput"]["bytes_in"]
    assert bytes_in["growth_wow"] == KNOWN["acme_growth_wow"]
    assert bytes_in["this_week"] == pytest.approx(KNOWN["acme_bytes_in_base"] * 1.1**4, rel=1e-12)
    av = acme["availability"]
    assert av["offline_minutes"] == KNOWN["acme_offline_minutes"]
    assert av["under_min_isr_minutes"] == KNOWN["acme_under_min_isr_minutes"]
    assert av["bad_minutes"] == KNOWN["acme_bad_minutes"]  # a minute with both counts once
    assert av["observed_minutes"] == KNOWN["acme_observed_minutes"]
    assert av["ratio"] == round(1 - KNOWN["acme_bad_minutes"] / 10080, 12)
    assert acme["noisiest_clients"][0]["client_id"] == KNOWN["acme_top_client"]
    # the principal wins over the client-id prefix: acme-svc's "beta-thing" is acme's, not beta's
    assert "beta-thing" in [c["client_id"] for c in acme["noisiest_clients"]]
    assert acme["storage"]["weeks_until_budget"] == KNOWN["acme_weeks_until_budget"]
    assert acme["storage"]["used_bytes"] == 44e9
    assert acme["throttling"]["throttled_minutes"]["this_week"] == KNOWN["acme_throttled_minutes"]
    assert acme["consumer_lag"]["lag_mean_messages"]["growth_wow"] == 1.0
    alerts = {a["alertname"]: a for a in acme["alerts"]["by_name"]}
    assert alerts["KafkaOfflinePartitions"]["raised"] == 2
    assert alerts["KafkaOfflinePartitions"]["mean_minutes_to_resolve"] == 20
    assert alerts["KafkaConsumerLagHigh"]["resolved"] == 0  # still firing at the end of the week
    assert "KafkaBrokerUnreachable" in alerts  # cluster-wide alert reaches every tenant on the cluster
    assert acme["storage"]["disk"][0]["weeks_until_full"] == pytest.approx(KNOWN["disk_weeks_until_full"], rel=1e-11)
    assert [h["week"] for h in acme["history"]] == ["2026-W43", "2026-W44", "2026-W45", "2026-W46", "2026-W47"]


def test_client_findings_of_the_week_per_tenant(known):
    """Minutes observed, first and last seen of each advisor finding in the week; other weeks and other tenants'
    findings stay out (a client's identity is its tenant's business)."""
    docs = known["run"].documents
    got = {
        (f["finding"], f["client_id"], f["group"]): (f["minutes"], f["first_seen"], f["last_seen"])
        for f in docs["acme"]["client_findings"]
    }
    assert got == KNOWN["acme_findings"]
    assert [f["finding"] for f in docs["acme"]["client_findings"]] == ["poor_batching", "slow_consumer"]
    assert [f["client_id"] for f in docs["beta"]["client_findings"]] == ["beta-loader"]
    assert docs["gamma"]["client_findings"] == [] and docs["delta"]["client_findings"] == []
    html = (known["lake"] / known["run"].paths["acme"][1]).read_text()
    assert "Client findings this week" in html and "acme-reader" in html and "beta-loader" not in html


def test_empty_midweek_and_whole_cluster_tenants(known):
    docs = known["run"].documents
    assert docs["empty"]["status"] == "no_data"
    assert "no data for this tenant" in docs["empty"]["problems"][0]
    gamma = docs["gamma"]
    assert gamma["status"] == "partial" and "added mid-week" in gamma["problems"][0]
    assert "2026-11-18 12:00" in gamma["problems"][0]
    assert gamma["throughput"]["bytes_in"]["growth_wow"] is None
    assert docs["delta"]["throughput"]["bytes_in"]["this_week"] == 500 * 60 * 24 * 7
    beta = docs["beta"]
    assert beta["throughput"]["bytes_in"]["growth_wow"] == 0.0
    assert "beta-thing" not in [c["client_id"] for c in beta["noisiest_clients"]]


def test_operator_summary_across_tenants_and_clusters(known):
    op = known["run"].operator
    assert [t["tenant"] for t in op["tenants"]][0] == "acme"  # sorted by traffic
    clusters = {c["cluster"]: c for c in op["clusters"]}
    assert clusters["main"]["bad_minutes"] == KNOWN["acme_bad_minutes"]
    assert any("cluster main: log-dir disks full in 6.6 weeks" == a for a in op["attention"])
    assert any(a.startswith("tenant acme: availability") for a in op["attention"])


def test_reports_are_in_the_lake_self_contained_and_indexed(known):
    lake, run = known["lake"], known["run"]
    html = (lake / run.paths["acme"][1]).read_text()
    assert html.count("<svg") >= 4
    assert not re.search(r"""(src|href)=["']?https?:""", html)  # readable without a network
    assert "<script" not in html
    stored = json.loads((lake / run.paths["acme"][0]).read_text())
    assert stored["throughput"]["bytes_in"]["growth_wow"] == 0.1
    with known["store"].session() as s:
        rows = {r.tenant: r for r in s.query(ReportIndex).all()}
    assert set(rows) == {"acme", "beta", "gamma", "empty", "delta", "_operator"}
    assert rows["gamma"].status == "partial" and rows["acme"].week == "2026-W47"
    assert any(m.startswith("[1/5] extract") for m in known["progress"])
    assert any(m.startswith("[5/5]") for m in known["progress"])


@pytest.fixture(scope="module")
def client(known):
    app = FastAPI()
    app.state.store = known["store"]
    app.state.config = known["config"]

    @app.middleware("http")
    async def principal(request: Request, call_next):  # test stand-in for monitor.api.auth
        tenant = request.headers.get("x-test-tenant")
        request.state.principal = (
            Principal(PrincipalKind.TENANT, "t", tenant) if tenant else Principal(PrincipalKind.OPERATOR, "op")
        )
        return await call_next(request)

    @app.exception_handler(NotFound)
    async def not_found(_request, exc):
        return JSONResponse({"error": {"code": "not_found", "message": str(exc)}}, status_code=404)

    app.include_router(router)
    return TestClient(app)


def test_api_lists_and_serves_reports_as_json_and_html(client):
    listed = client.get("/api/v1/tenants/acme/reports", params={"limit": 1}).json()
    assert len(listed["items"]) == 1 and listed["items"][0]["week"] == "2026-W47" and listed["next_cursor"] is None
    doc = client.get("/api/v1/tenants/acme/reports/2026-W47").json()
    assert doc["tenant"] == "acme" and doc["availability"]["bad_minutes"] == KNOWN["acme_bad_minutes"]
    html = client.get("/api/v1/tenants/acme/reports/2026-W47", headers={"Accept": "text/html"})
    assert html.headers["content-type"].startswith("text/html") and "<svg" in html.text
    assert client.get("/api/v1/tenants/acme/reports/2026-W40").status_code == 404


def test_a_tenant_never_sees_another_tenants_reports(client):
    own = client.get("/api/v1/tenants/beta/reports/2026-W47", headers={"x-test-tenant": "beta"})
    assert own.status_code == 200
    for path in (
        "/api/v1/tenants/acme/reports",
        "/api/v1/tenants/acme/reports/2026-W47",
        "/api/v1/tenants/_operator/reports/2026-W47",
    ):
        r = client.get(path, headers={"x-test-tenant": "beta"})
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_faults_give_clear_messages_and_the_rest_of_the_report(known, spark, tmp_path, caplog):
    """Missing day, corrupt file, schema-drifted file: each named in the report and the log; figures still come.
    On the cache of the session's run, as a weekly report finds its lake: the days the faults touch are read from
    the lake again (their files changed), the others come from the cache."""
    lake = tmp_path / "lake"
    shutil.copytree(known["lake"] / "metrics", lake / "metrics")
    shutil.copytree(known["lake"] / "reduced", lake / "reduced")
    shutil.rmtree(lake / "metrics" / "date=2026-11-17")  # a missing day
    (lake / "metrics" / "date=2026-11-19" / "cluster=edge" / "part-0.parquet").write_bytes(b"PAR1 garbage")
    drifted = lake / "metrics" / "date=2026-11-20" / "cluster=main" / "part-0.parquet"
    t = pq.read_table(drifted)
    t = t.drop(["user"]).set_column(
        t.schema.get_field_index("value") - 1, "value", pa.array([str(v) for v in t.column("value").to_pylist()])
    )
    pq.write_table(t, drifted)
    config = known["config"].model_copy(update={"lake": known["config"].lake.model_copy(update={"path": str(lake)})})
    messages: list[str] = []
    with caplog.at_level("WARNING"):
        run = run_report(spark, config, KNOWN_WEEK, now=NOW, tenant="acme", progress=messages.append)
    assert any("32 day(s) from the cache, 2 from the lake" in m for m in messages), messages
    problems = run.documents["acme"]["problems"]
    assert any("2026-11-17: no archived data (missing day)" in p for p in problems)
    assert any("2026-11-19: unreadable Parquet file" in p and "cluster=edge" in p for p in problems)
    assert any("2026-11-20: schema drift" in p and "user missing" in p and "value is string" in p for p in problems)
    assert run.documents["acme"]["status"] == "partial"
    assert "missing day" in caplog.text and "schema drift" in caplog.text
    # the drifted day's values were cast back, the missing day is just absent: 6 of 7 days of bytes
    assert run.documents["acme"]["throughput"]["bytes_in"]["this_week"] == pytest.approx(
        KNOWN["acme_bytes_in_base"] * 1.1**4 * 6 / 7
    )
    assert run.documents["acme"]["availability"]["bad_minutes"] == KNOWN["acme_bad_minutes"]
    assert run.operator is None and set(run.documents) == {"acme"}


def test_a_second_run_reads_every_day_from_the_cache_and_gives_the_same_documents(known, spark):
    """The module's run cached the reductions of every day (all final at NOW); a second run reads no raw row and
    writes identical documents."""
    assert any("0 day(s) from the cache, 35 from the lake (35 to be cached)" in m for m in known["progress"])
    assert len(list((known["lake"] / "reduced" / "_days").glob("*.json"))) == 35
    messages: list[str] = []
    again = run_report(spark, known["config"], KNOWN_WEEK, now=NOW, progress=messages.append)
    assert any("35 day(s) from the cache, 0 from the lake (0 to be cached)" in m for m in messages)
    assert not any("days from the lake)" in m for m in messages)  # no reduction of raw rows ran
    assert again.documents == known["run"].documents and again.operator == known["run"].operator


def test_a_day_archived_again_a_corrupt_cache_and_a_new_tenant_give_what_the_lake_says(known, spark, tmp_path, caplog):
    """On the cache of the module's run: Wednesday is archived again with twice acme's bytes in, the cache of Friday
    is corrupted, a tenant is added that takes a topic from beta. The report shows the new data, recomputes both
    days (and caches them again), attributes the cached days to the new tenant, and equals a run without cache."""
    lake = tmp_path / "lake"
    shutil.copytree(known["lake"] / "metrics", lake / "metrics")
    shutil.copytree(known["lake"] / "reduced", lake / "reduced")
    wed, fri = date(2026, 11, 18), date(2026, 11, 20)
    tables = {}
    for f in sorted(lakefs.day_dir(lake, wed).glob("cluster=*/part-0.parquet")):
        t = pq.read_table(f)
        acme_in = pc.fill_null(
            pc.and_(pc.equal(t["series"], "topic_bytes_in_rate"), pc.equal(t["topic"], "acme.orders")), False
        )
        value = pc.if_else(acme_in, pc.multiply(t["value"], 2.0), t["value"])
        tables[f.parent.name.removeprefix("cluster=")] = t.set_column(t.schema.get_field_index("value"), "value", value)
    archived_at = NOW - timedelta(minutes=30)
    start = datetime(wed.year, wed.month, wed.day, tzinfo=timezone.utc)
    lakefs.write_day(lake, wed, tables, start=start, end=start + timedelta(days=1), complete=True, now=archived_at)
    cached = next((lake / "reduced" / "key_days" / f"date={fri}").glob("*.parquet"))
    data = bytearray(cached.read_bytes())
    data[len(data) // 2] ^= 0xFF
    cached.write_bytes(bytes(data))
    config = known["config"].model_copy(
        update={
            "tenants": known["config"].tenants
            + (
                TenantConfig(
                    name="events", selectors=(TenantSelector(cluster="main", topic_prefixes=("beta.events",)),)
                ),
            )
        }
    )

    messages: list[str] = []
    with caplog.at_level("INFO"):
        run = run_report(spark, config, KNOWN_WEEK, now=NOW, lake=lake, progress=messages.append)
    assert any("33 day(s) from the cache, 2 from the lake (2 to be cached)" in m for m in messages)
    assert "2026-11-20: corrupt cache" in caplog.text and "2026-11-18: re-archived" in caplog.text
    acme = run.documents["acme"]
    assert acme["status"] == "ok"  # a corrupt cache is not a problem of the report
    assert acme["throughput"]["bytes_in"]["this_week"] == pytest.approx(
        KNOWN["acme_bytes_in_base"] * 1.1**4 * 8 / 7, rel=1e-12
    )  # Wednesday's seventh counts twice
    assert run.documents["events"]["throughput"]["bytes_in"]["this_week"] == 1000 * 60 * 24 * 7
    assert run.documents["events"]["throughput"]["bytes_in"]["previous4_weeks"] == 4  # cached weeks too
    record = json.loads((lake / "reduced" / "_days" / f"{wed}.json").read_text())
    assert record["source"]["marker"]["written_at"] == archived_at.isoformat()

    without = run_report(spark, config, KNOWN_WEEK, now=NOW, lake=lake, use_cache=False)
    assert run.documents == without.documents and run.operator == without.operator
