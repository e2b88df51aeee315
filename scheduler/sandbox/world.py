"""The sandbox itself: sessions, accepted sends, events and calls, behind the HTTP routes.

``app.state.sandbox`` is a :class:`Sandbox`; in-process tests may read :attr:`Sandbox.world`
(sessions, the sends log), :attr:`Sandbox.webhooks.log`, :attr:`Sandbox.recipients.replies`
and :attr:`Sandbox.trouble` (per-session storms, logouts, lost sends).
SMS, voice, the wallet and the account webhooks are :attr:`Sandbox.account`
(:mod:`scheduler.sandbox.channels`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime
from typing import Any

from scheduler.sandbox.calls import CallDesk
from scheduler.sandbox.channels import AccountChannels
from scheduler.sandbox.common import (
    ApiError,
    IdFactory,
    epoch_ms,
    iso_ms,
    seeded,
    session_not_found,
    user_jid,
)
from scheduler.sandbox.config import SandboxConfig, updated_config
from scheduler.sandbox.faults import FaultInjector
from scheduler.sandbox.members import MemberDesk
from scheduler.sandbox.payloads import Context, sent_payloads
from scheduler.sandbox.plan_limits import limits_document
from scheduler.sandbox.recipients import Recipients
from scheduler.sandbox.sender_trouble import SenderTrouble
from scheduler.sandbox.session_status import announce_created, announce_qr, announce_status
from scheduler.sandbox.state import (
    SentRef,
    Session,
    World,
    next_midnight,
    person_name,
    roll_usage,
)
from scheduler.sandbox.webhooks import WebhookDispatcher
from scheduler.service.requests import CreateSessionBody, ReactionBody, SendBody, SendKind

_TRACED = ("messages.", "message.", "call.offer")


def webhook_target(session: Session, event: str) -> str | None:
    """Where ``event`` of ``session`` goes: ``webhookConfig`` may disable or redirect it."""
    config = session.webhook_config
    if config is not None:
        if not config.get("enabled", True):
            return None
        setting = (config.get("events") or {}).get(event)
        if setting is not None:
            if not setting.get("enabled", True):
                return None
            return setting.get("webhookUrl") or session.webhook_url
    return session.webhook_url


class Sandbox:
    """The emulated service: all state and behaviour, independent of HTTP."""

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        seed = config.seed
        self.world = World()
        self.ids = IdFactory(seed)
        self.faults = FaultInjector(seed)
        self.webhooks = WebhookDispatcher(lambda: self.config, self.now, seed)
        self.recipients = Recipients(self, seed)
        self.trouble = SenderTrouble(self, self.recipients, seed)
        self.calls = CallDesk(self, seed)
        self.account = AccountChannels(self, seed)
        self.members = MemberDesk(seed, lambda sid: sid in self.world.sessions)
        #: Where clients reach the sandbox (learnt from the first send; for media URLs).
        self.base_url: str | None = None

    # ------------------------------------------------------------------ basics

    def now(self) -> datetime:
        """The sandbox clock (``config.clock``)."""
        return self.config.clock()

    def now_ms(self) -> int:
        """The sandbox clock in epoch milliseconds."""
        return epoch_ms(self.config.clock())

    def remember_base_url(self, url: str) -> str:
        """Keep the address clients use, without a trailing slash, and return it."""
        self.base_url = url.rstrip("/")
        return self.base_url

    def update_knobs(self, update: dict[str, Any]) -> SandboxConfig:
        """Apply a partial update of the run-time settings; ``ApiError`` 400 when invalid."""
        try:
            self.config = updated_config(self.config, update)
        except ValueError as exc:
            raise ApiError(400, f"Invalid sandbox settings: {exc}") from None
        self.account.knobs_changed(update, self.config.wallet_micro_reais)
        return self.config

    async def start(self) -> None:
        """Start background work (webhook workers); called by the app's lifespan."""
        self.webhooks.start()

    async def aclose(self) -> None:
        """Stop background work and close connections."""
        await self.webhooks.aclose()

    # ------------------------------------------------------------------ sessions

    def phone_for(self, session_id: str) -> str:
        """The stable phone number (digits) of a session's own account."""
        number = seeded(self.config.seed, f"phone:{session_id}").randrange(10**8)
        return f"55119{number:08d}"

    def create_session(self, body: CreateSessionBody) -> Session:
        """Create a session: ``connecting`` with a QR code (or ``connected`` with auto_connect)."""
        if body.sessionId in self.world.sessions:
            raise ApiError(409, f"Session {body.sessionId} already exists")
        now = self.now()
        session = Session(
            session_id=body.sessionId,
            phone=self.phone_for(body.sessionId),
            created_at=now,
            provider=body.provider or "whatsmeow",
            webhook_url=body.webhookUrl,
            webhook_config=(
                body.webhookConfig.model_dump(exclude_none=True) if body.webhookConfig else None
            ),
            metadata=body.metadata,
        )
        if self.config.auto_connect:
            session.status = "connected"
        else:
            session.new_qr(self.config.seed, now)
            if body.connectionMode == "pair":
                session.status = "pair_code_ready"
        self.world.sessions[session.session_id] = session
        announce_created(self, session, body.pairPhone)
        return session

    def session(self, session_id: str) -> Session:
        """The session, or 404 ``Session not found``."""
        session = self.world.sessions.get(session_id)
        if session is None:
            raise session_not_found()
        return session

    def connect(self, session_id: str) -> Session:
        """The QR code was scanned (or a passkey accepted): the session is ``connected``."""
        session = self.session(session_id)
        was = session.status
        session.status = "connected"
        session.updated_at = self.now()
        if was != "connected":
            announce_status(self, session, "connected", "scanned")
        return session

    def disconnect(self, session_id: str) -> Session:
        """The phone dropped the session: ``disconnected``, a new QR code to scan."""
        return self._unlinked(session_id, "disconnected", "phone disconnected")

    def logout(self, session_id: str) -> Session:
        """The phone logged the session out: ``logged_out`` in its status event; the
        record says ``disconnected`` with a new QR code (it must be linked again)."""
        return self._unlinked(session_id, "logged_out", "logged out")

    def _unlinked(self, session_id: str, event: str, reason: str) -> Session:
        session = self.session(session_id)
        now = self.now()
        session.status = "disconnected"
        session.new_qr(self.config.seed, now)
        session.updated_at = now
        announce_status(self, session, event, reason)
        announce_qr(self, session)
        return session

    def delete_session(self, session_id: str) -> None:
        """Log out and forget a session (``logged_out`` goes to its webhook first)."""
        session = self.session(session_id)
        announce_status(self, session, "logged_out", "session deleted")
        del self.world.sessions[session_id]

    # ------------------------------------------------------------------ limits

    def limits(self, session: Session) -> dict[str, Any]:
        """The limits document of one session."""
        now = self.now()
        roll_usage(session, now)
        return limits_document(self.config, session.used, now)

    def check_limit(self, session: Session, counter: str = "messages") -> None:
        """429 with ``Retry-After`` (seconds to the reset) when the daily limit is used up."""
        cfg = self.config
        now = self.now()
        roll_usage(session, now)
        limit = {
            "messages": cfg.daily_message_limit,
            "sms": cfg.daily_sms_limit,
            "voice": cfg.daily_voice_limit,
        }[counter]
        if session.used[counter] >= limit:
            reset = next_midnight(now)
            wait = max(1, math.ceil((reset - now).total_seconds()))
            raise ApiError(
                429,
                f"Daily {counter} limit of {limit} reached for session {session.session_id}; "
                f"resets at {iso_ms(reset)}",
                headers={"Retry-After": str(wait)},
            )

    # ------------------------------------------------------------------ sends

    def sending_session(self, session_id: str) -> Session:
        """The session a send goes out on: 404 when unknown, 409 when not connected."""
        session = self.session(session_id)
        if session.status != "connected":
            raise ApiError(409, f"Session {session_id} is not connected (status: {session.status})")
        return session

    def accept_send(
        self, kind: SendKind, body: SendBody, received: dict[str, Any], base_url: str
    ) -> dict[str, Any]:
        """Record an accepted send, emit its ``messages.sent`` events, wake the recipient."""
        cfg = self.config
        session = self.world.sessions[body.sessionId]
        now = cfg.clock()
        roll_usage(session, now)
        session.used["messages"] += 1
        event_id = self.ids.message()
        message_id = event_id.lower() if cfg.message_id_case_mismatch else event_id
        world = self.world
        world.record_send(
            path=kind.path,
            session_id=session.session_id,
            to=body.to,
            body=received,
            message_id=message_id,
            at=now,
        )
        world.messages[event_id.lower()] = SentRef(session.session_id, body.to, kind.name, event_id)
        timestamp = epoch_ms(now)
        target = ""
        if isinstance(body, ReactionBody):
            original = world.messages.get(body.messageId.lower())
            target = session.jid if original is not None else user_jid(body.to)
        ctx = Context(
            message_id=event_id,
            timestamp=timestamp,
            sender={"jid": session.jid, "name": session.name},
            recipient={"jid": user_jid(body.to), "name": person_name(body.to)},
            media_base=f"{base_url}/sandbox/media",
            next_id=self.ids.message,
            reaction_target=target,
        )
        for data in sent_payloads(kind.name, body, ctx):
            media = data.get("media_data")
            if media is not None:
                world.media[data["id"].lower()] = media["pending_media_url"]
            self.emit(session, "messages.sent", data, now)
        self.trouble.accepted(session, kind.name, body.to, event_id, body, message_id)
        response: dict[str, Any] = {
            "success": True,
            "messageId": message_id,
            "timestamp": timestamp,
        }
        if getattr(body, "async_", None) == "true":
            command_id = self.ids.command()
            world.commands[command_id] = {
                "commandId": command_id,
                "status": "done",
                "result": {"messageId": message_id, "timestamp": timestamp},
            }
            response["commandId"] = command_id
        return response

    def inbound_context(self, session_id: str, number: str) -> Context:
        """Payload context of a message the person at ``number`` sends to the session."""
        session = self.world.sessions.get(session_id)
        own = {"jid": session.jid, "name": session.name} if session else {"jid": "", "name": ""}
        return Context(
            message_id=self.ids.inbound(),
            timestamp=self.now_ms(),
            sender={"jid": user_jid(number), "name": person_name(number)},
            recipient=own,
            media_base="",
            from_me=False,
        )

    # ------------------------------------------------------------------ events

    def emit(
        self, session: Session, event: str, data: dict[str, Any], at: datetime | None = None
    ) -> None:
        """Post one event to the session's webhook (if it has one for ``event``)."""
        url = webhook_target(session, event)
        if url is None:
            return
        envelope: dict[str, Any] = {
            "event": event,
            "sessionId": session.session_id,
            "data": data,
            "timestamp": iso_ms(at or self.now()),
        }
        if event.startswith(_TRACED):
            envelope["traceId"] = self.ids.trace()
        self.webhooks.post(url, session.session_id, envelope)

    def emit_later(
        self, delay_s: float, session_id: str, event: str, build: Callable[[], dict[str, Any]]
    ) -> None:
        """Emit ``build()`` after ``delay_s``; skipped if the session is gone by then."""

        def fire() -> None:
            session = self.world.sessions.get(session_id)
            if session is not None:
                self.emit(session, event, build())

        self.webhooks.call_later(delay_s, fire)
