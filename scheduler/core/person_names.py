"""A recipient's name as the search box looks for it: the name in a row's CSV values
(:func:`name_in`), and the keys it is found by (:func:`name_keys`), case- and
accent-folded, one per word it starts at ("Maria da Silva" is found by "mar", "da s" and
"silva"), each a prefix searched with one index range (:func:`prefix_range`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from scheduler.core.folding import plain

#: The CSV columns that hold a recipient's name (any case), the first found wins.
NAME_COLUMNS = ("name", "nome", "first_name", "full_name", "customer", "cliente")
#: A key is cut at this many characters (a search is cut the same way).
KEY_AT_MOST = 60
#: A name longer than this is cut (before its keys are made).
NAME_AT_MOST = 200
#: At most this many keys per name (its first words' starts).
KEYS_AT_MOST = 6

_NOT_WORD = re.compile(r"[\W_]+")


def name_in(values: Mapping[str, Any] | None) -> str | None:
    """The value of the first column of ``values`` named as one of :data:`NAME_COLUMNS`
    (any case), stripped; None without one, or when it is blank."""
    if not values:
        return None
    for column, value in values.items():
        if str(column).casefold() in NAME_COLUMNS:
            name = str(value).strip() if value is not None else ""
            return name[:NAME_AT_MOST] or None
    return None


def fold_name(text: str) -> str:
    """``text`` lower case, without accents, its punctuation turned into single spaces:
    what a name is compared as ("José-Maria O'Neil" → ``"jose maria o neil"``)."""
    return _NOT_WORD.sub(" ", plain(text).casefold()).strip()


def name_keys(name: str) -> list[str]:
    """The keys ``name`` is found by: its folded form from each word on (at most
    :data:`KEYS_AT_MOST`), each cut at :data:`KEY_AT_MOST` characters."""
    words = fold_name(name[:NAME_AT_MOST]).split(" ")
    if words == [""]:
        return []
    keys = [" ".join(words[i:])[:KEY_AT_MOST].rstrip() for i in range(len(words))]
    return list(dict.fromkeys(keys))[:KEYS_AT_MOST]


def search_key(words: str) -> str:
    """What a search for ``words`` looks for: its folded form, cut like a key ("" when it
    holds no letter or digit)."""
    return fold_name(words)[:KEY_AT_MOST].rstrip()


def prefix_range(key: str) -> tuple[str, str]:
    """``(low, high)``: the keys starting with ``key`` are ``low <= k < high`` in code point
    order (SQLite's BINARY collation, PostgreSQL's ``"C"``: both compare UTF-8 bytes)."""
    last = ord(key[-1]) + 1
    if 0xD800 <= last <= 0xDFFF:  # no surrogate in a text; the next code point
        last = 0xE000
    return key, key[:-1] + chr(last)
