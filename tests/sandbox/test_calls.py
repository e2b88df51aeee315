"""Incoming calls: ``call.offer``, rejection through the API, automatic rejection."""

from __future__ import annotations

from scheduler.sandbox.calls import REJECT_PATH

OFFER_REQUIRED = {"callId", "from", "isGroup", "timestamp"}
OFFER_ALLOWED = OFFER_REQUIRED | {"callCreator", "groupJid"}


def test_incoming_call_emits_call_offer(live):
    call = live.sandbox.incoming_call(live.session_id, "5521977776666")
    [offer] = live.wait_for(lambda e: e["event"] == "call.offer")
    data = offer["data"]
    assert OFFER_REQUIRED <= set(data) <= OFFER_ALLOWED
    assert data["callId"] == call["callId"]
    assert data["from"] == "5521977776666@s.whatsapp.net"
    assert data["isGroup"] is False
    assert isinstance(data["timestamp"], int)
    assert offer["traceId"]


def test_reject_call(live):
    box, sid = live.sandbox, live.session_id
    call = box.incoming_call(sid, "99887766@lid")
    body = {"sessionId": sid, "callId": call["callId"], "from": "99887766@lid"}
    response = box.api("POST", REJECT_PATH, json=body)
    assert response.status_code == 200
    assert response.json() == {
        "success": True,
        "sessionId": sid,
        "data": {"callId": call["callId"]},
    }
    [entry] = live.sends()
    assert entry["path"] == REJECT_PATH
    assert entry["body"] == body
    [rejected] = live.wait_for(lambda e: e["event"] == "call.rejected")
    assert rejected["data"]["callId"] == call["callId"]
    assert rejected["data"]["from"] == "99887766@lid"
    again = box.api("POST", REJECT_PATH, json=body)
    assert again.json() == {"success": False, "error": "Failed to reject call", "sessionId": sid}


def test_reject_unknown_session(shared):
    box, _ = shared
    start = len(box.sends())
    response = box.api(
        "POST", REJECT_PATH, json={"sessionId": "ghost", "callId": "C1", "from": "1@lid"}
    )
    assert response.status_code == 404
    assert response.json() == {"success": False, "error": "Session not found", "sessionId": "ghost"}
    assert box.sends(start) == []


def test_reject_with_a_rewritten_from_fails(live):
    box, sid = live.sandbox, live.session_id
    call = box.incoming_call(sid, "99887766@lid")
    response = box.api(
        "POST", REJECT_PATH, json={"sessionId": sid, "callId": call["callId"], "from": "99887766"}
    )
    assert response.json()["error"] == "Failed to reject call"
    assert live.sends() == []


def test_automatic_rejection(live):
    box, sid = live.sandbox, live.session_id
    box.api("POST", f"/api/v1/sessions/{sid}/call-settings", json={"rejectCalls": True})
    call = box.incoming_call(sid)
    live.wait_for(lambda e: e["event"] == "call.offer")
    [rejected] = live.wait_for(lambda e: e["event"] == "call.rejected")
    assert rejected["data"]["callId"] == call["callId"]


def test_automatic_rejection_sends_the_sessions_message(live):
    box, sid = live.sandbox, live.session_id
    text = "Não atendemos ligações; escreva aqui."
    box.api("POST", f"/api/v1/sessions/{sid}/call-settings",
            json={"rejectCalls": True, "rejectCallsMessage": text})
    box.incoming_call(sid, "5521977776666")
    live.wait_for(lambda e: e["event"] == "call.rejected")
    [sent] = live.wait_for(lambda e: e["event"] == "messages.sent")
    assert sent["data"]["to"]["jid"] == "5521977776666@s.whatsapp.net"
    assert [(s["path"], s["to"], s["body"]["text"]) for s in live.sends()] == [
        ("/api/v1/messages/send/text", "5521977776666", text)]


def test_no_message_without_one_set(live):
    box, sid = live.sandbox, live.session_id
    box.api("POST", f"/api/v1/sessions/{sid}/call-settings", json={"rejectCalls": True})
    box.incoming_call(sid, "5521977776666")
    live.wait_for(lambda e: e["event"] == "call.rejected")
    assert live.sends() == [] and live.events("messages.sent") == []


def test_a_call_answered_on_another_device(live):
    box, sid = live.sandbox, live.session_id
    call = box.incoming_call(sid, "99887766@lid")
    answer = box.http.post(f"/sandbox/calls/{call['callId']}/accept")
    assert answer.json() == {"success": True, "callId": call["callId"], "status": "accepted"}
    [accepted] = live.wait_for(lambda e: e["event"] == "call.accepted")
    assert accepted["data"]["callId"] == call["callId"]
    assert accepted["data"]["from"] == "99887766@lid"
    body = {"sessionId": sid, "callId": call["callId"], "from": "99887766@lid"}
    assert box.api("POST", REJECT_PATH, json=body).json()["error"] == "Failed to reject call"
    assert box.http.post(f"/sandbox/calls/{call['callId']}/accept").status_code == 404
