"""Phone normalisation: the examples, the reasons, and the fast path agrees with phonenumbers."""

from __future__ import annotations

import re

import phonenumbers
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.campaign.linetypes import type_name
from scheduler.campaign.phones import Normalized, PhoneNormalizer

BR = PhoneNormalizer("BR")


@pytest.mark.parametrize(
    "raw", ["(11) 98765-4321", "+55 11 98765-4321", "011 98765-4321", "55 11 987654321"]
)
def test_issue_examples(raw: str) -> None:
    assert BR.normalize(raw) == Normalized("5511987654321", "BR", None, "mobile")
    assert BR.fast(raw) == "5511987654321"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("1234", "too short"),
        ("abc", "not a phone number"),
        ("+55 (00) 98765-4321", "not a valid number"),
        ("+999 1234 5678", "invalid country code"),
        ("1198765432123456789", "too long"),
    ],
)
def test_invalid_numbers_have_a_reason(raw: str, reason: str) -> None:
    result = BR.normalize(raw)
    assert result.digits is None and result.reason == reason


def test_other_countries_and_carrier_codes_use_phonenumbers() -> None:
    assert BR.normalize("+1 650 253 0000") == Normalized(
        "16502530000", "US", None, "fixed_line_or_mobile"
    )
    assert BR.normalize("+351 912 345 678") == Normalized("351912345678", "PT", None, "mobile")
    assert BR.fast("0 15 11 98765-4321") is None
    assert BR.normalize("0 15 11 98765-4321").digits == "5511987654321"


def test_other_default_regions() -> None:
    us = PhoneNormalizer("US")  # +1 is shared by many regions: no fast path, same answers
    assert us.normalize("(650) 253-0000") == Normalized(
        "16502530000", "US", None, "fixed_line_or_mobile"
    )
    pt = PhoneNormalizer("PT")
    assert pt.normalize("912 345 678").digits == "351912345678"


def test_bulk_equals_one_by_one() -> None:
    values = ["(11) 98765-4321", "", "abc", "+1 650 253 0000", "021 2345-6789"]
    assert BR.normalize_many(values) == [BR.normalize(v) for v in values]


def _parsed_truth(raw: str, region: str) -> tuple[str, str] | None:
    try:
        number = phonenumbers.parse(raw, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(number):
        return None
    digits = f"{number.country_code}{phonenumbers.national_significant_number(number)}"
    return digits, type_name(number)


def _typed_truth(raw: str, region: str) -> tuple[str, str] | None:
    """phonenumbers' answer, with ``00`` + country code read as ``+`` when it alone fails."""
    found = _parsed_truth(raw, region)
    text = re.sub(r"[ ()\-./\t\u00a0]", "", raw.strip())
    if found is None and re.match(r"00[1-9]", text):
        found = _parsed_truth("+" + text[2:], region)
    return found


def _slow_truth(raw: str, region: str) -> str | None:
    found = _typed_truth(raw, region)
    return found[0] if found else None


_prefixes = st.sampled_from(["", "+55", "55", "0", "+", "00", "90", "+1", "+351", "0055"])
_seps = st.sampled_from(["", " ", "-", ".", "(", ")", "/"])
_digits = st.text(alphabet="0123456789", min_size=0, max_size=14)
_ddd = st.sampled_from(["11", "21", "55", "68", "90", "00", "19", "41", "80", "30"])


@st.composite
def brazilian_shapes(draw: st.DrawFn) -> str:
    parts = [draw(_prefixes), draw(_seps), draw(_ddd), draw(_seps), draw(_digits)]
    if draw(st.booleans()):
        parts.insert(4, draw(st.sampled_from(["9", "98765", "2345", "800", "300"])))
    return "".join(parts)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(brazilian_shapes())
def test_fast_path_never_disagrees_with_phonenumbers(raw: str) -> None:
    fast = BR.fast_typed(raw)
    if fast is not None:
        assert fast == _typed_truth(raw, "BR")
    if raw.strip():
        result = BR.normalize(raw)
        truth = _typed_truth(raw, "BR")
        assert (result.digits, result.line_type) == (truth or (None, None))


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="0123456789 +()-", max_size=18))
def test_fast_path_agrees_on_arbitrary_strings(raw: str) -> None:
    fast = BR.fast_typed(raw)
    if fast is not None:
        assert fast == _typed_truth(raw, "BR")
