"""Link tokens: what they name, their length, and that any change makes them not ours."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from scheduler.links.exceptions import BadToken
from scheduler.links.tokens import LinkRef, make_token, parse_token

KEY = bytes(range(32))
TO = "5511987654321"
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def test_a_token_names_its_run_row_and_link_for_one_recipient() -> None:
    token = make_token(KEY, LinkRef(5, 1234, 2), TO)
    parsed = parse_token(token)
    assert parsed.ref == LinkRef(5, 1234, 2)
    assert parsed.signed_for(KEY, TO)
    assert not parsed.signed_for(KEY, "5511987654322")  # another recipient of the row
    assert not parsed.signed_for(bytes(32), TO)  # another project's key


def test_tokens_are_short_and_the_same_in_every_process() -> None:
    # the documented format, spelled out: varints 5, 1234 (0xD2 0x09), 0, then the MAC
    payload = bytes([0x05, 0xD2, 0x09, 0x00])
    mac = hmac.new(KEY, b"campaign-link\x00" + payload + b"\x00" + TO.encode(),
                   hashlib.sha256).digest()[:8]
    assert base64.urlsafe_b64decode("BdIJADGrKF_RVrdP" + "==") == payload + mac
    # fixed: a key, run, row and link give this token whatever process makes it
    assert make_token(KEY, LinkRef(5, 1234, 0), TO) == "BdIJADGrKF_RVrdP"
    assert len(make_token(KEY, LinkRef(1, 1, 0), TO)) == 15  # 3 varint bytes + 8 MAC
    assert len(make_token(KEY, LinkRef(16_383, 999_999, 20), TO)) == 19


def test_every_changed_character_is_refused_or_fails_its_mac() -> None:
    token = make_token(KEY, LinkRef(7, 300, 1), TO)
    for i, char in enumerate(token):
        for other in _ALPHABET:
            if other == char:
                continue
            changed = token[:i] + other + token[i + 1:]
            try:
                parsed = parse_token(changed)
            except BadToken:
                continue
            assert not parsed.signed_for(KEY, TO), changed


@pytest.mark.parametrize("token", ["", "abc", "x" * 60, "BdIJADGrKF_RVrd=", "BdIJADGrKF/RVrdP",
                                   "BdIJADGrKF_RVrdPAA", "gIAAAAAAAAAAAAAA"])
def test_what_is_not_a_token_is_refused(token: str) -> None:
    with pytest.raises(BadToken):
        parse_token(token)


def test_a_redundant_varint_byte_is_refused() -> None:
    # run 5 written as two bytes (0x85 0x00) instead of one: same numbers, not our token
    raw = bytes([0x85, 0x00, 1, 0]) + bytes(8)
    token = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    with pytest.raises(BadToken, match="redundant"):
        parse_token(token)
