"""Incoming calls: ``call.offer`` (and automatic rejection, with the session's
``rejectCallsMessage`` sent to the caller as a text), ``POST /api/v1/calls/reject``, and
``call.accepted`` when the call is answered on another device (a sandbox control)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler.sandbox.common import USER_SUFFIX, ApiError, number_of, seeded, user_jid
from scheduler.sandbox.outgoing_calls import is_cloud_api
from scheduler.service.requests import API, SEND_KINDS, RejectCallBody, TextBody, wire_body

if TYPE_CHECKING:
    from scheduler.sandbox.world_view import WorldView

REJECT_PATH = f"{API}/calls/reject"


def _reject_error(error: str, status: int, session_id: str) -> ApiError:
    """The reject endpoint's own error body: ``sessionId`` and no ``statusCode``."""
    return ApiError(status, error, body={"success": False, "error": error, "sessionId": session_id})


class CallDesk:
    """Calls offered to the sessions, and their rejection."""

    def __init__(self, sandbox: WorldView, seed: int | None) -> None:
        self._sandbox = sandbox
        self._callers = seeded(seed, "callers")
        self.calls: dict[str, dict[str, Any]] = {}

    def incoming(self, session_id: str, caller: str | None) -> dict[str, Any]:
        """Someone calls the session's number: ``call.offer``, auto-rejected when set so."""
        sandbox = self._sandbox
        session = sandbox.session(session_id)
        if caller is None:
            caller = f"55219{self._callers.randrange(10**8):08d}"
        caller_jid = caller if "@" in caller else user_jid(caller)
        call_id = sandbox.ids.call()
        call = {"callId": call_id, "sessionId": session_id, "from": caller_jid, "status": "offered"}
        self.calls[call_id] = call
        offer = {
            "callId": call_id,
            "from": caller_jid,
            "callCreator": caller_jid,
            "isGroup": False,
            "timestamp": sandbox.now_ms(),
        }
        sandbox.emit(session, "call.offer", offer)
        if session.reject_calls:
            self._rejected(call)
            if session.reject_calls_message:
                self._reply(session_id, caller_jid, session.reject_calls_message)
        return {"success": True, "sessionId": session_id, "callId": call_id, "from": caller_jid}

    def accept_elsewhere(self, call_id: str) -> dict[str, Any]:
        """An offered call is answered on another device: ``call.accepted``."""
        call = self.calls.get(call_id)
        if call is None or call["status"] != "offered":
            raise ApiError(404, "Call not found or not ringing")
        call["status"] = "accepted"
        self._sandbox.emit(self._sandbox.session(call["sessionId"]), "call.accepted",
                           {"callId": call_id, "from": call["from"],
                            "timestamp": self._sandbox.now_ms()})
        return {"success": True, "callId": call_id, "status": "accepted"}

    def reject(self, body: RejectCallBody, received: dict[str, Any]) -> dict[str, Any]:
        """Reject an offered call; ``from`` must be exactly what ``call.offer`` said."""
        sandbox = self._sandbox
        session_id = body.sessionId
        session = sandbox.world.sessions.get(session_id)
        if session is None:
            raise _reject_error("Session not found", 404, session_id)
        if is_cloud_api(session):
            raise _reject_error("Rejecting calls is not available on cloud_api connections",
                                400, session_id)
        call = self.calls.get(body.callId)
        if (
            call is None
            or call["sessionId"] != session_id
            or call["from"] != body.from_
            or call["status"] != "offered"
            or session.status != "connected"
        ):
            raise _reject_error("Failed to reject call", 400, session_id)
        sandbox.world.record_send(
            path=REJECT_PATH,
            session_id=session_id,
            to=None,
            body=received,
            message_id=None,
            at=sandbox.now(),
        )
        self._rejected(call)
        return {"success": True, "sessionId": session_id, "data": {"callId": body.callId}}

    def _reply(self, session_id: str, caller_jid: str, text: str) -> None:
        """The session's ``rejectCallsMessage``, sent to the caller as a text message."""
        sandbox = self._sandbox
        to = number_of(caller_jid) if caller_jid.endswith(USER_SUFFIX) else caller_jid
        body = TextBody(sessionId=session_id, to=to, text=text)
        sandbox.accept_send(SEND_KINDS["text"], body, wire_body(body), sandbox.base_url or "")

    def _rejected(self, call: dict[str, Any]) -> None:
        call["status"] = "rejected"
        sandbox = self._sandbox

        def build() -> dict[str, Any]:
            return {"callId": call["callId"], "from": call["from"], "timestamp": sandbox.now_ms()}

        sandbox.emit_later(0.01, call["sessionId"], "call.rejected", build)
