"""A docs build check: a numbered list renders as the one list its source meant.

An mkdocs hook (``hooks:`` in ``mkdocs.yml``). Python-Markdown ends a list item at a block
indented less than four spaces, so a code block indented three spaces inside ``2.`` closes
the list, and ``3.`` starts a new one that the browser numbers 1 (the source's numbers are
not kept). :func:`on_page_content` compares, page by page, the numbered items written at
the start of a line in the Markdown (outside fenced code) with the top-level ``<ol>``
lists of the HTML: every list must begin at an item the source numbers 1 (or the first of
its own), else the build logs a warning, which ``mkdocs build --strict`` turns into a
failure naming the page and the line.
"""

from __future__ import annotations

import logging
import re
from html.parser import HTMLParser
from typing import Any

log = logging.getLogger("mkdocs.hooks.lists")

_ITEM = re.compile(r"^(\d{1,9})[.)][ \t]+\S")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
                   "meta", "source", "track", "wbr"})


def source_items(markdown: str) -> list[tuple[int, int]]:
    """(number, line) of each numbered item written at the start of a line (a top-level
    list's item), outside fenced code."""
    items: list[tuple[int, int]] = []
    fence: str | None = None
    for line_no, line in enumerate(markdown.splitlines(), start=1):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        found = _ITEM.match(line)
        if found:
            items.append((int(found.group(1)), line_no))
    return items


class _TopLists(HTMLParser):
    """How many items each ``<ol>`` outside any other element has, in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.lists: list[int] = []
        self._list_depth: int | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            return
        if tag == "ol" and self.depth == 0:
            self.lists.append(0)
            self._list_depth = 1
        elif tag == "li" and self._list_depth is not None and self.depth == self._list_depth:
            self.lists[-1] += 1
        self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        self.depth = max(0, self.depth - 1)
        if tag == "ol" and self.depth == 0:
            self._list_depth = None


def top_lists(html: str) -> list[int]:
    """The item count of each top-level ``<ol>`` of a page's HTML, in order."""
    parser = _TopLists()
    parser.feed(html)
    parser.close()
    return parser.lists


def list_restarts(markdown: str, html: str) -> list[str]:
    """Where a numbered list of ``markdown`` restarts in its ``html``, in words (empty when
    every list is one list)."""
    items = source_items(markdown)
    lists = top_lists(html)
    if sum(lists) != len(items):  # items the check cannot pair (in a table, a quote…)
        return []
    problems: list[str] = []
    at = 0
    for count in lists:
        number, line = items[at]
        previous = items[at - 1][0] if at else None
        if number != 1 and previous is not None and number == previous + 1:
            problems.append(
                f"line {line}: item {number}. starts a new numbered list, shown as 1. "
                f"(indent the blocks inside item {previous}. by four spaces)")
        at += count
    return problems


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Warn (a failure under ``--strict``) where a page's numbered list restarts."""
    for problem in list_restarts(page.markdown or "", html):
        log.warning("%s: %s", page.file.src_uri, problem)
    return html
