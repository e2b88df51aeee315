"""The receiver's HTTP boundary: authenticity, malformed input, repeats, health, URLs."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from sqlalchemy import text

from scheduler.ledger.queries import uptime as uq
from scheduler.ledger.rows import UptimeInterval
from scheduler.ledger.runs import Ledger
from scheduler.settings.load import Settings
from scheduler.tracking import receiver_token, session_webhook_url
from scheduler.tracking.intake import sign
from tests.factories import T0, number
from tests.tracking.support import (
    SECRET,
    TOKEN,
    accepted_run,
    mid,
    received,
    rows,
    sent,
    table,
    wait_until,
)

JSON = {"content-type": "application/json"}


# --------------------------------------------------------------------------- authenticity


@pytest.mark.parametrize("query", ["", "?token=", "?token=wrong", f"?token={TOKEN}x",
                                   f"?Token={TOKEN}"])
def test_session_webhook_without_the_right_token_is_401_and_stores_nothing(
        tledger: Ledger, make_receiver, query: str) -> None:
    receiver = make_receiver(tledger)
    response = receiver.post_raw(json.dumps(sent(number(0), mid(0))).encode(),
                                 path=f"/webhooks/session{query}", headers=JSON)
    assert response.status_code == 401
    assert response.json()["ok"] is False
    assert TOKEN not in response.text
    assert table(tledger, "events") == []


@pytest.mark.parametrize("signature", [None, "", "00" * 32, "not-hex", "SIGN_OTHER_SECRET"])
def test_account_webhook_without_a_valid_signature_is_401_and_stores_nothing(
        tledger: Ledger, make_receiver, signature: str | None) -> None:
    receiver = make_receiver(tledger)
    event = {"event": "sms.delivered", "channel": "sms", "timestamp": "2026-11-23T12:00:00Z",
             "data": {"messageId": "m1", "to": number(0), "status": "delivered"}}
    if signature == "SIGN_OTHER_SECRET":
        signature = sign(json.dumps(event).encode(), "another-secret")
    response = receiver.post_account(event, secret=None, signature=signature)
    assert response.status_code == 401
    assert SECRET not in response.text
    assert table(tledger, "events") == []


def test_the_signature_covers_the_raw_body(tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger)
    body = b'{"event": "sms.delivered", "channel": "sms", "data": {"messageId": "m1"}}'
    signed = sign(body, SECRET)
    ok = receiver.post_raw(body, path="/webhooks/account",
                           headers={**JSON, "x-dapi-signature": signed})
    assert ok.status_code == 200, ok.text
    # The same JSON re-serialised (other spacing) no longer matches the signature.
    reformatted = json.dumps(json.loads(body), separators=(",", ":")).encode()
    bad = receiver.post_raw(reformatted, path="/webhooks/account",
                            headers={**JSON, "x-dapi-signature": signed})
    assert bad.status_code == 401
    assert len(table(tledger, "events")) == 1


def test_account_webhook_is_refused_when_no_secret_is_configured(
        tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger, webhook_secret=None)
    event = {"event": "sms.delivered", "channel": "sms", "data": {"messageId": "m1"}}
    response = receiver.post_account(event)
    assert response.status_code == 401
    assert "webhook_secret" in response.json()["error"]
    assert table(tledger, "events") == []


def test_each_webhook_refuses_the_other_kind_of_event(tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger)
    account_event = {"event": "sms.delivered", "channel": "sms",
                     "data": {"messageId": "m1", "to": number(0)}}
    assert receiver.post(account_event).status_code == 422
    assert receiver.post_account(sent(number(0), mid(0))).status_code == 422
    assert table(tledger, "events") == []


# --------------------------------------------------------------------------- malformed input

MALFORMED = [
    ("not json", b"{not json", JSON, 400, "malformed JSON"),
    ("empty body", b"", JSON, 400, "malformed JSON"),
    ("not utf-8", b'{"event": "\xff"}', JSON, 400, "not UTF-8"),
    ("NaN is not JSON", b'{"event": "x", "data": NaN}', JSON, 400, "malformed JSON"),
    ("lone surrogate", b'{"event": "\\ud800"}', JSON, 400, "malformed JSON"),
    ("array", b"[1, 2]", JSON, 422, "JSON object"),
    ("string", b'"messages.sent"', JSON, 422, "JSON object"),
    ("no event name", b'{"sessionId": "s1", "data": {}}', JSON, 422, "no 'event'"),
    ("empty event name", b'{"event": "", "data": {}}', JSON, 422, "no 'event'"),
    ("known event, bad data", b'{"event": "messages.sent", "sessionId": "s1", "data": {}}',
     JSON, 422, "messages.sent"),
    ("receipt without id", b'{"event": "message.read", "sessionId": "s1", '
     b'"data": {"remote_jid": "x@s.whatsapp.net"}}', JSON, 422, "message.read"),
    ("text/plain", b'{"event": "x"}', {"content-type": "text/plain"}, 415, "content type"),
    ("form", b"event=x", {"content-type": "application/x-www-form-urlencoded"}, 415,
     "content type"),
    ("no content type", b'{"event": "x"}', {"content-type": ""}, 415, "content type"),
    ("bad content-length", b'{"event": "x"}', {**JSON, "content-length": "abc"}, 400, None),
    ("nested too deep", b"[" * 100_000 + b"]" * 100_000, JSON, 400, None),
]


@pytest.mark.parametrize(("content", "headers", "status", "message"),
                         [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_input_is_a_clear_4xx_and_stores_nothing(
        tledger: Ledger, make_receiver, content: bytes, headers: dict, status: int,
        message: str | None) -> None:
    receiver = make_receiver(tledger, max_event_bytes=1_000_000)
    try:
        response = receiver.post_raw(content, headers=headers)
    except httpx.HTTPError:
        # h11 refuses a request whose Content-Length is not a number before the app sees it
        assert headers.get("content-length") == "abc"
        return
    assert 400 <= response.status_code < 500, response.text
    if headers.get("content-length") != "abc":
        assert response.status_code == status
        assert response.json()["ok"] is False
        if message:
            assert message in response.json()["error"]
    assert table(tledger, "events") == []


def test_an_oversized_body_is_413_by_content_length_and_by_bytes_read(
        tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger, max_event_bytes=2048)
    event = sent(number(0), mid(0), text="x" * 4000)
    declared = receiver.post(event)
    assert declared.status_code == 413
    assert "2048" in declared.json()["error"]

    body = json.dumps(event).encode()

    def chunks():  # no Content-Length: sent chunked, counted as it is read
        for i in range(0, len(body), 500):
            yield body[i:i + 500]

    streamed = receiver.post_raw(chunks(), headers=JSON)
    assert streamed.status_code == 413
    small = receiver.post(sent(number(0), mid(0)))
    assert small.status_code == 200
    assert len(table(tledger, "events")) == 1


def test_an_unknown_event_is_stored_and_ignored(tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger)
    event = {"event": "presence.update", "sessionId": "s1", "data": {"whatever": [1, 2]}}
    response = receiver.post(event)
    assert response.status_code == 200
    [stored] = table(tledger, "events")
    assert stored["event"] == "presence.update"
    assert stored["result"] == "stored" and stored["applied_at"] is not None
    assert json.loads(stored["payload"]) == event


def test_a_database_that_cannot_be_written_is_503_never_500(
        tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger)
    with tledger.engine.begin() as conn:
        conn.execute(text("ALTER TABLE events RENAME TO events_elsewhere"))
    response = receiver.post(sent(number(0), mid(0)))
    assert response.status_code == 503
    assert "try again" in response.json()["error"]


# --------------------------------------------------------------------------- repeats


async def test_the_same_event_50_times_at_once_is_stored_and_applied_once(
        tledger: Ledger, make_receiver) -> None:
    run_id = accepted_run(tledger, 1)
    receiver = make_receiver(tledger)
    event_sent = json.dumps(sent(number(0), mid(0))).encode()
    event_reply = json.dumps(received(number(0), "Quero saber mais")).encode()
    async with httpx.AsyncClient(timeout=10.0,
                                 limits=httpx.Limits(max_connections=100)) as client:
        answers = await asyncio.gather(*(
            client.post(receiver.url, content=body, headers=JSON)
            for body in [event_sent] * 50 + [event_reply] * 50))
    assert [a.status_code for a in answers] == [200] * 100
    duplicates = [a.json()["duplicate"] for a in answers]
    assert duplicates[:50].count(False) == 1 and duplicates[50:].count(False) == 1
    assert sorted(e["event"] for e in table(tledger, "events")) == [
        "messages.received", "messages.sent"]
    assert len(table(tledger, "replies")) == 1
    [row] = rows(tledger, run_id)
    assert row["state"] == "sent" and row["sent_at"] == T0
    assert row["reply_text"] == "Quero saber mais"


def test_health(tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger)
    receiver.post(sent(number(0), mid(0)))
    health = httpx.get(f"{receiver.base_url}/health").json()
    assert health["ok"] is True and health["events"] == 1 and health["pending"] == 0


# --------------------------------------------------------------------------- URL to register


def test_the_webhook_url_carries_the_configured_token(tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger)
    assert receiver.url == f"{receiver.base_url}/webhooks/session?token={TOKEN}"
    public = Settings(webhook_url="https://hooks.example.com/wh?src=x&token=old",
                      webhook_token=TOKEN)
    assert session_webhook_url(public, receiver.server) == (
        f"https://hooks.example.com/wh?src=x&token={TOKEN}")


def test_without_a_token_a_random_one_is_made_for_the_process(
        tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger, webhook_token=None)
    token = receiver_token(Settings())
    assert len(token) >= 32 and token == receiver_token(Settings())
    assert receiver.url.endswith(f"?token={token}")
    assert receiver.post(sent(number(0), mid(0))).status_code == 200
    other = receiver.post_raw(json.dumps(sent(number(1), mid(1))).encode(),
                              path="/webhooks/session?token=guess", headers=JSON)
    assert other.status_code == 401


def test_the_webhook_paths_only_take_post(tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger)
    answer = httpx.get(receiver.url)
    assert answer.status_code == 405 and answer.headers["allow"] == "POST"
    assert httpx.get(f"{receiver.base_url}/nothing-here").status_code == 404


def test_a_session_event_naming_its_channel_is_still_a_session_event(
        tledger: Ledger, make_receiver) -> None:
    run_id = accepted_run(tledger, 1)
    receiver = make_receiver(tledger)
    assert receiver.post({**sent(number(0), mid(0)), "channel": "whatsapp"}).status_code == 200
    assert rows(tledger, run_id)[0]["state"] == "sent"
    assert table(tledger, "events")[0]["channel"] == "whatsapp"


def test_an_unknown_event_with_a_huge_number_is_stored(tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger)
    body = b'{"event": "x.y", "sessionId": "s1", "data": {"n": 123456789012345678901234567890}}'
    assert receiver.post_raw(body, headers=JSON).status_code == 200
    assert receiver.post_raw(body, headers=JSON).json()["duplicate"] is True
    [stored] = table(tledger, "events")
    assert stored["payload"] == body.decode()



# --------------------------------------------------------------------------- uptime


def _uptime(ledger: Ledger) -> list[UptimeInterval]:
    with ledger.engine.connect() as conn:
        return uq.uptime_intervals(conn, T0.replace(year=2000))


def test_an_event_refused_after_the_right_token_breaks_the_recorded_uptime(
        tledger: Ledger, make_receiver) -> None:
    # issue 31: a receiver that refused an event (the service may not retry it again) did
    # not listen for that moment: the refusal ends its interval, so no send made before
    # it is called unproven (scheduler.dispatch.unknowns)
    receiver = make_receiver(tledger)
    wait_until(lambda: len(_uptime(tledger)) == 1)
    wrong = receiver.post_raw(b'{"event": "x"}', path="/webhooks/session?token=wrong",
                              headers=JSON)
    assert wrong.status_code == 401  # anyone's knock: no break
    assert receiver.post(sent(number(0), mid(0))).status_code == 200
    refused = receiver.post_raw(b"{not json", headers=JSON)
    assert refused.status_code == 400
    first, second = wait_until(lambda: len(found := _uptime(tledger)) == 2 and found)
    assert first.last_seen_at < second.started_at and first.stopped_at is None
    assert first.url_key == second.url_key
