"""The channels the engine can send on; one module each (see ``scheduler.dispatch.channel``)."""

from __future__ import annotations

from scheduler.dispatch.channel import Channel
from scheduler.dispatch.channels.calls import CallsChannel
from scheduler.dispatch.channels.sms import SmsChannel
from scheduler.dispatch.channels.voice import VoiceChannel
from scheduler.dispatch.channels.whatsapp import WhatsAppChannel
from scheduler.dispatch.exceptions import DispatchError
from scheduler.dispatch.options import DispatchOptions
from scheduler.settings.run import CHANNELS


def channel_for(name: str, options: DispatchOptions | None = None) -> Channel:
    """The channel of ``runs.channel`` ``name``, set up with a run's options (batch size,
    calls in progress, prices); a clear error for a channel this program does not know."""
    if name == "whatsapp":
        return WhatsAppChannel()
    if name == "sms":
        if options is None:
            return SmsChannel()
        return SmsChannel(batch_size=options.batch_size, bulk_max=options.engine.bulk_max,
                          prices=dict(options.engine.sms_price_micro))
    if name == "voice":
        if options is None:
            return VoiceChannel()
        most = options.engine.voice_max_calls
        limit = min(options.max_calls or most, most)
        return VoiceChannel(batch_size=options.batch_size, bulk_max=options.engine.bulk_max,
                            max_calls=limit)
    if name == "calls":
        return CallsChannel(len(options.senders) if options is not None else 1)
    raise DispatchError(f"runs on channel {name!r} cannot be dispatched: this program "
                        f"sends on {', '.join(CHANNELS)}")


#: The channel of the per-session webhook's events (WhatsApp's messages, receipts, calls).
SESSION_CHANNEL = WhatsAppChannel.name
#: Each channel as it is without a run's options: what it says of itself (its words, its
#: events, its rules), looked up by name (:func:`known_channel`).
_KNOWN: dict[str, Channel] = {
    c.name: c for c in (WhatsAppChannel(), SmsChannel(), VoiceChannel(), CallsChannel())}


def known_channel(name: object) -> Channel | None:
    """The channel of ``runs.channel`` (or of an event's ``channel``) ``name``, without a
    run's options; None for a name this program does not send on."""
    return _KNOWN.get(name) if isinstance(name, str) else None


def channel_words(name: str) -> str:
    """The channel ``name`` in words ("SMS", "voice call"); the name itself when unknown."""
    channel = known_channel(name)
    return channel.words if channel is not None else name


def channel_unit(name: str) -> str:
    """What one delivery of channel ``name`` is counted as ("calls"); "messages" when unknown."""
    channel = known_channel(name)
    return channel.unit if channel is not None else "messages"


def from_account(name: str) -> bool:
    """Whether runs of channel ``name`` send from the account, their events coming to an
    account webhook (SMS, voice): no session to check or point."""
    channel = known_channel(name)
    return channel is not None and channel.account_webhook is not None


def from_sessions(name: str) -> bool:
    """Whether runs of channel ``name`` send from WhatsApp sessions (their senders are
    sessions to check; WhatsApp messages and calls)."""
    channel = known_channel(name)
    return channel is not None and channel.events_name_session


def has_outcomes(name: str) -> bool:
    """Whether runs of channel ``name`` have outcomes of their own, which come after the
    send and are worth waiting for: SMS delivery reports, calls that end."""
    channel = known_channel(name)
    return channel is not None and (channel.error_codes or channel.has_calls)


def places_session_calls(name: str) -> bool:
    """Whether runs of channel ``name`` place calls from WhatsApp sessions (their senders
    must be able to call)."""
    channel = known_channel(name)
    return channel is not None and channel.has_calls and channel.events_name_session


def proof_events() -> tuple[str, ...]:
    """Every event that proves a send of its channel (sorted)."""
    return tuple(sorted({name for c in _KNOWN.values() for name in c.proof_events}))


def progress_events() -> tuple[str, ...]:
    """Every event that moves the delivery holding its message id (sorted)."""
    return tuple(sorted({name for c in _KNOWN.values() for name in c.progress}))


__all__ = ["CHANNELS", "SESSION_CHANNEL", "channel_for", "channel_unit", "channel_words",
           "from_account", "from_sessions", "has_outcomes", "known_channel", "places_session_calls",
           "progress_events", "proof_events"]
