"""Auth in the real dashboard (``create_app`` over a ledger, a real server): every action
needs an operator and its form's token, a signed-out visitor sees only the login form, and
no page holds a secret of the settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.dashboard import auth
from scheduler.dashboard.app import create_app
from scheduler.dashboard.csrf import unguarded_posts
from scheduler.ledger.runs import Ledger
from scheduler.settings.load import Settings
from tests.app.support import clean_env, cli
from tests.dashboard.auth_support import (
    PASSWORDS,
    attempt,
    client,
    form_token,
    serving,
    signed_in,
    user_settings,
)
from tests.dashboard.web_support import hooks, project_settings
from tests.factories import FakeClock, make_run

SECRETS = {"api key": "sk-live-API-KEY-never-shown", "token": "WEBHOOK-TOKEN-never-shown",
           "secret": "WEBHOOK-SECRET-never-shown"}


def _config() -> str:
    """config.toml with the two test logins and a webhook token and secret."""
    users = user_settings().users
    blocks = "".join(f'[dashboard.users.{name}]\nrole = "{user.role}"\n'
                     f'password_hash = "{user.password_hash}"\n\n'
                     for name, user in users.items())
    return (f'base_url = "http://127.0.0.1:9"\nwebhook_token = "{SECRETS["token"]}"\n'
            f'webhook_secret = "{SECRETS["secret"]}"\n\n{blocks}')


@pytest.fixture
def settings(tmp_path: Path, ledger_url: str, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The project's settings: two logins, a service with an API key, webhook secrets."""
    monkeypatch.setenv("CAMPAIGN_API_KEY", SECRETS["api key"])
    return project_settings(tmp_path, ledger_url, _config())


def test_every_action_needs_an_operator_and_its_token(ledger: Ledger, settings: Settings) -> None:
    app = create_app(settings, ledger)
    assert unguarded_posts(app) == []
    assert unguarded_posts(app, needing=auth.require_operator) == ["/login", "/logout"]


def test_a_signed_out_visitor_gets_the_login_form_and_nothing_else(
        ledger: Ledger, clock: FakeClock, settings: Settings) -> None:
    run = make_run(ledger, 4)
    with serving(create_app(settings, ledger, clock=clock)) as server, client(server) as web:
        for path in ("/", "/senders", "/campaigns", f"/runs/{run}", f"/runs/{run}/live",
                     f"/runs/{run}/report.csv", f"/runs/{run}/resend?rows=failed"):
            answer = web.get(path)
            assert answer.status_code == 303, path
            assert answer.headers["location"].startswith("/login?next=%2F"), path
        login = web.get("/login")
        token = form_token(login.text)
        refused = web.post(f"/runs/{run}/pause", data={"csrf_token": token})
    assert login.status_code == 200 and 'type="password"' in login.text
    assert "content-security-policy" in login.headers  # the dashboard's headers too
    assert refused.status_code == 403
    assert ledger.get_run(run).status == "planned"


def test_a_viewer_sees_the_run_but_its_action_is_refused(
        ledger: Ledger, clock: FakeClock, settings: Settings) -> None:
    run = make_run(ledger, 4)
    with serving(create_app(settings, ledger, clock=clock)) as server, \
            signed_in(server, "vic") as vic:
        page = vic.get(f"/runs/{run}")
        refused = vic.post(f"/runs/{run}/pause", data={"csrf_token": form_token(page.text)})
    assert page.status_code == 200
    assert not {"pause-button", "cancel-button"} & set(hooks(page.text, "id"))
    assert refused.status_code == 403 and "viewer" in refused.text
    assert ledger.get_run(run).status == "planned"


def test_an_operators_forged_action_is_refused_and_a_real_one_done(
        ledger: Ledger, clock: FakeClock, settings: Settings) -> None:
    run = make_run(ledger, 4)
    with serving(create_app(settings, ledger, clock=clock)) as server, \
            signed_in(server, "ana") as ana, signed_in(server, "ana") as elsewhere:
        theirs = form_token(elsewhere.get(f"/runs/{run}").text)
        page = ana.get(f"/runs/{run}").text
        forged = [ana.post(f"/runs/{run}/pause"),
                  ana.post(f"/runs/{run}/pause", data={"csrf_token": theirs})]
        assert [r.status_code for r in forged] == [403, 403]
        assert ledger.get_run(run).status == "planned"
        done = ana.post(f"/runs/{run}/pause", data={"csrf_token": form_token(page)})
    assert done.status_code == 303 and ledger.get_run(run).status == "paused"


def test_no_page_holds_a_secret_or_a_password_hash(
        ledger: Ledger, clock: FakeClock, settings: Settings) -> None:
    run = make_run(ledger, 4)
    hidden = [*SECRETS.values(), *PASSWORDS.values(), "a-wrong-password",
              *(user.password_hash for user in settings.dashboard.users.values()), "$argon2"]
    with serving(create_app(settings, ledger, clock=clock)) as server:
        with client(server) as anyone:
            shown = [anyone.get("/login"), anyone.post("/login", data={"user": "ana"}),
                     attempt(anyone, "ana", "a-wrong-password")]
        with signed_in(server, "ana") as ana:
            shown += [ana.get(p) for p in ("/", "/senders", "/campaigns", f"/runs/{run}",
                                           f"/runs/{run}/resend?rows=failed", "/runs/999")]
    assert [r.status_code for r in shown] == [200, 403, 401, 200, 200, 200, 200, 409, 404]
    for answer in shown:
        text = answer.text + str(answer.headers)
        assert not [h for h in hidden if h in text], answer.url


def test_campaign_dashboard_refuses_a_public_address_without_logins(
        tmp_path: Path, ledger_url: str) -> None:
    (tmp_path / "config.toml").write_text("")
    env = clean_env(CAMPAIGN_DATABASE_URL=ledger_url)
    done = cli(env, "dashboard", "--host", "0.0.0.0", "--port", "0", cwd=tmp_path,
               timeout=60)
    assert done.returncode == 1
    assert "refusing to serve the dashboard on 0.0.0.0" in done.stderr
    assert "[dashboard.users.NAME]" in done.stderr
