"""The account behind SMS and voice: its wallet and its two account webhooks.

:class:`Wallet` pays for SMS (debited per message) and calls (reserved per call, settled
when it ends); :class:`AccountHooks` holds the webhook settings of the ``sms`` and ``voice``
channels and posts their events. Both are used by :mod:`scheduler.sandbox.sms` and
:mod:`scheduler.sandbox.voice`, bundled in :mod:`scheduler.sandbox.channels`.

Account events are posted in the envelope ``{event, channel, data, timestamp}`` with the
header ``X-DAPI-Webhook-Channel`` and, when the channel has a secret, ``X-DAPI-Signature``:
the hex HMAC-SHA256 of the exact bytes posted, keyed with the secret. They go through the
session webhooks' dispatcher (retries, duplicates, delays, reordering).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scheduler.sandbox.common import ApiError, iso_ms
from scheduler.service.account_models import AccountWebhookBody

if TYPE_CHECKING:
    from scheduler.sandbox.world_view import WorldView

#: Event names of each account webhook channel (the service's words on the wire).
ACCOUNT_EVENT_NAMES: dict[str, tuple[str, ...]] = {
    "sms": ("sms.delivered", "sms.undelivered", "sms.failed", "sms.expired"),
    "voice": ("call.started", "call.answered", "call.dtmf", "call.ended"),
}
CHANNELS = tuple(ACCOUNT_EVENT_NAMES)
CHANNEL_HEADER = "X-DAPI-Webhook-Channel"
SIGNATURE_HEADER = "X-DAPI-Signature"
INSUFFICIENT_BALANCE = "Insufficient balance"


def signature(secret: str, content: bytes) -> str:
    """The ``X-DAPI-Signature`` of ``content``: hex HMAC-SHA256 keyed with ``secret``."""
    return hmac.new(secret.encode("utf-8"), content, hashlib.sha256).hexdigest()


def insufficient_balance() -> ApiError:
    """402 ``Insufficient balance`` (ours: the service documents no answer for it)."""
    return ApiError(402, INSUFFICIENT_BALANCE)


class Wallet:
    """The account's balance in micro-reais (``None``: unlimited), with reservations."""

    def __init__(self, balance: int | None) -> None:
        self.balance = balance
        self.reserved = 0
        self.spent = 0

    def affordable(self, unit: int, count: int) -> int:
        """How many of ``count`` items of ``unit`` micro-reais each the balance pays for."""
        if self.balance is None or unit <= 0:
            return count
        return min(count, self.balance // unit)

    def debit(self, amount: int) -> bool:
        """Take ``amount`` (a sent SMS); False, and nothing taken, when it cannot pay."""
        if self.balance is not None:
            if self.balance < amount:
                return False
            self.balance -= amount
        self.spent += amount
        return True

    def reserve(self, amount: int) -> bool:
        """Hold ``amount`` for a call until it ends; False when it cannot pay."""
        if self.balance is not None:
            if self.balance < amount:
                return False
            self.balance -= amount
        self.reserved += amount
        return True

    def settle(self, reserved: int, cost: int) -> int:
        """A call ended: charge ``cost`` (at most what was reserved), give the rest back."""
        charged = min(cost, reserved)
        self.reserved -= reserved
        self.spent += charged
        if self.balance is not None:
            self.balance += reserved - charged
        return charged

    def top_up(self, amount: int) -> None:
        """Add ``amount`` to a limited balance (an unlimited one stays unlimited)."""
        if self.balance is not None:
            self.balance += amount

    def state(self) -> dict[str, Any]:
        """``GET /sandbox/wallet``."""
        return {
            "balanceMicroReais": self.balance,
            "unlimited": self.balance is None,
            "reservedMicroReais": self.reserved,
            "spentMicroReais": self.spent,
        }


@dataclass
class HookSettings:
    """One channel's account webhook: where, signed with what, which events, on or off."""

    url: str | None = None
    secret: str | None = None
    events: list[str] = field(default_factory=list)
    enabled: bool = True

    def public(self, channel: str) -> dict[str, Any]:
        """As ``GET /api/v1/account/webhooks`` lists it: never the secret itself."""
        return {
            "channel": channel,
            "url": self.url,
            "hasSecret": bool(self.secret),
            "events": list(self.events),
            "enabled": self.enabled,
        }

    def wants(self, event: str) -> bool:
        """Whether ``event`` is posted: a URL, enabled, and listed (an empty list: all)."""
        return bool(self.url) and self.enabled and (not self.events or event in self.events)


class AccountHooks:
    """The ``sms`` and ``voice`` account webhooks: settings and signed emission."""

    def __init__(self, sandbox: WorldView) -> None:
        self._sandbox = sandbox
        self.settings = {channel: HookSettings() for channel in CHANNELS}

    def listing(self) -> dict[str, Any]:
        """``GET /api/v1/account/webhooks``."""
        webhooks = [settings.public(channel) for channel, settings in self.settings.items()]
        return {"success": True, "webhooks": webhooks}

    def update(self, channel: str, body: AccountWebhookBody) -> dict[str, Any]:
        """``PUT /api/v1/account/webhooks/{channel}``: change the fields the body gives."""
        settings = self.settings.get(channel)
        if settings is None:
            raise ApiError(404, f"Unknown webhook channel: {channel} (use sms or voice)")
        given = body.model_fields_set
        if body.url is not None and not body.url.startswith(("http://", "https://")):
            raise ApiError(400, "Invalid request body: url: must be an http(s) URL")
        known = ACCOUNT_EVENT_NAMES[channel]
        unknown = [name for name in body.events or () if name not in known]
        if unknown:
            raise ApiError(
                400,
                f"Invalid request body: events: {', '.join(unknown)} not an event of channel "
                f"{channel} ({', '.join(known)})",
            )
        if "url" in given:
            settings.url = body.url or None
        if "secret" in given:
            settings.secret = body.secret or None
        if "events" in given:
            settings.events = list(dict.fromkeys(body.events or ()))
        if "enabled" in given and body.enabled is not None:
            settings.enabled = body.enabled
        return {"success": True, "config": settings.public(channel)}

    def emit(self, channel: str, event: str, data: dict[str, Any]) -> None:
        """Post ``event`` to the channel's URL, signed when it has a secret."""
        settings = self.settings[channel]
        if not settings.wants(event):
            return
        assert settings.url is not None
        sandbox = self._sandbox
        envelope = {
            "event": event,
            "channel": channel,
            "data": data,
            "timestamp": iso_ms(sandbox.now()),
        }
        content = json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode()
        headers = {CHANNEL_HEADER: channel}
        if settings.secret:
            headers[SIGNATURE_HEADER] = signature(settings.secret, content)
        about = data.get("messageId") or data.get("callId")
        sandbox.webhooks.post_raw(
            settings.url, content, event, channel=channel, headers=headers,
            message_id=str(about) if about else None,
        )
