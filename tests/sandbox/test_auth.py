"""Every /api/v1 endpoint checks the raw API key; /sandbox/* needs none."""

from __future__ import annotations

import httpx
import pytest

ENVELOPE_401 = {"success": False, "error": "Invalid API key", "statusCode": 401}

ENDPOINTS = [
    ("GET", "/api/v1/sessions"),
    ("POST", "/api/v1/sessions"),
    ("GET", "/api/v1/sessions/s1/qr"),
    ("POST", "/api/v1/messages/send/text"),
    ("POST", "/api/v1/interactive/send/list"),
    ("POST", "/api/v1/calls/reject"),
    ("GET", "/api/v1/limits/s1"),
    ("POST", "/api/v1/session-migration/migrate"),
    ("GET", "/api/v1/no-such-endpoint"),
]


@pytest.mark.parametrize("key", [None, "wrong-key", "Bearer sandbox-key", "", "sandbox-keyX"])
def test_missing_or_wrong_key_is_401_envelope(shared, key):
    box, _ = shared
    headers = {} if key is None else {"Authorization": key}
    for method, path in ENDPOINTS:
        response = box.http.request(method, path, headers=headers, json={"sessionId": "s1"})
        assert (method, path, response.status_code) == (method, path, 401)
        assert response.json() == ENVELOPE_401


def test_nothing_is_recorded_without_a_key(live):
    response = live.sandbox.http.post("/api/v1/messages/send/text", json=live.bodies["text"])
    assert response.status_code == 401
    assert live.sends() == []


def test_right_key_passes_and_custom_key_works(make_sandbox):
    box = make_sandbox(api_key="k-123")
    assert box.api("GET", "/api/v1/sessions").status_code == 200
    refused = box.http.get("/api/v1/sessions", headers={"Authorization": "sandbox-key"})
    assert refused.status_code == 401
    assert "k-123" not in refused.text


def test_inspection_endpoints_need_no_key(shared):
    box, _ = shared
    for path in ("/sandbox/sends", "/sandbox/faults", "/sandbox/webhooks", "/sandbox/replies"):
        assert httpx.get(f"{box.base_url}{path}").status_code == 200
