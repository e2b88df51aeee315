"""Simulated recipients: receipts, replies, opt-out words and poll votes, seeded."""

from __future__ import annotations

from scheduler.settings.load import DEFAULT_OPT_OUT_WORDS
from tests.sandbox.support import TO

RECEIPT_FIELDS = {"message_id", "remote_jid", "timestamp"}
ACTIVE = {"recipient_delay_ms": (1, 5)}


def test_delivered_and_read_receipts(make_sandbox, webhook_sink, bodies):
    box = make_sandbox(delivered_rate=1.0, read_rate=1.0, **ACTIVE)
    box.create_session("s1", webhook_url=webhook_sink.url)
    message_id = box.send("text", bodies["text"]).json()["messageId"]
    for name in ("message.delivered", "message.read"):
        [event] = webhook_sink.wait_for(lambda e, n=name: e["event"] == n)
        assert set(event["data"]) == RECEIPT_FIELDS
        assert event["data"]["message_id"].lower() == message_id.lower()
        assert event["data"]["remote_jid"] == f"{TO}@s.whatsapp.net"
        assert isinstance(event["data"]["timestamp"], int)


def test_replies_come_from_the_recipient(make_sandbox, webhook_sink, bodies):
    box = make_sandbox(reply_rate=1.0, opt_out_rate=0.0, **ACTIVE)
    own = box.create_session("s1", webhook_url=webhook_sink.url)
    box.send("text", bodies["text"])
    [reply] = webhook_sink.wait_for(lambda e: e["event"] == "messages.received")
    data = reply["data"]
    assert data["fromMe"] is False
    assert data["type"] == "text"
    assert data["from"]["jid"] == f"{TO}@s.whatsapp.net"
    assert data["to"]["jid"] == f"{own['phone']}@s.whatsapp.net"
    assert data["message"].strip()
    assert reply["traceId"]


def test_opt_out_replies(make_sandbox, webhook_sink, bodies):
    box = make_sandbox(reply_rate=1.0, opt_out_rate=1.0, **ACTIVE)
    box.create_session("s1", webhook_url=webhook_sink.url)
    for i in range(5):
        box.send("text", {**bodies["text"], "to": f"55119000000{i:02d}"})
    replies = webhook_sink.wait_for(lambda e: e["event"] == "messages.received", count=5)
    words = {w.upper() for w in DEFAULT_OPT_OUT_WORDS}
    assert all(r["data"]["message"].upper() in words for r in replies)
    recorded = box.http.get("/sandbox/replies").json()
    assert len(recorded) == 5 and all(r["optOut"] for r in recorded)


def test_some_recipients_opt_out_deterministically(make_sandbox, bodies):
    def replies(seed):
        box = make_sandbox(seed=seed, reply_rate=0.5, opt_out_rate=0.3, **ACTIVE)
        box.create_session("s1")
        for i in range(40):
            box.send("text", {**bodies["text"], "to": f"55119000000{i:02d}"})
        return box.http.get("/sandbox/replies").json()

    first, second = replies(3), replies(3)
    assert first == second
    assert 0 < len(first) < 40
    assert any(r["optOut"] for r in first) and not all(r["optOut"] for r in first)


def test_poll_votes(make_sandbox, webhook_sink, bodies):
    box = make_sandbox(poll_vote_rate=1.0, **ACTIVE)
    box.create_session("s1", webhook_url=webhook_sink.url)
    message_id = box.send("poll", bodies["poll"]).json()["messageId"]
    [vote] = webhook_sink.wait_for(lambda e: e["event"] == "messages.received")
    data = vote["data"]
    assert data["type"] == "poll_update"
    assert data["fromMe"] is False
    assert data["data"]["poll_message_id"].lower() == message_id.lower()
    assert len(data["data"]["selected_options"]) == 1
    assert data["data"]["selected_options"][0] in bodies["poll"]["options"]


def test_list_replies_pick_a_row(make_sandbox, webhook_sink, bodies):
    box = make_sandbox(reply_rate=1.0, opt_out_rate=0.0, **ACTIVE)
    box.create_session("s1", webhook_url=webhook_sink.url)
    box.send("list", bodies["list"])
    [answer] = webhook_sink.wait_for(lambda e: e["event"] == "messages.received")
    assert answer["data"]["type"] == "list_response"
    assert answer["data"]["data"]["row_id"] in {"r1", "r2"}


def test_quiet_recipients_send_nothing(live):
    live.send("text")
    live.wait_for()
    assert [e["event"] for e in live.events()] == ["messages.sent"]


def test_inbound_message_can_be_injected(live):
    response = live.sandbox.http.post(
        f"/sandbox/sessions/{live.session_id}/receive", json={"from": TO, "text": "PARAR"}
    )
    assert response.status_code == 200
    [event] = live.wait_for(lambda e: e["event"] == "messages.received")
    assert event["data"]["message"] == "PARAR"
    assert event["data"]["from"]["jid"] == f"{TO}@s.whatsapp.net"


def test_reply_rate_by_marker_gives_each_variant_its_rate(make_sandbox, bodies):
    """A/B tests: a text carrying a marker is replied to at that marker's rate."""
    box = make_sandbox(seed=5, reply_rate=0.0, opt_out_rate=0.0,
                       reply_rate_by_marker={"[B]": 1.0, "[A]": 0.0}, **ACTIVE)
    box.create_session("s1")
    for i in range(20):
        marker = "[B]" if i % 2 else "[A]"
        box.send("text", {**bodies["text"], "text": f"Oi {marker}",
                          "to": f"55119000000{i:02d}"})
    replied = {r["from"] for r in box.http.get("/sandbox/replies").json()}
    assert replied == {f"55119000000{i:02d}" for i in range(1, 20, 2)}
