"""Per-session trouble through the HTTP API and the real client: rate-limit storms, logouts
after N sends or past an opt-out ratio, sends accepted but never delivered; seeded."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import pytest

from scheduler.sandbox.testing import SandboxHandle, WebhookSink
from scheduler.service.client import ServiceClient
from scheduler.service.exceptions import RateLimited, RequestRejected
from tests.factories import FakeClock
from tests.sandbox.support import TO

Outcome = int | str  # 200, "429 Retry-After=N", or the status of a refusal (409)


@pytest.fixture
async def clients() -> AsyncIterator[Callable[[SandboxHandle], ServiceClient]]:
    """``clients(box)``: a real ServiceClient of ``box`` (closed after the test)."""
    made: list[ServiceClient] = []

    def make(box: SandboxHandle) -> ServiceClient:
        made.append(ServiceClient(box.base_url, box.api_key, timeout_s=5))
        return made[-1]

    yield make
    for client in made:
        await client.aclose()


async def send(client: ServiceClient, session_id: str, text: str = "Olá") -> Outcome:
    """One text through the client: 200, ``"429 Retry-After=N"`` or the refusal's status."""
    try:
        await client.send_text(session_id, TO, text)
    except RateLimited as exc:
        return f"429 Retry-After={exc.retry_after:g}"
    except RequestRejected as exc:
        return exc.status
    return 200


def advance(clock: FakeClock, seconds: float) -> None:
    clock.now += timedelta(seconds=seconds)


# ------------------------------------------------------------------ rate-limit storm


async def test_a_storm_answers_429_with_retry_after_then_recovers(make_sandbox, clients):
    clock = FakeClock()
    box = make_sandbox(clock=clock, rate_limit_storm={"s1": {"after_sends": 3, "for_s": 30}})
    box.create_session("s1")
    box.create_session("s2")
    client = clients(box)
    assert [await send(client, "s1") for _ in range(3)] == [200, 200, 200]
    with pytest.raises(RateLimited) as storm:
        await client.send_text("s1", TO, "four")
    assert storm.value.retry_after == 30
    assert await send(client, "s2") == 200  # the other session is not in the storm
    advance(clock, 10)
    assert await send(client, "s1") == "429 Retry-After=20"
    advance(clock, 20)
    assert [await send(client, "s1") for _ in range(4)] == [200] * 4  # one storm only
    assert len([s for s in box.sends() if s["sessionId"] == "s1"]) == 7
    [record] = box.trouble("s1")["s1"]["storms"]
    assert record["answered429"] == 2
    assert record["endedAt"] == record["until"]


async def test_a_storm_counted_in_requests_repeats_when_told(make_sandbox, clients):
    rule = {"after_sends": 2, "for_requests": 2, "retry_after_s": 5, "repeat": True}
    box = make_sandbox(rate_limit_storm={"s1": rule})
    box.create_session("s1")
    client = clients(box)
    outcomes = [await send(client, "s1") for _ in range(9)]
    storm = "429 Retry-After=5"
    assert outcomes == [200, 200, storm, storm, 200, 200, storm, storm, 200]


async def test_a_storm_within_a_window_needs_the_sends_close_together(make_sandbox, clients):
    clock = FakeClock()
    rule = {"after_sends": 3, "window_s": 60, "for_requests": 1}
    box = make_sandbox(clock=clock, rate_limit_storm={"*": rule})
    box.create_session("s1")
    client = clients(box)
    assert [await send(client, "s1") for _ in range(2)] == [200, 200]
    advance(clock, 61)
    # 4 sends, but never 3 of them within 60 s: no storm until the fifth
    assert [await send(client, "s1") for _ in range(3)] == [200, 200, 200]
    assert await send(client, "s1") == "429 Retry-After=1"


async def test_a_storm_set_mid_run_counts_the_sends_before_it(sandbox, clients):
    sandbox.create_session("s1")
    client = clients(sandbox)
    assert [await send(client, "s1") for _ in range(3)] == [200, 200, 200]
    sandbox.set_faults(rate_limit_storm={"s1": {"after_sends": 2, "for_requests": 1}})
    assert [await send(client, "s1") for _ in range(2)] == ["429 Retry-After=1", 200]


# ------------------------------------------------------------------ logged out


def logged_out(sink: WebhookSink, session_id: str) -> list[dict[str, Any]]:
    return sink.wait_for(lambda e: e["event"] == "connection.status"
                         and e["sessionId"] == session_id
                         and e["data"]["status"] == "logged_out")


async def test_logged_out_after_n_sends_like_a_phone_logout(make_sandbox, webhook_sink,
                                                           clients):
    box = make_sandbox(session_status_events=True, logout_after={"s1": {"sends": 3}})
    box.create_session("s1", webhook_url=webhook_sink.url)
    box.create_session("s2", webhook_url=webhook_sink.url)
    client = clients(box)
    assert [await send(client, "s1") for _ in range(3)] == [200, 200, 200]
    [event] = logged_out(webhook_sink, "s1")
    box.logout("s2")  # what the sandbox did before: the phone logs the session out
    [by_hand] = logged_out(webhook_sink, "s2")
    assert event["data"] == by_hand["data"]
    with pytest.raises(RequestRejected) as refused:
        await client.send_text("s1", TO, "four")
    assert await send(client, "s2") == 409
    assert refused.value.status == 409
    assert refused.value.error == "Session s1 is not connected (status: disconnected)"
    assert (await client.get_session("s1")).status == "disconnected"
    assert [s["sessionId"] for s in box.sends()] == ["s1"] * 3
    sent = [e["data"]["id"].lower() for e in webhook_sink.of("messages.sent")]
    assert sent == [s["messageId"].lower() for s in box.sends()]
    assert box.trouble("s1")["s1"]["logoutReason"] == "3 sends"


async def test_logout_within_a_window_counts_only_close_sends(make_sandbox, clients):
    clock = FakeClock()
    box = make_sandbox(clock=clock, logout_after={"s1": {"sends": 3, "window_s": 10}})
    box.create_session("s1")
    client = clients(box)
    assert [await send(client, "s1") for _ in range(2)] == [200, 200]
    advance(clock, 11)
    assert [await send(client, "s1") for _ in range(3)] == [200, 200, 200]
    assert await send(client, "s1") == 409
    assert box.trouble("s1")["s1"]["logoutReason"] == "3 sends within 10 s"


async def test_logout_when_the_opt_out_ratio_passes_the_threshold(make_sandbox, webhook_sink,
                                                                  clients):
    rule = {"opt_out_ratio": 0.3, "min_sends": 5}
    box = make_sandbox(session_status_events=True, reply_rate=1.0, opt_out_rate=0.4,
                       logout_after={"s1": rule})
    box.create_session("s1", webhook_url=webhook_sink.url)
    client = clients(box)
    outcomes = [await send(client, "s1", f"m{i}") for i in range(40)]
    accepted = outcomes.index(409)
    assert outcomes[:accepted] == [200] * accepted and set(outcomes[accepted:]) == {409}
    logged_out(webhook_sink, "s1")
    opt_outs = [reply["optOut"] for reply in box.http.get("/sandbox/replies").json()]
    assert len(opt_outs) == accepted  # every recipient replied once

    def over(sends: int) -> bool:
        return sends >= 5 and sum(opt_outs[:sends]) >= 0.3 * sends

    # logged out right after the first send that took the ratio to the threshold
    assert over(accepted) and not any(over(n) for n in range(1, accepted))
    assert box.trouble("s1")["s1"]["optOuts"] == sum(opt_outs)


# ------------------------------------------------------------------ never delivered


async def test_never_delivered_sends_get_messages_sent_and_no_receipt(make_sandbox,
                                                                      webhook_sink, clients):
    box = make_sandbox(delivered_rate=1.0, never_delivered={"s1": 0.4})
    box.create_session("s1", webhook_url=webhook_sink.url)
    box.create_session("s2", webhook_url=webhook_sink.url)
    client = clients(box)
    ids = [(await client.send_text("s1", TO, f"m{i}")).messageId.lower() for i in range(20)]
    lost = {m.lower() for m in box.trouble("s1")["s1"]["neverDelivered"]}
    assert 0 < len(lost) < 20 and lost <= set(ids)
    webhook_sink.wait_for(lambda e: e["event"] == "messages.sent", count=20)
    webhook_sink.wait_for(lambda e: e["event"] == "message.delivered", count=20 - len(lost))
    marker = (await client.send_text("s2", TO, "marker")).messageId.lower()
    webhook_sink.wait_for(lambda e: e["event"] == "message.delivered"
                          and e["data"]["message_id"].lower() == marker)
    delivered = {e["data"]["message_id"].lower() for e in webhook_sink.of("message.delivered")}
    assert delivered == (set(ids) - lost) | {marker}
    sent = {e["data"]["id"].lower() for e in webhook_sink.of("messages.sent")}
    assert sent == set(ids) | {marker}


# ------------------------------------------------------------------ seeds and settings


async def scripted(box: SandboxHandle, clock: FakeClock, client: ServiceClient) -> list[Any]:
    """Forty sends through s1 then s2, a minute apart: every outcome, then the record."""
    box.create_session("s1")
    box.create_session("s2")
    outcomes = []
    for i in range(40):
        outcomes.append(await send(client, ("s1", "s2")[i % 2], f"m{i}"))
        advance(clock, 60)
    return [outcomes, box.trouble(), [s["messageId"] for s in box.sends()]]


TROUBLE = {
    "rate_limit_storm": {"*": {"after_sends": 4, "for_s": 150, "repeat": True}},
    "logout_after": {"s2": {"opt_out_ratio": 0.25, "min_sends": 4}},
    "never_delivered": {"s1": 0.5},
    "reply_rate": 0.5,
    "opt_out_rate": 0.5,
}


async def test_the_same_seed_gives_the_same_trouble(make_sandbox, clients):
    runs = []
    for seed in (8, 8, 7):
        clock = FakeClock()
        box = make_sandbox(seed=seed, clock=clock, **TROUBLE)
        runs.append(await scripted(box, clock, clients(box)))
    first, again, other = runs
    assert again == first
    assert other != first
    outcomes, trouble, _ = first
    assert trouble["s1"]["storms"] and trouble["s1"]["neverDelivered"]
    assert trouble["s2"]["loggedOutAt"] is not None and 409 in outcomes


def test_bad_rules_are_refused_naming_the_field(sandbox):
    bad = {
        "rate_limit_storm": {"s1": {"after_sends": 3}},
        "logout_after": {"s1": {"window_s": 5}},
        "never_delivered": {"s1": 1.5},
    }
    for field, rules in bad.items():
        response = sandbox.http.post("/sandbox/faults", json={field: rules})
        assert response.status_code == 400
        assert f"{field}.s1" in response.json()["error"]
    knobs = sandbox.set_faults(never_delivered={"*": 0.1, "s1": 0.0})
    assert knobs["never_delivered"] == {"*": 0.1, "s1": 0.0}


async def test_template_sends_have_the_sessions_trouble_too(make_sandbox, clients):
    box = make_sandbox(rate_limit_storm={"oficial": {"after_sends": 1, "for_requests": 1}},
                       never_delivered={"oficial": 1.0})
    client = clients(box)
    await client.connect_cloud_api("oficial", phone_number_id="1234567890",
                                   business_account_id="9876543210", access_token="EAAG-token-1")
    await client.create_template("oficial", "oi", "pt_BR", "Olá {{1}}")
    first = await client.send_template("oficial", TO, "oi", "pt_BR", ["Ana"])
    with pytest.raises(RateLimited):
        await client.send_template("oficial", TO, "oi", "pt_BR", ["Bia"])
    second = await client.send_template("oficial", TO, "oi", "pt_BR", ["Bia"])
    lost = box.trouble("oficial")["oficial"]["neverDelivered"]
    assert lost == [first.messageId, second.messageId]
