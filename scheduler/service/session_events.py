"""Session status events: ``connection.status``, ``connection.qrcode``, ``connection.paircode``.

``docs/service-facts.md`` gives the status values (``connecting``, ``connected``,
``disconnected``, ``qr_ready``, ``pair_code_ready``; a logged-out session reports
``logged_out`` in its status event) but neither interface document shows the payloads.
What is **ours** (the sandbox sends exactly this, the client accepts more):

- ``connection.status`` ``data``: ``status`` (one of :data:`SESSION_STATUSES`; an unknown
  value is kept as it is, never refused), ``phone`` (the session's number, once connected),
  ``reason`` (why it changed, in words: ``scanned``, ``phone disconnected``, ``logged out``).
- ``connection.qrcode`` ``data``: ``qrCode``, ``qrCodeImage`` and ``qrCodeUpdatedAt``, the
  field names of the session record and of ``GET /sessions/{id}/qr``.
- ``connection.paircode`` ``data``: ``pairCode`` (8 characters of A-Z and 0-9, shown as
  ``ABCD-EFGH``) and ``phone`` (the number it pairs, the session's ``pairPhone``).

The envelope is the per-session one of every other session event.
"""

from __future__ import annotations

from pydantic import Field

from scheduler.service.event_data import EventModel

#: The status values a session reports (``logged_out`` only in status events).
SESSION_STATUSES = (
    "connecting", "connected", "disconnected", "qr_ready", "pair_code_ready", "logged_out",
)
#: Names of the session status events.
STATUS_EVENT = "connection.status"
QRCODE_EVENT = "connection.qrcode"
PAIRCODE_EVENT = "connection.paircode"


class ConnectionStatus(EventModel):
    """``data`` of ``connection.status``: the session's new status (ours, not shown)."""

    status: str = Field(min_length=1)
    phone: str | None = None
    reason: str | None = None

    @property
    def connected(self) -> bool:
        """Whether the session can send now."""
        return self.status == "connected"

    @property
    def known(self) -> bool:
        """Whether the status is one of the documented values."""
        return self.status in SESSION_STATUSES


class ConnectionQrCode(EventModel):
    """``data`` of ``connection.qrcode``: a fresh QR code to scan (ours, not shown)."""

    qrCode: str = Field(min_length=1)
    qrCodeImage: str | None = None
    qrCodeUpdatedAt: str | None = None


class ConnectionPairCode(EventModel):
    """``data`` of ``connection.paircode``: the code to type on the phone (ours, not shown)."""

    pairCode: str = Field(min_length=1)
    phone: str | None = None
