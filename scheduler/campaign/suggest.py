""""Did you mean": the closest name among a CSV's columns, for a name that is not one."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from scheduler.campaign.recipients import slugify


def closest(name: str, names: Sequence[str]) -> str | None:
    """The one of ``names`` (template names: slugs) that ``name`` most likely meant.

    In order: the same name once written as a slug (``Nome`` → ``nome``, ``Último_Pedido``
    → ``ultimo_pedido``); the only name that starts with it as a word (``nome`` →
    ``nome_do_cliente``); else the closest spelling (difflib, ratio ≥ 0.75); else ``None``.
    """
    if not names:
        return None
    slug = slugify(name)
    if slug in names and slug != name:
        return slug
    starting = [n for n in names if n.startswith(slug + "_") or n.endswith("_" + slug)]
    if slug and len(starting) == 1:
        return starting[0]
    close = difflib.get_close_matches(slug or name, list(names), n=1, cutoff=0.75)
    return close[0] if close and close[0] != name else None
