"""Every send type is accepted and recorded; bad inputs are 400s that record nothing."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from scheduler.service.requests import SEND_KINDS

from .conftest import TO, sample_bodies


def test_samples_cover_every_send_kind():
    assert set(sample_bodies()) == set(SEND_KINDS)


@pytest.mark.parametrize("kind", sorted(SEND_KINDS))
def test_every_send_kind_is_accepted_and_recorded(wired, bodies, kind):
    box = wired.sandbox
    response = box.send(kind, bodies[kind])
    assert response.status_code == 200, response.text
    answer = response.json()
    assert set(answer) == {"success", "messageId", "timestamp"}
    assert answer["success"] is True
    assert isinstance(answer["messageId"], str) and answer["messageId"]
    assert isinstance(answer["timestamp"], int)
    [entry] = box.sends()
    assert entry["path"] == SEND_KINDS[kind].path
    assert entry["sessionId"] == "s1"
    assert entry["to"] == TO
    assert entry["body"] == bodies[kind]
    assert entry["messageId"] == answer["messageId"]
    at = datetime.fromisoformat(entry["at"])
    assert at.utcoffset().total_seconds() == 0
    assert int(at.timestamp() * 1000) == answer["timestamp"]
    assert len(entry["at"].split(".")[1]) == len("123Z")  # millisecond precision


def test_sends_log_is_in_order_and_polls_with_since(wired, bodies):
    box = wired.sandbox
    ids = [box.send("text", {**bodies["text"], "text": f"m{i}"}).json()["messageId"]
           for i in range(5)]
    log = box.sends()
    assert [entry["messageId"] for entry in log] == ids
    assert [entry["index"] for entry in log] == list(range(5))
    assert [entry["messageId"] for entry in box.sends(since=3)] == ids[3:]
    assert box.sends(since=5) == []
    assert box.http.get("/sandbox/sends", params={"since": -1}).status_code == 400


def test_async_send_returns_a_command(wired, bodies):
    box = wired.sandbox
    answer = box.send("text", {**bodies["text"], "async": "true"}).json()
    command = box.api("GET", f"/api/v1/commands/{answer['commandId']}").json()
    assert command["data"]["status"] == "done"
    assert command["data"]["result"]["messageId"] == answer["messageId"]
    assert box.api("GET", "/api/v1/commands/nope").status_code == 404


def test_multipart_body_is_accepted(wired, bodies):
    box = wired.sandbox
    text = box.api("POST", SEND_KINDS["text"].path,
                   files={"sessionId": (None, "s1"), "to": (None, TO), "text": (None, "Olá")})
    assert text.status_code == 200, text.text
    album = bodies["album"]
    form = {"sessionId": (None, "s1"), "to": (None, TO),
            "media": (None, json.dumps(album["media"])), "caption": (None, "Álbum")}
    assert box.api("POST", SEND_KINDS["album"].path, files=form).status_code == 200
    location = box.api("POST", SEND_KINDS["location"].path, files={
        "sessionId": (None, "s1"), "to": (None, TO),
        "latitude": (None, "-23.5"), "longitude": (None, "-46.6")})
    assert location.status_code == 200, location.text
    assert [e["path"] for e in box.sends()] == [
        SEND_KINDS["text"].path, SEND_KINDS["album"].path, SEND_KINDS["location"].path]


def test_form_urlencoded_with_repeated_keys_makes_a_list(wired):
    box = wired.sandbox
    response = box.api("POST", SEND_KINDS["poll"].path, data={
        "sessionId": "s1", "to": TO, "question": "Q?", "options": ["a", "b", "c"]})
    assert response.status_code == 200, response.text
    assert box.sends()[0]["body"]["options"] == ["a", "b", "c"]


def test_text_plain_body_is_accepted(wired, bodies):
    box = wired.sandbox
    response = box.api("POST", SEND_KINDS["text"].path, content=json.dumps(bodies["text"]),
                       headers={"content-type": "text/plain"})
    assert response.status_code == 200, response.text
    assert box.sends()[0]["body"] == bodies["text"]


BAD_TEXT_BODIES = [
    ({"sessionId": "s1", "to": "", "text": "x"}, "to"),
    ({"sessionId": "s1", "to": "+5511988887777", "text": "x"}, "to"),
    ({"sessionId": "s1", "to": "55119888abc77", "text": "x"}, "to"),
    ({"sessionId": "s1", "to": "5511 98888 7777", "text": "x"}, "to"),
    ({"sessionId": "s1", "to": TO, "text": ""}, "text"),
    ({"sessionId": "s1", "to": TO}, "text"),
    ({"sessionId": "s1", "to": TO, "text": "x", "priority": "high"}, "priority"),
    ({"sessionId": "s1", "to": TO, "text": "x", "async": True}, "async"),
    ({"to": TO, "text": "x"}, "sessionId"),
]


@pytest.mark.parametrize(("body", "field"), BAD_TEXT_BODIES)
def test_invalid_body_is_400_naming_the_field(wired, body, field):
    box = wired.sandbox
    response = box.send("text", body)
    assert response.status_code == 400
    answer = response.json()
    assert answer["success"] is False and answer["statusCode"] == 400
    assert field in answer["error"]
    assert box.sends() == []


@pytest.mark.parametrize(("kind", "change", "field"), [
    ("poll", {"options": ["only one"]}, "options"),
    ("album", {"media": [{"type": "image", "url": "u"}]}, "media"),
    ("reaction", {"emoji": "x" * 11}, "emoji"),
    ("location", {"latitude": 123}, "latitude"),
    ("list", {"sections": []}, "sections"),
    ("nativeflow", {"buttons": [{"type": "copy", "title": "c", "colour": "red"}]}, "colour"),
    ("pix", {"pixAmount": -1}, "pixAmount"),
])
def test_invalid_bodies_of_other_types(wired, bodies, kind, change, field):
    response = wired.sandbox.send(kind, {**bodies[kind], **change})
    assert response.status_code == 400
    assert field in response.json()["error"]
    assert wired.sandbox.sends() == []


@pytest.mark.parametrize("content", [b"{not json", b"", b"[1, 2]", b'"text"', b"\xff\xfe"])
def test_malformed_json_is_400(wired, content):
    response = wired.sandbox.api("POST", SEND_KINDS["text"].path, content=content,
                                 headers={"content-type": "application/json"})
    assert response.status_code == 400
    answer = response.json()
    assert answer["success"] is False and answer["statusCode"] == 400
    assert wired.sandbox.sends() == []


def test_unknown_session_is_404_and_records_nothing(wired, bodies):
    response = wired.sandbox.send("text", {**bodies["text"], "sessionId": "ghost"})
    assert response.status_code == 404
    assert response.json() == {"success": False, "error": "Session not found", "statusCode": 404}
    assert wired.sandbox.sends() == []


def test_file_upload_is_refused(wired):
    response = wired.sandbox.api("POST", SEND_KINDS["image"].path, files={
        "sessionId": (None, "s1"), "to": (None, TO), "image": ("a.jpg", b"\xff\xd8", "image/jpeg")})
    assert response.status_code == 400
    assert "image" in response.json()["error"]
