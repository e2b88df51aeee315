"""The sandbox's own SMS segment counter (GSM-7 / UCS-2), independent of the campaign's."""

from __future__ import annotations

import pytest

from scheduler.sandbox.sms import segments


@pytest.mark.parametrize(
    ("text", "encoding", "parts"),
    [
        ("a" * 160, "GSM-7", 1),
        ("a" * 161, "GSM-7", 2),
        ("a" * 306, "GSM-7", 2),
        ("a" * 307, "GSM-7", 3),
        ("€" * 80, "GSM-7", 1),  # extension characters take two septets
        ("€" * 81, "GSM-7", 2),
        ("a" * 152 + "€" + "a" * 152, "GSM-7", 3),  # an escape is never split across parts
        ("ã" * 70, "UCS-2", 1),
        ("ã" * 71, "UCS-2", 2),
        ("ã" * 134, "UCS-2", 2),
        ("ã" * 66 + "😀" + "ã" * 66, "UCS-2", 3),  # a surrogate pair is never split
    ],
)
def test_segments_are_counted_gsm7_or_ucs2(text, encoding, parts):
    assert segments(text) == (encoding, parts)
