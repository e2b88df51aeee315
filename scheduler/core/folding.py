"""Replies' words compared as people mean them: without case, accents or surrounding
punctuation (:func:`fold`, opt-out words and reply keywords), or without accents only
(:func:`plain`, what a step's ``reply_matches`` expression is searched in)."""

from __future__ import annotations

import unicodedata


def plain(text: str) -> str:
    """``text`` without accents (case is left to an expression's IGNORECASE)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def fold(text: str) -> str:
    """Lower case, no accents, no punctuation or symbols at either end, single spaces."""
    joined = " ".join(plain(text).casefold().split())
    start, end = 0, len(joined)
    while start < end and not joined[start].isalnum():
        start += 1
    while end > start and not joined[end - 1].isalnum():
        end -= 1
    return joined[start:end]
