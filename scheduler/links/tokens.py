"""The token of a tracked link: which run, CSV row and link, signed.

A token is the base64url (no padding) of three unsigned LEB128 varints — run id, CSV row
(1-based) and the link's index in the run (see :mod:`scheduler.links.render`) — followed
by the first 8 bytes (64 bits) of an HMAC-SHA256 under the project's key
(:mod:`scheduler.links.keys`). The MAC also covers the recipient's number, which is not
in the token: the receiver finds the delivery of (run, row, the link's step) and checks
the MAC against its number, so a token names one recipient even if a re-plan from a
changed CSV gave the row to someone else. Run 5, row 1,234, link 0 is 12 bytes, 16
characters; a changed character gives another MAC (or no valid varints): a 404.

Varints must be minimal (no redundant ``0x80`` continuation bytes), so one (run, row,
link) has exactly one token.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from dataclasses import dataclass

from scheduler.links.exceptions import BadToken

#: The receiver's path of tracked links: ``<public base>/r/<token>``.
LINK_PATH = "/r/"
#: Bytes of the truncated MAC (64 bits).
MAC_BYTES = 8
#: The largest value a field may hold (5 varint bytes are more than any run or CSV has).
MAX_FIELD = 2**32 - 1
_DOMAIN = b"campaign-link\x00"
_ALPHABET = re.compile(r"[A-Za-z0-9_-]{14,40}")


@dataclass(frozen=True)
class LinkRef:
    """What a token names: the run, the recipient's CSV row and the link's index."""

    run_id: int
    row: int
    link: int


def _varint(value: int) -> bytes:
    if not 0 <= value <= MAX_FIELD:
        raise ValueError(f"a link token field must be in 0..{MAX_FIELD}, not {value}")
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    for i in range(at, min(at + 5, len(data))):
        byte = data[i]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if byte == 0 and i > at:
                raise BadToken("a varint with a redundant byte")
            if value > MAX_FIELD:
                raise BadToken("a field out of range")
            return value, i + 1
        shift += 7
    raise BadToken("a truncated varint")


def _mac(key: bytes, payload: bytes, to: str) -> bytes:
    message = _DOMAIN + payload + b"\x00" + to.encode()
    return hmac.new(key, message, hashlib.sha256).digest()[:MAC_BYTES]


def make_token(key: bytes, ref: LinkRef, to: str) -> str:
    """The token of ``ref`` for the recipient whose number is ``to`` (digits)."""
    payload = _varint(ref.run_id) + _varint(ref.row) + _varint(ref.link)
    raw = payload + _mac(key, payload, to)
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class ParsedToken:
    """A token read but not yet checked: :meth:`signed_for` needs the recipient's number."""

    ref: LinkRef
    payload: bytes
    mac: bytes

    def signed_for(self, key: bytes, to: str) -> bool:
        """Whether the MAC is ours for the recipient ``to`` (constant-time compare)."""
        return hmac.compare_digest(self.mac, _mac(key, self.payload, to))


def parse_token(token: str) -> ParsedToken:
    """Read a token's fields; raises :class:`BadToken` when it cannot be one of ours."""
    if not _ALPHABET.fullmatch(token) or len(token) % 4 == 1:
        raise BadToken("not a link token")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise BadToken("not base64url") from None
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != token:
        raise BadToken("not the canonical encoding")  # unused low bits set
    run_id, at = _read_varint(raw, 0)
    row, at = _read_varint(raw, at)
    link, at = _read_varint(raw, at)
    if len(raw) - at != MAC_BYTES:
        raise BadToken("a token of the wrong length")
    return ParsedToken(LinkRef(run_id, row, link), raw[:at], raw[at:])
