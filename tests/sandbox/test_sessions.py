"""Sessions: create, list, QR codes that really decode, scan, disconnect, settings, errors."""

from __future__ import annotations

import base64
import io
from datetime import datetime

import pytest
import zxingcpp
from PIL import Image

from tests.sandbox.support import unique_id

NOT_FOUND = {"success": False, "error": "Session not found", "statusCode": 404}
RECORD_FIELDS = {
    "id",
    "sessionId",
    "status",
    "provider",
    "webhookUrl",
    "phone",
    "name",
    "qrCode",
    "qrCodeImage",
    "qrCodeUpdatedAt",
    "createdAt",
    "updatedAt",
}


@pytest.fixture
def box(shared):
    """The module's shared sandbox (each test uses its own session ids)."""
    return shared[0]


def decode_png(data: bytes) -> str:
    """The text of the single QR code in a PNG."""
    results = zxingcpp.read_barcodes(Image.open(io.BytesIO(data)))
    assert len(results) == 1
    return results[0].text


def test_created_session_is_connecting_with_a_qr(box):
    sid = unique_id()
    response = box.api("POST", "/api/v1/sessions", json={"sessionId": sid, "type": "unofficial"})
    assert response.status_code == 200
    record = response.json()["data"]
    assert set(record) <= RECORD_FIELDS
    assert record["sessionId"] == sid
    assert record["status"] == "connecting"
    assert record["qrCode"]


def test_duplicate_session_is_409(box):
    sid = unique_id()
    box.create_session(sid, connect=False)
    response = box.api("POST", "/api/v1/sessions", json={"sessionId": sid})
    assert response.status_code == 409
    assert response.json()["success"] is False
    assert response.json()["statusCode"] == 409


def test_create_rejects_unknown_and_empty_fields(box):
    before = box.api("GET", "/api/v1/sessions").json()["data"]
    unknown = box.api("POST", "/api/v1/sessions", json={"sessionId": unique_id(), "color": "red"})
    assert unknown.status_code == 400
    assert "color" in unknown.json()["error"]
    empty = box.api("POST", "/api/v1/sessions", json={"sessionId": ""})
    assert empty.status_code == 400
    assert "sessionId" in empty.json()["error"]
    assert box.api("GET", "/api/v1/sessions").json()["data"] == before


def test_list_and_get_sessions(sandbox):
    sandbox.create_session("a", connect=False)
    sandbox.create_session("b")
    listed = sandbox.api("GET", "/api/v1/sessions").json()["data"]
    assert [(s["sessionId"], s["status"]) for s in listed] == [
        ("a", "connecting"),
        ("b", "connected"),
    ]
    one = sandbox.api("GET", "/api/v1/sessions/b").json()["data"]
    assert one["status"] == "connected"
    assert one["phone"].isdigit()
    assert set(one) <= RECORD_FIELDS


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/sessions/ghost",
        "/api/v1/sessions/ghost/qr",
        "/api/v1/limits/ghost",
    ],
)
def test_unknown_session_is_404_envelope(box, path):
    response = box.api("GET", path)
    assert response.status_code == 404
    assert response.json() == NOT_FOUND


def test_qr_json_image_decodes_to_the_qr_code(box):
    sid = unique_id()
    box.create_session(sid, connect=False)
    qr = box.api("GET", f"/api/v1/sessions/{sid}/qr").json()
    assert set(qr) == {"sessionId", "status", "qrCode", "qrCodeImage", "qrCodeUpdatedAt"}
    assert qr["sessionId"] == sid
    assert qr["status"] == "connecting"
    prefix = "data:image/png;base64,"
    assert qr["qrCodeImage"].startswith(prefix)
    assert decode_png(base64.b64decode(qr["qrCodeImage"][len(prefix) :])) == qr["qrCode"]
    assert qr["qrCodeUpdatedAt"].endswith("Z")
    assert datetime.fromisoformat(qr["qrCodeUpdatedAt"]).utcoffset().total_seconds() == 0


def test_qr_image_1_is_the_png_itself(box):
    sid = unique_id()
    box.create_session(sid, connect=False)
    qr_code = box.api("GET", f"/api/v1/sessions/{sid}/qr").json()["qrCode"]
    response = box.api("GET", f"/api/v1/sessions/{sid}/qr", params={"image": "1"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/png"
    assert decode_png(response.content) == qr_code
    assert box.api("GET", f"/api/v1/sessions/{sid}/qr", params={"image": "2"}).status_code == 400


def test_scan_connects_and_disconnect_stops_sends(box):
    sid = unique_id()
    text = {"sessionId": sid, "to": "5511988887777", "text": "oi"}
    box.create_session(sid, connect=False)
    start = len(box.sends())
    refused = box.send("text", text)
    assert refused.status_code == 409
    assert "not connected" in refused.json()["error"]
    box.scan(sid)
    assert box.send("text", text).status_code == 200
    box.disconnect(sid)
    again = box.send("text", text)
    assert again.status_code == 409
    assert "disconnected" in again.json()["error"]
    assert len(box.sends(start)) == 1
    # A disconnected session can be paired again with a fresh QR code.
    qr = box.api("GET", f"/api/v1/sessions/{sid}/qr").json()
    assert qr["status"] == "connecting"
    box.scan(sid)
    assert box.send("text", text).status_code == 200


def test_qr_of_a_connected_session_is_409(live):
    path = f"/api/v1/sessions/{live.session_id}/qr"
    assert live.sandbox.api("GET", path).status_code == 409


def test_auto_connect(make_sandbox):
    record = make_sandbox(auto_connect=True).create_session("s1", connect=False)
    assert record["status"] == "connected"


def test_settings_endpoints(box):
    sid = unique_id()
    box.create_session(sid, connect=False)
    base = f"/api/v1/sessions/{sid}"
    hook = box.api("POST", f"{base}/webhook", json={"webhookUrl": "http://127.0.0.1:9/hook"})
    assert hook.status_code == 200
    assert box.api("GET", base).json()["data"]["webhookUrl"] == "http://127.0.0.1:9/hook"
    calls = box.api(
        "POST",
        f"{base}/call-settings",
        json={"rejectCalls": True, "rejectCallsMessage": "Só texto"},
    )
    assert calls.json()["data"] == {"rejectCalls": True, "rejectCallsMessage": "Só texto"}
    mark = box.api(
        "POST", f"{base}/mark-previous-as-read-settings", json={"markPreviousAsRead": True}
    )
    assert mark.json()["data"] == {"markPreviousAsRead": True}
    bad = box.api(
        "POST", f"{base}/mark-previous-as-read-settings", json={"markPreviousAsRead": "perhaps"}
    )
    assert bad.status_code == 400
    assert "markPreviousAsRead" in bad.json()["error"]
    assert (
        box.api("POST", "/api/v1/sessions/ghost/webhook", json={"webhookUrl": "http://x"}).json()
        == NOT_FOUND
    )


def test_passkey_accepts_any_object_and_connects(box):
    sid = unique_id()
    box.create_session(sid, connect=False)
    path = f"/api/v1/sessions/{sid}/auth/passkey"
    response = box.api("POST", path, json={"id": "cred", "response": {"signature": "abc"}})
    assert response.status_code == 200
    assert response.json()["success"] is True
    assert box.api("GET", f"/api/v1/sessions/{sid}").json()["data"]["status"] == "connected"
    assert box.api("POST", path, json=[1, 2]).status_code == 400


def test_migration_accepts_8_of_a_z_0_9(box):
    for code in ("ABCD1234", "00000000", "ZZZZ9999"):
        response = box.api("POST", "/api/v1/session-migration/migrate", json={"code": code})
        assert (code, response.status_code) == (code, 200)
        assert response.json()["success"] is True


def test_migration_rejects_other_codes(box):
    for code in ("abcd1234", "ABC123", "ABCD12345", "ABCD-123", ""):
        response = box.api("POST", "/api/v1/session-migration/migrate", json={"code": code})
        assert (code, response.status_code) == (code, 400)
        body = response.json()
        assert body["success"] is False and body["statusCode"] == 400
        assert "code" in body["error"]
    missing = box.api("POST", "/api/v1/session-migration/migrate", json={"jid": "x"})
    assert missing.status_code == 400


def test_delete_session(live):
    base = f"/api/v1/sessions/{live.session_id}"
    assert live.sandbox.api("DELETE", base).status_code == 200
    assert live.sandbox.api("GET", base).status_code == 404
