"""The dashboard's logins, sessions, roles and CSRF over a real server (uvicorn on loopback,
httpx), on a tiny app with auth installed: what a visitor, a viewer, an operator and a
forger each get."""

from __future__ import annotations

import tomllib
from datetime import timedelta

import httpx
import pytest
from fastapi import APIRouter, Depends, Request

from scheduler.core.errors import SchedulerError
from scheduler.dashboard import auth
from scheduler.dashboard.csrf import unguarded_posts
from scheduler.dashboard.passwords import verify_password
from scheduler.settings.dashboard import DashboardSettings
from tests.dashboard.auth_support import (
    PASSWORDS,
    CountingHasher,
    attempt,
    attempt_from,
    client,
    form_token,
    serving,
    signed_in,
    tiny_app,
    user_settings,
)
from tests.factories import FakeClock
from tests.incli import campaign


def _cookie_header(response: httpx.Response) -> str:
    cookies = [v for k, v in response.headers.multi_items() if k == "set-cookie"]
    assert len(cookies) == 1, cookies
    return cookies[0]


def test_a_user_signs_in_and_comes_back_to_the_page_asked_for(clock: FakeClock) -> None:
    tiny = tiny_app(user_settings(), clock)
    with serving(tiny.app) as server, client(server) as http:
        first = http.get("/runs/7", params={"tab": "errors"})
        assert first.status_code == 303
        assert first.headers["location"] == "/login?next=%2Fruns%2F7%3Ftab%3Derrors"
        form = http.get(first.headers["location"])
        assert form.status_code == 200 and 'type="password"' in form.text
        assert 'value="/runs/7?tab=errors"' in form.text
        done = http.post("/login", data={"user": "ana", "password": PASSWORDS["ana"],
                                         "csrf_token": form_token(form.text),
                                         "next": "/runs/7?tab=errors"})
        assert done.status_code == 303 and done.headers["location"] == "/runs/7?tab=errors"
        me = http.get("/").json()
        assert me == {**me, "user": "ana", "role": "operator", "can_act": True,
                      "open_access": False, "optional": "ana"}


def test_the_session_cookie_is_httponly_strict_and_secure_over_https(
        clock: FakeClock) -> None:
    tiny = tiny_app(user_settings(), clock)
    with serving(tiny.app) as server, client(server) as http:
        response = attempt(http, "ana", PASSWORDS["ana"])
        cookie = _cookie_header(response)
        parts = {p.strip().split("=")[0].lower() for p in cookie.split(";")}
        assert cookie.startswith(f"{auth.COOKIE}=")
        assert {"httponly", "samesite", "path", "max-age"} <= parts
        assert "SameSite=Strict" in cookie and "secure" not in parts  # plain http here
        # behind a proxy speaking https, the browser is told to send it over https only
        with client(server) as proxied:
            token = form_token(proxied.get("/login").text)
            behind = proxied.post("/login", headers={"X-Forwarded-Proto": "https"},
                                  data={"user": "ana", "password": PASSWORDS["ana"],
                                        "csrf_token": token})
        assert "; Secure" in _cookie_header(behind)


def test_a_wrong_password_and_an_unknown_name_get_one_answer_after_the_same_work(
        clock: FakeClock) -> None:
    hasher = CountingHasher()
    tiny = tiny_app(user_settings(), clock, hasher=hasher)
    with serving(tiny.app) as server, client(server) as http:
        wrong = attempt(http, "ana", "not-her-password")
        assert hasher.verified == 1
        unknown = attempt(http, "nobody", "not-her-password")
        assert hasher.verified == 2  # the unknown name is checked against a decoy hash
    assert wrong.status_code == unknown.status_code == 401
    assert "Wrong user name or password." in wrong.text
    assert wrong.text.replace("ana", "nobody") == unknown.text.replace(
        form_token(unknown.text), form_token(wrong.text))
    assert "not-her-password" not in wrong.text and "argon2" not in wrong.text
    assert auth.COOKIE not in wrong.headers.get("set-cookie", "")  # no session given


def test_a_name_typed_at_the_form_comes_back_as_text(clock: FakeClock) -> None:
    tiny = tiny_app(user_settings(), clock)
    with serving(tiny.app) as server, client(server) as http:
        page = attempt(http, '<script>alert(1)</script>', "whatever-pw").text
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_login_attempts_are_limited_per_client_address(clock: FakeClock) -> None:
    tiny = tiny_app(user_settings(), clock)
    with serving(tiny.app) as server, client(server, "127.0.0.2") as http:
        answers = [attempt(http, f"guess{i}", "wrong-pw-1").status_code for i in range(5)]
        assert answers == [401] * 5
        refused = attempt(http, "ana", PASSWORDS["ana"])  # even the right password
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "60"
        assert "try again in 60 seconds" in refused.text
        with client(server, "127.0.0.3") as other:  # another address is not held back
            assert attempt(other, "vic", PASSWORDS["vic"]).status_code == 303
        clock.now += timedelta(seconds=45)
        assert attempt(http, "ana", PASSWORDS["ana"]).headers["retry-after"] == "15"
        clock.now += timedelta(seconds=15)
        assert attempt(http, "ana", PASSWORDS["ana"]).status_code == 303


def test_login_attempts_are_limited_per_user_name(clock: FakeClock) -> None:
    tiny = tiny_app(user_settings(), clock)
    with serving(tiny.app) as server:
        for i in range(5):  # five addresses, one guess each, all at ana
            with client(server, f"127.0.1.{i + 1}") as http:
                assert attempt(http, "ana", f"guess-{i}-pw").status_code == 401
        with client(server, "127.0.2.1") as http:
            assert attempt(http, "Ana", PASSWORDS["ana"]).status_code == 429
            assert attempt(http, "vic", PASSWORDS["vic"]).status_code == 303


def test_logout_ends_the_session(clock: FakeClock) -> None:
    tiny = tiny_app(user_settings(), clock)
    with serving(tiny.app) as server, signed_in(server, "ana") as http:
        cookie = http.cookies[auth.COOKIE]
        token = http.get("/").json()["csrf"]
        out = http.post("/logout", data={"csrf_token": token})
        assert out.status_code == 303 and out.headers["location"] == "/login"
        assert "Max-Age=0" in _cookie_header(out)
        with client(server) as replay:  # the old cookie, kept by someone, opens nothing
            replay.cookies.set(auth.COOKIE, cookie)
            assert replay.get("/").status_code == 303
            assert replay.post("/act", data={"csrf_token": token}).status_code == 403
    assert tiny.acted == []


def test_a_session_ends_after_its_idle_time(clock: FakeClock) -> None:
    tiny = tiny_app(user_settings(), clock)
    with serving(tiny.app) as server, signed_in(server, "vic") as http:
        clock.now += timedelta(hours=7)
        assert http.get("/").status_code == 200
        clock.now += timedelta(hours=7)  # 7 h since the last request: still live
        assert http.get("/").status_code == 200
        clock.now += timedelta(hours=8)
        assert http.get("/").headers["location"] == "/login?next=%2F"


def test_an_operator_acts_and_a_viewer_is_refused(clock: FakeClock) -> None:
    tiny = tiny_app(user_settings(), clock)
    with serving(tiny.app) as server:
        with signed_in(server, "ana") as ana:
            token = ana.get("/").json()["csrf"]
            assert ana.post("/act", data={"csrf_token": token}).json() == {"done": True}
        with signed_in(server, "vic") as vic:
            me = vic.get("/").json()
            assert me["role"] == "viewer" and me["can_act"] is False
            refused = vic.post("/act", data={"csrf_token": me["csrf"]})
            assert refused.status_code == 403
            assert "viewer" in refused.json()["detail"]
    assert tiny.acted == ["ana"]


def test_a_forged_post_without_or_with_a_wrong_token_is_refused(clock: FakeClock) -> None:
    tiny = tiny_app(user_settings(), clock)
    with serving(tiny.app) as server, signed_in(server, "ana") as ana, \
            signed_in(server, "ana") as other:
        theirs = other.get("/").json()["csrf"]
        mine = ana.get("/").json()["csrf"]
        answers = [
            ana.post("/act"),
            ana.post("/act", data={"csrf_token": ""}),
            ana.post("/act", data={"csrf_token": mine[:-1] + ("A" if mine[-1] != "A" else "B")}),
            ana.post("/act", data={"csrf_token": theirs}),  # another session's token
            ana.post("/act", headers={"X-CSRF-Token": theirs}),
            ana.post("/act", files={"csrf_token": (None, mine)}),  # only url-encoded forms
        ]
        assert [r.status_code for r in answers] == [403] * 6
        assert "security token" in answers[0].text
        assert ana.post("/act", headers={"X-CSRF-Token": mine}).status_code == 200
        assert ana.post("/act", data={"csrf_token": mine}).status_code == 200
    assert tiny.acted == ["ana", "ana"]


def test_the_login_form_itself_needs_its_token(clock: FakeClock) -> None:
    tiny = tiny_app(user_settings(), clock)
    with serving(tiny.app) as server, client(server) as http:
        http.get("/login")
        forged = http.post("/login", data={"user": "ana", "password": PASSWORDS["ana"]})
        assert forged.status_code == 403 and auth.COOKIE not in forged.headers.get(
            "set-cookie", "")


def test_the_login_never_leads_to_another_site(clock: FakeClock) -> None:
    tiny = tiny_app(user_settings(), clock)
    with serving(tiny.app) as server:
        for target in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
            with client(server) as http:
                assert attempt(http, "ana", PASSWORDS["ana"], target).headers[
                    "location"] == "/"


def test_without_users_every_local_visitor_is_an_operator_and_is_told(
        clock: FakeClock) -> None:
    tiny = tiny_app(DashboardSettings(), clock)
    with serving(tiny.app) as server, client(server) as http:
        me = http.get("/").json()
        assert me["open_access"] is True and me["can_act"] is True
        assert http.get("/login").headers["location"] == "/"
        assert http.post("/act", data={"csrf_token": me["csrf"]}).status_code == 200
        assert http.post("/act").status_code == 403  # still no action without the token
        # a page of another site resolving its name to 127.0.0.1 (DNS rebinding)
        rebound = http.get("/", headers={"Host": f"evil.example:{server.port}"})
        assert rebound.status_code == 403 and "loopback" in rebound.text
    assert tiny.acted == ["local"]
    assert auth.OPEN_ACCESS_NOTE.startswith("No logins are configured")


def test_a_non_loopback_address_without_users_is_refused() -> None:
    for host in ("0.0.0.0", "192.0.2.10", "::", "dashboard.example.com"):
        with pytest.raises(SchedulerError, match=r"refusing to serve the dashboard on .*"
                                                 r"\[dashboard\.users\.NAME\]"):
            auth.check_binding(host, DashboardSettings())
    for host in ("127.0.0.1", "127.0.0.9", "::1", "[::1]", "localhost"):
        auth.check_binding(host, DashboardSettings())
    auth.check_binding("0.0.0.0", user_settings())


def test_every_post_route_of_the_app_checks_the_token(clock: FakeClock) -> None:
    tiny = tiny_app(user_settings(), clock)
    assert unguarded_posts(tiny.app) == []  # /login, /logout (an included router), /act
    assert unguarded_posts(tiny.app, needing=auth.require_operator) == ["/login", "/logout"]

    @tiny.app.post("/careless")
    def careless() -> None: ...

    included = APIRouter(dependencies=[Depends(auth.require_operator)])
    included.add_api_route("/also", careless, methods=["POST"])
    tiny.app.include_router(included, prefix="/runs")
    assert unguarded_posts(tiny.app) == ["/careless", "/runs/also"]
    assert unguarded_posts(tiny.app, needing=auth.require_operator) == [
        "/careless", "/login", "/logout"]


def test_the_hash_command_reads_the_password_from_stdin_and_its_hash_signs_in() -> None:
    password = "a long passphrase 1"
    done = campaign("dashboard-user", "hash", "--user", "rita", "--role", "operator",
                    stdin=password + "\n")  # the console script's main(), in this process
    assert done.returncode == 0, done.stderr
    assert password not in done.stdout + done.stderr
    block = tomllib.loads(done.stdout)["dashboard"]
    settings = DashboardSettings(**block)
    assert settings.users["rita"].role == "operator"
    assert verify_password(settings.users["rita"].password_hash, password)
    assert not verify_password(settings.users["rita"].password_hash, password + "x")

    bare = campaign("dashboard-user", "hash", stdin="short\n")
    assert bare.returncode == 1 and "at least 8 characters" in bare.stderr


def test_only_the_login_form_and_static_files_are_public(clock: FakeClock) -> None:
    tiny = tiny_app(user_settings(), clock)
    with serving(tiny.app) as server, client(server) as http:
        assert http.get("/login").status_code == 200
        for path in ("/loginx", "/login/../", "/logins", "/static"):
            assert http.get(path).status_code == 303, path


def test_a_page_for_anyone_can_ask_who_is_there_without_a_login(clock: FakeClock) -> None:
    tiny = tiny_app(user_settings(), clock)

    @tiny.app.get("/static/who")
    def who(request: Request) -> dict:
        return {"who": getattr(auth.optional_user(request), "name", None)}

    with serving(tiny.app) as server, client(server) as http:
        assert http.get("/static/who").json() == {"who": None}
        attempt(http, "vic", PASSWORDS["vic"])
        assert http.get("/static/who").json() == {"who": "vic"}


def test_a_link_from_another_site_keeps_the_session_it_could_not_show(
        clock: FakeClock) -> None:
    tiny = tiny_app(user_settings(), clock)
    link = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}
    with serving(tiny.app) as server, signed_in(server, "ana") as ana:
        cookie = ana.cookies[auth.COOKIE]
        with client(server) as browser:  # the browser withholds its Strict cookie
            page = browser.get("/runs/7", params={"tab": "x"}, headers=link)
        assert page.status_code == 200 and "set-cookie" not in page.headers
        assert '<meta http-equiv="refresh" content="0; url=/runs/7?tab=x">' in page.text
        browser_again = ana.get("/", headers={"Sec-Fetch-Site": "same-origin"})
        assert browser_again.json()["user"] == "ana"
        assert ana.cookies[auth.COOKIE] == cookie
        # with its cookie (a lax browser), the link opens the page straight away
        assert ana.get("/", headers=link).json()["user"] == "ana"


def test_behind_a_proxy_on_this_machine_each_client_is_limited_and_open_access_refused(
        clock: FakeClock) -> None:
    """uvicorn takes ``X-Forwarded-For`` from a loopback peer (a local reverse proxy) as
    the client's address: limits apply per real client, and an open dashboard refuses
    a client from elsewhere even when the proxy's own Host header looked local."""
    tiny = tiny_app(user_settings(), clock)
    with serving(tiny.app) as server, client(server) as proxy:
        for i in range(5):
            answer = attempt_from(proxy, "203.0.113.7", f"guess{i}")
            assert answer.status_code == 401
        assert attempt_from(proxy, "203.0.113.7", "guess5").status_code == 429
        assert attempt_from(proxy, "198.51.100.2", "guess6").status_code == 401
    with serving(tiny_app(DashboardSettings(), clock).app) as server, client(server) as proxy:
        assert proxy.get("/").status_code == 200
        refused = proxy.get("/", headers={"X-Forwarded-For": "203.0.113.7"})
        assert refused.status_code == 403 and "loopback" in refused.text
