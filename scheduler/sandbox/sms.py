"""SMS in the sandbox: segments, price, wallet, and each message's seeded outcome.

Every accepted message gets an outcome from the ``"{seed}:sms-outcomes"`` stream, drawn in
arrival order: ``undelivered`` (with an ``errorCode`` from ``sms_error_codes``), ``failed``
(likewise), ``expired`` or ``delivered``, by the ``sms_*_rate`` knobs (a number listed in
``sms_outcomes_by_number`` takes its next scripted outcome instead, no draw). Its ``sms.<outcome>``
event follows after ``sms_report_delay_ms``. Segments are counted here, independently of the
campaign's counter (GSM-7: 160 septets alone, 153 per part, extension characters take two;
anything else UCS-2: 70 / 67 UTF-16 units; a two-unit character is never split across
parts); the cost is segments x the route's ``sms_price_micro``, debited per message. A
wallet that cannot pay: a single send is 402, a bulk send marks the rest ``skipped``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler.sandbox.account import (
    INSUFFICIENT_BALANCE,
    AccountHooks,
    Wallet,
    insufficient_balance,
)
from scheduler.sandbox.common import iso_ms, seeded
from scheduler.sandbox.scripted import Script, scripted_sms
from scheduler.service.account_models import (
    SMS_BULK_PATH,
    SMS_SEND_PATH,
    SmsBulkBody,
    SmsRoute,
    SmsSendBody,
)

if TYPE_CHECKING:
    from scheduler.sandbox.world_view import WorldView

_GSM_BASIC = set(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
)
_GSM_ESCAPED = set("^{}\\[~]|€\f")
DEFAULT_ROUTE: SmsRoute = "marketing"


def _parts(widths: list[int], alone: int, per_part: int) -> int:
    """Parts needed for characters of ``widths`` units, none split across two parts."""
    if sum(widths) <= alone:
        return 1
    parts, room = 1, per_part
    for width in widths:
        if width > room:
            parts, room = parts + 1, per_part
        room -= width
    return parts


def segments(text: str) -> tuple[str, int]:
    """The encoding (``GSM-7`` or ``UCS-2``) and number of SMS parts of ``text``."""
    widths: list[int] = []
    for char in text:
        if char in _GSM_BASIC:
            widths.append(1)
        elif char in _GSM_ESCAPED:
            widths.append(2)
        else:
            units = [2 if ord(c) > 0xFFFF else 1 for c in text]
            return "UCS-2", _parts(units, 70, 67)
    return "GSM-7", _parts(widths, 160, 153)


class SmsDesk:
    """Accepts SMS, decides their outcomes, reports them on the ``sms`` account webhook."""

    #: The ``channel`` its events carry (and ``/sandbox/outcomes`` asks for).
    channel = "sms"

    def __init__(
        self, sandbox: WorldView, wallet: Wallet, hooks: AccountHooks, seed: int | None
    ) -> None:
        self._sandbox = sandbox
        self._wallet = wallet
        self._hooks = hooks
        self._outcomes = seeded(seed, "sms-outcomes")
        self._ids = seeded(seed, "sms-ids")
        self._delays = seeded(seed, "sms-report-delays")
        self._script = Script()
        #: One entry per recipient, in arrival order (``GET /sandbox/outcomes?channel=sms``).
        self.outcomes: list[dict[str, Any]] = []

    def price(self, text: str, route: SmsRoute | None) -> tuple[int, int]:
        """Segments of ``text`` and the cost of one message on ``route``, in micro-reais."""
        _, parts = segments(text)
        per_segment = self._sandbox.config.sms_price_micro[route or DEFAULT_ROUTE]
        return parts, parts * per_segment

    def send(self, body: SmsSendBody, received: dict[str, Any]) -> dict[str, Any]:
        """``POST /api/v1/sms/send``: one message, or 402 when the wallet cannot pay it."""
        parts, cost = self.price(body.text, body.route)
        if not self._wallet.debit(cost):
            raise insufficient_balance()
        message_id = self._accept(body.to, body.route, parts, cost, SMS_SEND_PATH)
        self._sandbox.world.record_send(
            path=SMS_SEND_PATH, session_id=None, to=body.to, body=received,
            message_id=message_id, at=self._sandbox.now(),
        )
        return {
            "success": True,
            "messageId": message_id,
            "gatewayMessageId": None,
            "segments": parts,
            "status": "sent",
            "costMicroReais": cost,
        }

    def bulk(self, body: SmsBulkBody, received: dict[str, Any]) -> dict[str, Any]:
        """``POST /api/v1/sms/bulk``: one text to each number; ``skipped`` once the wallet
        cannot pay (every later number too: they all cost the same)."""
        parts, cost = self.price(body.text, body.route)
        results: list[dict[str, Any]] = []
        paying = True
        for number in body.to:
            paying = paying and self._wallet.debit(cost)
            if paying:
                message_id = self._accept(number, body.route, parts, cost, SMS_BULK_PATH)
                results.append({"to": number, "messageId": message_id, "status": "sent"})
            else:
                self._skipped(number, body.route, parts)
                results.append({"to": number, "status": "skipped",
                                "error": INSUFFICIENT_BALANCE})
        sent = sum(1 for r in results if r["status"] == "sent")
        self._sandbox.world.record_send(
            path=SMS_BULK_PATH, session_id=None, to=list(body.to), body=received,
            message_id=None, at=self._sandbox.now(),
            messageIds=[r.get("messageId") for r in results],
        )
        return {
            "success": True,
            "sent": sent,
            "failed": 0,
            "skipped": len(results) - sent,
            "results": results,
        }

    # ------------------------------------------------------------------ outcomes

    def _draw(self, to: str) -> tuple[str, str | None]:
        cfg = self._sandbox.config
        scripted = self._script.next(cfg.sms_outcomes_by_number, to)
        if scripted is not None:
            return scripted_sms(scripted)
        draw = self._outcomes.random()
        for outcome, rate in (
            ("undelivered", cfg.sms_undelivered_rate),
            ("failed", cfg.sms_failed_rate),
            ("expired", cfg.sms_expired_rate),
        ):
            if draw < rate:
                coded = outcome != "expired"
                return outcome, self._outcomes.choice(cfg.sms_error_codes) if coded else None
            draw -= rate
        return "delivered", None

    def _accept(self, to: str, route: str | None, parts: int, cost: int, path: str) -> str:
        """Decide one message's outcome, log it and schedule its report; its id."""
        message_id = f"sms_{self._ids.getrandbits(64):016x}"
        outcome, error_code = self._draw(to)
        entry = {
            "index": len(self.outcomes),
            "path": path,
            "messageId": message_id,
            "to": to,
            "route": route or DEFAULT_ROUTE,
            "outcome": outcome,
            "errorCode": error_code,
            "segments": parts,
            "costMicroReais": cost,
            "reportedAt": None,
        }
        self.outcomes.append(entry)
        low, high = self._sandbox.config.sms_report_delay_ms
        delay = self._delays.uniform(low, high) / 1000 if high > 0 else 0.0
        self._sandbox.webhooks.call_later(delay, self._report, entry)
        return message_id

    def _skipped(self, to: str, route: str | None, parts: int) -> None:
        self.outcomes.append({
            "index": len(self.outcomes), "path": SMS_BULK_PATH, "messageId": None, "to": to,
            "route": route or DEFAULT_ROUTE, "outcome": "skipped", "errorCode": None,
            "segments": parts, "costMicroReais": 0, "reportedAt": None,
        })

    def _report(self, entry: dict[str, Any]) -> None:
        now = iso_ms(self._sandbox.now())
        entry["reportedAt"] = now
        outcome = entry["outcome"]
        self._hooks.emit(self.channel, f"sms.{outcome}", {
            "messageId": entry["messageId"],
            "to": entry["to"],
            "status": outcome,
            "errorCode": entry["errorCode"],
            "segments": entry["segments"],
            "timestamp": now,
        })

