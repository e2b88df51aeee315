"""Sessions: create, list, QR codes that really decode, scan, disconnect, settings, errors."""

from __future__ import annotations

import base64
import io
from datetime import datetime

import pytest
import zxingcpp
from PIL import Image

NOT_FOUND = {"success": False, "error": "Session not found", "statusCode": 404}
RECORD_FIELDS = {"id", "sessionId", "status", "provider", "webhookUrl", "phone", "name",
                 "qrCode", "qrCodeImage", "qrCodeUpdatedAt", "createdAt", "updatedAt"}


def decode_png(data: bytes) -> str:
    """The text of the single QR code in a PNG."""
    results = zxingcpp.read_barcodes(Image.open(io.BytesIO(data)))
    assert len(results) == 1
    return results[0].text


def test_created_session_is_connecting_with_a_qr(sandbox):
    response = sandbox.api("POST", "/api/v1/sessions",
                           json={"sessionId": "s1", "type": "unofficial"})
    assert response.status_code == 200
    record = response.json()["data"]
    assert set(record) <= RECORD_FIELDS
    assert record["sessionId"] == "s1"
    assert record["status"] == "connecting"
    assert record["qrCode"]


def test_duplicate_session_is_409(sandbox):
    sandbox.create_session("s1", connect=False)
    response = sandbox.api("POST", "/api/v1/sessions", json={"sessionId": "s1"})
    assert response.status_code == 409
    assert response.json()["success"] is False
    assert response.json()["statusCode"] == 409


def test_create_rejects_unknown_and_empty_fields(sandbox):
    unknown = sandbox.api("POST", "/api/v1/sessions", json={"sessionId": "s1", "color": "red"})
    assert unknown.status_code == 400
    assert "color" in unknown.json()["error"]
    empty = sandbox.api("POST", "/api/v1/sessions", json={"sessionId": ""})
    assert empty.status_code == 400
    assert "sessionId" in empty.json()["error"]
    assert sandbox.api("GET", "/api/v1/sessions").json()["data"] == []


def test_list_and_get_sessions(sandbox):
    sandbox.create_session("a", connect=False)
    sandbox.create_session("b")
    listed = sandbox.api("GET", "/api/v1/sessions").json()["data"]
    assert [(s["sessionId"], s["status"]) for s in listed] == [("a", "connecting"),
                                                               ("b", "connected")]
    one = sandbox.api("GET", "/api/v1/sessions/b").json()["data"]
    assert one["status"] == "connected"
    assert one["phone"].isdigit()
    assert set(one) <= RECORD_FIELDS


@pytest.mark.parametrize("path", [
    "/api/v1/sessions/ghost", "/api/v1/sessions/ghost/qr", "/api/v1/limits/ghost",
])
def test_unknown_session_is_404_envelope(sandbox, path):
    response = sandbox.api("GET", path)
    assert response.status_code == 404
    assert response.json() == NOT_FOUND


def test_qr_json_image_decodes_to_the_qr_code(sandbox):
    sandbox.create_session("s1", connect=False)
    qr = sandbox.api("GET", "/api/v1/sessions/s1/qr").json()
    assert set(qr) == {"sessionId", "status", "qrCode", "qrCodeImage", "qrCodeUpdatedAt"}
    assert qr["sessionId"] == "s1"
    assert qr["status"] == "connecting"
    prefix = "data:image/png;base64,"
    assert qr["qrCodeImage"].startswith(prefix)
    assert decode_png(base64.b64decode(qr["qrCodeImage"][len(prefix):])) == qr["qrCode"]
    assert qr["qrCodeUpdatedAt"].endswith("Z")
    assert datetime.fromisoformat(qr["qrCodeUpdatedAt"]).utcoffset().total_seconds() == 0


def test_qr_image_1_is_the_png_itself(sandbox):
    sandbox.create_session("s1", connect=False)
    qr_code = sandbox.api("GET", "/api/v1/sessions/s1/qr").json()["qrCode"]
    response = sandbox.api("GET", "/api/v1/sessions/s1/qr", params={"image": "1"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/png"
    assert decode_png(response.content) == qr_code


def test_scan_connects_and_disconnect_stops_sends(sandbox, bodies):
    sandbox.create_session("s1", connect=False)
    refused = sandbox.send("text", bodies["text"])
    assert refused.status_code == 409
    assert "not connected" in refused.json()["error"]
    sandbox.scan("s1")
    assert sandbox.send("text", bodies["text"]).status_code == 200
    sandbox.disconnect("s1")
    again = sandbox.send("text", bodies["text"])
    assert again.status_code == 409
    assert "disconnected" in again.json()["error"]
    assert len(sandbox.sends()) == 1
    # A disconnected session can be paired again with a fresh QR code.
    qr = sandbox.api("GET", "/api/v1/sessions/s1/qr").json()
    assert qr["status"] == "connecting"
    sandbox.scan("s1")
    assert sandbox.send("text", bodies["text"]).status_code == 200


def test_qr_of_a_connected_session_is_409(sandbox):
    sandbox.create_session("s1")
    assert sandbox.api("GET", "/api/v1/sessions/s1/qr").status_code == 409


def test_auto_connect(make_sandbox):
    box = make_sandbox(auto_connect=True)
    record = box.create_session("s1", connect=False)
    assert record["status"] == "connected"


def test_settings_endpoints(sandbox):
    sandbox.create_session("s1", connect=False)
    hook = sandbox.api("POST", "/api/v1/sessions/s1/webhook",
                       json={"webhookUrl": "http://127.0.0.1:9/hook"})
    assert hook.status_code == 200
    assert sandbox.api("GET", "/api/v1/sessions/s1").json()["data"]["webhookUrl"] == (
        "http://127.0.0.1:9/hook")
    calls = sandbox.api("POST", "/api/v1/sessions/s1/call-settings",
                        json={"rejectCalls": True, "rejectCallsMessage": "Só texto"})
    assert calls.json()["data"] == {"rejectCalls": True, "rejectCallsMessage": "Só texto"}
    mark = sandbox.api("POST", "/api/v1/sessions/s1/mark-previous-as-read-settings",
                       json={"markPreviousAsRead": True})
    assert mark.json()["data"] == {"markPreviousAsRead": True}
    bad = sandbox.api("POST", "/api/v1/sessions/s1/mark-previous-as-read-settings",
                      json={"markPreviousAsRead": "perhaps"})
    assert bad.status_code == 400
    assert "markPreviousAsRead" in bad.json()["error"]
    assert sandbox.api("POST", "/api/v1/sessions/ghost/webhook",
                       json={"webhookUrl": "http://x"}).json() == NOT_FOUND


def test_passkey_accepts_any_object_and_connects(sandbox):
    sandbox.create_session("s1", connect=False)
    response = sandbox.api("POST", "/api/v1/sessions/s1/auth/passkey",
                           json={"id": "cred", "response": {"signature": "abc"}})
    assert response.status_code == 200
    assert response.json()["success"] is True
    assert sandbox.api("GET", "/api/v1/sessions/s1").json()["data"]["status"] == "connected"
    not_object = sandbox.api("POST", "/api/v1/sessions/s1/auth/passkey", json=[1, 2])
    assert not_object.status_code == 400


@pytest.mark.parametrize("code", ["ABCD1234", "00000000", "ZZZZ9999"])
def test_migration_accepts_8_of_a_z_0_9(sandbox, code):
    response = sandbox.api("POST", "/api/v1/session-migration/migrate", json={"code": code})
    assert response.status_code == 200
    assert response.json()["success"] is True


@pytest.mark.parametrize("code", ["abcd1234", "ABC123", "ABCD12345", "ABCD-123", ""])
def test_migration_rejects_other_codes(sandbox, code):
    response = sandbox.api("POST", "/api/v1/session-migration/migrate", json={"code": code})
    assert response.status_code == 400
    body = response.json()
    assert body["success"] is False and body["statusCode"] == 400
    assert "code" in body["error"]


def test_delete_session(sandbox):
    sandbox.create_session("s1")
    assert sandbox.api("DELETE", "/api/v1/sessions/s1").status_code == 200
    assert sandbox.api("GET", "/api/v1/sessions/s1").status_code == 404
