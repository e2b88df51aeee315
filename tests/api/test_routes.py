"""``/api/v1`` over a real uvicorn server and the pass's ledger: bearer tokens and roles
(every action route refuses a viewer), the failed-attempt limit, the CLI's own numbers
(``status --json``, ``runs --json``, ``senders --json``), run control and the suppression
list, and hostile requests answered 4xx, never 5xx."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.routing import APIRoute
from typer.testing import CliRunner

from scheduler.cli import app as cli_app
from scheduler.core.timeutil import utcnow
from scheduler.ledger.api_tokens import revoke_token
from scheduler.ledger.runs import Ledger
from tests.api.support import Api, project_settings, served
from tests.factories import command_project, make_run, number, write_project

ACTIONS = {("POST", "/api/v1/runs/{run_id}/pause"), ("POST", "/api/v1/runs/{run_id}/resume"),
           ("POST", "/api/v1/runs/{run_id}/cancel"), ("POST", "/api/v1/suppressions"),
           ("DELETE", "/api/v1/suppressions/{number}"),
           ("POST", "/api/v1/senders/{sender}/pause"), ("POST", "/api/v1/senders/{sender}/resume"),
           ("POST", "/api/v1/senders/{sender}/retire"), ("POST", "/api/v1/runs/{run_id}/resend"),
           ("POST", "/api/v1/runs"),
           ("POST", "/api/v1/people/export"), ("POST", "/api/v1/people/forget")}


@pytest.fixture
def api(ledger: Ledger, ledger_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Api:
    command_project(tmp_path, monkeypatch, ledger_url)
    write_project(tmp_path, 3)  # campaigns/lote.toml
    with served(ledger, project_settings(tmp_path, ledger_url)) as api:
        yield api


def routes(api: Api) -> list[tuple[str, str]]:
    """(method, path) of every route of the app."""
    return sorted((method, route.path) for route in api.app.routes
                  if isinstance(route, APIRoute) for method in route.methods)


def concrete(path: str, run_id: int, phone: str = "5511900000001",
             name: str = "lote.toml") -> str:
    return (path.replace("{run_id}", str(run_id)).replace("{number}", phone)
            .replace("{sender}", "s1").replace("{name:path}", name))


def cli_json(*args: str) -> dict:
    result = CliRunner().invoke(cli_app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def same_moment(view: dict) -> dict:
    """A run's view without the moment it was read at (the API's read and the command's are
    a few milliseconds apart; everything else must be equal)."""
    assert view["view"].pop("read_at")
    return view


def test_no_token_or_an_unknown_or_revoked_one_is_401_on_every_route(
        api: Api, ledger: Ledger) -> None:
    run_id = make_run(ledger, 3)
    for method, path in routes(api):
        url = concrete(path, run_id)
        for headers in ({}, {"Authorization": "Bearer cmp_not-a-token"},
                        {"Authorization": "Basic dXNlcjpwYXNz"}):
            answer = api.client.request(method, url, headers=headers,
                                        json={"number": "5511900000001"})
            assert answer.status_code == 401, (method, path, headers, answer.text)
            assert answer.headers["www-authenticate"] == "Bearer"
        api.ticks.now += 61  # the failed-attempt limit is not this test's
    assert api.client.get("/api/v1/runs", headers=api.as_("viewer")).status_code == 200
    revoke_token(ledger.engine, "test-viewer", utcnow())
    answer = api.client.get("/api/v1/runs", headers=api.as_("viewer"))
    assert answer.status_code == 401
    assert answer.json()["detail"] == "the API token is unknown or revoked"
    assert api.tokens["viewer"] not in answer.text


def test_a_viewer_is_refused_on_every_action_route_and_reads_the_others(
        api: Api, ledger: Ledger) -> None:
    run_id = make_run(ledger, 3)
    ledger.suppress("5511900000001", source="test")
    found = routes(api)
    acting = {(m, p) for m, p in found if m not in ("GET", "HEAD")}
    assert acting == ACTIONS  # a new action route is seen here first
    for method, path in found:
        answer = api.client.request(method, concrete(path, run_id), headers=api.as_("viewer"),
                                    json={"number": "5511900000002", "reason": "test"})
        if (method, path) in acting:
            assert answer.status_code == 403, (method, path, answer.text)
            assert "viewer" in answer.json()["detail"]
        else:
            assert answer.status_code == 200, (method, path, answer.text)
    assert ledger.get_run(run_id).status == "planned"  # nothing was done
    assert ledger.counts(run_id) == {"planned": 2, "skipped": 1}  # the listed number's
    assert [s.number for s in ledger.suppressions()] == ["5511900000001"]


def test_failed_attempts_are_limited_per_client_per_minute(api: Api) -> None:
    bad = {"Authorization": "Bearer cmp_guess"}
    for _ in range(10):  # [api] failed_auth_per_minute's default
        assert api.client.get("/api/v1/runs", headers=bad).status_code == 401
    answer = api.client.get("/api/v1/runs", headers=api.as_("operator"))
    assert answer.status_code == 429  # even a good token waits: the guessing stops
    assert 1 <= int(answer.headers["retry-after"]) <= 60
    api.ticks.now += 30
    assert api.client.get("/api/v1/runs", headers=bad).status_code == 429
    api.ticks.now += 31  # a minute after the first failures
    assert api.client.get("/api/v1/runs", headers=api.as_("operator")).status_code == 200


def test_the_run_views_are_the_commands_json(api: Api, ledger: Ledger) -> None:
    first = make_run(ledger, 5, senders=("s1", "s2"))
    run_id = make_run(ledger, 12, senders=("s1", "s2"), name="second")
    ledger.suppress(number(3), source="reply", reason="SAIR")  # a skipped row
    viewer = api.as_("viewer")
    for rid in (first, run_id):
        view = api.client.get(f"/api/v1/runs/{rid}", headers=viewer)
        assert view.status_code == 200, view.text
        assert same_moment(view.json()) == same_moment(cli_json("status", str(rid)))
    assert view.json()["counts"] == {"planned": 11, "skipped": 1}
    listed = api.client.get("/api/v1/runs", headers=viewer).json()
    shown = cli_json("runs")
    for doc in (listed, shown):
        doc["runs"] = [same_moment(row) for row in doc["runs"]]
    assert listed == shown
    assert [row["run"] for row in listed["runs"]] == [run_id, first]
    senders = api.client.get("/api/v1/senders", headers=viewer).json()
    assert senders == cli_json("senders")
    missing = api.client.get("/api/v1/runs/999999", headers=viewer)
    assert missing.status_code == 404
    assert missing.json()["detail"] == "run 999999 not found (see `campaign runs`)"


def test_pause_resume_and_cancel_do_what_the_commands_do(api: Api, ledger: Ledger) -> None:
    run_id = make_run(ledger, 4)
    operator = api.as_("operator")
    paused = api.client.post(f"/api/v1/runs/{run_id}/pause", headers=operator)
    assert paused.status_code == 200, paused.text
    assert paused.json()["status"] == "paused"
    assert ledger.get_run(run_id).status == "paused"
    resumed = api.client.post(f"/api/v1/runs/{run_id}/resume", headers=operator).json()
    assert resumed["action"] == "resume" and resumed["live_workers"] == 0
    assert resumed["status"] == "paused" and "campaign serve" in resumed["note"]
    assert ledger.get_run(run_id).control is None  # the pause request is lifted
    cancelled = api.client.post(f"/api/v1/runs/{run_id}/cancel", headers=operator).json()
    assert cancelled["status"] == "cancelled"
    assert ledger.counts(run_id) == {"skipped": 4}
    again = api.client.post(f"/api/v1/runs/{run_id}/pause", headers=operator)
    assert again.status_code == 409
    assert again.json()["detail"] == f"run {run_id} is already cancelled"
    view = api.client.get(f"/api/v1/runs/{run_id}", headers=operator).json()
    assert same_moment(view) == same_moment(cli_json("status", str(run_id)))


def test_the_suppression_list_is_read_added_to_and_removed_from(
        api: Api, ledger: Ledger) -> None:
    run_id = make_run(ledger, 3)
    operator, phone = api.as_("operator"), number(1)
    assert api.client.get(f"/api/v1/suppressions/{phone}", headers=operator).status_code == 404
    added = api.client.post("/api/v1/suppressions", headers=operator,
                            json={"number": f"+{phone}", "reason": "asked by phone"})
    assert (added.status_code, added.json()) == (201, {"number": phone, "added": True})
    assert ledger.counts(run_id) == {"planned": 2, "skipped": 1}  # its pending row
    again = api.client.post("/api/v1/suppressions", headers=operator, json={"number": phone})
    assert (again.status_code, again.json()["added"]) == (200, False)
    entry = api.client.get(f"/api/v1/suppressions/{phone}", headers=api.as_("viewer")).json()
    assert (entry["number"], entry["source"], entry["reason"]) == (phone, "api",
                                                                  "asked by phone")
    removed = api.client.delete(f"/api/v1/suppressions/{phone}", headers=operator)
    assert removed.json() == {"number": phone, "removed": True}
    assert [s.number for s in ledger.suppressions()] == []
    assert api.client.delete(f"/api/v1/suppressions/{phone}",
                             headers=operator).status_code == 404


HOSTILE_BODIES: list[tuple[str, bytes, dict[str, str]]] = [
    ("bad JSON", b'{"number": ', {"Content-Type": "application/json"}),
    ("a list", b"[1, 2, 3]", {"Content-Type": "application/json"}),
    ("wrong types", json.dumps({"number": 5511, "reason": ["x"]}).encode(),
     {"Content-Type": "application/json"}),
    ("an unknown field", json.dumps({"number": "5511900000001", "admin": True}).encode(),
     {"Content-Type": "application/json"}),
    ("a huge string", json.dumps({"number": "5" * 60_000}).encode(),
     {"Content-Type": "application/json"}),
    ("a huge reason", json.dumps({"number": "5511900000001", "reason": "x" * 10_000}).encode(),
     {"Content-Type": "application/json"}),
    ("a body over the limit", b"{" + b" " * 200_000 + b"}", {"Content-Type": "application/json"}),
    ("not JSON at all", b"\xff\xfe\x00garbage", {"Content-Type": "application/json"}),
    ("form data", b"number=1", {"Content-Type": "application/x-www-form-urlencoded"}),
    ("NaN", b'{"number": NaN}', {"Content-Type": "application/json"}),
    ("deep nesting", b"[" * 5000 + b"]" * 5000, {"Content-Type": "application/json"}),
]
HOSTILE_IDS = ["999999", "0", "-1", "abc", "1e3", str(10**30), "%00", "1%20OR%201=1"]
HOSTILE_NUMBERS = ["abc", "1" * 200, "%2e%2e%2fetc", "55%0A11", "+", "'; DROP TABLE x"]


def test_hostile_requests_get_4xx_with_a_message_never_5xx(api: Api, ledger: Ledger) -> None:
    run_id = make_run(ledger, 2)
    operator = api.as_("operator")
    answers = []
    for method, path in routes(api):
        urls = {concrete(path, run_id, phone, name=phone)
                for phone in [*HOSTILE_NUMBERS, "../config.toml", "..%2fconfig.toml"]}
        if "{run_id}" in path:
            urls = {path.replace("{run_id}", rid) for rid in HOSTILE_IDS}
        for url in sorted(urls):
            for name, body, headers in HOSTILE_BODIES:
                answer = api.client.request(method, url, content=body,
                                            headers={**operator, **headers})
                answers.append((method, url, name, answer.status_code))
                if "{" in path or method != "GET":  # a GET without parameters reads
                    assert 400 <= answer.status_code < 500, (method, url, name, answer.text)
                    detail = answer.json()["detail"]
                    assert detail, (method, url, name)
                else:  # the body is ignored, unless it is over the limit
                    assert answer.status_code == (413 if len(body) > 65536 else 200), name
    assert len(answers) > 300
    posted = [a for a in answers if a[0] == "POST" and a[1] == "/api/v1/suppressions"]
    assert {code for *_, code in posted} == {400, 413, 422}  # 400: JSON nested too deep
    assert ledger.suppressions() == [] and ledger.get_run(run_id).status == "planned"
    assert len(ledger.list_runs()) == 1  # no start got through


def test_a_422_names_the_field_and_never_echoes_the_input(api: Api) -> None:
    secret = "x" * 600
    answer = api.client.post("/api/v1/suppressions", headers=api.as_("operator"),
                             json={"number": "5511900000001", "reason": secret})
    assert answer.status_code == 422
    (problem,) = answer.json()["detail"]
    assert problem["loc"] == ["body", "reason"]
    assert re.search(r"at most 500 characters", problem["msg"])
    assert secret not in answer.text


def test_senders_are_paused_resumed_and_retired_as_the_commands_do(
        api: Api, ledger: Ledger) -> None:
    make_run(ledger, 3, senders=("s1", "s2"))
    operator = api.as_("operator")
    paused = api.client.post("/api/v1/senders/s1/pause", headers=operator,
                             json={"reason": "asked by the store"})
    assert paused.status_code == 200, paused.text
    assert paused.json()["changed"] and paused.json()["to_state"] == "paused"
    again = api.client.post("/api/v1/senders/s1/pause", headers=operator,
                            json={"reason": "asked by the store"}).json()
    assert again["from_state"] == again["to_state"] == "paused"
    listed = api.client.get("/api/v1/senders", headers=operator).json()
    assert {s["sender"]: s["state"] for s in listed["senders"]}["s1"] == "paused"
    assert listed == cli_json("senders")
    resumed = api.client.post("/api/v1/senders/s1/resume", headers=operator,
                              json={"reason": "back"}).json()
    assert resumed["from_state"] == "paused" and resumed["to_state"] != "paused"
    retired = api.client.post("/api/v1/senders/s2/retire", headers=operator,
                              json={"reason": "number lost"}).json()
    assert retired["to_state"] == "retired"
    unknown = api.client.post("/api/v1/senders/s9/pause", headers=operator,
                              json={"reason": "x"})
    assert unknown.status_code == 404 and "no sender 's9'" in unknown.json()["detail"]
    blank = api.client.post("/api/v1/senders/s1/pause", headers=operator, json={"reason": ""})
    assert blank.status_code == 422


def test_a_runs_events_and_replies_and_a_resend(api: Api, ledger: Ledger) -> None:
    from datetime import timedelta

    from sqlalchemy import update

    from scheduler.ledger import access
    from scheduler.ledger.queries.tables import deliveries, replies
    from tests.factories import T0

    run_id = make_run(ledger, 4)
    with access.transaction(ledger.engine, "test") as conn:
        conn.execute(replies.insert().values(run_id=run_id, number=number(0), kind="text",
                                             text="quero", received_at=T0))
        conn.execute(replies.insert().values(run_id=run_id, number=number(1), kind="text",
                                             text="SAIR", opt_out=True,
                                             received_at=T0 + timedelta(minutes=1)))
        conn.execute(update(deliveries).where(deliveries.c.run_id == run_id,
                                              deliveries.c.to.in_([number(2), number(3)]))
                     .values(state="failed", last_error="bad"))
    viewer, operator = api.as_("viewer"), api.as_("operator")
    found = api.client.get(f"/api/v1/runs/{run_id}/events", headers=viewer).json()
    assert [(e["event"], e["text"]) for e in found["events"]] == [("opt_out", "SAIR"),
                                                                  ("reply.text", "quero")]
    assert found["events"] == cli_json("status", str(run_id))["view"]["events"]
    assert api.client.get("/api/v1/runs/999/events", headers=viewer).status_code == 404
    nothing = api.client.post(f"/api/v1/runs/{run_id}/resend", headers=operator, json={})
    assert nothing.status_code == 422
    assert "say which rows to send again" in nothing.json()["detail"][0]["msg"]
    queued = api.client.post(f"/api/v1/runs/{run_id}/resend", headers=operator,
                             json={"failed": True})
    assert queued.status_code == 200, queued.text
    assert queued.json()["queued"] == 2
    assert ledger.counts(run_id) == {"planned": 4}
    missing = api.client.post("/api/v1/runs/999/resend", headers=operator,
                              json={"failed": True})
    assert missing.status_code == 404


def test_a_runs_report_downloads_as_the_command_writes_it(
        api: Api, ledger: Ledger, clock: object, tmp_path: Path) -> None:
    import io

    from openpyxl import load_workbook

    from tests.reports.support import make_whatsapp_run

    scenario = make_whatsapp_run(ledger, clock)  # type: ignore[arg-type]
    run = scenario.run_id
    viewer = api.as_("viewer")
    table = api.client.get(f"/api/v1/runs/{run}/report.csv", headers=viewer)
    assert table.status_code == 200 and table.headers["content-type"].startswith("text/csv")
    written = CliRunner().invoke(cli_app, ["report", str(run), "--format", "csv",
                                           "-o", str(tmp_path / "cli.csv")])
    assert written.exit_code == 0, written.output
    assert table.content == (tmp_path / "cli.csv").read_bytes()
    book = api.client.get(f"/api/v1/runs/{run}/report.xlsx", headers=viewer)
    assert book.status_code == 200
    assert f'filename="promo-run-{run}.xlsx"' in book.headers["content-disposition"]
    workbook = load_workbook(io.BytesIO(book.content), read_only=True)
    assert {"Summary", "Recipients"} <= set(workbook.sheetnames)
    assert len(list(workbook["Recipients"].iter_rows(values_only=True))) == 1 + 20
    workbook.close()
    assert api.client.get(f"/api/v1/runs/{run}/report.csv").status_code == 401
    assert api.client.get("/api/v1/runs/999/report.xlsx", headers=viewer).status_code == 404
    assert api.client.get(f"/api/v1/runs/{run}/report.pdf", headers=viewer).status_code == 404
