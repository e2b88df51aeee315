"""Scripted outcomes per number: calls and SMS to a listed number do what its script says,
in order (the last entry repeats), other numbers keep their seeded draws; WhatsApp messages
to a listed number are never delivered."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.sandbox import SandboxConfig
from tests.sandbox.test_account import (
    AUDIO,
    SMS_BULK,
    SMS_SEND,
    VOICE_BULK,
    VOICE_CALL,
    calls_ended,
    hook,
    numbers,
    post,
)

ENDED = ("outcome", "answered", "talkSeconds", "digits", "cause", "attempts")
A, B = "5511900000001", "5511900000002"


def ended(outcome: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(outcome[key] for key in ENDED)


def test_each_call_to_a_number_takes_its_next_scripted_outcome(make_sandbox, webhook_sink):
    box = make_sandbox(voice_time_scale=0.001, voice_talk_s=(20, 40), voice_answer_rate=1.0,
                       voice_outcomes_by_number={
                           "+55 11 90000-0001": ["no_answer", "busy", "failed", "answered:7"],
                           B: ["voicemail", "answered"]})
    hook(box, "voice", url=webhook_sink.url)
    for _ in range(5):  # maxAttempts 3: a scripted call is still one dial
        assert post(box, VOICE_CALL, {"to": A, "audioUrl": AUDIO, "maxAttempts": 3}
                    ).status_code == 200
    calls = calls_ended(box, 5)
    assert [ended(c) for c in calls] == [
        ("not_answered", False, 0, None, 19, 1),
        ("not_answered", False, 0, None, 17, 1),
        ("not_answered", False, 0, None, 21, 1),
        ("answered", True, 7, None, 16, 1),
        ("answered", True, 7, None, 16, 1),  # the last entry repeats
    ]
    # A bulk mixes scripted and drawn numbers: everybody else answers (rate 1.0).
    post(box, VOICE_BULK, {"audioUrl": AUDIO, "numbers": [B, *numbers(3, 50), B]})
    later = calls_ended(box, 10)[5:]
    assert [ended(c)[:2] for c in later] == [("not_answered", False), *[("answered", True)] * 4]
    assert later[0]["cause"] == 151 and later[-1]["talkSeconds"] == 30  # middle of 20-40
    hooks = webhook_sink.wait_for(lambda e: e["event"] == "call.ended", count=10)
    by_call = {e["data"]["callId"]: e["data"] for e in hooks}
    assert [by_call[c["callId"]]["cause"] for c in calls] == [19, 17, 21, 16, 16]


def test_a_scripted_answered_call_presses_its_keys_in_a_flow(make_sandbox, webhook_sink):
    box = make_sandbox(voice_time_scale=0.001,
                       voice_outcomes_by_number={A: ["answered:4:9"]})
    hook(box, "voice", url=webhook_sink.url)
    post(box, VOICE_CALL, {"to": A, "flowId": "pesquisa"})
    [call] = calls_ended(box, 1)
    assert ended(call) == ("answered", True, 4, "9", 16, 1)
    [key] = webhook_sink.wait_for(lambda e: e["event"] == "call.dtmf")
    assert key["data"]["digits"] == "9"


def test_scripted_sms_outcomes_in_order(make_sandbox, webhook_sink):
    box = make_sandbox(sms_undelivered_rate=0.0, sms_failed_rate=0.0, sms_expired_rate=0.0,
                       sms_outcomes_by_number={
                           A: ["NETWORK_ERROR", "NO_COVERAGE", "delivered"],
                           B: ["failed:LANDLINE", "expired"]})
    hook(box, "sms", url=webhook_sink.url)
    for _ in range(4):
        post(box, SMS_SEND, {"to": A, "text": "Oi"})
    post(box, SMS_BULK, {"to": [B, "5511900000003", B], "text": "Oi"})
    got = [(o["to"], o["outcome"], o["errorCode"]) for o in box.outcomes("sms")]
    assert got == [
        (A, "undelivered", "NETWORK_ERROR"), (A, "undelivered", "NO_COVERAGE"),
        (A, "delivered", None), (A, "delivered", None),
        (B, "failed", "LANDLINE"), ("5511900000003", "delivered", None), (B, "expired", None),
    ]
    events = webhook_sink.wait_for(lambda e: e.get("channel") == "sms", count=7)
    by_id = {e["data"]["messageId"]: e for e in events}
    for o in box.outcomes("sms"):
        assert by_id[o["messageId"]]["event"] == f"sms.{o['outcome']}"
        assert by_id[o["messageId"]]["data"]["errorCode"] == o["errorCode"]


def test_whatsapp_messages_to_listed_numbers_are_never_delivered(make_sandbox, webhook_sink,
                                                                 bodies):
    box = make_sandbox(delivered_rate=1.0, read_rate=1.0, reply_rate=1.0, opt_out_rate=0.0,
                       recipient_delay_ms=(1, 5),
                       whatsapp_undelivered_numbers=["+55 11 90000-0001"])
    box.create_session("s1", webhook_url=webhook_sink.url)
    lost = box.send("text", {**bodies["text"], "to": A}).json()["messageId"]
    kept = box.send("text", {**bodies["text"], "to": B}).json()["messageId"]
    webhook_sink.wait_for(lambda e: e["event"] == "messages.received")
    webhook_sink.wait_for(lambda e: e["event"] == "message.read")
    receipts = {e["data"]["message_id"].lower() for e in webhook_sink.snapshot()
                if e["event"] in ("message.delivered", "message.read")}
    assert receipts == {kept.lower()}
    assert lost.lower() not in receipts
    replies = box.http.get("/sandbox/replies").json()
    assert [r["from"] for r in replies] == [B]
    sent = {e["data"]["id"].lower() for e in webhook_sink.snapshot()
            if e["event"] == "messages.sent"}
    assert lost.lower() in sent  # accepted and sent, only never delivered


def test_scripts_can_be_changed_while_the_sandbox_runs(make_sandbox):
    box = make_sandbox(voice_time_scale=0.001)
    box.set_faults(voice_outcomes_by_number={A: ["busy"]}, whatsapp_undelivered_numbers=[B])
    post(box, VOICE_CALL, {"to": A, "audioUrl": AUDIO})
    assert calls_ended(box, 1)[0]["cause"] == 17
    knobs = box.http.get("/sandbox/faults").json()
    assert knobs["voice_outcomes_by_number"] == {A: ["busy"]}
    assert knobs["whatsapp_undelivered_numbers"] == [B]


@pytest.mark.parametrize(("setting", "value", "named"), [
    ("voice_outcomes_by_number", {A: ["hung_up"]}, "'hung_up' is not a call outcome"),
    ("voice_outcomes_by_number", {A: ["answered:x"]}, "not a call outcome"),
    ("voice_outcomes_by_number", {A: []}, "at least 1"),
    ("sms_outcomes_by_number", {A: ["LOST"]}, "'LOST' is not an SMS outcome"),
    ("sms_outcomes_by_number", {"abc": ["delivered"]}, "not a phone number"),
    ("whatsapp_undelivered_numbers", ["n/a"], "not a phone number"),
])
def test_bad_scripts_are_refused_naming_the_entry(setting, value, named):
    with pytest.raises(ValueError, match=named):
        SandboxConfig(**{setting: value})
