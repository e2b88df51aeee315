"""Helpers of the tracking tests: receiver settings and a running receiver's handle, runs
whose deliveries events can match, reads of the ledger's rows, and event builders with the
service's payload shapes (``sent``, ``receipt``, ``received``, ``sms``, ``voice``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import select, update

from scheduler.core.httpserver import BackgroundServer
from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from scheduler.settings.load import Settings
from scheduler.tracking import session_webhook_url
from scheduler.tracking.intake import sign
from tests import waiting
from tests.factories import T0, make_run, number

TOKEN = "test-token-5f1c0d9e"
SECRET = "test-hmac-secret"
OWN = "5511987650000@s.whatsapp.net"


def settings(**overrides: Any) -> Settings:
    """Receiver settings for tests: a known token and HMAC secret, no service."""
    values: dict[str, Any] = {
        "webhook_token": TOKEN,
        "webhook_secret": SECRET,
        "base_url": None,
        "api_key": None,
    }
    values.update(overrides)
    return Settings(**values)


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll ``predicate`` until it is truthy; fail after ``timeout`` seconds
    (:func:`tests.waiting.wait_for`)."""
    return waiting.wait_for(predicate, timeout, "the condition", every=0.01)


class ReceiverHandle:
    """A running receiver: its URLs and helpers to post events."""

    def __init__(self, server: BackgroundServer, config: Settings) -> None:
        self.server = server
        self.settings = config
        self.base_url = server.base_url
        self.url = session_webhook_url(config, server)
        self.app = server.app
        self.http = httpx.Client(timeout=10.0)

    def post(self, event: Any) -> httpx.Response:
        """POST an event (JSON) to the session webhook with the right token."""
        return self.http.post(self.url, json=event)

    def post_raw(
        self, content: Any, *, path: str | None = None, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        """POST raw bytes (or a chunk iterator) to ``path`` (default: the token URL)."""
        url = self.url if path is None else f"{self.base_url}{path}"
        return self.http.post(url, content=content, headers=headers or {})

    def post_account(
        self, event: Any, *, secret: str | None = SECRET, signature: str | None = None
    ) -> httpx.Response:
        """POST a signed account (SMS/voice) event."""
        body = json.dumps(event).encode()
        headers = {
            "content-type": "application/json",
            "x-dapi-webhook-channel": str(event.get("channel")) if isinstance(event, dict) else "",
        }
        if signature is not None:
            headers["x-dapi-signature"] = signature
        elif secret is not None:
            headers["x-dapi-signature"] = sign(body, secret)
        return self.http.post(f"{self.base_url}/webhooks/account", content=body, headers=headers)

    def close(self) -> None:
        """Stop the server."""
        self.http.close()
        self.server.stop()


# --------------------------------------------------------------------------- ledger helpers


def mid(i: int, step: int = 0) -> str:
    """The (upper-case) message id the service gave recipient ``i``'s step."""
    return f"3EB0{step:02X}{i:016X}"


def accepted_run(
    ledger: Ledger,
    recipients: int,
    *,
    steps: int = 1,
    sender: str = "s1",
    dispatched: datetime = T0,
) -> int:
    """A run whose step-0 rows were accepted (lower-case message ids, as the sandbox
    answers); later steps stay planned."""
    run_id = make_run(ledger, recipients, steps=steps, senders=(sender,))
    d = tables.deliveries
    with ledger.engine.begin() as conn:
        for i in range(recipients):
            conn.execute(
                update(d)
                .where(d.c.run_id == run_id, d.c.to == number(i), d.c.step == 0)
                .values(
                    state="accepted",
                    sender=sender,
                    dispatched_at=dispatched,
                    accepted_at=dispatched,
                    message_id=mid(i).lower(),
                    message_id_norm=mid(i).lower(),
                )
            )
    return run_id


def rows(ledger: Ledger, run_id: int | None = None) -> list[dict[str, Any]]:
    """Every delivery (of one run), in plan order."""
    d = tables.deliveries
    stmt = select(d).order_by(d.c.id)
    if run_id is not None:
        stmt = stmt.where(d.c.run_id == run_id)
    with ledger.engine.connect() as conn:
        return [dict(r) for r in conn.execute(stmt).mappings()]


def table(ledger: Ledger, name: str) -> list[dict[str, Any]]:
    """Every row of ``events``, ``replies`` or ``suppressions``."""
    by_name = {
        "events": tables.events,
        "replies": tables.replies,
        "suppressions": tables.suppressions,
    }
    t = by_name[name]
    with ledger.engine.connect() as conn:
        return [dict(r) for r in conn.execute(select(t)).mappings()]


# --------------------------------------------------------------------------- event builders


def ms(moment: datetime) -> int:
    """Epoch milliseconds."""
    return int(moment.timestamp() * 1000)


def iso(moment: datetime) -> str:
    """ISO 8601 UTC with a Z."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def sent(
    to: str,
    message_id: str,
    at: datetime = T0,
    *,
    session: str = "s1",
    kind: str = "text",
    text: str = "Olá",
) -> dict[str, Any]:
    """``messages.sent`` of a message to ``to``."""
    return {
        "event": "messages.sent",
        "sessionId": session,
        "timestamp": iso(at),
        "traceId": f"t-{message_id}",
        "data": {
            "id": message_id,
            "type": kind,
            "message": text,
            "timestamp": ms(at),
            "fromMe": True,
            "is_group": False,
            "group_name": "",
            "from": {"jid": OWN, "name": "Loja"},
            "from_name": "Loja",
            "to": {"jid": f"{to}@s.whatsapp.net", "name": "Cliente"},
            "media_url": None,
        },
    }


def receipt(
    name: str, to: str, message_id: str, at: datetime, session: str = "s1"
) -> dict[str, Any]:
    """``message.delivered`` or ``message.read``."""
    return {
        "event": name,
        "sessionId": session,
        "timestamp": iso(at),
        "data": {
            "message_id": message_id,
            "remote_jid": f"{to}@s.whatsapp.net",
            "timestamp": ms(at),
        },
    }


def received(
    frm: str,
    text: str,
    at: datetime = T0 + timedelta(minutes=5),
    *,
    session: str = "s1",
    kind: str = "text",
    data: dict[str, Any] | None = None,
    message_id: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """``messages.received`` from ``frm`` (a number or a JID)."""
    jid = frm if "@" in frm else f"{frm}@s.whatsapp.net"
    payload: dict[str, Any] = {
        "id": message_id or f"3A{abs(hash((frm, text, at))) % 10**16:016d}",
        "type": kind,
        "message": text,
        "timestamp": ms(at),
        "fromMe": False,
        "is_group": False,
        "group_name": "",
        "from": {"jid": jid, "name": "Cliente"},
        "from_name": "Cliente",
        "to": {"jid": OWN, "name": "Loja"},
        "media_url": None,
        **extra,
    }
    if data is not None:
        payload["data"] = data
    return {
        "event": "messages.received",
        "sessionId": session,
        "timestamp": iso(at),
        "data": payload,
    }


def sms(name: str, message_id: str, to: str, at: datetime = T0, **data: Any) -> dict[str, Any]:
    """An account webhook SMS report."""
    return {
        "event": name,
        "channel": "sms",
        "timestamp": iso(at),
        "data": {
            "messageId": message_id,
            "to": to,
            "status": name.split(".")[1],
            "errorCode": None,
            "segments": 1,
            "timestamp": iso(at),
            **data,
        },
    }


def voice(name: str, call_id: str, to: str, at: datetime = T0, **data: Any) -> dict[str, Any]:
    """An account webhook voice (URA) event."""
    return {
        "event": name,
        "channel": "voice",
        "timestamp": iso(at),
        "data": {
            "callId": call_id,
            "bulkCallId": None,
            "to": to,
            "answered": None,
            "talkSeconds": None,
            "digits": None,
            "cause": None,
            "causeDescription": None,
            "timestamp": iso(at),
            **data,
        },
    }
