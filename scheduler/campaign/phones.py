"""Phone numbers to international digits without ``+`` (``5511987654321``), or a reason why not.

:mod:`phonenumbers` is the authority: ``phonenumbers.parse`` with the campaign's default
region, then ``is_valid_number``. It costs tens of microseconds a call, so a **fast path**
handles the shapes that make up nearly every real list, with the same answer:

- punctuation (spaces, ``()-./``) is dropped with one ``str.translate``;
- ``+CC`` + national number, national number alone, national prefix (``0``) + national
  number, or ``CC`` + national number when longer than any national number;
- the national number must fully match the default region's metadata for some number type
  (the same patterns and lengths ``is_valid_number`` checks), and must not start with
  something phonenumbers would strip as a national or carrier prefix.

Anything else (letters, extensions, other countries, carrier codes, invalid numbers) goes
to phonenumbers, with results cached. ``tests/campaign/test_phones.py`` checks with
hypothesis that the fast path never disagrees with phonenumbers.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import phonenumbers
from phonenumbers import NumberParseException, PhoneMetadata, ValidationResult

_DROP = str.maketrans("", "", " ()-./\t\u00a0")
# Most numbers in a list are mobiles or landlines: those patterns are tried first.
_TYPES = (
    "mobile",
    "fixed_line",
    "premium_rate",
    "toll_free",
    "shared_cost",
    "voip",
    "personal_number",
    "pager",
    "uan",
    "voicemail",
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


class Normalized(NamedTuple):
    """A normalised number (``digits``, ``region``) or the ``reason`` it is invalid."""

    digits: str | None
    region: str | None
    reason: str | None


def _desc_regex(desc: object, general_lengths: tuple[int, ...]) -> str | None:
    pattern = getattr(desc, "national_number_pattern", None)
    if desc is None or not pattern:
        return None
    lengths = tuple(getattr(desc, "possible_length", ()) or ())
    if lengths == (-1,):  # "no numbers of this type"
        return None
    lengths = lengths or general_lengths
    ahead = "|".join(rf"\d{{{n}}}$" for n in sorted(set(lengths)))
    return rf"(?=(?:{ahead}))(?:{pattern})"


class PhoneNormalizer:
    """Normalises raw values for one default region; holds the fast-path patterns and cache."""

    def __init__(self, default_region: str = "BR") -> None:
        region = default_region.upper()
        meta = PhoneMetadata.metadata_for_region(region)
        if meta is None:
            raise ValueError(f"{default_region!r} is not a region phonenumbers knows")
        self.region = region
        self.cc = str(meta.country_code)
        self._plus_cc = "+" + self.cc
        general = meta.general_desc
        lengths = tuple(general.possible_length or ())
        self._max_len = max(lengths) if lengths else 17
        types = [r for r in (_desc_regex(getattr(meta, t), lengths) for t in _TYPES) if r]
        single = len(phonenumbers.COUNTRY_CODE_TO_REGION_CODE.get(meta.country_code, ())) == 1
        self._fast_ok = bool(types) and single and bool(general.national_number_pattern)
        self._valid = re.compile(
            rf"(?=(?:{general.national_number_pattern})$)(?:{'|'.join(types) or '(?!)'})"
        )
        self._national_prefix = meta.national_prefix or ""
        prefix = meta.national_prefix_for_parsing or meta.national_prefix
        self._strippable = re.compile(prefix) if prefix else None
        self._cache: dict[str, Normalized] = {}

    def fast(self, raw: str) -> str | None:
        """The international digits when ``raw`` has a canonical valid shape, else ``None``."""
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
        if self._valid.fullmatch(nsn) is None:
            return None
        return self.cc + nsn

    def slow(self, raw: str) -> Normalized:
        """phonenumbers' own answer (cached)."""
        found = self._cache.get(raw)
        if found is not None:
            return found
        try:
            number = phonenumbers.parse(raw, self.region)
        except NumberParseException as exc:
            result = Normalized(None, None, _PARSE_REASONS.get(exc.error_type, "not a number"))
        else:
            if phonenumbers.is_valid_number(number):
                nsn = phonenumbers.national_significant_number(number)
                result = Normalized(
                    f"{number.country_code}{nsn}",
                    phonenumbers.region_code_for_number(number),
                    None,
                )
            else:
                why = phonenumbers.is_possible_number_with_reason(number)
                result = Normalized(None, None, _POSSIBLE_REASONS.get(why, "not a valid number"))
        if len(self._cache) >= SLOW_CACHE_SIZE:
            self._cache.clear()
        self._cache[raw] = result
        return result

    def normalize_many(self, values: list[str]) -> list[Normalized]:
        """Normalise a column's values, in order (the bulk path of the plan)."""
        fast, region, slow = self.fast, self.region, self.slow
        out: list[Normalized] = []
        append = out.append
        for raw in values:
            digits = fast(raw)
            if digits is not None:
                append(Normalized(digits, region, None))
            elif not raw.strip():
                append(Normalized(None, None, "empty"))
            else:
                append(slow(raw.strip()))
        return out

    def normalize(self, raw: str | None) -> Normalized:
        """Normalise one raw value (fast path first)."""
        if raw is None or not raw.strip():
            return Normalized(None, None, "empty")
        digits = self.fast(raw)
        if digits is not None:
            return Normalized(digits, self.region, None)
        return self.slow(raw.strip())
