"""The channels the engine can send on; one module each (see ``scheduler.dispatch.channel``)."""

from __future__ import annotations

from scheduler.dispatch.channel import Channel
from scheduler.dispatch.channels.whatsapp import WhatsAppChannel
from scheduler.dispatch.exceptions import DispatchError

_CHANNELS: dict[str, Channel] = {"whatsapp": WhatsAppChannel()}


def channel_for(name: str) -> Channel:
    """The channel of ``runs.channel`` ``name``, or a clear error for one not built yet."""
    try:
        return _CHANNELS[name]
    except KeyError:
        raise DispatchError(f"dispatching {name} runs is not available yet; "
                            "`campaign plan` estimates them") from None


__all__ = ["channel_for"]
