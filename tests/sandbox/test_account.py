"""SMS, voice (URA), the wallet and the account webhooks of the sandbox, over real HTTP."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections import Counter
from typing import Any

import pytest

from scheduler.sandbox.config import SMS_ERROR_CODES

SMS_SEND = "/api/v1/sms/send"
SMS_BULK = "/api/v1/sms/bulk"
VOICE_CALL = "/api/v1/voice/call"
VOICE_BULK = "/api/v1/voice/bulk"
HOOKS = "/api/v1/account/webhooks"
TO = "5511988887777"
AUDIO = "https://cdn.example.com/aviso.mp3"
ENDS = ("answered", "talkSeconds", "digits", "cause", "causeDescription")


def numbers(count: int, start: int = 0) -> list[str]:
    return [f"55119{start + i:08d}" for i in range(count)]


def post(box: Any, path: str, body: dict[str, Any]) -> Any:
    return box.api("POST", path, json=body)


def hook(box: Any, channel: str, **settings: Any) -> dict[str, Any]:
    response = box.api("PUT", f"{HOOKS}/{channel}", json=settings)
    assert response.status_code == 200, response.text
    return response.json()["config"]


def eventually(check: Any, timeout: float = 5.0) -> Any:
    """Poll ``check()`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


def calls_ended(box: Any, count: int) -> list[dict[str, Any]]:
    """The voice outcomes once ``count`` calls have ended."""
    def ended() -> list[dict[str, Any]] | None:
        done = [o for o in box.outcomes("voice") if o["endedAt"]]
        return done if len(done) >= count else None

    found = eventually(ended, timeout=20.0)
    assert found, f"{count} calls did not end: {box.outcomes('voice')}"
    return found


def in_time(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events in the order they happened (deliveries run in parallel and may overtake)."""
    return sorted(events, key=lambda e: e["data"]["timestamp"])


def signed_by(secret: str, raw: bytes) -> str:
    return hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()


# --------------------------------------------------------------------------- SMS


def test_sms_send_answers_segments_and_cost_and_is_logged(sandbox):
    text = "Olá! " + "x" * 70  # 'á' makes it UCS-2: 75 units, 2 parts
    response = post(sandbox, SMS_SEND, {"to": TO, "text": text, "route": "otp"})
    assert response.status_code == 200, response.text
    answer = response.json()
    price = sandbox.state.config.sms_price_micro["otp"]
    assert answer["success"] is True
    assert answer["segments"] == 2
    assert answer["costMicroReais"] == 2 * price
    assert answer["gatewayMessageId"] is None
    [sent] = sandbox.sends()
    assert (sent["path"], sent["to"], sent["messageId"]) == (SMS_SEND, TO, answer["messageId"])
    assert sent["body"] == {"to": TO, "text": text, "route": "otp"}
    [outcome] = sandbox.outcomes("sms")
    assert outcome["messageId"] == answer["messageId"]
    assert (outcome["segments"], outcome["costMicroReais"], outcome["route"]) == (
        2, 2 * price, "otp")


def test_sms_bulk_gives_each_number_its_own_message(sandbox):
    people = numbers(5)
    response = post(sandbox, SMS_BULK, {"to": people, "text": "Promo"})
    answer = response.json()
    assert (answer["sent"], answer["failed"], answer["skipped"]) == (5, 0, 0)
    assert [r["to"] for r in answer["results"]] == people
    ids = [r["messageId"] for r in answer["results"]]
    assert len(set(ids)) == 5
    [logged] = sandbox.sends()
    assert (logged["path"], logged["to"], logged["messageIds"]) == (SMS_BULK, people, ids)
    assert [o["messageId"] for o in sandbox.outcomes("sms")] == ids


def test_sms_outcomes_follow_the_rates_and_report_on_the_webhook(make_sandbox, webhook_sink):
    box = make_sandbox(sms_undelivered_rate=0.5, sms_failed_rate=0.2, sms_expired_rate=0.1)
    hook(box, "sms", url=webhook_sink.url)
    post(box, SMS_BULK, {"to": numbers(200), "text": "Oi"})
    outcomes = box.outcomes("sms")
    counts = Counter(o["outcome"] for o in outcomes)
    assert set(counts) == {"delivered", "undelivered", "failed", "expired"}
    assert 70 <= counts["undelivered"] <= 130 and counts["delivered"] <= 70
    for o in outcomes:
        if o["outcome"] in ("undelivered", "failed"):
            assert o["errorCode"] in SMS_ERROR_CODES
        else:
            assert o["errorCode"] is None
    events = webhook_sink.wait_for(lambda e: e.get("channel") == "sms", count=200)
    by_id = {e["data"]["messageId"]: e for e in events}
    for o in outcomes:
        event = by_id[o["messageId"]]
        assert event["event"] == f"sms.{o['outcome']}"
        assert set(event) == {"event", "channel", "data", "timestamp"}
        assert event["data"] == {"messageId": o["messageId"], "to": o["to"],
                                 "status": o["outcome"], "errorCode": o["errorCode"],
                                 "segments": 1, "timestamp": event["data"]["timestamp"]}


def test_same_seed_same_outcomes_other_seed_others(make_sandbox):
    def run(seed: int) -> tuple[list[Any], list[Any]]:
        box = make_sandbox(seed=seed, voice_time_scale=0.001)
        post(box, SMS_BULK, {"to": numbers(40), "text": "Oi"})
        post(box, SMS_SEND, {"to": TO, "text": "Olá"})
        post(box, VOICE_BULK, {"flowId": "pesquisa", "numbers": numbers(10), "maxAttempts": 2})
        sms = [{k: o[k] for k in ("messageId", "to", "outcome", "errorCode", "segments")}
               for o in box.outcomes("sms")]
        voice = [{k: o[k] for k in ("callId", "bulkId", "to", "attempts", *ENDS)}
                 for o in box.outcomes("voice")]
        return sms, voice

    first, again, other = run(7), run(7), run(8)
    assert first == again
    assert [o["outcome"] for o in first[0]] != [o["outcome"] for o in other[0]] or [
        o["answered"] for o in first[1]] != [o["answered"] for o in other[1]]


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("path", "body", "named"),
    [
        (SMS_SEND, {"sessionId": "s1", "to": TO, "text": "x"}, "sessionId"),
        (SMS_SEND, {"to": "+55 11 98888", "text": "x"}, "to"),
        (SMS_SEND, {"to": TO, "text": "x", "route": "fast"}, "route"),
        (SMS_BULK, {"to": [TO], "text": "x", "sessionId": "s1"}, "sessionId"),
        (SMS_BULK, {"text": "x"}, "to"),
        (SMS_BULK, {"to": [], "text": "x"}, "to"),
        (VOICE_CALL, {"to": TO}, "audioUrl and flowId"),
        (VOICE_CALL, {"to": TO, "audioUrl": AUDIO, "flowId": "f"}, "audioUrl and flowId"),
        (VOICE_BULK, {"audioUrl": AUDIO}, "numbers and recipients"),
        (VOICE_BULK, {"audioUrl": AUDIO, "numbers": [TO], "recipients": [{"phone": TO}]},
         "numbers and recipients"),
        (VOICE_BULK, {"flowId": "f", "recipients": [{"phone": TO, "extra": 1}]}, "extra"),
        (VOICE_BULK, {"flowId": "f", "numbers": [TO], "scheduledAt": "tomorrow"}, "scheduledAt"),
    ],
)
def test_invalid_bodies_are_400_naming_the_field(sandbox, path, body, named):
    response = post(sandbox, path, body)
    assert response.status_code == 400
    answer = response.json()
    assert answer["success"] is False and answer["statusCode"] == 400
    assert named in answer["error"]
    assert sandbox.sends() == []


def test_new_endpoints_need_the_key(sandbox):
    for method, path in (("POST", SMS_SEND), ("POST", VOICE_BULK), ("GET", HOOKS),
                         ("PUT", f"{HOOKS}/sms")):
        response = sandbox.http.request(method, path, json={})
        assert response.status_code == 401
        assert response.json() == {"success": False, "error": "Invalid API key",
                                   "statusCode": 401}


def test_account_webhook_channels_and_event_names_are_checked(sandbox):
    response = sandbox.api("PUT", f"{HOOKS}/whatsapp", json={"url": "http://x/y"})
    assert response.status_code == 404
    assert "whatsapp" in response.json()["error"]
    response = sandbox.api("PUT", f"{HOOKS}/sms", json={"events": ["call.ended"]})
    assert response.status_code == 400 and "events" in response.json()["error"]
    response = sandbox.api("PUT", f"{HOOKS}/voice", json={"url": "ftp://x"})
    assert response.status_code == 400 and "url" in response.json()["error"]
    response = sandbox.http.get("/sandbox/outcomes", params={"channel": "fax"})
    assert response.status_code == 400


# --------------------------------------------------------------------------- wallet


def test_wallet_runs_out_in_sms_bulk_then_single_is_402_until_topped_up(make_sandbox):
    price = 60_000
    box = make_sandbox(wallet_micro_reais=3 * price + 10, sms_price_micro={"marketing": price})
    people = numbers(5)
    answer = post(box, SMS_BULK, {"to": people, "text": "Oi"}).json()
    assert (answer["sent"], answer["skipped"]) == (3, 2)
    assert [r["status"] for r in answer["results"]] == ["sent"] * 3 + ["skipped"] * 2
    assert [r["to"] for r in answer["results"]] == people
    assert all(r.get("messageId") is None for r in answer["results"][3:])
    assert box.wallet()["balanceMicroReais"] == 10
    assert [o["outcome"] for o in box.outcomes("sms")][3:] == ["skipped", "skipped"]

    refused = post(box, SMS_SEND, {"to": TO, "text": "Oi"})
    assert refused.status_code == 402
    assert refused.json() == {"success": False, "error": "Insufficient balance",
                              "statusCode": 402}
    assert box.wallet(topUpMicroReais=price)["balanceMicroReais"] == price + 10
    assert post(box, SMS_SEND, {"to": TO, "text": "Oi"}).status_code == 200
    assert box.wallet()["balanceMicroReais"] == 10
    assert box.wallet(balanceMicroReais=None)["unlimited"] is True


def test_wallet_runs_out_in_voice_bulk_and_reservations_are_settled(make_sandbox):
    # calls ring for at least 0.4 s of wall time: the reservations are still held when checked
    box = make_sandbox(wallet_micro_reais=500_000, voice_reserve_micro=200_000,
                       voice_price_micro_per_minute=50_000, voice_time_scale=0.05,
                       voice_ring_s=(8.0, 12.0))
    answer = post(box, VOICE_BULK, {"audioUrl": AUDIO, "numbers": numbers(5)}).json()
    assert (answer["dialed"], answer["skipped"]) == (2, 3)
    assert answer["reservedMicroReais"] == 400_000
    outcomes = box.outcomes("voice")
    assert [o["outcome"] for o in outcomes][2:] == ["skipped"] * 3
    assert all(o["callId"] is None for o in outcomes[2:])
    assert box.wallet()["reservedMicroReais"] == 400_000
    assert post(box, VOICE_CALL, {"to": TO, "audioUrl": AUDIO}).status_code == 402
    ended = calls_ended(box, 2)
    charged = sum(o["costMicroReais"] for o in ended)
    assert charged == sum(-(-o["talkSeconds"] // 60) * 50_000 for o in ended)
    wallet = box.wallet()
    assert wallet["reservedMicroReais"] == 0
    assert wallet["balanceMicroReais"] == 500_000 - charged


def test_the_wallet_knob_sets_the_balance(sandbox):
    sandbox.set_faults(wallet_micro_reais=0)
    assert post(sandbox, SMS_SEND, {"to": TO, "text": "Oi"}).status_code == 402
    assert post(sandbox, VOICE_CALL, {"to": TO, "flowId": "f"}).status_code == 402
    sandbox.set_faults(wallet_micro_reais=None)
    assert post(sandbox, SMS_SEND, {"to": TO, "text": "Oi"}).status_code == 200


# --------------------------------------------------------------------------- account webhooks


def test_account_webhooks_are_listed_without_the_secret(sandbox):
    listing = sandbox.api("GET", HOOKS).json()
    assert listing == {"success": True, "webhooks": [
        {"channel": "sms", "url": None, "hasSecret": False, "events": [], "enabled": True},
        {"channel": "voice", "url": None, "hasSecret": False, "events": [], "enabled": True},
    ]}
    config = hook(sandbox, "voice", url="http://127.0.0.1:9/v", secret="s3cr3t",
                  events=["call.ended"])
    assert config == {"channel": "voice", "url": "http://127.0.0.1:9/v", "hasSecret": True,
                      "events": ["call.ended"], "enabled": True}
    assert "s3cr3t" not in sandbox.api("GET", HOOKS).text
    assert hook(sandbox, "voice", secret=None)["hasSecret"] is False
    assert hook(sandbox, "voice", enabled=False)["url"] == "http://127.0.0.1:9/v"


def test_events_are_signed_over_the_raw_body_when_a_secret_is_set(make_sandbox, webhook_sink):
    box = make_sandbox(webhook_duplicate_rate=1.0)
    hook(box, "sms", url=webhook_sink.url, secret="k3y")
    post(box, SMS_SEND, {"to": TO, "text": "Oi"})
    webhook_sink.wait_for(lambda e: e.get("channel") == "sms", count=2)
    received = [r for r in webhook_sink.requests if r["body"].get("channel") == "sms"]
    assert len(received) == 2  # a duplicate: the same bytes, the same signature
    assert received[0]["raw"] == received[1]["raw"]
    for request in received:
        headers = request["headers"]
        assert headers["x-dapi-webhook-channel"] == "sms"
        assert headers["x-dapi-signature"] == signed_by("k3y", request["raw"])
        assert headers["x-dapi-signature"] != signed_by("other", request["raw"])
    deliveries = [e for e in box.webhooks() if e["channel"] == "sms"]
    assert {(e["url"], e["status"], e["sessionId"]) for e in deliveries} == {
        (webhook_sink.url, 200, None)}

    hook(box, "sms", secret=None)
    webhook_sink.clear()
    post(box, SMS_SEND, {"to": TO, "text": "Oi de novo"})
    webhook_sink.wait_for(lambda e: e.get("channel") == "sms")
    assert all("x-dapi-signature" not in r["headers"] for r in webhook_sink.requests)


def test_only_the_chosen_events_are_posted_and_none_when_disabled(make_sandbox, webhook_sink):
    box = make_sandbox(voice_answer_rate=1.0, voice_digits="7")
    hook(box, "voice", url=webhook_sink.url, events=["call.ended"])
    hook(box, "sms", url=webhook_sink.url, enabled=False)
    post(box, VOICE_BULK, {"flowId": "f", "numbers": numbers(3)})
    post(box, SMS_SEND, {"to": TO, "text": "Oi"})
    calls_ended(box, 3)
    assert eventually(lambda: box.outcomes("sms")[0]["reportedAt"])
    events = webhook_sink.wait_for(lambda e: e["event"] == "call.ended", count=3)
    time.sleep(0.1)
    assert {e["event"] for e in webhook_sink.snapshot()} == {"call.ended"}
    assert len(events) == 3 and all(e["channel"] == "voice" for e in events)
    assert [e for e in box.webhooks() if e["channel"] == "sms"] == []


# --------------------------------------------------------------------------- voice


def test_a_flow_call_plays_out_in_order_with_its_digits(make_sandbox, webhook_sink):
    box = make_sandbox(voice_answer_rate=1.0, voice_digits="129")
    hook(box, "voice", url=webhook_sink.url)
    recipients = [{"phone": p, "variables": {"nome": "Ana", "valor": 10}} for p in numbers(12)]
    answer = post(box, VOICE_BULK, {"flowId": "pesquisa", "recipients": recipients}).json()
    assert (answer["dialed"], answer["skipped"]) == (12, 0)
    outcomes = calls_ended(box, 12)
    assert {o["bulkId"] for o in outcomes} == {answer["bulkId"]}
    assert [o["variables"] for o in outcomes] == [r["variables"] for r in recipients]
    webhook_sink.wait_for(lambda e: e["event"] == "call.ended", count=12)
    keys_seen = 0
    for o in outcomes:
        events = in_time([e for e in webhook_sink.snapshot()
                          if e["data"]["callId"] == o["callId"]])
        names = [e["event"] for e in events]
        digits = o["digits"] or ""
        assert names == ["call.started", "call.answered", *["call.dtmf"] * len(digits),
                         "call.ended"]
        assert "".join(e["data"]["digits"] for e in events[2:-1]) == digits
        assert set(digits) <= set("129") and len(digits) <= 2
        keys_seen += len(digits)
        final = events[-1]["data"]
        assert {k: final[k] for k in ENDS} == {k: o[k] for k in ENDS}
        assert (final["answered"], final["cause"]) == (True, 16)
        assert final["bulkCallId"] == answer["bulkId"] and final["to"] == o["to"]
        assert events[0]["data"]["answered"] is None
        assert o["startedAt"] < o["endedAt"] < o["startedAt"] + 1.0
    assert keys_seen > 0


def test_unanswered_calls_are_redialled_up_to_max_attempts(make_sandbox, webhook_sink):
    box = make_sandbox(voice_answer_rate=0.0, voice_unanswered_causes=[17], voice_retry_gap_s=1)
    hook(box, "voice", url=webhook_sink.url)
    call_id = post(box, VOICE_CALL, {"to": TO, "audioUrl": AUDIO, "maxAttempts": 3}
                   ).json()["callId"]
    [outcome] = calls_ended(box, 1)
    assert (outcome["callId"], outcome["attempts"], outcome["outcome"]) == (
        call_id, 3, "not_answered")
    webhook_sink.wait_for(lambda e: e["event"] == "call.ended")
    names = [e["event"] for e in in_time(webhook_sink.snapshot())]
    assert names == ["call.started"] * 3 + ["call.ended"]
    final = webhook_sink.of("call.ended")[0]["data"]
    assert (final["answered"], final["talkSeconds"], final["cause"], final["causeDescription"]
            ) == (False, 0, 17, "User busy")

    box.set_faults(voice_unanswered_causes=[151])  # voicemail is final: no redial
    post(box, VOICE_CALL, {"to": TO, "audioUrl": AUDIO, "maxAttempts": 3})
    assert calls_ended(box, 2)[1]["attempts"] == 1


def test_calls_in_progress_over_the_allowance_are_429(make_sandbox):
    box = make_sandbox(voice_max_calls_in_progress=3, voice_answer_rate=1.0,
                       voice_talk_s=(20, 20), voice_time_scale=0.02)
    assert post(box, VOICE_BULK, {"audioUrl": AUDIO, "numbers": numbers(3)}).status_code == 200
    refused = post(box, VOICE_CALL, {"to": TO, "audioUrl": AUDIO})
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) >= 1
    assert refused.json()["statusCode"] == 429
    too_big = post(box, VOICE_BULK, {"audioUrl": AUDIO, "numbers": numbers(4)})
    assert too_big.status_code == 400 and "numbers" in too_big.json()["error"]
    calls_ended(box, 3)
    assert post(box, VOICE_BULK, {"audioUrl": AUDIO, "numbers": numbers(3, 10)}
                ).status_code == 200
    ended = calls_ended(box, 6)
    moments = sorted([(o["startedAt"], 1) for o in ended] + [(o["endedAt"], -1) for o in ended])
    running = peak = 0
    for _, step in moments:
        running += step
        peak = max(peak, running)
    assert peak == 3


def test_request_faults_apply_to_sms_and_voice(make_sandbox):
    box = make_sandbox(throttle_rate=1.0, throttle_retry_after_s=4)
    refused = post(box, SMS_BULK, {"to": [TO], "text": "Oi"})
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "4"
    assert post(box, VOICE_CALL, {"to": TO, "flowId": "f"}).status_code == 429
    assert box.sends() == [] and box.outcomes("sms") == []
