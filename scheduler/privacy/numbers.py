"""A person's number as the campaign normalises it, and every format it may be written in."""

from __future__ import annotations

import phonenumbers
from phonenumbers import PhoneNumberFormat

from scheduler.campaign.phones import PhoneNormalizer
from scheduler.core.errors import SchedulerError


def normalise(raw: str, region: str = "BR") -> str:
    """The international digits of ``raw`` (any common format), as a campaign's plan stores
    them; a :class:`SchedulerError` naming the value when it is not a phone number."""
    found = PhoneNormalizer(region).normalize(raw.strip())
    if found.digits is None:
        raise SchedulerError(f"{raw!r} is not a phone number ({found.reason})")
    return found.digits


def formats(digits: str) -> list[str]:
    """The ways the number may be written, longest first: E.164, international and
    national with punctuation, the digits, the national number (with and without the
    trunk prefix)."""
    forms = {digits, "+" + digits}
    try:
        parsed = phonenumbers.parse("+" + digits)
    except phonenumbers.NumberParseException:
        parsed = None
    if parsed is not None:
        national = str(parsed.national_number)
        forms.update({
            national,
            phonenumbers.format_number(parsed, PhoneNumberFormat.INTERNATIONAL),
            phonenumbers.format_number(parsed, PhoneNumberFormat.NATIONAL),
            phonenumbers.format_number(parsed, PhoneNumberFormat.E164),
        })
        if len(national) > 8:  # "11 98765-4321" and "98765-4321" styles
            local = national[2:]
            forms.add(f"{national[:2]} {local[:-4]}-{local[-4:]}")
            forms.add(f"({national[:2]}) {local[:-4]}-{local[-4:]}")
            forms.add(f"{national[:2]}{local[:-4]}-{local[-4:]}")
    return sorted((f for f in forms if f), key=lambda f: (-len(f), f))
