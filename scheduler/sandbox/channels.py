"""The account-level channels of the sandbox (``sandbox.account``): wallet, account
webhooks, and the SMS and voice desks that decide each recipient's outcome."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler.sandbox.account import AccountHooks, Wallet
from scheduler.sandbox.sms import SmsDesk
from scheduler.sandbox.voice import VoiceDesk

if TYPE_CHECKING:
    from scheduler.sandbox.world_view import WorldView


class AccountChannels:
    """Wallet, account webhooks, SMS and voice: what is not tied to a session."""

    def __init__(self, sandbox: WorldView, seed: int | None) -> None:
        self.wallet = Wallet(sandbox.config.wallet_micro_reais)
        self.hooks = AccountHooks(sandbox)
        self.sms = SmsDesk(sandbox, self.wallet, self.hooks, seed)
        self.voice = VoiceDesk(sandbox, self.wallet, self.hooks, seed)

    def knobs_changed(self, update: dict[str, Any], balance: int | None) -> None:
        """``wallet_micro_reais`` set through ``/sandbox/faults`` sets the balance."""
        if "wallet_micro_reais" in update:
            self.wallet.balance = balance

    def outcomes(self, channel: str, since: int = 0) -> list[dict[str, Any]]:
        """What the sandbox decided per recipient of ``channel``, from index ``since``."""
        desk = self.sms if channel == self.sms.channel else self.voice
        return desk.outcomes[max(since, 0) :]
