"""The dashboard's pages through the real app over a real server: they show the ledger's
numbers, outside values as text, and every mistake as a clear page (never a 500)."""

from __future__ import annotations

import json
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest

from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from scheduler.ledger.sender_store import SenderStore
from tests.dashboard.web_support import (
    HOSTILE,
    form_token,
    hooks,
    numbers,
    project_settings,
    section,
    served,
)
from tests.factories import T0, FakeClock, make_run
from tests.reports.support import (
    REPLY,
    add_reply,
    details_run,
    ids_by_row,
    make_whatsapp_run,
    set_rows,
    store,
)


def _safe(response: httpx.Response) -> None:
    """The headers every answer carries: its server time and the security headers."""
    assert response.headers["server-timing"].startswith("app;dur=")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert "unsafe-inline" not in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"]


def test_the_run_page_shows_the_ledgers_numbers(ledger: Ledger, clock: FakeClock,
                                                 ledger_url: str, tmp_path: Path) -> None:
    scenario = make_whatsapp_run(ledger, clock)
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web:
        page = web.get(f"/runs/{scenario.run_id}")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        _safe(page)
        html = page.text
    assert numbers(section(html, "counts")) == scenario.states
    funnel = numbers(html, "data-funnel")
    assert {k: funnel[k] for k in ("planned", "sent", "delivered", "read", "replied")} == {
        "planned": 17, "sent": 14, "delivered": 10, "read": 6, "replied": 3}
    assert hooks(html, "id")["run-status"] == "completed"
    assert "400: number is not on WhatsApp" in hooks(section(html, "errors"), "class")["message"]
    assert REPLY in html and "Obrigado! 😀" in html  # the replies, among the recent events
    progress = numbers(section(html, "progress-text"))
    assert (progress["done"], progress["total"], progress["remaining"]) == (16, 17, 1)
    assert "<svg" in section(html, "funnel-chart") and "<svg" in section(html, "hourly-chart")
    assert 'data-stage="Sent" data-value="14"' in html  # the funnel chart draws the count
    assert "2026-11-23" in html and "-03:00" in html  # times in the campaign's zone


def test_the_overview_lists_the_runs_and_todays_sends(ledger: Ledger, clock: FakeClock,
                                                      ledger_url: str, tmp_path: Path) -> None:
    scenario = make_whatsapp_run(ledger, clock)
    fresh = make_run(ledger, 3, name="fresh")
    senders = SenderStore(ledger, fresh)
    senders.sender_profiles(["s1", "s2"], clock(), new_state="healthy")
    senders.change_sender_state("s2", "throttled", "429 from the service", clock(),
                                source="health", score=61.5, throttle=0.5)
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web:
        page = web.get("/")
        _safe(page)
        html = page.text
        senders_page = web.get("/senders").text
    runs = hooks(html, "data-run")
    assert set(runs) == {str(scenario.run_id), str(fresh)}
    assert numbers(html, "data-runs") == {"completed": 1, "planned": 1}
    row = html[html.index(f'data-run="{scenario.run_id}"'):]
    assert numbers(row)["done"] == 16 and numbers(row)["total"] == 17
    assert f'href="/runs/{fresh}"' in html
    rows = hooks(senders_page, "data-sender")
    assert set(rows) == {"s1", "s2"} and "healthy" in rows["s1"]
    assert all(said in rows["s2"] for said in ("throttled", "429 from the service", "61.5",
                                               "50 % of its pace"))
    today = {name: numbers(senders_page[senders_page.index(f'data-sender="{name}"'):])
             for name in rows}
    assert (today["s1"]["sends-today"], today["s2"]["sends-today"]) == (8, 8)
    assert set(hooks(html, "data-sender")) == {"s1", "s2"}  # at a glance on the overview


def test_values_from_outside_are_shown_as_text(ledger: Ledger, clock: FakeClock,
                                               ledger_url: str, tmp_path: Path) -> None:
    """A campaign name, a CSV value, a reply, a service error, a session's name and a
    sender's reason holding markup."""
    run_id = store(ledger, [{"to": "5511900000001", "state": "planned", "reason": None,
                             "variables": {"nome": HOSTILE}}], name=HOSTILE)
    [row] = ids_by_row(ledger, run_id)
    set_rows(ledger, [row], state="failed", last_error=HOSTILE, failed_at=T0)
    add_reply(ledger, run_id, row, "5511900000001", HOSTILE, T0 + timedelta(minutes=1))
    SenderStore(ledger, run_id).sender_profiles([HOSTILE], clock(), new_state="healthy")
    SenderStore(ledger, run_id).change_sender_state(HOSTILE, "paused", HOSTILE, clock(),
                                                 source="operator")  # a session's name too
    settings = project_settings(tmp_path, ledger_url)
    (tmp_path / "campaigns" / "evil.toml").write_text(
        f"name = '{HOSTILE}'\nsenders = ['s1']\n", encoding="utf-8")
    with served(ledger, settings, clock=clock) as web:
        pages = [web.get(path) for path in ("/", f"/runs/{run_id}", "/senders", "/campaigns",
                                            f"/runs/{run_id}/fragment",
                                            f"/runs/{run_id}/resend?rows=failed")]
    for page in pages:
        assert page.status_code == 200, page.url
        assert "<script>alert" not in page.text and "<img src=x" not in page.text, page.url
    overview, run_page = pages[0].text, pages[1].text
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in overview  # the name, as text
    assert hooks(run_page, "class")["name"] == HOSTILE
    assert hooks(section(run_page, "errors"), "class")["message"] == HOSTILE
    assert hooks(section(run_page, "events"), "class")["text"] == HOSTILE  # the reply
    assert "evil.toml" in pages[3].text
    assert hooks(pages[2].text, "class")["reason small"].startswith(HOSTILE)  # its reason


#: A recipient's name in the CSV holding markup: it must be shown as text.
NAME = "<script>alert(1)</script><img src=x onerror=alert(1)>"


class _Elements(HTMLParser):
    """Every element's tag and attributes, and the text of each ``td.recipient``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.recipients: list[str] = []
        self.in_recipient = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self.in_recipient = tag == "td" and dict(attrs).get("class") == "recipient"
        if self.in_recipient:
            self.recipients.append("")

    def handle_endtag(self, tag: str) -> None:
        self.in_recipient = False

    def handle_data(self, data: str) -> None:
        if self.in_recipient:
            self.recipients[-1] += data


def test_a_recipients_name_from_the_csv_is_shown_as_text_in_the_recent_events(
        ledger: Ledger, clock: FakeClock, ledger_url: str, tmp_path: Path) -> None:
    """The name comes from the first column named ``nome`` (any case) of the delivery
    matched by message id (a webhook event) or by delivery id (a reply)."""
    run_id = store(ledger, [
        {"to": "5511900000001", "state": "planned", "reason": None,
         "variables": {"cidade": "Recife", "Nome": NAME, "cliente": "not this one"}},
        {"to": "5511900000002", "state": "planned", "reason": None,
         "variables": {"plano": "10"}}])  # no name column: the cell stays blank
    named, unnamed = ids_by_row(ledger, run_id)
    set_rows(ledger, [named], state="delivered", message_id="MSG-1",
             message_id_norm="msg-1", sent_at=T0)
    with ledger.engine.begin() as conn:
        conn.execute(tables.events.insert().values(
            dedupe_key="delivered-msg-1", event="message.delivered", channel="whatsapp",
            session_id="s1", number="5511900000001", message_id_norm="msg-1",
            occurred_at=T0 + timedelta(seconds=5), received_at=T0 + timedelta(seconds=5),
            payload=json.dumps({"event": "message.delivered",
                                "data": {"status": "delivered"}})))
    add_reply(ledger, run_id, named, "5511900000001", "Oi", T0 + timedelta(minutes=1))
    add_reply(ledger, run_id, unnamed, "5511900000002", "Olá", T0 + timedelta(minutes=2))
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web:
        pages = [web.get(f"/runs/{run_id}"), web.get(f"/runs/{run_id}/fragment")]
    for page in pages:
        assert page.status_code == 200, page.url
        events = section(page.text, "events")
        # newest first: the unnamed one's reply, the named one's reply, its delivery
        assert events.count("&lt;script&gt;alert(1)&lt;/script&gt;"
                            "&lt;img src=x onerror=alert(1)&gt;") == 2, page.url
        found = _Elements()
        found.feed(page.text)
        assert found.recipients == ["", NAME, NAME], page.url
        assert [tag for tag, _ in found.tags if tag == "img"] == [], page.url
        assert all(attrs.get("src") == "/static/live.js"
                   for tag, attrs in found.tags if tag == "script"), page.url
        assert "<th>recipient</th>" in events


def test_every_mistake_is_a_page_that_says_what_happened(ledger: Ledger, clock: FakeClock,
                                                         ledger_url: str,
                                                         tmp_path: Path) -> None:
    scenario = make_whatsapp_run(ledger, clock)
    run = scenario.run_id
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web:
        token = form_token(web.get(f"/runs/{run}/resend?rows=failed").text)
        answers = {
            "/runs/999": web.get("/runs/999"),
            "/runs/abc": web.get("/runs/abc"),
            "a number too big": web.get(f"/runs/{10**20}"),
            "pause a number too big": web.post(f"/runs/{10**20}/pause",
                                               data={"csrf_token": token}),
            "/nowhere": web.get("/nowhere"),
            "report.pdf": web.get(f"/runs/{run}/report.pdf"),
            "live of 999": web.get("/runs/999/live"),
            "report of 999": web.get("/runs/999/report.csv"),
            "rows=bogus": web.get(f"/runs/{run}/resend?rows=bogus"),
            "no unproven": web.get(f"/runs/{run}/resend?rows=unproven"),
            "pause finished": web.post(f"/runs/{run}/pause", data={"csrf_token": token}),
            "GET pause": web.get(f"/runs/{run}/pause"),
            "resend bogus": web.post(f"/runs/{run}/resend",
                                     data={"csrf_token": token, "rows": "everything"}),
        }
        static = web.get("/static/app.css")
    status = {name: r.status_code for name, r in answers.items()}
    assert status == {"/runs/999": 404, "/runs/abc": 404, "a number too big": 404,
                      "pause a number too big": 404, "/nowhere": 404, "report.pdf": 404,
                      "live of 999": 404, "report of 999": 404, "rows=bogus": 400,
                      "no unproven": 409, "pause finished": 409, "GET pause": 405,
                      "resend bogus": 400}
    said = {name: hooks(r.text, "id").get("error-message", "") for name, r in answers.items()}
    assert "no run 999" in said["/runs/999"]
    assert f"run {run} is already completed" in said["pause finished"]
    assert "no unproven deliveries" in said["no unproven"]
    assert "rows" in said["resend bogus"]
    for response in [*answers.values(), static]:
        _safe(response)
        assert "Traceback" not in response.text
    assert static.status_code == 200 and "cache-control" not in static.headers


def test_a_finished_run_offers_no_buttons_and_refuses_its_actions(
        ledger: Ledger, clock: FakeClock, ledger_url: str, tmp_path: Path) -> None:
    scenario = make_whatsapp_run(ledger, clock)  # completed, with a failed row
    run = scenario.run_id
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web:
        html = web.get(f"/runs/{run}").text
        token = form_token(web.get(f"/runs/{run}/resend?rows=failed").text)
        refused = [web.post(f"/runs/{run}/{action}", data={"csrf_token": token})
                   for action in ("pause", "resume", "cancel")]
    ids = hooks(html, "id")
    assert not {"pause-button", "resume-button", "cancel-button"} & set(ids)
    assert "resend-failed" in ids  # its failed row may still be sent again
    assert [r.status_code for r in refused] == [409, 409, 409]
    assert all("already completed" in r.text for r in refused)
    assert ledger.get_run(run).status == "completed"
    assert ledger.counts(run) == scenario.states


@pytest.mark.parametrize("action, status", [("pause", "paused"), ("cancel", "cancelled")])
def test_pause_and_cancel_change_the_run_and_say_so(
        ledger: Ledger, clock: FakeClock, ledger_url: str, tmp_path: Path,
        action: str, status: str) -> None:
    run = make_run(ledger, 4)
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web:
        page = web.get(f"/runs/{run}").text
        assert {"pause-button", "cancel-button"} <= set(hooks(page, "id"))
        done = web.post(f"/runs/{run}/{action}", data={"csrf_token": form_token(page)})
        assert done.status_code == 303
        after = web.get(done.headers["location"]).text
        forged = web.post(f"/runs/{run}/resume", data={"csrf_token": "not-the-token"})
    assert ledger.get_run(run).status == status
    assert hooks(after, "id")["run-status"] == status
    assert f"Run {run}" in hooks(after, "id")["notice"]
    assert forged.status_code == 403 and ledger.get_run(run).status == status
    if action == "cancel":
        assert ledger.counts(run) == {"skipped": 4}


def test_failed_rows_are_sent_again_after_a_confirmation_that_says_how_many(
        ledger: Ledger, clock: FakeClock, ledger_url: str, tmp_path: Path) -> None:
    scenario = make_whatsapp_run(ledger, clock)
    run = scenario.run_id
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web:
        confirm = web.get(f"/runs/{run}/resend?rows=failed").text
        assert hooks(confirm, "id")["resend-count"] == "1"
        assert ledger.counts(run)["failed"] == 1  # asking changed nothing
        done = web.post(f"/runs/{run}/resend",
                        data={"csrf_token": form_token(confirm), "rows": "failed"})
        after = web.get(done.headers["location"]).text
    counts = ledger.counts(run)
    assert "failed" not in counts and counts["planned"] == 2
    assert ledger.get_run(run).status == "paused"
    assert "1 failed delivery queued again" in hooks(after, "id")["notice"]
    assert "resume-button" in hooks(after, "id")


def test_sms_and_voice_runs_show_their_own_outcomes(ledger: Ledger, clock: FakeClock,
                                                    ledger_url: str, tmp_path: Path) -> None:
    sms = details_run(ledger, "sms", [{"segments": 2}, {"segments": 1},
                                      {"segments": 1, "errorCode": "NO_COVERAGE"}, None],
                      ["delivered", "delivered", "undelivered", "accepted"])
    voice = details_run(ledger, "voice", [{"answered": True, "digits": "1"},
                                          {"answered": False, "cause": 19}],
                        ["answered", "not_answered"])
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web:
        sms_page, voice_page = web.get(f"/runs/{sms}").text, web.get(f"/runs/{voice}").text
    assert numbers(section(sms_page, "sms"), "data-sms") == {
        "delivered": 2, "undelivered": 1, "awaiting": 1}
    assert numbers(sms_page, "data-funnel")["undelivered"] == 1
    assert "Dialed" in voice_page and numbers(voice_page, "data-funnel")["answered"] == 1
    assert numbers(section(voice_page, "calls"), "data-calls") == {
        "answered": 1, "not_answered": 1}
    assert 'data-label="answered" data-value="1"' in section(voice_page, "calls-chart")
    assert 'data-label="NO_COVERAGE" data-value="1"' in section(sms_page, "sms-chart")


def test_unproven_rows_are_sent_again_and_the_others_in_doubt_stay(
        ledger: Ledger, clock: FakeClock, ledger_url: str, tmp_path: Path) -> None:
    """Two sends in doubt that a receiver listened for through all the service's retries
    (unproven: safe to send again), one still inside them, one nobody listened for."""
    from scheduler.ledger import access
    from scheduler.ledger.queries import uptime as uq

    second = timedelta(seconds=1)
    run = make_run(ledger, 4)
    ids = ids_by_row(ledger, run)
    for row, after in zip(ids, (0, 0, 500, 200), strict=True):
        set_rows(ledger, [row], state="unknown", dispatched_at=T0 + after * second)
    with access.transaction(ledger.engine, "record a receiver's uptime") as conn:
        first = uq.open_uptime(conn, 1, "k", T0 - 60 * second)
        uq.touch_uptime(conn, first, T0 + 380 * second)  # then killed
        later = uq.open_uptime(conn, 2, "k", T0 + 600 * second)
        uq.touch_uptime(conn, later, T0 + 650 * second)
        uq.stop_uptime(conn, later, T0 + 690 * second)
    clock.now = T0 + 700 * second
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web:
        page = web.get(f"/runs/{run}").text
        assert "resend-unproven" in hooks(page, "id") and "resend-failed" not in hooks(page, "id")
        confirm = web.get(f"/runs/{run}/resend?rows=unproven").text
        assert hooks(confirm, "id")["resend-count"] == "2"
        done = web.post(f"/runs/{run}/resend",
                        data={"csrf_token": form_token(confirm), "rows": "unproven"})
        after = web.get(done.headers["location"]).text
    assert ledger.counts(run) == {"planned": 2, "unknown": 2}
    assert "2 unproven deliveries queued again" in hooks(after, "id")["notice"]
