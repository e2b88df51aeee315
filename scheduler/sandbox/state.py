"""The in-memory world of the sandbox: sessions, the log of accepted sends, plan usage."""

from __future__ import annotations

import base64
import io
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from scheduler.sandbox.common import iso_ms, seeded

COUNTERS = ("messages", "sms", "voice")

_FIRST_NAMES = (
    "Ana",
    "Bruno",
    "Carla",
    "Diego",
    "Elisa",
    "Fábio",
    "Gabriela",
    "Heitor",
    "Isabela",
    "João",
    "Karina",
    "Lucas",
    "Mariana",
    "Nuno",
    "Olívia",
    "Paulo",
    "Quésia",
    "Rafael",
    "Sofia",
    "Tiago",
    "Úrsula",
    "Vitor",
    "Wesley",
    "Yara",
)
_LAST_NAMES = (
    "Silva",
    "Souza",
    "Oliveira",
    "Santos",
    "Lima",
    "Pereira",
    "Costa",
    "Almeida",
    "Ferreira",
    "Rodrigues",
    "Gomes",
    "Martins",
)


def person_name(number: str) -> str:
    """The stable display name of the simulated person behind ``number``."""
    value = int(number) if number.isdigit() else sum(map(ord, number))
    first = _FIRST_NAMES[value % len(_FIRST_NAMES)]
    last = _LAST_NAMES[(value // len(_FIRST_NAMES)) % len(_LAST_NAMES)]
    return f"{first} {last}"


def qr_payload(seed: int | None, session_id: str, generation: int) -> str:
    """A pairing payload in the network's ``ref,noiseKey,identityKey,advSecret`` style."""
    rng = seeded(seed, f"qr:{session_id}:{generation}")

    def b64(size: int) -> str:
        return base64.b64encode(rng.randbytes(size)).decode()

    return f"2@{b64(48)},{b64(32)},{b64(32)},{b64(32)}"


def qr_png(payload: str) -> bytes:
    """A PNG image of the QR code of ``payload``."""
    import segno  # here: ``campaign senders`` reads this module's counters (issue 32)

    buffer = io.BytesIO()
    segno.make_qr(payload, error="m").save(buffer, kind="png", scale=6, border=4)
    return buffer.getvalue()


@dataclass(slots=True)
class Session:
    """One emulated session (a connected messaging-network number)."""

    session_id: str
    phone: str
    created_at: datetime
    status: str = "connecting"
    provider: str = "whatsmeow"
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    webhook_url: str | None = None
    webhook_config: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    reject_calls: bool = False
    reject_calls_message: str | None = None
    mark_previous_as_read: bool = False
    qr_code: str = ""
    qr_generation: int = 0
    qr_updated_at: datetime | None = None
    updated_at: datetime | None = None
    usage_day: date | None = None
    used: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    #: Time of the last session status event: the next one is later, even within a ms.
    status_event_at: datetime | None = None
    _png: bytes | None = None

    @property
    def name(self) -> str:
        """The push name of the session's own number."""
        return f"Sandbox {self.session_id}"

    @property
    def jid(self) -> str:
        """The session's own phone-number JID."""
        return f"{self.phone}@s.whatsapp.net"

    def new_qr(self, seed: int | None, now: datetime) -> None:
        """Issue a fresh QR payload (at creation and after a disconnect)."""
        self.qr_generation += 1
        self.qr_code = qr_payload(seed, self.session_id, self.qr_generation)
        self.qr_updated_at = now
        self._png = None

    def png(self) -> bytes:
        """The PNG of the current QR code (made once per payload)."""
        if self._png is None:
            self._png = qr_png(self.qr_code)
        return self._png

    def qr_data_url(self) -> str:
        """The current QR code as a ``data:image/png;base64,`` URL."""
        return "data:image/png;base64," + base64.b64encode(self.png()).decode()

    def record(self) -> dict[str, Any]:
        """The session record, as ``docs/service-facts.md`` lists its fields."""
        record: dict[str, Any] = {
            "id": self.id,
            "sessionId": self.session_id,
            "status": self.status,
            "provider": self.provider,
        }
        if self.webhook_url:
            record["webhookUrl"] = self.webhook_url
        if self.status == "connected":
            record["phone"] = self.phone
            record["name"] = self.name
        elif self.qr_code:
            record["qrCode"] = self.qr_code
            record["qrCodeImage"] = self.qr_data_url()
        if self.qr_updated_at is not None:
            record["qrCodeUpdatedAt"] = iso_ms(self.qr_updated_at)
        record["createdAt"] = iso_ms(self.created_at)
        record["updatedAt"] = iso_ms(self.updated_at or self.created_at)
        return record


@dataclass(slots=True)
class SentRef:
    """What the sandbox remembers of one accepted message (for reactions and poll votes)."""

    session_id: str
    to: str
    kind: str
    event_id: str


def next_midnight(now: datetime) -> datetime:
    """The start of the next UTC day after ``now`` (when daily usage resets)."""
    start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return start + timedelta(days=1)


@dataclass
class World:
    """Everything the sandbox holds in memory; appended to, never scanned on the hot path."""

    sessions: dict[str, Session] = field(default_factory=dict)
    sends: list[dict[str, Any]] = field(default_factory=list)
    messages: dict[str, SentRef] = field(default_factory=dict)
    media: dict[str, str] = field(default_factory=dict)
    commands: dict[str, dict[str, Any]] = field(default_factory=dict)

    def record_send(
        self,
        *,
        path: str,
        session_id: str | None,
        to: str | list[str] | None,
        body: dict[str, Any],
        message_id: str | None,
        at: datetime,
        **ids: Any,
    ) -> dict[str, Any]:
        """Append one accepted request to the sends log and return its entry; SMS and
        voice requests have no session and may add ids (``messageIds``, ``bulkId``...)."""
        entry = {
            "index": len(self.sends),
            "path": path,
            "sessionId": session_id,
            "to": to,
            "body": body,
            "messageId": message_id,
            "at": iso_ms(at),
            **ids,
        }
        self.sends.append(entry)
        return entry

    def sends_since(self, since: int = 0, session_id: str | None = None) -> list[dict[str, Any]]:
        """The sends log from index ``since`` on, optionally of one session."""
        tail = self.sends[max(since, 0) :]
        if session_id is None:
            return tail
        return [entry for entry in tail if entry["sessionId"] == session_id]


def roll_usage(session: Session, now: datetime) -> None:
    """Start a new usage day when the sandbox clock has passed midnight (UTC)."""
    today = now.astimezone(UTC).date()
    if session.usage_day != today:
        session.usage_day = today
        session.used = dict.fromkeys(COUNTERS, 0)
