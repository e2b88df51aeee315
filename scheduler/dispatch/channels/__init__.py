"""The channels the engine can send on; one module each (see ``scheduler.dispatch.channel``)."""

from __future__ import annotations

from scheduler.dispatch.channel import Channel
from scheduler.dispatch.channels.calls import CallsChannel
from scheduler.dispatch.channels.sms import SmsChannel
from scheduler.dispatch.channels.voice import VoiceChannel
from scheduler.dispatch.channels.whatsapp import WhatsAppChannel
from scheduler.dispatch.exceptions import DispatchError
from scheduler.dispatch.options import DispatchOptions
from scheduler.run_options import CHANNELS


def channel_for(name: str, options: DispatchOptions | None = None) -> Channel:
    """The channel of ``runs.channel`` ``name``, set up with a run's options (batch size,
    calls in progress, prices); a clear error for a channel this program does not know."""
    if name == "whatsapp":
        return WhatsAppChannel()
    if name == "sms":
        if options is None:
            return SmsChannel()
        return SmsChannel(batch_size=options.batch_size, bulk_max=options.bulk_max,
                          prices=dict(options.sms_price_micro))
    if name == "voice":
        if options is None:
            return VoiceChannel()
        limit = min(options.max_calls or options.voice_max_calls, options.voice_max_calls)
        return VoiceChannel(batch_size=options.batch_size, bulk_max=options.bulk_max,
                            max_calls=limit)
    if name == "calls":
        return CallsChannel(len(options.senders) if options is not None else 1)
    raise DispatchError(f"runs on channel {name!r} cannot be dispatched: this program "
                        f"sends on {', '.join(CHANNELS)}")


def channel_words(name: str) -> str:
    """The channel ``name`` in words ("SMS", "voice call"); the name itself when unknown."""
    known = {c.name: c.words for c in (WhatsAppChannel, SmsChannel, VoiceChannel, CallsChannel)}
    return known.get(name, name)


__all__ = ["CHANNELS", "channel_for", "channel_words"]
