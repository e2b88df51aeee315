"""Which kinds of number (line types) a channel can reach, and why a number is skipped.

libphonenumber knows each valid number's line type (``phonenumbers.number_type``): a
mobile, a landline, a toll-free number… WhatsApp and SMS reach mobiles only; a voice call
also reaches landlines. A campaign accepts the types its channel reaches, or those listed in
``[recipients] line_types``; a number of another type is skipped with a reason a person
understands (``"landline: WhatsApp and SMS need a mobile number"``). The part before the
colon is the reason's category (reports group skipped deliveries by it), so it stays short
and stable.

``fixed_line_or_mobile`` (regions whose mobiles and landlines share their numbers, such as
the United States) is reachable whenever ``mobile`` or ``fixed_line`` is accepted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import phonenumbers
from phonenumbers import PhoneNumberType

from scheduler.core.channel_terms import terms_of

#: The names a campaign may list in ``[recipients] line_types``.
LineTypeName = Literal[
    "mobile",
    "fixed_line",
    "toll_free",
    "premium_rate",
    "shared_cost",
    "voip",
    "personal_number",
    "pager",
    "uan",
    "voicemail",
]
#: phonenumbers' type → our name.
TYPE_NAMES: dict[int, str] = {
    PhoneNumberType.MOBILE: "mobile",
    PhoneNumberType.FIXED_LINE: "fixed_line",
    PhoneNumberType.FIXED_LINE_OR_MOBILE: "fixed_line_or_mobile",
    PhoneNumberType.TOLL_FREE: "toll_free",
    PhoneNumberType.PREMIUM_RATE: "premium_rate",
    PhoneNumberType.SHARED_COST: "shared_cost",
    PhoneNumberType.VOIP: "voip",
    PhoneNumberType.PERSONAL_NUMBER: "personal_number",
    PhoneNumberType.PAGER: "pager",
    PhoneNumberType.UAN: "uan",
    PhoneNumberType.VOICEMAIL: "voicemail",
}
#: Our name → what a person calls it (the category of a skip reason).
LABELS: dict[str, str] = {
    "mobile": "mobile",
    "fixed_line": "landline",
    "fixed_line_or_mobile": "landline or mobile",
    "toll_free": "toll-free number",
    "premium_rate": "premium-rate number",
    "shared_cost": "shared-cost number",
    "voip": "VoIP number",
    "personal_number": "personal number",
    "pager": "pager",
    "uan": "company number (UAN)",
    "voicemail": "voicemail number",
    "unknown": "unknown line type",
}


def type_name(number: phonenumbers.PhoneNumber) -> str:
    """Our name of a parsed number's line type (``"unknown"`` when phonenumbers has none)."""
    return TYPE_NAMES.get(phonenumbers.number_type(number), "unknown")


class LinePolicy:
    """The line types one campaign accepts, and the reason for every other type."""

    def __init__(self, channel: str, configured: Sequence[str] | None = None) -> None:
        self.channel = channel
        self.configured = configured is not None
        names = tuple(configured) if configured is not None else terms_of(channel).line_types
        accepted = set(names)
        if accepted & {"mobile", "fixed_line"}:
            accepted.add("fixed_line_or_mobile")
        self.accepted = frozenset(accepted)
        self.names = names

    def reason(self, line_type: str | None) -> str | None:
        """``None`` when a number of ``line_type`` is reachable, else why it is skipped."""
        if line_type is None or line_type in self.accepted:
            return None
        label = LABELS.get(line_type, line_type)
        if self.configured:
            allowed = ", ".join(LABELS[n] for n in self.names) or "nothing"
            return f"{label}: recipients.line_types accepts {allowed}"
        return f"{label}: {terms_of(self.channel).line_needs}"
