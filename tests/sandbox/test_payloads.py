"""``messages.sent`` payloads, field by field, against the interface document's tables.

The expected field sets below are copied from service-interface.md ("messages.sent"), not
derived from the sandbox's code. ``media_data`` may also carry ``pending_media_url`` ("When
sent by external URL it may contain pending_media_url (the original URL)"), and every
sandbox medium is sent by URL, so it is expected there too.
"""

from __future__ import annotations

import base64
from datetime import datetime

import pytest

from scheduler.service.requests import SEND_KINDS
from tests.sandbox.support import TO

# "data fields" table: always present.
COMMON = {
    "id",
    "type",
    "message",
    "timestamp",
    "fromMe",
    "is_group",
    "group_name",
    "from",
    "from_name",
    "to",
    "media_url",
}
MEDIA_TYPES = {"image", "video", "audio", "document", "sticker"}
# "body: Present on image, video, document, carousel."
BODY_TYPES = {"image", "video", "document", "carousel"}
# "media_data by type" table.
MEDIA_DATA = {
    "image": {"url", "width", "height", "caption", "file_length", "mimetype"},
    "video": {"url", "width", "height", "caption", "duration", "file_length", "mimetype"},
    "audio": {"url", "is_ptt", "duration", "file_length", "mimetype"},
    "document": {"url", "caption", "filename", "file_length", "mimetype"},
    "sticker": {"url", "width", "height", "file_length", "mimetype", "is_animated"},
}
# "data by type" table.
DATA = {
    "location": {"degrees_latitude", "degrees_longitude", "name", "address", "thumbnail"},
    "contact": {"contact_name", "contact_phone", "display_name", "vcard"},
    "reaction": {
        "original_message_id",
        "reaction_text",
        "reaction_timestamp",
        "target_participant",
    },
    "list": {"title", "description", "button_text", "footer_text", "list_type", "sections"},
    "carousel": {"type", "cards"},
}
# Types whose payload the document leaves "not shown": the sandbox's own shape.
OURS = {"poll", "nativeflow", "pix"}
# "message ... (empty for image, video, document)".
EMPTY_MESSAGE = {"image", "video", "document"}
ENVELOPE = {"event", "sessionId", "data", "timestamp", "traceId"}


def expected_fields(kind: str) -> set[str]:
    fields = set(COMMON)
    if kind in MEDIA_TYPES:
        fields.add("media_data")
    if kind in BODY_TYPES:
        fields.add("body")
    if kind in DATA or kind in OURS:
        fields.add("data")
    return fields


def sent_event(live, kind):
    """Send the sample of ``kind``; its answer and its ``messages.sent`` envelope."""
    answer = live.send(kind).json()
    message_id = answer["messageId"].lower()
    [event] = live.wait_for(
        lambda e: e["event"] == "messages.sent" and e["data"]["id"].lower() == message_id
    )
    return answer, event


@pytest.mark.parametrize("kind", sorted(set(SEND_KINDS) - {"album"}))
def test_messages_sent_payload_per_type(live, kind):
    bodies = live.bodies
    answer, envelope = sent_event(live, kind)
    assert set(envelope) == ENVELOPE
    assert envelope["sessionId"] == live.session_id
    assert datetime.fromisoformat(envelope["timestamp"]).utcoffset().total_seconds() == 0
    data = envelope["data"]
    assert set(data) == expected_fields(kind)
    assert data["type"] == kind
    # "The messageId is the id that messages.sent later carries as data.id, possibly in
    # another letter case" -- the sandbox makes the cases differ by default.
    assert data["id"].lower() == answer["messageId"].lower()
    assert data["id"] != answer["messageId"]
    assert data["timestamp"] == answer["timestamp"]
    assert data["fromMe"] is True
    assert data["is_group"] is False
    assert data["group_name"] == ""
    own = live.sandbox.api("GET", f"/api/v1/sessions/{live.session_id}").json()["data"]
    assert data["from"] == {"jid": f"{own['phone']}@s.whatsapp.net", "name": data["from_name"]}
    assert set(data["to"]) == {"jid", "name"}
    assert data["to"]["jid"] == f"{TO}@s.whatsapp.net"
    assert isinstance(data["message"], str)
    if kind in EMPTY_MESSAGE:
        assert data["message"] == ""
    if kind in MEDIA_TYPES:
        assert set(data["media_data"]) == MEDIA_DATA[kind] | {"pending_media_url"}
        assert data["media_data"]["pending_media_url"] == bodies[kind][kind]
        assert isinstance(data["media_url"], str)
        assert isinstance(data["media_data"]["file_length"], int)
    else:
        assert data["media_url"] is None
    if kind in DATA:
        assert set(data["data"]) == DATA[kind]


def test_text_payload_values(live):
    _, envelope = sent_event(live, "text")
    assert envelope["data"]["message"] == "Olá!"


def test_media_payload_values(live):
    _, image = sent_event(live, "image")
    assert image["data"]["body"] == "Promo"
    assert image["data"]["media_data"]["caption"] == "Promo"
    assert image["data"]["media_data"]["mimetype"] == "image/jpeg"
    # The "stored copy" is served by the sandbox as a redirect to the original.
    stored = live.sandbox.http.get(image["data"]["media_url"], follow_redirects=False)
    assert stored.status_code == 307
    assert stored.headers["location"] == live.bodies["image"]["image"]


def test_audio_and_document_values(live):
    _, audio = sent_event(live, "audio")
    assert audio["data"]["media_data"]["is_ptt"] is True
    _, doc = sent_event(live, "document")
    assert doc["data"]["media_data"]["filename"] == "terms.pdf"
    assert doc["data"]["media_data"]["mimetype"] == "application/pdf"


def test_location_contact_reaction_values(live):
    _, loc = sent_event(live, "location")
    assert loc["data"]["data"]["degrees_latitude"] == -23.55
    assert loc["data"]["data"]["degrees_longitude"] == -46.63
    base64.b64decode(loc["data"]["data"]["thumbnail"], validate=True)
    _, contact = sent_event(live, "contact")
    assert contact["data"]["data"]["contact_name"] == "Suporte"
    assert contact["data"]["data"]["vcard"].startswith("BEGIN:VCARD")
    _, reaction = sent_event(live, "reaction")
    assert reaction["data"]["data"]["original_message_id"] == "3EB0ABCDEF"
    assert reaction["data"]["data"]["reaction_text"] == "👍"
    assert isinstance(reaction["data"]["data"]["reaction_timestamp"], int)


def test_list_and_carousel_values(live):
    _, lst = sent_event(live, "list")
    data = lst["data"]["data"]
    assert isinstance(data["list_type"], int)
    assert data["button_text"] == "Ver"
    [section] = data["sections"]
    assert set(section) == {"title", "rows"}
    assert [set(row) for row in section["rows"]] == [{"row_id", "title", "description"}] * 2
    assert section["rows"][0]["row_id"] == "r1"
    _, carousel = sent_event(live, "carousel")
    data = carousel["data"]["data"]
    assert data["type"] == "carousel"
    assert [set(card) for card in data["cards"]] == [{"header_title", "body"}] * 2
    assert [card["body"] for card in data["cards"]] == ["Primeiro", "Segundo"]


def test_album_posts_one_event_per_item(live):
    answer = live.send("album").json()
    events = live.wait_for(lambda e: e["event"] == "messages.sent", count=3)
    events.sort(key=lambda e: e["data"]["media_data"]["pending_media_url"])
    assert [e["data"]["type"] for e in events] == ["image", "video", "image"]
    for event in events:
        assert set(event["data"]) == expected_fields(event["data"]["type"])
    ids = {e["data"]["id"].lower() for e in events}
    assert len(ids) == 3
    assert answer["messageId"].lower() in ids
    assert len(live.sends()) == 1


def test_same_case_ids_when_mismatch_is_off(make_sandbox, webhook_sink, bodies):
    box = make_sandbox(message_id_case_mismatch=False)
    box.create_session("s1", webhook_url=webhook_sink.url)
    answer = box.send("text", bodies["text"]).json()
    [event] = webhook_sink.wait_for(lambda e: e["event"] == "messages.sent")
    assert event["data"]["id"] == answer["messageId"]


def test_reaction_to_an_own_message_targets_the_session(live):
    first, _ = sent_event(live, "text")
    answer = live.send("reaction", messageId=first["messageId"]).json()
    wanted = answer["messageId"].lower()
    [event] = live.wait_for(lambda e: e["data"].get("id", "").lower() == wanted)
    own = live.sandbox.api("GET", f"/api/v1/sessions/{live.session_id}").json()["data"]
    assert event["data"]["data"]["target_participant"] == f"{own['phone']}@s.whatsapp.net"
    assert event["data"]["data"]["original_message_id"] == first["messageId"]
