"""The sandbox's session status events: what a session says when its connection changes.

``connection.status`` on create (``qr_ready`` or ``pair_code_ready``; ``connected`` with
``auto_connect``), scan (``connected``), disconnect (``disconnected``) and logout
(``logged_out``); ``connection.qrcode`` whenever a new QR code is issued;
``connection.paircode`` when a session is created with ``connectionMode: "pair"``. The
payloads are ours (see :mod:`scheduler.service.session_events`). ``session_status_events``
false (the quiet test sandbox) sends none of them.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from scheduler.sandbox.common import iso_ms, seeded
from scheduler.sandbox.state import Session
from scheduler.service.session_events import PAIRCODE_EVENT, QRCODE_EVENT, STATUS_EVENT

if TYPE_CHECKING:
    from datetime import datetime

    from scheduler.sandbox.world_view import WorldView

_PAIR_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
_MS = timedelta(milliseconds=1)


def pair_code(seed: int | None, session_id: str) -> str:
    """The stable 8-character pairing code of a session, shown as ``ABCD-EFGH``."""
    rng = seeded(seed, f"pair:{session_id}")
    code = "".join(rng.choice(_PAIR_ALPHABET) for _ in range(8))
    return f"{code[:4]}-{code[4:]}"


def _stamp(sandbox: WorldView, session: Session) -> datetime:
    """Now, or 1 ms after the session's previous status event: events time-stamped in
    milliseconds (create and scan may fall in the same one) stay in order for a receiver
    that orders them by time, whatever order the webhook delivers them in."""
    at = sandbox.now()
    last = session.status_event_at
    if last is not None and at <= last + _MS:
        at = last + _MS
    session.status_event_at = at
    return at


def announce_status(sandbox: WorldView, session: Session, status: str, reason: str) -> None:
    """Post ``connection.status`` with ``status`` (and the phone once connected)."""
    if not sandbox.config.session_status_events:
        return
    data: dict[str, str] = {"status": status, "reason": reason}
    if status == "connected":
        data["phone"] = session.phone
    sandbox.emit(session, STATUS_EVENT, data, _stamp(sandbox, session))


def announce_qr(sandbox: WorldView, session: Session) -> None:
    """Post ``connection.qrcode`` with the session's current QR code."""
    if not sandbox.config.session_status_events or not session.qr_code:
        return
    data = {"qrCode": session.qr_code, "qrCodeImage": session.qr_data_url()}
    if session.qr_updated_at is not None:
        data["qrCodeUpdatedAt"] = iso_ms(session.qr_updated_at)
    sandbox.emit(session, QRCODE_EVENT, data)


def announce_created(sandbox: WorldView, session: Session, pair_phone: str | None) -> None:
    """A new session: connected at once, or waiting for its QR code or its pairing code."""
    if session.status == "connected":
        announce_status(sandbox, session, "connected", "created connected (auto_connect)")
    elif session.status == "pair_code_ready":
        announce_status(sandbox, session, "pair_code_ready", "created in pair mode")
        if sandbox.config.session_status_events:
            data = {"pairCode": pair_code(sandbox.config.seed, session.session_id)}
            if pair_phone:
                data["phone"] = pair_phone
            sandbox.emit(session, PAIRCODE_EVENT, data)
    else:
        announce_status(sandbox, session, "qr_ready", "created: scan the QR code")
        announce_qr(sandbox, session)
