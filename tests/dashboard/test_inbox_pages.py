"""The dashboard's inbox (``/replies``) and recipient pages (``/recipients``) over the real
app and a real server: replies shown as text with their delivery, step, number and name;
the filters; mark-as-handled needs an operator and the session's CSRF token (a viewer and
a request without the token are refused, nothing changes); the live section is sent again
when a reply is handled in another connection; a recipient found by number or name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scheduler.dashboard.app import create_app
from scheduler.ledger import access
from scheduler.ledger.queries import inbox as iq
from scheduler.ledger.runs import Ledger
from scheduler.settings.load import Settings
from scheduler.usecases.reply_handling import mark_handled
from tests.dashboard.auth_support import serving, signed_in, user_settings
from tests.dashboard.web_support import (
    HOSTILE,
    events,
    form_token,
    hooks,
    next_update,
    project_settings,
    served,
)
from tests.factories import T0, FakeClock, number, open_test_ledger
from tests.views.inbox_support import World, build_world


@pytest.fixture
def world(ledger: Ledger) -> World:
    """The runs and replies of ``tests/views/inbox_support.py``."""
    return build_world(ledger)


def _handled(ledger: Ledger, reply_id: int) -> tuple[str, object] | None:
    with access.read(ledger.engine) as conn:
        return iq.handled_by(conn, reply_id)


def test_the_inbox_shows_each_reply_as_text_with_what_it_answers(
        ledger: Ledger, world: World, clock: FakeClock, ledger_url: str,
        tmp_path: Path) -> None:
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web:
        page = web.get("/replies")
        assert page.status_code == 200
        html = page.text
        assert HOSTILE not in html and "&lt;script&gt;" in html and "<img src=x" not in html
        states = hooks(html, "data-reply")
        assert len(states) == 4
        shown = hooks(html, "data-state-tab")
        assert shown == {"new": "new 1", "to answer": "to answer 2", "handled": "handled 1"}
        hostile = world.replies["hostile"]
        card = html[html.index(f'id="reply-{hostile}"'):]
        card = card[:card.index("</article>")]
        assert f'href="/recipients/{number(0)}"' in card and "Ana 0" in card
        assert f'href="/runs/{world.lote}"' in card and "step 1" in card
        assert 'class="handle-button"' in card  # open access: the visitor is an operator
        filtered = web.get("/replies", params={"state": "to answer", "campaign": "lote"}).text
        assert list(hooks(filtered, "data-reply")) == [str(hostile)]
        live = re.search(r'data-live-url="([^"]+)"', filtered)
        assert live and live.group(1).startswith("/replies/live?")
        assert {"campaign=lote", "state=to+answer"} == set(live.group(1)[14:].split("&amp;"))
        assert web.get("/replies", params={"state": "lido"}).status_code == 400
        assert web.get("/replies", params={"since": "ontem"}).status_code == 400
        assert web.get("/replies", params={"run": "abc"}).status_code == 400
        assert web.get("/replies/fragment").status_code == 200


def test_marking_handled_takes_the_token_and_says_what_it_did(
        ledger: Ledger, world: World, clock: FakeClock, ledger_url: str,
        tmp_path: Path) -> None:
    settings = project_settings(tmp_path, ledger_url)
    hostile = world.replies["hostile"]
    with served(ledger, settings, clock=clock) as web:
        token = form_token(web.get("/replies").text)
        for form in ({}, {"csrf_token": "not-the-token"}):
            refused = web.post(f"/replies/{hostile}/handled", data=form)
            assert refused.status_code == 403
        assert _handled(ledger, hostile) is None
        done = web.post(f"/replies/{hostile}/handled",
                        data={"csrf_token": token, "back": "state=to answer&evil=1"})
        assert done.status_code == 303
        where = done.headers["location"]
        assert where.startswith("/replies?state=to+answer&notice=") and "evil" not in where
        assert _handled(ledger, hostile) == ("local", clock())
        back = web.get(where.split("#")[0]).text
        assert hooks(back, "id")["notice"] == f"Reply {hostile} marked as handled by local."
        again = web.post(f"/replies/{hostile}/handled", data={"csrf_token": token})
        assert "was handled already" in web.get(again.headers["location"].split("#")[0]).text
        odd = web.post(f"/replies/{world.replies['stranger']}/handled",
                       data={"csrf_token": token, "back": "&".join(["a=1"] * 50)})
        assert odd.status_code == 303 and odd.headers["location"].startswith("/replies?notice=")
        missing = web.post("/replies/999999/handled", data={"csrf_token": token})
        assert missing.status_code == 404


def _logins(root: Path, ledger_url: str) -> Settings:
    users = user_settings().users
    config = "".join(f'[dashboard.users.{name}]\nrole = "{user.role}"\n'
                     f'password_hash = "{user.password_hash}"\n\n'
                     for name, user in users.items())
    return project_settings(root, ledger_url, config)


def test_a_viewer_sees_the_inbox_but_cannot_mark_a_reply(
        ledger: Ledger, world: World, clock: FakeClock, ledger_url: str,
        tmp_path: Path) -> None:
    settings = _logins(tmp_path, ledger_url)
    hostile = world.replies["hostile"]
    with serving(create_app(settings, ledger, clock=clock)) as server:
        with signed_in(server, "vic") as viewer:
            html = viewer.get("/replies").text
            assert str(hostile) in hooks(html, "data-reply")
            assert "handle-button" not in html
            token = form_token(html)  # the viewer's own (sign-out) form
            refused = viewer.post(f"/replies/{hostile}/handled", data={"csrf_token": token})
            assert refused.status_code == 403
            assert viewer.get(f"/recipients/{number(0)}").status_code == 200
        assert _handled(ledger, hostile) is None
        with signed_in(server, "ana") as operator:
            html = operator.get("/replies").text
            assert "handle-button" in html
            done = operator.post(f"/replies/{hostile}/handled",
                                 data={"csrf_token": form_token(html)})
            assert done.status_code == 303
    assert _handled(ledger, hostile) == ("ana", clock())


def test_the_inbox_is_sent_again_when_a_reply_is_handled_elsewhere(
        ledger: Ledger, world: World, clock: FakeClock, ledger_url: str,
        tmp_path: Path) -> None:
    settings = project_settings(tmp_path, ledger_url)
    hostile = world.replies["hostile"]
    with served(ledger, settings, clock=clock, live_every_s=0.05) as web, \
            web.stream("GET", "/replies/live", params={"state": "to answer"}) as response:
        assert response.status_code == 200
        stream = events(response)
        first = next_update(stream)
        assert str(hostile) in hooks(first.data, "data-reply")
        with open_test_ledger(ledger_url, clock) as other:  # another process's connection
            mark_handled(other, hostile, "otto", T0)
        update = next_update(stream)
    assert update.id != first.id
    assert str(hostile) not in hooks(update.data, "data-reply")
    assert hooks(update.data, "data-state-tab")["handled"] == "handled 2"


def test_a_recipient_is_found_by_number_or_name(
        ledger: Ledger, world: World, clock: FakeClock, ledger_url: str,
        tmp_path: Path) -> None:
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web:
        found = web.get("/recipients", params={"q": "+55 (11) 90000-0000"})
        assert found.status_code == 303
        assert found.headers["location"] == f"/recipients/{number(0)}"
        assert web.get("/recipients/(11) 90000-0000").headers["location"] == \
            f"/recipients/{number(0)}"
        named = web.get("/recipients", params={"q": "ana 2"}).text
        assert hooks(named, "data-number") == {number(2): f"{number(2)} · Ana 2"}
        folded = web.get("/recipients", params={"q": "ÁNA"}).text  # case and accents aside
        assert set(hooks(folded, "data-number")) == {number(i) for i in range(3)}
        assert "none-found" in hooks(web.get("/recipients", params={"q": HOSTILE}).text, "id")
        html = web.get(f"/recipients/{number(0)}").text
        assert HOSTILE not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
        ids = hooks(html, "id")
        assert ids["recipient-names"] == "Ana 0"
        rows = hooks(html, "data-delivery")
        assert len(rows) == 4 and any("no_answer" in text for text in rows.values())
        what = [value for value, _text in _all(html, "data-what")]
        assert {"reply", "click", "event", "verdict", "delivered"} <= set(what)
        assert web.get("/recipients/maria").status_code == 404
        assert web.get("/recipients", params={"q": "x" * 101}).status_code == 400


def _all(html: str, name: str) -> list[tuple[str, str]]:
    """Every element's ``name`` attribute value (not only the first of each)."""
    return [(m.group(1), "") for m in re.finditer(rf'{name}="([^"]*)"', html)]
