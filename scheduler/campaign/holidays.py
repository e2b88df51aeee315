"""Holidays kept off the send window: ``[schedule] holidays = "BR"``, ``"BR-SP"`` or
``"recipient"``.

A :class:`HolidayCalendar` names the holiday of a local date (``"Natal"``), read from the
maintained ``holidays`` package in the country's own language; on such a day the whole day
is outside the send window (:class:`scheduler.dispatch.windows.SendWindow`). ``"recipient"``
(voice and SMS) reads each recipient's state from the number's area code
(:mod:`scheduler.campaign.area_codes`): the national holidays close the run for everyone,
the state's close it for that state's numbers only. Pure: no clock is read here; the
package is imported when a calendar is first asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import Annotated

from pydantic import AfterValidator

#: The value that means "the recipient's own state".
RECIPIENT = "recipient"
#: The country whose states ``"recipient"`` reads from the area code.
RECIPIENT_COUNTRY = "BR"


class HolidayCodeError(ValueError):
    """An unknown holiday code (country or state)."""


def _split(code: str) -> tuple[str, str | None]:
    country, _, subdiv = code.strip().partition("-")
    return country.upper(), (subdiv.upper() or None) if subdiv else None


def check_code(code: str) -> str:
    """``code`` normalised (``"br-sp"`` -> ``"BR-SP"``, ``"recipient"``), or
    :class:`HolidayCodeError` saying what is accepted."""
    text = code.strip()
    if text.lower() == RECIPIENT:
        return RECIPIENT
    import holidays

    country, subdiv = _split(text)
    supported = holidays.list_supported_countries()
    if country not in supported:
        raise HolidayCodeError(
            f"unknown holiday code {code!r}: use a country (\"BR\"), a country and state "
            f"(\"BR-SP\") or \"recipient\"")
    if subdiv is not None and subdiv not in supported[country]:
        states = ", ".join(s for s in supported[country] if s.isascii() and " " not in s)
        raise HolidayCodeError(
            f"unknown holiday code {code!r}: {country} has no state {subdiv!r} "
            f"(its states: {states})")
    return country if subdiv is None else f"{country}-{subdiv}"


#: ``[schedule] holidays`` in a definition: checked and normalised.
HolidayCode = Annotated[str, AfterValidator(check_code)]
HOLIDAYS_HELP = (
    'Holidays kept off the send window, the whole local day: a country ("BR"), a state '
    '("BR-SP"), or for SMS and voice "recipient" (each number\'s own state from its area '
    "code, the national holidays for everyone).")


def holidays_problem(code: str | None, channel: str) -> tuple[str, str] | None:
    """(key, message) when ``"recipient"`` is asked of a channel that sends from sessions
    (its numbers' states are an SMS or voice campaign's); ``None`` when it fits."""
    from scheduler.core.channel_terms import terms_of

    if code != RECIPIENT or not terms_of(channel).sessions:
        return None
    return "schedule.holidays", ('"recipient" reads the state from an SMS or voice number\'s '
                                 'area code; name a country or state ("BR", "BR-SP")')


@lru_cache(maxsize=512)
def _year(code: str, year: int) -> dict[date, str]:
    import holidays

    country, subdiv = _split(code)
    entity = holidays.country_holidays(country, subdiv=subdiv, years=year)
    # the country's own language ("Natal"), else the package's default
    if entity.default_language:
        entity = holidays.country_holidays(country, subdiv=subdiv, years=year,
                                           language=entity.default_language)
    return {day: name.split("; ")[0] for day, name in entity.items()}


@dataclass(frozen=True)
class HolidayCalendar:
    """The holidays of a country (``"BR"``) or one of its states (``"BR-SP"``)."""

    code: str

    def name_on(self, day: date) -> str | None:
        """The holiday on local ``day`` (its name), or ``None`` on a working day."""
        return _year(self.code, day.year).get(day)


def calendar_for(code: str | None) -> HolidayCalendar | None:
    """The run-wide calendar of a ``holidays`` setting: ``"recipient"`` closes the run on
    the national holidays (each state's own close per recipient: :func:`recipient_calendar`)."""
    if not code:
        return None
    if code == RECIPIENT:
        return HolidayCalendar(RECIPIENT_COUNTRY)
    return HolidayCalendar(code)


@lru_cache(maxsize=65536)
def recipient_calendar(number: str) -> HolidayCalendar | None:
    """The calendar of a recipient's own state (from the area code), ``None`` when the
    number has no known Brazilian state."""
    from scheduler.campaign.area_codes import state_of

    state = state_of(number)
    return None if state is None else HolidayCalendar(f"{RECIPIENT_COUNTRY}-{state}")
