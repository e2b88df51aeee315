"""Jinja2 filters for Brazilian campaigns: money, numbers, dates, names, phones.

Values from a CSV are strings; every filter accepts a string (or a number/date) and raises
``ValueError`` with a readable message when it cannot make sense of it. Registered in the
sandboxed environment by :mod:`scheduler.campaign.rendering`.

- ``{{ valor|brl }}`` → ``R$ 1.234,56`` (``"1234.56"``, ``"1.234,56"``, ``"1234,5"`` all work;
  a single dot followed by exactly three digits is read as a thousands separator, as in Brazil)
- ``{{ valor|number_br(0) }}`` → ``1.235``; ``{{ valor|amount }}`` → ``1234.56`` (for numbers)
- ``{{ vencimento|date_br }}`` → ``10/03/2025``; ``date_br("%d de %B de %Y")`` →
  ``10 de março de 2025`` (``%B %b %A %a`` in Portuguese); input ISO or ``dd/mm/yyyy``
- ``{{ nome|first_name }}`` → ``Maria`` from ``"MARIA DA SILVA"``
- ``{{ nome|name_case }}`` → ``Maria da Silva``
- ``{{ to|phone_br }}`` → ``(11) 98765-4321`` from ``5511987654321``
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

MONTHS = (
    "janeiro",
    "fevereiro",
    "março",
    "abril",
    "maio",
    "junho",
    "julho",
    "agosto",
    "setembro",
    "outubro",
    "novembro",
    "dezembro",
)
WEEKDAYS = (
    "segunda-feira",
    "terça-feira",
    "quarta-feira",
    "quinta-feira",
    "sexta-feira",
    "sábado",
    "domingo",
)
_PARTICLES = frozenset({"da", "das", "de", "do", "dos", "e", "di", "du", "del"})
_THOUSANDS_ONLY = re.compile(r"^-?\d{1,3}(\.\d{3})+$")
_PLAIN_AMOUNT = re.compile(r"^(-?)(\d{1,15})(?:[.,](\d{1,2}))?$")  # 1234 / 1234,5 / 12.34
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_BR_DATE = re.compile(r"^(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})")


def to_decimal(value: Any) -> Decimal:
    """A Decimal from a number or a Brazilian/English formatted string."""
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Decimal(str(value))
    text = str(value).strip().replace("R$", "").replace("\u00a0", "").replace(" ", "")
    if "," in text and "." in text:
        if text.rfind(",") > text.rfind("."):
            text = text.replace(".", "").replace(",", ".")
        else:
            text = text.replace(",", "")
    elif "," in text:
        text = text.replace(",", ".")
    elif _THOUSANDS_ONLY.match(text):
        text = text.replace(".", "")
    try:
        return Decimal(text)
    except InvalidOperation:
        raise ValueError(f"{value!r} is not an amount") from None


def number_br(value: Any, decimals: int = 2) -> str:
    """``1234.5`` → ``1.234,50`` (Brazilian grouping and decimal comma)."""
    if type(value) is str:  # fast paths for plain amounts that need no rounding
        whole, comma, cents = value.partition(",")
        if (
            comma
            and decimals == 2
            and len(cents) == 2
            and whole.isascii()
            and whole.isdigit()
            and cents.isascii()
            and cents.isdigit()
        ):
            return f"{int(whole):,}".replace(",", ".") + "," + cents
        plain = _PLAIN_AMOUNT.match(value.strip())
        if plain and len(plain.group(3) or "") <= decimals and int(plain.group(2)) < 10**15:
            sign, whole, cents = plain.groups()
            grouped = f"{int(whole):,}".replace(",", ".")
            if sign and (int(whole) or (cents and int(cents))):
                grouped = "-" + grouped
            return f"{grouped},{(cents or '').ljust(decimals, '0')}" if decimals else grouped
    amount = to_decimal(value)
    text = f"{amount:,.{decimals}f}"
    return text.replace(",", "\x00").replace(".", ",").replace("\x00", ".")


def amount(value: Any, decimals: int = 2) -> str:
    """``"1.234,5"`` → ``"1234.50"``: a plain decimal for numeric fields (``pixAmount``)."""
    return f"{to_decimal(value):.{decimals}f}"


def brl(value: Any) -> str:
    """``1234.56`` → ``R$ 1.234,56``."""
    text = number_br(value, 2)
    return f"-R$ {text[1:]}" if text.startswith("-") else f"R$ {text}"


def to_date(value: Any) -> date:
    """A date from a date/datetime, an ISO string or ``dd/mm/yyyy`` (also ``dd-mm-yyyy``)."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    text = str(value).strip()
    iso = _ISO_DATE.match(text)
    if iso:
        try:
            return date(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
        except ValueError:
            raise ValueError(f"{value!r} is not a date") from None
    match = _BR_DATE.match(text)
    try:
        if match:
            return date(int(match.group(3)), int(match.group(2)), int(match.group(1)))
        return datetime.fromisoformat(text).date()
    except ValueError:
        raise ValueError(f"{value!r} is not a date (expected dd/mm/yyyy or yyyy-mm-dd)") from None


def date_br(value: Any, fmt: str = "%d/%m/%Y") -> str:
    """Format a date; ``%B``/``%b``/``%A``/``%a`` give Portuguese month and weekday names."""
    day = to_date(value)
    if fmt == "%d/%m/%Y":
        return f"{day.day:02d}/{day.month:02d}/{day.year:04d}"
    month, weekday = MONTHS[day.month - 1], WEEKDAYS[day.weekday()]
    fmt = (
        fmt.replace("%B", month)
        .replace("%b", month[:3])
        .replace("%A", weekday)
        .replace("%a", weekday[:3])
    )
    return day.strftime(fmt)


def name_case(value: Any) -> str:
    """``"MARIA DA SILVA"`` → ``"Maria da Silva"``."""
    words = str(value).split()
    return " ".join(
        w.lower() if i and w.lower() in _PARTICLES else w[:1].upper() + w[1:].lower()
        for i, w in enumerate(words)
    )


def first_name(value: Any) -> str:
    """``"MARIA DA SILVA"`` → ``"Maria"`` (empty for an empty name)."""
    words = str(value).split(None, 1)
    if not words:
        return ""
    word = words[0]
    return word[:1].upper() + word[1:].lower()


def phone_br(value: Any) -> str:
    """``5511987654321`` → ``(11) 98765-4321``; other shapes are returned unchanged."""
    digits = re.sub(r"\D", "", str(value))
    if digits.startswith("55") and len(digits) in (12, 13):
        digits = digits[2:]
    if len(digits) in (10, 11):
        return f"({digits[:2]}) {digits[2:-4]}-{digits[-4:]}"
    return str(value)


FILTERS: dict[str, Callable[..., str]] = {
    "amount": amount,
    "brl": brl,
    "number_br": number_br,
    "date_br": date_br,
    "first_name": first_name,
    "name_case": name_case,
    "phone_br": phone_br,
}
