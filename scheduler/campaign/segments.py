"""SMS segment count: GSM-7 (160 per single SMS, 153 per part) or UCS-2 (70 / 67).

A text is GSM-7 when every character is in the GSM 03.38 basic table or its extension
(extension characters ``^{}\\[~]|€`` and form feed take two septets). Anything else (``ã``,
``ç``, ``ê``, emoji, ...) makes the whole message UCS-2, counted in UTF-16 code units. A
two-unit character is never split across parts, as real encoders do.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

GSM7_BASIC = frozenset(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
)
GSM7_EXTENSION = frozenset("^{}\\[~]|€\f")


class Segments(NamedTuple):
    """Encoding, length in septets or UTF-16 units, and number of SMS parts."""

    encoding: Literal["GSM-7", "UCS-2"]
    units: int
    parts: int


def _pack(widths: list[int], single: int, part: int) -> int:
    total = sum(widths)
    if total <= single:
        return 1 if total else 0
    parts, used = 1, 0
    for width in widths:
        if used + width > part:
            parts, used = parts + 1, 0
        used += width
    return parts


def sms_segments(text: str) -> Segments:
    """How many SMS parts ``text`` takes, and in which encoding."""
    chars = set(text)
    if chars <= GSM7_BASIC:
        return Segments("GSM-7", len(text), _pack([1] * len(text), 160, 153))
    if chars <= GSM7_BASIC | GSM7_EXTENSION:
        widths = [2 if c in GSM7_EXTENSION else 1 for c in text]
        return Segments("GSM-7", sum(widths), _pack(widths, 160, 153))
    widths = [2 if ord(c) > 0xFFFF else 1 for c in text]
    return Segments("UCS-2", sum(widths), _pack(widths, 70, 67))
