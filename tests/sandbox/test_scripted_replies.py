"""Scripted WhatsApp replies per number (``whatsapp_replies_by_number``): each message to a
listed number gets its entry's reply (or none), in order, quoting the message; others keep
their seeded draws."""

from __future__ import annotations

import pytest

from scheduler.sandbox import SandboxConfig

A, B, C = "5511900000001", "5511900000002", "5511900000003"


def test_each_message_gets_its_scripted_reply_in_order(make_sandbox, webhook_sink, bodies):
    box = make_sandbox(delivered_rate=1.0, read_rate=1.0, reply_rate=0.0,
                       recipient_delay_ms=(1, 5),
                       whatsapp_replies_by_number={
                           "+55 11 90000-0001": [{"text": "1", "after_s": 0.05}, None,
                                                 {"text": "obrigado"}],
                           B: [None]})
    box.create_session("s1", webhook_url=webhook_sink.url)
    first = box.send("text", {**bodies["text"], "to": A}).json()["messageId"]
    box.send("text", {**bodies["text"], "to": A})
    third = box.send("text", {**bodies["text"], "to": A}).json()["messageId"]
    box.send("text", {**bodies["text"], "to": A})  # past the list: no reply
    box.send("text", {**bodies["text"], "to": B})
    box.send("text", {**bodies["text"], "to": C})  # not listed: its draw (reply_rate 0)
    got = webhook_sink.wait_for(lambda e: e["event"] == "messages.received", count=2)
    replies = box.http.get("/sandbox/replies").json()
    # (the sandbox's ids differ in case between the answer and the events: compared folded)
    assert [(r["from"], r["text"], r["quoted"].lower()) for r in replies] == [
        (A, "1", first.lower()), (A, "obrigado", third.lower())]
    assert len(got) == 2
    reads = {e["data"]["message_id"].lower() for e in webhook_sink.wait_for(
        lambda e: e["event"] == "message.read", count=5)}
    assert first.lower() in reads  # a scripted number's messages are delivered and read


def test_an_opt_out_word_is_marked(make_sandbox, webhook_sink, bodies):
    box = make_sandbox(reply_rate=0.0, recipient_delay_ms=(1, 5),
                       whatsapp_replies_by_number={A: [{"text": "SAIR"}]})
    box.create_session("s1", webhook_url=webhook_sink.url)
    box.send("text", {**bodies["text"], "to": A})
    webhook_sink.wait_for(lambda e: e["event"] == "messages.received")
    assert box.http.get("/sandbox/replies").json()[0]["optOut"] is True


@pytest.mark.parametrize(("value", "named"), [
    ({A: []}, "at least 1"),
    ({"abc": [{"text": "1"}]}, "not a phone number"),
    ({A: [{"text": ""}]}, "at least 1 character"),
    ({A: [{"text": "1", "after_s": -1}]}, "greater than or equal to 0"),
    ({A: [{"txt": "1"}]}, "Extra inputs are not permitted"),
])
def test_bad_scripts_are_refused_naming_the_entry(value, named):
    with pytest.raises(ValueError, match=named):
        SandboxConfig(whatsapp_replies_by_number=value)
