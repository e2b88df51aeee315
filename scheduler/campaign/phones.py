"""Phone numbers to international digits without ``+`` (``5511987654321``), or a reason why not.

:mod:`phonenumbers` is the authority: ``phonenumbers.parse`` with the campaign's default
region, then ``is_valid_number`` and ``number_type`` (the line type: mobile, landline,
toll-free…, see :mod:`scheduler.campaign.linetypes`). It costs tens of microseconds a call,
so a **fast path** handles the shapes that make up nearly every real list, with the same
answer:

- punctuation (spaces, ``()-./``) is dropped with one ``str.translate``;
- ``+CC`` + national number, national number alone, national prefix (``0``) + national
  number, or ``CC`` + national number when longer than any national number;
- the national number must fully match the default region's metadata for some number type
  (the same patterns and lengths ``is_valid_number`` checks, tried in the order
  ``number_type`` tries them, so the first that matches is the line type), and must not
  start with something phonenumbers would strip as a national or carrier prefix.

Anything else (letters, extensions, other countries, carrier codes, invalid numbers) goes
to phonenumbers, with results cached. Two repairs happen there, when phonenumbers alone says
the value is not a valid number:

- ``00`` + country code is read as ``+`` + country code (``0055 11 97777-8888`` is
  ``+55 11 97777-8888``; phonenumbers takes ``00 55`` for Brazil's carrier-selection prefix);
- a Brazilian mobile written without its ninth digit (``11 8765-4321``) is named as such
  (``Brazilian mobile missing the ninth digit: 11 8765-4321 → 11 98765-4321?``), or, when
  the campaign opts in (``add_ninth_digit``), the digit is added.

``tests/campaign/test_phones.py`` checks with hypothesis that the fast path never disagrees
with phonenumbers.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import phonenumbers
from phonenumbers import NumberParseException, PhoneMetadata, PhoneNumber, ValidationResult

from scheduler.campaign.linetypes import type_name

_DROP = str.maketrans("", "", " ()-./\t\u00a0")
# The order of phonenumbers' number_type: the first type whose pattern matches wins.
_TYPES = (
    "premium_rate",
    "toll_free",
    "shared_cost",
    "voip",
    "personal_number",
    "pager",
    "uan",
    "voicemail",
    "fixed_line",
    "mobile",
)
_PARSE_REASONS = {
    NumberParseException.INVALID_COUNTRY_CODE: "invalid country code",
    NumberParseException.NOT_A_NUMBER: "not a phone number",
    NumberParseException.TOO_SHORT_AFTER_IDD: "too short",
    NumberParseException.TOO_SHORT_NSN: "too short",
    NumberParseException.TOO_LONG: "too long",
}
_POSSIBLE_REASONS = {
    ValidationResult.INVALID_COUNTRY_CODE: "invalid country code",
    ValidationResult.TOO_SHORT: "too short",
    ValidationResult.TOO_LONG: "too long",
    ValidationResult.INVALID_LENGTH: "invalid length",
}
SLOW_CACHE_SIZE = 100_000
NINTH_DIGIT = "Brazilian mobile missing the ninth digit"


class Normalized(NamedTuple):
    """A normalised number (``digits``, ``region``, ``line_type``) or the ``reason`` it is
    invalid; ``ninth_digit_added`` when the campaign's opt-in completed an old mobile."""

    digits: str | None
    region: str | None
    reason: str | None
    line_type: str | None = None
    ninth_digit_added: bool = False


def _desc_regex(desc: object, general_lengths: tuple[int, ...]) -> str | None:
    pattern = getattr(desc, "national_number_pattern", None)
    if desc is None or not pattern:
        return None
    lengths = tuple(getattr(desc, "possible_length", ()) or ())
    if lengths == (-1,):  # "no numbers of this type"
        return None
    lengths = lengths or general_lengths
    ahead = "|".join(rf"\d{{{n}}}$" for n in sorted(set(lengths)))
    pattern = re.sub(r"(?<!\\)\((?!\?)", "(?:", pattern)  # only our named groups capture
    return rf"(?=(?:{ahead}))(?:{pattern})"


def _brazilian(nsn: str) -> str:
    """``1187654321`` → ``11 8765-4321`` (area code, then the number with a hyphen)."""
    return f"{nsn[:2]} {nsn[2:-4]}-{nsn[-4:]}"


class PhoneNormalizer:
    """Normalises raw values for one default region; holds the fast-path patterns and cache."""

    def __init__(self, default_region: str = "BR", *, add_ninth_digit: bool = False) -> None:
        region = default_region.upper()
        meta = PhoneMetadata.metadata_for_region(region)
        general = None if meta is None else meta.general_desc
        country_code = None if meta is None else meta.country_code
        if meta is None or general is None or country_code is None:
            raise ValueError(f"{default_region!r} is not a region phonenumbers knows")
        self.region = region
        self.add_ninth_digit = add_ninth_digit
        self.cc = str(country_code)
        self._plus_cc = "+" + self.cc
        lengths = tuple(general.possible_length or ())
        self._max_len = max(lengths) if lengths else 17
        types = [
            f"(?P<{name}>{regex})"
            for name in _TYPES
            if (regex := _desc_regex(getattr(meta, name), lengths))
        ]
        single = len(phonenumbers.COUNTRY_CODE_TO_REGION_CODE.get(country_code, ())) == 1
        self._fast_ok = bool(types) and single and bool(general.national_number_pattern)
        self._valid = re.compile(
            rf"(?=(?:{general.national_number_pattern})$)(?:{'|'.join(types) or '(?!)'})"
        )
        mobile = _desc_regex(meta.mobile, lengths)
        self._mobile = re.compile(mobile) if mobile else None
        self._same_fixed_mobile = bool(meta.same_mobile_and_fixed_line_pattern)
        self._national_prefix = meta.national_prefix or ""
        prefix = meta.national_prefix_for_parsing or meta.national_prefix
        self._strippable = re.compile(prefix) if prefix else None
        self._cache: dict[str, Normalized] = {}

    def fast_typed(self, raw: str) -> tuple[str, str] | None:
        """(international digits, line type) when ``raw`` has a canonical valid shape."""
        if not self._fast_ok:
            return None
        text = raw.translate(_DROP)
        if text.startswith("+"):
            if not text.startswith(self._plus_cc):
                return None
            nsn = text[len(self._plus_cc) :]
        elif len(text) > self._max_len and text.startswith(self.cc):
            nsn = text[len(self.cc) :]
        elif self._national_prefix and text.startswith(self._national_prefix):
            nsn = text[len(self._national_prefix) :]
        else:
            nsn = text
        if not (nsn.isascii() and nsn.isdigit()):
            return None
        strip = self._strippable
        if strip is not None:
            prefix = strip.match(nsn)
            if prefix is not None and prefix.end():
                return None
        found = self._valid.fullmatch(nsn)
        if found is None:
            return None
        kind = found.lastgroup or "unknown"
        if kind == "fixed_line" and (
            self._same_fixed_mobile
            or (self._mobile is not None and self._mobile.fullmatch(nsn) is not None)
        ):
            kind = "fixed_line_or_mobile"
        return self.cc + nsn, kind

    def fast(self, raw: str) -> str | None:
        """The international digits when ``raw`` has a canonical valid shape, else ``None``."""
        found = self.fast_typed(raw)
        return found[0] if found is not None else None

    def _parse(self, raw: str) -> tuple[Normalized, PhoneNumber | None]:
        """phonenumbers' verdict on ``raw`` and the parsed number (``None``: unparsable)."""
        try:
            number = phonenumbers.parse(raw, self.region)
        except NumberParseException as exc:
            reason = _PARSE_REASONS.get(exc.error_type, "not a number")
            return Normalized(None, None, reason), None
        if phonenumbers.is_valid_number(number):
            nsn = phonenumbers.national_significant_number(number)
            digits = f"{number.country_code}{nsn}"
            region = phonenumbers.region_code_for_number(number)
            return Normalized(digits, region, None, type_name(number)), number
        why = phonenumbers.is_possible_number_with_reason(number)
        return Normalized(None, None, _POSSIBLE_REASONS.get(why, "not a valid number")), number

    def _ninth_digit(self, numbers: list[PhoneNumber | None]) -> Normalized | None:
        """The verdict on a Brazilian mobile written without its ninth digit, if it is one."""
        for number in numbers:
            if number is None or number.country_code != 55:
                continue
            nsn = phonenumbers.national_significant_number(number)
            if len(nsn) != 10 or nsn[2] not in "6789":
                continue
            fixed, candidate = self._parse(f"+55{nsn[:2]}9{nsn[2:]}")
            if fixed.digits is None or candidate is None or fixed.line_type != "mobile":
                continue
            if self.add_ninth_digit:
                return fixed._replace(ninth_digit_added=True)
            old, new = _brazilian(nsn), _brazilian(fixed.digits[2:])
            return Normalized(None, None, f"{NINTH_DIGIT}: {old} → {new}?")
        return None

    def slow(self, raw: str) -> Normalized:
        """phonenumbers' own answer, with the ``00`` and ninth-digit repairs (cached)."""
        found = self._cache.get(raw)
        if found is not None:
            return found
        result, number = self._parse(raw)
        if result.digits is None:
            numbers = [number]
            text = raw.translate(_DROP)
            if text.startswith("00") and text[2:3].isdigit() and text[2] != "0":
                alternative, other = self._parse("+" + text[2:])
                if alternative.digits is not None:
                    result = alternative
                numbers.append(other)
            if result.digits is None:
                result = self._ninth_digit(numbers) or result
        if len(self._cache) >= SLOW_CACHE_SIZE:
            self._cache.clear()
        self._cache[raw] = result
        return result

    def normalize_many(self, values: list[str]) -> list[Normalized]:
        """Normalise a column's values, in order (the bulk path of the plan)."""
        fast, region, slow = self.fast_typed, self.region, self.slow
        out: list[Normalized] = []
        append = out.append
        make = tuple.__new__  # a Normalized without the call of its Python __new__
        for raw in values:
            found = fast(raw)
            if found is not None:
                append(make(Normalized, (found[0], region, None, found[1], False)))
            elif not raw.strip():
                append(Normalized(None, None, "empty"))
            else:
                append(slow(raw.strip()))
        return out

    def normalize(self, raw: str | None) -> Normalized:
        """Normalise one raw value (fast path first)."""
        if raw is None or not raw.strip():
            return Normalized(None, None, "empty")
        found = self.fast_typed(raw)
        if found is not None:
            return Normalized(found[0], self.region, None, found[1])
        return self.slow(raw.strip())
