"""The dashboard's privacy page: an operator downloads a person's JSON and erases them with
the session's CSRF token, a reason and the box ticked; a viewer, or a post without the
token, is refused and nothing changes; the audit names the dashboard's user."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import text

from scheduler.dashboard.app import create_app
from scheduler.ledger.runs import Ledger
from tests.dashboard.auth_support import serving, signed_in, user_settings
from tests.dashboard.web_support import form_token, project_settings
from tests.factories import FakeClock, make_run, number
from tests.privacy.support import scan


def test_an_operator_exports_and_erases_from_the_dashboard(
        ledger: Ledger, clock: FakeClock, ledger_url: str, tmp_path: Path) -> None:
    make_run(ledger, 3)
    person = number(2)
    users = user_settings().users
    config = "".join(f'[dashboard.users.{name}]\nrole = "{user.role}"\n'
                     f'password_hash = "{user.password_hash}"\n\n'
                     for name, user in users.items())
    settings = project_settings(tmp_path, ledger_url, config)
    form = {"number": f"+{person}", "reason": "pedido do titular", "confirm": "yes"}
    with serving(create_app(settings, ledger, clock=clock)) as server:
        with signed_in(server, "vic") as viewer:
            assert viewer.get("/privacy").status_code == 403
            token = form_token(viewer.get("/").text)  # the viewer's sign-out form
            for path in ("/privacy/export", "/privacy/forget"):
                assert viewer.post(path, data={**form, "csrf_token": token}).status_code == 403
        with signed_in(server, "ana") as operator:
            html = operator.get("/privacy").text
            assert 'id="forget-form"' in html and 'id="export-form"' in html
            assert operator.post("/privacy/forget", data=form).status_code == 403  # no token
            token = form_token(html)
            got = operator.post("/privacy/export", data={**form, "csrf_token": token})
            assert got.status_code == 200, got.text
            assert "attachment" in got.headers["content-disposition"]
            assert json.loads(got.text)["tables"]["deliveries"][0]["to"] == person
            unticked = operator.post("/privacy/forget", data={
                **form, "confirm": "", "csrf_token": token})
            assert unticked.status_code == 400
            assert scan(ledger_url, [person])  # nothing erased yet
            done = operator.post("/privacy/forget", data={**form, "csrf_token": token})
            assert done.status_code == 303
            page = operator.get(done.headers["location"]).text
            assert "Erased:" in page and "erased:" in page
    assert scan(ledger_url, [person]) == []
    with ledger.engine.connect() as conn:
        audit = conn.execute(text("SELECT action, who, via FROM privacy_audit ORDER BY id")
                             ).all()
    assert [tuple(a) for a in audit] == [("export", "ana", "dashboard"),
                                         ("forget", "ana", "dashboard")]
