"""Bounds of a rendered body that the endpoint models do not check, found before sending.

The service refuses a body that breaks a bound (``docs/service-facts.md``), and a campaign
learns it only in production, row by row. The request models check the counts (2–12 poll
options, 1–4 native-flow buttons, ≤ 2 buttons a carousel card, 1–10 list sections and rows,
2–10 album items); this module adds what depends on the rendered text:

- a text message's ``text`` longer than ``[bounds] text`` (4,096 characters by default);
- a media ``caption`` (image, video, album and its items) longer than ``[bounds] caption``
  (1,024 by default); both limits are **ours** (WhatsApp's), overridable in the campaign;
- a list's ``title`` or a section's ``title`` that is sent empty (the service requires at
  least one character when the field is present).

:func:`body_checker` returns ``None`` for kinds with nothing to check, so the plan's hot
path pays nothing for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler.campaign.definition import BoundsSpec

#: (key path, message) of each bound a body breaks.
Problems = list[tuple[str, str]]
Checker = Callable[[dict[str, Any]], Problems]


def _too_long(path: str, value: Any, limit: int, setting: str) -> Problems:
    if isinstance(value, str) and len(value) > limit:
        return [
            (
                path,
                f"rendered {path} is {len(value):,} characters, over the limit of "
                f"{limit:,} ({setting}); shorten the template or the row's values",
            )
        ]
    return []


def _empty_title(path: str, value: Any) -> Problems:
    if isinstance(value, str) and not value.strip():
        return [
            (
                path,
                f"rendered {path} is empty: the service refuses an empty title; "
                "give it a value in every row, or leave the title out",
            )
        ]
    return []


def body_checker(kind: str, bounds: BoundsSpec) -> Checker | None:
    """A function listing the bounds a wire body of ``kind`` breaks; ``None`` if none apply."""
    text, caption = bounds.text, bounds.caption
    # the hot path (every planned row): a short text answers without another call
    if kind == "text":
        return lambda body: (_too_long("text", value, text, "bounds.text")
                             if isinstance(value := body.get("text"), str)
                             and len(value) > text else [])
    if kind in ("image", "video"):
        return lambda body: (_too_long("caption", value, caption, "bounds.caption")
                             if isinstance(value := body.get("caption"), str)
                             and len(value) > caption else [])
    if kind == "album":

        def album(body: dict[str, Any]) -> Problems:
            found = _too_long("caption", body.get("caption"), caption, "bounds.caption")
            for i, item in enumerate(body.get("media") or ()):
                if isinstance(item, dict):
                    found += _too_long(
                        f"media[{i}].caption", item.get("caption"), caption, "bounds.caption"
                    )
            return found

        return album
    if kind == "list":

        def listing(body: dict[str, Any]) -> Problems:
            found = _empty_title("title", body["title"]) if "title" in body else []
            for i, section in enumerate(body.get("sections") or ()):
                if isinstance(section, dict) and "title" in section:
                    found += _empty_title(f"sections[{i}].title", section["title"])
            return found

        return listing
    return None
