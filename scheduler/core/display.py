"""How the terminal shows values: outside text made harmless, tables that fit the width
(times and durations in words: :mod:`scheduler.core.time_words`).

Every command prints through these helpers, so a new command reads like the others:

- :func:`clean`: text that came from outside (webhook events, CSV cells, service errors)
  with its control characters shown as escapes (``\\x1b[31m``) and rich markup escaped,
  so an ANSI sequence in a ``sessionId`` cannot recolour or rewrite the terminal
  (:func:`clean_markup` when the text goes inside rich markup).
- :func:`table`: a rich table whose columns wrap (fold) instead of being cut at the
  console's width.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when a table or markup is made
    from rich.table import Table

#: Control characters (C0 but tab and newline, DEL, C1), shown as escapes by :func:`clean`.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: object) -> str:
    """Outside text made safe to print (with ``markup=False``, or inside ``Text``): control
    characters shown as ``\\xNN`` escapes."""
    return _CONTROL.sub(_escaped, str(text))


def clean_markup(text: object) -> str:
    """:func:`clean`, with rich markup escaped too: for text placed inside markup."""
    from rich.markup import escape

    return escape(clean(text))


def table(*columns: str, title: str | None = None, **options: Any) -> Table:
    """A table whose cells wrap (fold) within the console's width instead of being cut;
    ``options`` go to :class:`rich.table.Table` (``show_edge=False``, ...)."""
    from rich.table import Table

    shown = Table(title=title, **options)
    for name in columns:
        shown.add_column(name, overflow="fold")
    return shown


#: Query parameters whose values are secrets (the receiver's ``?token=``, keys).
_SECRET_PARAMS = frozenset({"token", "key", "apikey", "api_key", "secret", "signature"})


def hide_url_secrets(url: str) -> str:
    """``url`` as shown to people: the values of its secret query parameters (the
    receiver's ``token``) replaced by ``***``; everything else as it was."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    if not parts.query:
        return url
    query = [(k, "***" if k.lower() in _SECRET_PARAMS else v)
             for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit(parts._replace(query=urlencode(query, safe="*")))
