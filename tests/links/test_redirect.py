"""``GET /r/{token}`` through the real receiver: the redirect, what a hit stores, and the
404s that store nothing; a re-plan keeps the links already sent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from sqlalchemy import update

from scheduler.core.httpserver import BackgroundServer
from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from scheduler.links.keys import link_key
from scheduler.links.tokens import LinkRef, make_token, parse_token
from scheduler.settings.load import Settings, load_settings
from scheduler.tracking import create_receiver
from scheduler.usecases.planning import plan_run, replan_run
from tests.factories import FakeClock, Project, open_test_ledger
from tests.links.support import PUBLIC, link_campaign, short_links, stored, with_public_address

START = datetime(2030, 1, 7, 12, tzinfo=UTC)
NOW = datetime(2030, 1, 7, 13, tzinfo=UTC)
PHONE = "Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 Chrome/124.0 Mobile Safari/537.36"
PROMO = "https://loja.example/promo?utm=wa"
TEXT = 'Oi {{ nome }}: {{ link("' + PROMO + '") }}'


@pytest.fixture
def tracked(project: Project, ledger_url: str) -> Iterator[tuple[Ledger, Path]]:
    """A project with a public address and a link campaign, over the pass's ledger."""
    with_public_address(project)
    path = link_campaign(project, TEXT)
    with open_test_ledger(ledger_url) as ledger:
        yield ledger, path


def _sent(ledger: Ledger, row: int, at: datetime) -> None:
    d = tables.deliveries
    with ledger.engine.begin() as conn:
        conn.execute(update(d).where(d.c.row == row)
                     .values(state="sent", accepted_at=at, sent_at=at))


def _links(ledger: Ledger) -> dict[int, str]:
    """Each row's short link, as its stored text has it."""
    found = {}
    for delivery in stored(ledger, "deliveries"):
        (link,) = short_links(json.loads(delivery["payload"])["text"])
        found[delivery["row"]] = link
    return found


class Receiver:
    """The receiver app served on loopback; GETs a short link against it."""

    def __init__(self, settings: Settings, ledger: Ledger) -> None:
        app = create_receiver(settings, ledger, clock=FakeClock(NOW))
        self.server = BackgroundServer(app).start()
        self.http = httpx.Client(timeout=10.0, follow_redirects=False)

    def get(self, link: str, agent: str = PHONE, method: str = "GET") -> httpx.Response:
        """Request a short link made on PUBLIC, here."""
        assert link.startswith(f"{PUBLIC}/r/")
        return self.http.request(method, self.server.base_url + link[len(PUBLIC):],
                                 headers={"user-agent": agent})

    def close(self) -> None:
        """Stop serving."""
        self.http.close()
        self.server.stop()


@pytest.fixture
def receiver(tracked: tuple[Ledger, Path]) -> Iterator[Receiver]:
    """The receiver over the tracked project's ledger and settings (its signing key)."""
    ledger, path = tracked
    settings = load_settings(near=path, webhook_token="t" * 16, webhook_secret="s" * 16)
    served = Receiver(settings, ledger)
    yield served
    served.close()


def _clicks(ledger: Ledger) -> list[dict[str, Any]]:
    return [{k: c[k] for k in ("delivery_id", "counted", "why_not", "user_agent")}
            for c in stored(ledger, "link_clicks")]


def test_a_link_redirects_to_its_address_and_records_the_click(
        tracked: tuple[Ledger, Path], receiver: Receiver) -> None:
    ledger, path = tracked
    run_id = plan_run(ledger, path, start_at=START)
    assert [(r["run_id"], r["link"], r["step"], r["url"]) for r in stored(ledger, "links")] == [
        (run_id, 0, 0, PROMO)]
    links = _links(ledger)
    assert links[1] != links[2]
    _sent(ledger, 1, NOW - timedelta(minutes=5))
    _sent(ledger, 2, NOW - timedelta(seconds=3))
    ids = {d["row"]: d["id"] for d in stored(ledger, "deliveries")}

    person = receiver.get(links[1])
    assert person.status_code == 302
    assert person.headers["location"] == PROMO
    assert person.headers["cache-control"] == "no-store"
    preview = receiver.get(links[1], agent="WhatsApp/2.24.8.78 A")
    assert preview.status_code == 302 and preview.headers["location"] == PROMO
    early = receiver.get(links[2])
    assert early.status_code == 302
    assert receiver.get(links[1], method="HEAD").status_code == 302

    assert _clicks(ledger) == [
        {"delivery_id": ids[1], "counted": True, "why_not": None, "user_agent": PHONE},
        {"delivery_id": ids[1], "counted": False, "why_not": "link preview: WhatsApp",
         "user_agent": "WhatsApp/2.24.8.78 A"},
        {"delivery_id": ids[2], "counted": False, "user_agent": PHONE,
         "why_not": "3.0 s after the send (under 10 s: a fetcher, not a person)"},
        {"delivery_id": ids[1], "counted": False, "user_agent": PHONE,
         "why_not": "HEAD request (checks the link, does not open it)"},
    ]
    assert {c["at"] for c in stored(ledger, "link_clicks")} == {NOW}


def test_a_changed_or_unknown_token_is_404_and_stores_nothing(
        tracked: tuple[Ledger, Path], receiver: Receiver) -> None:
    ledger, path = tracked
    run_id = plan_run(ledger, path, start_at=START)
    _sent(ledger, 1, NOW - timedelta(minutes=5))
    link = _links(ledger)[1]
    token = link.rsplit("/", 1)[1]
    middle = len(token) // 2
    changed = token[:middle] + ("A" if token[middle] != "A" else "B") + token[middle + 1:]
    key = link_key(load_settings(near=path), create=False)
    assert key is not None
    to = stored(ledger, "deliveries")[0]["to"]
    unknown = [
        make_token(key, LinkRef(run_id + 1, 1, 0), to),  # no such run
        make_token(key, LinkRef(run_id, 1, 1), to),  # no such link in the run
        make_token(key, LinkRef(run_id, 9, 0), to),  # no such row
        make_token(key, LinkRef(run_id, 1, 0), "5511900000000"),  # signed for someone else
        make_token(bytes(32), LinkRef(run_id, 1, 0), to),  # another project's key
    ]
    assert parse_token(unknown[-1]).ref == parse_token(token).ref
    for bad in [changed, *unknown, "not-a-token", token + "A"]:
        response = receiver.get(f"{PUBLIC}/r/{bad}")
        assert response.status_code == 404, bad
        assert "location" not in response.headers
    assert stored(ledger, "link_clicks") == []
    assert receiver.get(link).status_code == 302  # the link itself still works


def test_a_replan_keeps_the_links_already_sent(
        tracked: tuple[Ledger, Path], receiver: Receiver, project: Project) -> None:
    ledger, path = tracked
    run_id = plan_run(ledger, path, start_at=START)
    _sent(ledger, 1, NOW - timedelta(minutes=5))
    sent_link = _links(ledger)[1]
    # the template gains a link before the old one: the old keeps its number and address
    link_campaign(project, 'Novo: {{ link("https://loja.example/new") }} ' + TEXT)
    (run,) = [r for r in ledger.list_runs() if r.id == run_id]
    replan_run(ledger, run, path, start_at=START)
    assert [(r["link"], r["url"]) for r in stored(ledger, "links")] == [
        (0, PROMO), (1, "https://loja.example/new")]
    texts = {d["row"]: json.loads(d["payload"])["text"] for d in stored(ledger, "deliveries")}
    assert texts[1].endswith(sent_link)  # row 1 was sent: not planned again
    assert len(short_links(texts[2])) == 2
    assert receiver.get(sent_link).headers["location"] == PROMO
    new_link = short_links(texts[2])[0]
    _sent(ledger, 2, NOW - timedelta(minutes=1))
    assert receiver.get(new_link).headers["location"] == "https://loja.example/new"
    assert [c["counted"] for c in stored(ledger, "link_clicks")] == [True, True]


def test_the_report_has_click_rates_and_who_clicked_first(
        tracked: tuple[Ledger, Path], receiver: Receiver, tmp_path: Path) -> None:
    import openpyxl

    from scheduler.reports.api import write_report

    ledger, path = tracked
    run_id = plan_run(ledger, path, start_at=START)
    _sent(ledger, 1, NOW - timedelta(minutes=5))
    _sent(ledger, 2, NOW - timedelta(seconds=3))
    links = _links(ledger)
    receiver.get(links[1], agent="facebookexternalhit/1.1")
    receiver.get(links[1])
    receiver.get(links[1])  # the same person again: one person, two clicks
    receiver.get(links[2])  # 3 s after its send: not counted
    report = write_report(ledger, [run_id], output=tmp_path / "r.xlsx")
    assert report.rows["Links"] == 1
    sheet = openpyxl.load_workbook(report.path)["Links"]
    values = list(sheet.iter_rows(values_only=True))
    assert values[0][:9] == ("Run", "Step", "Link", "Address", "Sent", "Hits",
                             "Clicks (counted)", "People who clicked", "Click rate")
    assert values[1][:9] == (run_id, 0, 0, PROMO, 2, 4, 2, 1, 0.5)
    local_now = NOW.astimezone(ZoneInfo("America/Sao_Paulo")).replace(tzinfo=None)
    assert values[1][9] == local_now
    steps = values[values.index(next(r for r in values if r[0] and str(r[0]).startswith(
        "Click rate per step"))) + 2]
    assert steps[:9] == (run_id, 0, 1, PROMO, 2, 4, 2, 1, 0.5)
    first = [r for r in values if r[3] == "5511987654321"]
    assert [r[:6] for r in first] == [(run_id, 0, 0, "5511987654321", 1, local_now)]
    assert not [r for r in values if str(r[0] or "").startswith("Click rate per variant")]


def _table_after(values: list[tuple[Any, ...]], title: str) -> list[tuple[Any, ...]]:
    """The rows of the sheet's table under the section ``title`` (its header first)."""
    start = next(i for i, r in enumerate(values) if str(r[0] or "").startswith(title))
    rows = []
    for row in values[start + 1:]:
        if all(v is None for v in row):
            break
        rows.append(row)
    return rows


def test_the_report_gives_click_rates_per_variant(
        tracked: tuple[Ledger, Path], receiver: Receiver, project: Project,
        tmp_path: Path) -> None:
    """Variant A has one link, B two: each link's counted clicks per variant over that
    variant's sends, and each variant's over any of the step's links."""
    import openpyxl

    from scheduler.reports.api import write_report

    ledger, path = tracked
    other = "https://loja.example/b"
    csv = "nome;telefone\n" + "".join(f"P{i};+55 11 9{i:08d}\n" for i in range(16))
    assert project.basic(
        '[[steps]]\ntype = "text"\nvariants = [\n'
        f'  {{name = "A", text = \'A {{{{ link("{PROMO}") }}}}\'}},\n'
        f'  {{name = "B", text = \'B {{{{ link("{PROMO}") }}}} {{{{ link("{other}") }}}}\'}},\n'
        ']\n', csv=csv) == path
    run_id = plan_run(ledger, path, start_at=START)
    d = tables.deliveries
    with ledger.engine.begin() as conn:
        conn.execute(update(d).values(state="sent", accepted_at=NOW - timedelta(minutes=5),
                                      sent_at=NOW - timedelta(minutes=5)))
    texts: dict[str, list[list[str]]] = {"A": [], "B": []}
    for delivery in stored(ledger, "deliveries"):
        texts[delivery["variant"]].append(short_links(json.loads(delivery["payload"])["text"]))
    a, b = texts["A"], texts["B"]
    assert len(a) >= 2 and len(b) >= 3 and len(a) + len(b) == 16
    assert {len(x) for x in a} == {1} and {len(x) for x in b} == {2}
    receiver.get(a[0][0])
    receiver.get(a[1][0], agent="WhatsApp/2.24.8.78 A")  # a preview: not counted
    receiver.get(b[0][0])
    receiver.get(b[0][0])  # the same person again: two clicks, one person
    receiver.get(b[0][1])
    receiver.get(b[1][1])
    receiver.get(b[2][1], agent="facebookexternalhit/1.1")

    report = write_report(ledger, [run_id], output=tmp_path / "r.xlsx")
    values = list(openpyxl.load_workbook(report.path)["Links"].iter_rows(values_only=True))
    header, *rows = _table_after(values, "Click rate per variant")
    assert header == ("Run", "Step", "Link", "Address", "Variant", "Sent", "Hits",
                      "Clicks (counted)", "People who clicked", "Click rate")
    na, nb = len(a), len(b)
    assert rows == [
        (run_id, 0, 0, PROMO, "A", na, 2, 1, 1, pytest.approx(1 / na)),
        (run_id, 0, 0, PROMO, "B", nb, 2, 2, 1, pytest.approx(1 / nb)),
        (run_id, 0, 1, other, "A", na, 0, 0, 0, 0),  # A's text has no such link
        (run_id, 0, 1, other, "B", nb, 3, 2, 2, pytest.approx(2 / nb)),
        (run_id, 0, None, "any of the step's links", "A", na, 2, 1, 1, pytest.approx(1 / na)),
        (run_id, 0, None, "any of the step's links", "B", nb, 5, 4, 2, pytest.approx(2 / nb)),
    ]
