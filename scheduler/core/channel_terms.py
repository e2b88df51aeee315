"""What each channel is called and counted as: the one table of a channel's words.

The channels' behaviour lives in :mod:`scheduler.dispatch.channels`; their words live
here, below every package, so that the campaign file's checks, the plan's text, the
ledger's funnels, the views and the reports say a channel the same way without
comparing its name. A channel module takes its ``words`` and ``unit`` from this table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ChannelTerms:
    """A channel's words and the few facts the words depend on."""

    #: ``runs.channel``.
    name: str
    #: The channel in words, as a sentence says it ("the SMS fallback").
    words: str
    #: The channel as a table's column or a fallback's line names it ("WhatsApp calls").
    title: str
    #: What one delivery is counted as in a funnel ("messages", "calls").
    unit: str
    #: What its first attempts are called on an attempts line ("SMS", "calls").
    noun: str
    #: What "reached" means on it: "answered" for calls, "delivered" for messages.
    reached: str
    #: How a recipient is reached on it ("by SMS", "on WhatsApp").
    reach: str
    #: Whether its runs send from WhatsApp sessions (their senders are sessions).
    sessions: bool
    #: Whether its deliveries are calls (they are answered or not, ring, last).
    calls: bool
    #: Whether its reports say why a send was not delivered, with an error code (SMS).
    error_codes: bool
    #: Whether its reports tell a call's cause, the keys pressed and the talk time (voice).
    keys: bool
    #: Whether several recipients share one request (SMS and voice's bulk endpoints).
    bulk: bool
    #: Whether each step's kind has an endpoint of its own, one message a request
    #: (WhatsApp's messages; the plan shows each step's endpoint and no bulk totals).
    step_endpoints: bool
    #: Whether its sends are counted and priced by segment (SMS).
    segments: bool
    #: The line types it reaches when the campaign does not say (``line_types``).
    line_types: tuple[str, ...]
    #: Why a number of another line type does not suit a campaign on it.
    line_needs: str
    #: Why it does not suit a fallback on it.
    fallback_line_needs: str
    #: Whether its sends have read receipts (a fallback may go when ``not_read``).
    read_receipts: bool
    #: Whether its calls have a length (a step's ``min_talk``).
    call_length: bool
    #: The outcomes its steps' retry rules may react to (``retry.on``).
    retry_on: tuple[str, ...]
    #: The channel a campaign on it may fall back to, as an error message suggests it.
    fallback_hint: str
    #: The ``type`` names its steps may give (none: WhatsApp's steps each name their kind).
    step_types: tuple[str, ...]
    #: Its step in words, as the campaign file's errors say it ("an SMS step").
    a_step: str
    #: Its name in the campaign file's JSON Schema's definitions (``SmsStep``).
    schema_name: str
    #: Its funnel, in order: (label, count key); the first is planned, the second sent.
    funnel: tuple[tuple[str, str], ...]


#: Every channel this program sends on, WhatsApp (the default) first.
ALL = (
    ChannelTerms(name="whatsapp", words="WhatsApp", title="WhatsApp", unit="messages",
                 noun="messages", reached="delivered", reach="on WhatsApp", sessions=True,
                 calls=False, error_codes=False, keys=False, bulk=False, step_endpoints=True,
                 segments=False, line_types=("mobile",),
                 line_needs="WhatsApp and SMS need a mobile number",
                 fallback_line_needs="WhatsApp needs a mobile number",
                 read_receipts=True, call_length=False, retry_on=(), fallback_hint="sms",
                 step_types=(), schema_name="WhatsApp",
                 a_step="a WhatsApp step",
                 funnel=(("Planned", "planned"), ("Sent", "sent"), ("Delivered", "delivered"),
                         ("Read", "read"), ("Replied", "replied"))),
    ChannelTerms(name="sms", words="SMS", title="SMS", unit="messages", noun="SMS",
                 reached="delivered", reach="by SMS", sessions=False, calls=False,
                 error_codes=True, keys=False, bulk=True,
                 step_endpoints=False, segments=True, line_types=("mobile",),
                 line_needs="WhatsApp and SMS need a mobile number",
                 fallback_line_needs="SMS needs a mobile number",
                 read_receipts=False, call_length=False, retry_on=("undelivered",),
                 fallback_hint="voice", step_types=("sms", "text"), schema_name="Sms",
                 a_step="an SMS step",
                 funnel=(("Planned", "planned"), ("Sent", "sent"), ("Delivered", "delivered"),
                         ("Undelivered", "undelivered"))),
    ChannelTerms(name="voice", words="voice call", title="voice", unit="calls", noun="calls",
                 reached="answered", reach="by a call", sessions=False, calls=True,
                 error_codes=False, keys=True, bulk=True,
                 step_endpoints=False, segments=False, line_types=("mobile", "fixed_line"),
                 line_needs="calls need a mobile or landline number",
                 fallback_line_needs="calls need a mobile or landline number",
                 read_receipts=False, call_length=True, retry_on=("no_answer", "busy", "failed"),
                 fallback_hint="sms", step_types=("voice", "call"), schema_name="Voice",
                 a_step="a voice step",
                 funnel=(("Planned", "planned"), ("Dialed", "sent"), ("Answered", "answered"),
                         ("Pressed a key", "digits"))),
    ChannelTerms(name="calls", words="WhatsApp call", title="WhatsApp calls", unit="calls",
                 noun="calls", reached="answered", reach="by a WhatsApp call", sessions=True,
                 calls=True, error_codes=False, keys=False, bulk=False, step_endpoints=False,
                 segments=False, line_types=("mobile",),
                 line_needs="WhatsApp calls need a mobile number",
                 fallback_line_needs="WhatsApp calls need a mobile number",
                 read_receipts=False, call_length=False, retry_on=("not_answered",),
                 fallback_hint="sms", step_types=("call",), schema_name="Calls",
                 a_step="a calls step",
                 funnel=(("Planned", "planned"), ("Called", "sent"), ("Answered", "answered"))),
)
_BY_NAME = {t.name: t for t in ALL}
#: The terms of a name this program does not send on: WhatsApp's (the default channel).
DEFAULT = ALL[0]


def terms_of(name: object) -> ChannelTerms:
    """The terms of channel ``name``; WhatsApp's (the default channel) for any other."""
    return _BY_NAME.get(name, DEFAULT) if isinstance(name, str) else DEFAULT


def is_known(name: object) -> bool:
    """Whether ``name`` is a channel this program sends on."""
    return isinstance(name, str) and name in _BY_NAME


def title_of(name: str) -> str:
    """Channel ``name`` as a table names it; the name itself when unknown."""
    return _BY_NAME[name].title if name in _BY_NAME else name
