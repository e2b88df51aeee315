"""Every event family parses into its model; unknown events are kept raw; malformed known
events raise ``EventParseError``; message ids match across letter case."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.service import event_data as d
from scheduler.service import events as ev
from scheduler.service.account_events import SMS_ERROR_CODES
from scheduler.service.exceptions import EventParseError, ServiceError
from scheduler.service.responses import SendResult

TS = "2030-01-02T03:04:05.000Z"
ME = {"jid": "5511900000000@s.whatsapp.net", "name": "Loja"}
THEM = {"jid": "5511999990000@s.whatsapp.net", "name": "Ana"}


def envelope(event: str, data: Any, **extra: Any) -> dict[str, Any]:
    """A per-session envelope."""
    return {"event": event, "sessionId": "s1", "data": data, "timestamp": TS, **extra}


def message(type_: str, **fields: Any) -> dict[str, Any]:
    """``data`` of a ``messages.sent`` of ``type_`` with every common field."""
    return {
        "id": "3eb0a1b2c3d4", "type": type_, "message": "", "timestamp": 1893553445000,
        "fromMe": True, "is_group": False, "group_name": "", "from": ME, "from_name": "Loja",
        "to": THEM, "media_url": None, **fields,
    }


MEDIA = {
    "image": ({"url": "u", "width": 640, "height": 480, "caption": "c", "file_length": 1234,
               "mimetype": "image/jpeg", "pending_media_url": "https://x/i.jpg"}, d.ImageMedia),
    "video": ({"url": "u", "width": 1, "height": 2, "caption": "c", "duration": 12,
               "file_length": "99", "mimetype": "video/mp4"}, d.VideoMedia),
    "audio": ({"url": "u", "is_ptt": True, "duration": 3, "file_length": 10,
               "mimetype": "audio/ogg"}, d.AudioMedia),
    "document": ({"url": "u", "caption": "c", "filename": "t.pdf", "file_length": 5,
                  "mimetype": "application/pdf"}, d.DocumentMedia),
    "sticker": ({"url": "u", "width": 512, "height": 512, "file_length": 7,
                 "mimetype": "image/webp", "is_animated": False}, d.StickerMedia),
}

TYPED = {
    "location": ({"degrees_latitude": -23.5, "degrees_longitude": -46.6, "name": "Loja",
                  "address": "Av. P", "thumbnail": "iVBOR"}, d.LocationData),
    "contact": ({"contact_name": "Suporte", "contact_phone": "5511900001111",
                 "display_name": "Suporte", "vcard": "BEGIN:VCARD"}, d.ContactData),
    "reaction": ({"original_message_id": "abcDEF", "reaction_text": "👍",
                  "reaction_timestamp": 1893553445000, "target_participant": "x"},
                 d.ReactionData),
    "list": ({"title": "T", "description": "D", "button_text": "Open", "footer_text": "F",
              "list_type": 1, "sections": [{"title": "S", "rows": [
                  {"row_id": "r1", "title": "One", "description": "first"}]}]}, d.ListData),
    "carousel": ({"type": "carousel", "cards": [{"header_title": "H", "body": "B"}]},
                 d.CarouselData),
}


@pytest.mark.parametrize("kind", sorted(MEDIA))
def test_messages_sent_media_types(kind: str) -> None:
    media, model = MEDIA[kind]
    raw = envelope("messages.sent", message(kind, media_url="https://cdn/x", media_data=media,
                                            body=""), traceId="t-1")
    event = ev.parse_event(raw)
    assert isinstance(event, ev.MessageEvent)
    assert (event.event, event.sessionId, event.traceId, event.timestamp) == (
        "messages.sent", "s1", "t-1", TS)
    data = event.data
    assert type(data.media_data) is model
    assert data.media_data.model_dump(exclude_none=True) == media
    assert data.fromMe is True and data.from_ == d.Party(**ME) and data.to == d.Party(**THEM)
    assert data.media_url == "https://cdn/x"


@pytest.mark.parametrize("kind", sorted(TYPED))
def test_messages_sent_typed_data(kind: str) -> None:
    payload, model = TYPED[kind]
    event = ev.parse_event(envelope("messages.sent", message(kind, data=payload)))
    assert isinstance(event, ev.MessageEvent)
    assert type(event.data.data) is model
    assert event.data.data.model_dump(exclude_none=True) == payload


def test_reaction_points_at_the_original_message_in_any_case() -> None:
    event = ev.parse_event(envelope("messages.sent", message("reaction", data=TYPED[
        "reaction"][0])))
    assert isinstance(event.data.data, d.ReactionData)
    assert event.data.data.original_message_key == "ABCDEF"


def test_text_message_and_mixed_case_ids() -> None:
    event = ev.parse_event(envelope("messages.sent", message("text", message="Olá")))
    assert isinstance(event, ev.MessageEvent)
    assert event.data.message == "Olá" and event.data.data is None
    sent = SendResult(messageId="3EB0A1B2C3D4")
    assert event.data.id != sent.messageId  # the service changed the letter case
    assert event.data.message_key == sent.message_key == "3EB0A1B2C3D4"


@pytest.mark.parametrize("kind", ["template_button_reply", "poll", "album", "nativeflow"])
def test_other_types_keep_their_data_raw(kind: str) -> None:
    payload = {"pollCreationMessageKey": {"id": "X"}, "votes": [{"name": "a"}]}
    raw = envelope("messages.received", message(kind, fromMe=False, data=payload))
    event = ev.parse_event(raw)
    assert isinstance(event, ev.MessageEvent) and event.event == "messages.received"
    assert event.data.fromMe is False and event.data.data == payload


def test_received_message_with_string_parties_and_extra_fields() -> None:
    raw = envelope("messages.received", {"id": "A1", "type": "text", "from": "5511@lid",
                                          "to": "5522@s.whatsapp.net", "brandNew": 1})
    event = ev.parse_event(raw)
    assert event.data.from_.jid == "5511@lid" and event.data.to.jid == "5522@s.whatsapp.net"


@pytest.mark.parametrize("name", ["message.delivered", "message.read"])
def test_receipts(name: str) -> None:
    event = ev.parse_event(envelope(name, {"message_id": "3eb0a1", "remote_jid": THEM["jid"],
                                           "participant": None, "timestamp": 1893553445}))
    assert isinstance(event, ev.ReceiptEvent) and event.event == name
    assert event.data.message_key == "3EB0A1" and event.data.remote_jid == THEM["jid"]


def test_call_offer() -> None:
    data = {"callId": "C1", "from": "123@lid", "callCreator": "123@lid", "isGroup": True,
            "groupJid": "1203@g.us", "timestamp": 1893553445000}
    event = ev.parse_event(envelope("call.offer", data, traceId="t"))
    assert isinstance(event, ev.CallOfferEvent)
    assert (event.data.from_, event.data.isGroup, event.data.groupJid) == ("123@lid", True,
                                                                           "1203@g.us")


@pytest.mark.parametrize("name", ["call.accepted", "call.rejected"])
def test_call_relays_keep_extra_fields(name: str) -> None:
    event = ev.parse_event(envelope(name, {"callId": "C1", "from": THEM["jid"], "date": 5}))
    assert isinstance(event, ev.CallRelayEvent)
    assert event.data.callId == "C1" and event.data.model_extra == {"date": 5}


@pytest.mark.parametrize(("name", "state", "reason"), [
    ("call.ringing", "ringing", None), ("call.connected", "active", None),
    ("call.ended", "idle", "hangup"), ("call.not_answered", "idle", "no_answer")])
def test_outgoing_call_states(name: str, state: str, reason: str | None) -> None:
    data = {"callId": "C1", "state": state, "peerLid": "1@lid", "peerPn": THEM["jid"]}
    if reason:
        data["reason"] = reason
    event = ev.parse_event(envelope(name, data))
    assert isinstance(event, ev.CallStateEvent)
    assert (event.data.state, event.data.reason, event.data.peerPn) == (state, reason,
                                                                        THEM["jid"])


def test_call_audio_both_variants() -> None:
    chunk = ev.parse_event(envelope("call.audio", {
        "callId": "C1", "seq": 3, "sampleRate": 16000, "channels": 1, "encoding": "pcm_s16le",
        "data": "AAAA", "final": True}))
    assert isinstance(chunk, ev.CallAudioEvent) and isinstance(chunk.data, d.AudioChunk)
    assert chunk.data.seq == 3 and chunk.data.final
    rec = ev.parse_event(envelope("call.audio", {
        "callId": "C1", "files": {"full": "https://f/full.wav", "sender": None,
                                  "recipient": "https://f/peer.wav"},
        "url": "https://f/full.wav", "durationMs": 5000, "sizeBytes": None,
        "mimetype": "audio/wav", "phone": "5511"}))
    assert isinstance(rec.data, d.Recording)
    assert rec.data.full_url == "https://f/full.wav" and rec.data.files.sender is None
    legacy = ev.parse_event(envelope("call.audio", {"callId": "C1", "url": "https://f/a.wav"}))
    assert legacy.data.full_url == "https://f/a.wav"


@pytest.mark.parametrize("prefix", ["labels.", "appstate.label."])
def test_label_events(prefix: str) -> None:
    full_sync = prefix.startswith("appstate")
    edit = ev.parse_event(envelope(f"{prefix}edit", {
        "label_id": 5, "name": "VIP", "color": 2, "deleted": False,
        "from_full_sync": full_sync, "ts": 1893553445000}))
    assert isinstance(edit, ev.LabelEditEvent) and edit.data.label_id == 5
    chat = ev.parse_event(envelope(f"{prefix}association.chat", {
        "label_id": "5", "chat": "1@lid", "labeled": True}))
    assert isinstance(chat, ev.LabelChatEvent) and chat.data.chat == "1@lid"
    msg = ev.parse_event(envelope(f"{prefix}association.message", {
        "label_id": "5", "chat": THEM["jid"], "message_id": "abc", "labeled": False}))
    assert isinstance(msg, ev.LabelMessageEvent)
    assert msg.data.message_key == "ABC" and msg.data.labeled is False


@pytest.mark.parametrize("status", ["delivered", "undelivered", "failed", "expired"])
def test_sms_events(status: str) -> None:
    raw = {"event": f"sms.{status}", "channel": "sms", "timestamp": TS, "data": {
        "messageId": "m1", "to": "5511999990000", "status": status,
        "errorCode": None if status == "delivered" else "NO_COVERAGE", "segments": 2,
        "timestamp": TS}}
    event = ev.parse_event(raw)
    assert isinstance(event, ev.SmsEvent) and event.channel == "sms"
    assert event.data.status == status and event.data.segments == 2
    assert event.data.errorCode is None or event.data.errorCode in SMS_ERROR_CODES


@pytest.mark.parametrize("name", ["call.started", "call.answered", "call.dtmf", "call.ended"])
def test_voice_events(name: str) -> None:
    raw = {"event": name, "channel": "voice", "timestamp": TS, "data": {
        "callId": "v1", "bulkCallId": "b1", "to": "5511999990000", "answered": True,
        "talkSeconds": 12, "digits": "1", "cause": 16, "causeDescription": "normal",
        "timestamp": TS}}
    event = ev.parse_event(raw)
    assert isinstance(event, ev.VoiceEvent) and event.data.cause == 16


def test_call_ended_depends_on_the_channel() -> None:
    session = ev.parse_event(envelope("call.ended", {"callId": "C1", "state": "idle"}))
    voice = ev.parse_event({"event": "call.ended", "channel": "voice",
                            "data": {"callId": "C1", "answered": False}})
    assert isinstance(session, ev.CallStateEvent) and isinstance(voice, ev.VoiceEvent)


@pytest.mark.parametrize("raw", [
    {"event": "session.status", "sessionId": "s1", "data": {"status": "logged_out"}},
    {"event": "groups.update", "data": [1, 2], "timestamp": 5},
    {"event": "sms.delivered", "channel": "fax", "data": {}},
    {"event": "whatever", "channel": 3},
])
def test_unknown_events_are_kept_raw(raw: dict[str, Any]) -> None:
    event = ev.parse_event(raw)
    assert isinstance(event, ev.UnknownEvent)
    assert event.event == raw["event"] and event.raw == raw and event.data == raw.get("data")


@pytest.mark.parametrize("raw", [
    envelope("messages.sent", {"type": "text"}),  # no id
    envelope("messages.sent", "not an object"),
    envelope("messages.sent", message("image", media_data={"width": "wide"})),
    envelope("call.offer", {"callId": "C1"}),
    envelope("call.audio", {"callId": "C1", "seq": "third", "data": "AA"}),
    envelope("labels.association.chat", {"label_id": 1, "chat": "x"}),
    {"event": "message.read", "data": {"message_id": "a", "remote_jid": "b"}},  # no sessionId
    {"event": "sms.failed", "channel": "sms", "data": {"to": "5511"}},
])
def test_malformed_known_events_raise(raw: dict[str, Any]) -> None:
    with pytest.raises(EventParseError) as info:
        ev.parse_event(raw)
    assert isinstance(info.value, ServiceError)
    assert info.value.event == raw["event"] and info.value.errors
    assert raw["event"] in str(info.value)


@pytest.mark.parametrize("raw", [[], "messages.sent", None, {"data": {}}, {"event": ""}])
def test_not_an_event(raw: Any) -> None:
    with pytest.raises(EventParseError):
        ev.parse_event(raw)


def test_a_vote_a_list_choice_and_a_quote_name_the_message_they_answer() -> None:
    vote = ev.parse_event(envelope("messages.received", message(
        "poll_update", fromMe=False,
        data={"poll_message_id": "3eb0poll", "selected_options": ["Manhã", "Tarde"]})))
    assert isinstance(vote, ev.MessageEvent)
    assert vote.data.answered_message_key == "3EB0POLL"
    choice = ev.parse_event(envelope("messages.received", message(
        "list_response", fromMe=False,
        data={"list_message_id": "3EB0LIST", "row_id": "r2", "title": "Plano B"})))
    assert isinstance(choice, ev.MessageEvent)
    assert choice.data.answered_message_key == "3EB0LIST"
    quote = ev.parse_event(envelope("messages.received", {
        **message("text", fromMe=False), "contextInfo": {"stanzaId": "3eb0abc",
                                                         "participant": "55@s.whatsapp.net"}}))
    assert isinstance(quote, ev.MessageEvent) and quote.data.answered_message_key == "3EB0ABC"
    plain = ev.parse_event(envelope("messages.received", message("text", fromMe=False)))
    assert isinstance(plain, ev.MessageEvent) and plain.data.answered_message_key is None
