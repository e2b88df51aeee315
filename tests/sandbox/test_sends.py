"""Every send type is accepted and recorded; bad inputs are 400s that record nothing."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from scheduler.service.requests import SEND_KINDS
from tests.sandbox.support import TO, sample_bodies


def test_samples_cover_every_send_kind():
    assert set(sample_bodies()) == set(SEND_KINDS)


@pytest.mark.parametrize("kind", sorted(SEND_KINDS))
def test_every_send_kind_is_accepted_and_recorded(live, kind):
    response = live.send(kind)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert set(answer) == {"success", "messageId", "timestamp"}
    assert answer["success"] is True
    assert isinstance(answer["messageId"], str) and answer["messageId"]
    assert isinstance(answer["timestamp"], int)
    [entry] = live.sends()
    assert entry["path"] == SEND_KINDS[kind].path
    assert entry["sessionId"] == live.session_id
    assert entry["to"] == TO
    assert entry["body"] == live.bodies[kind]
    assert entry["messageId"] == answer["messageId"]
    at = datetime.fromisoformat(entry["at"])
    assert at.utcoffset().total_seconds() == 0
    assert int(at.timestamp() * 1000) == answer["timestamp"]
    assert len(entry["at"].split(".")[1]) == len("123Z")  # millisecond precision


def test_sends_log_is_in_order_and_polls_with_since(sandbox):
    sandbox.create_session("s1")
    ids = [
        sandbox.send("text", {"sessionId": "s1", "to": TO, "text": f"m{i}"}).json()["messageId"]
        for i in range(5)
    ]
    log = sandbox.sends()
    assert [entry["messageId"] for entry in log] == ids
    assert [entry["index"] for entry in log] == list(range(5))
    assert [entry["messageId"] for entry in sandbox.sends(since=3)] == ids[3:]
    assert sandbox.sends(since=5) == []
    assert sandbox.http.get("/sandbox/sends", params={"since": -1}).status_code == 400
    only = sandbox.http.get("/sandbox/sends", params={"session_id": "nobody"}).json()
    assert only == []


def test_async_send_returns_a_command(live):
    box = live.sandbox
    answer = live.send("text", **{"async": "true"}).json()
    command = box.api("GET", f"/api/v1/commands/{answer['commandId']}").json()
    assert command["data"]["status"] == "done"
    assert command["data"]["result"]["messageId"] == answer["messageId"]
    assert box.api("GET", "/api/v1/commands/nope").status_code == 404


def test_multipart_body_is_accepted(live):
    box, sid = live.sandbox, live.session_id
    text = box.api(
        "POST",
        SEND_KINDS["text"].path,
        files={"sessionId": (None, sid), "to": (None, TO), "text": (None, "Olá")},
    )
    assert text.status_code == 200, text.text
    album = live.bodies["album"]
    form = {
        "sessionId": (None, sid),
        "to": (None, TO),
        "media": (None, json.dumps(album["media"])),
        "caption": (None, "Álbum"),
    }
    assert box.api("POST", SEND_KINDS["album"].path, files=form).status_code == 200
    location = box.api(
        "POST",
        SEND_KINDS["location"].path,
        files={
            "sessionId": (None, sid),
            "to": (None, TO),
            "latitude": (None, "-23.5"),
            "longitude": (None, "-46.6"),
        },
    )
    assert location.status_code == 200, location.text
    assert [e["path"] for e in live.sends()] == [
        SEND_KINDS["text"].path,
        SEND_KINDS["album"].path,
        SEND_KINDS["location"].path,
    ]


def test_non_finite_numbers_are_refused(live):
    response = live.sandbox.api(
        "POST",
        SEND_KINDS["pix"].path,
        data={
            "sessionId": live.session_id,
            "to": TO,
            "content": "c",
            "pixKey": "k",
            "pixAmount": "inf",
        },
    )
    assert response.status_code == 400
    assert "pixAmount" in response.json()["error"]


def test_form_urlencoded_with_repeated_keys_makes_a_list(live):
    response = live.sandbox.api(
        "POST",
        SEND_KINDS["poll"].path,
        data={"sessionId": live.session_id, "to": TO, "question": "Q?", "options": ["a", "b", "c"]},
    )
    assert response.status_code == 200, response.text
    assert live.sends()[0]["body"]["options"] == ["a", "b", "c"]


def test_text_plain_body_is_accepted(live):
    body = live.bodies["text"]
    response = live.sandbox.api(
        "POST",
        SEND_KINDS["text"].path,
        content=json.dumps(body),
        headers={"content-type": "text/plain"},
    )
    assert response.status_code == 200, response.text
    assert live.sends()[0]["body"] == body


BAD_TEXT_CHANGES = [
    ({"to": ""}, "to"),
    ({"to": "+5511988887777"}, "to"),
    ({"to": "55119888abc77"}, "to"),
    ({"to": "5511 98888 7777"}, "to"),
    ({"text": ""}, "text"),
    ({"text": None}, "text"),
    ({"priority": "high"}, "priority"),
    ({"async": True}, "async"),
    ({"sessionId": None}, "sessionId"),
]


def test_invalid_body_is_400_naming_the_field(live):
    for change, field in BAD_TEXT_CHANGES:
        body = {k: v for k, v in {**live.bodies["text"], **change}.items() if v is not None}
        response = live.sandbox.send("text", body)
        assert (field, response.status_code) == (field, 400)
        answer = response.json()
        assert answer["success"] is False and answer["statusCode"] == 400
        assert field in answer["error"]
    assert live.sends() == []


BAD_CHANGES = [
    ("poll", {"options": ["only one"]}, "options"),
    ("album", {"media": [{"type": "image", "url": "u"}]}, "media"),
    ("reaction", {"emoji": "x" * 11}, "emoji"),
    ("location", {"latitude": 123}, "latitude"),
    ("list", {"sections": []}, "sections"),
    ("nativeflow", {"buttons": [{"type": "copy", "title": "c", "colour": "red"}]}, "colour"),
    ("pix", {"pixAmount": -1}, "pixAmount"),
]


def test_invalid_bodies_of_other_types(live):
    for kind, change, field in BAD_CHANGES:
        response = live.send(kind, **change)
        assert (kind, response.status_code) == (kind, 400)
        assert field in response.json()["error"]
    assert live.sends() == []


def test_malformed_json_is_400(live):
    nan = b'{"sessionId": "x", "to": "5511988887777", "text": NaN}'
    for content in (b"{not json", b"", b"[1, 2]", b'"text"', b"\xff\xfe", b"{", nan):
        for content_type in ("application/json", "text/plain"):
            response = live.sandbox.api(
                "POST",
                SEND_KINDS["text"].path,
                content=content,
                headers={"content-type": content_type},
            )
            assert (content, response.status_code) == (content, 400)
            answer = response.json()
            assert answer["success"] is False and answer["statusCode"] == 400
    assert live.sends() == []


def test_unknown_session_is_404_and_records_nothing(live):
    start = len(live.sandbox.sends())
    response = live.send("text", sessionId="ghost")
    assert response.status_code == 404
    assert response.json() == {"success": False, "error": "Session not found", "statusCode": 404}
    assert live.sandbox.sends(start) == []


def test_file_upload_is_refused(live):
    response = live.sandbox.api(
        "POST",
        SEND_KINDS["image"].path,
        files={
            "sessionId": (None, live.session_id),
            "to": (None, TO),
            "image": ("a.jpg", b"\xff\xd8", "image/jpeg"),
        },
    )
    assert response.status_code == 400
    assert "image" in response.json()["error"]
    assert live.sends() == []
