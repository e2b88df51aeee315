"""What the dashboard's page tests build: the real app over a real uvicorn server on
loopback, an httpx client keeping its session cookie, and readers of the pages' hooks
(``data-count`` and friends, listed at the top of each template)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx

from scheduler.core.httpserver import BackgroundServer
from scheduler.dashboard.app import create_app
from scheduler.ledger.runs import Ledger
from scheduler.settings.load import Settings, load_settings

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def project_settings(root: Path, ledger_url: str, config: str = "") -> Settings:
    """The settings of a project at ``root`` (its config.toml holds ``config``) on the
    ledger at ``ledger_url``."""
    (root / "campaigns").mkdir(exist_ok=True)
    (root / "config.toml").write_text(config, encoding="utf-8")
    return load_settings(root / "config.toml", project_dir=root, database_url=ledger_url)


@contextmanager
def served(ledger: Ledger, settings: Settings, **options: Any) -> Iterator[httpx.Client]:
    """The dashboard over ``ledger`` on a free loopback port, and a client of it (its
    cookies kept, redirects not followed); ``keepalive_s`` sets how often a quiet live
    stream sends a comment."""
    keepalive_s = options.pop("keepalive_s", None)
    app = create_app(settings, ledger, **options)
    if keepalive_s is not None:
        app.state.dashboard.keepalive_s = keepalive_s
    with BackgroundServer(app) as server, httpx.Client(base_url=server.base_url,
                                                       timeout=20) as client:
        yield client


@dataclass
class Event:
    """One server-sent event (a comment line is ``kind`` ``comment``)."""

    kind: str
    data: str = ""
    id: str | None = None


def events(response: httpx.Response) -> Iterator[Event]:
    """The events of a ``text/event-stream`` response, as they arrive."""
    kind, data, event_id = "message", [], None
    for line in response.iter_lines():
        if line.startswith(":"):
            yield Event("comment", line[1:].strip())
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line == "" and (data or event_id is not None):
            yield Event(kind, "\n".join(data), event_id)
            kind, data, event_id = "message", [], None


def next_update(stream: Iterator[Event]) -> Event:
    """The stream's next ``update`` event."""
    for event in stream:
        if event.kind == "update":
            return event
    raise AssertionError("the stream ended without an update")


def form_token(html: str) -> str:
    """The CSRF token of the first form of a page."""
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "the page has no form with a token"
    return found.group(1)


class _Hooks(HTMLParser):
    """Every element with attribute ``name``: its value and its text (tags inside
    included as text)."""

    def __init__(self, name: str) -> None:
        super().__init__(convert_charrefs=True)
        self.name = name
        self.found: list[tuple[str, list[str]]] = []
        self.open: list[tuple[int, list[str]]] = []
        self.depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("input", "br", "img", "meta", "link", "rect", "line"):
            return  # void elements (and the charts' bars): no text, no end tag
        self.depth += 1
        value = dict(attrs).get(self.name)
        if value is not None:
            text: list[str] = []
            self.found.append((value, text))
            self.open.append((self.depth, text))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("input", "br", "img", "meta", "link", "rect", "line"):
            return
        if self.open and self.open[-1][0] == self.depth:
            self.open.pop()
        self.depth -= 1

    def handle_data(self, data: str) -> None:
        for _depth, text in self.open:
            text.append(data)


def hooks(html: str, name: str) -> dict[str, str]:
    """``{value of attribute name: the element's text}`` (the first of each value)."""
    parser = _Hooks(name)
    parser.feed(html)
    out: dict[str, str] = {}
    for value, text in parser.found:
        out.setdefault(value, " ".join("".join(text).split()))
    return out


def numbers(html: str, name: str = "data-count") -> dict[str, int]:
    """:func:`hooks` read as numbers (``1,234`` → 1234; non-numbers left out)."""
    out = {}
    for key, text in hooks(html, name).items():
        digits = text.replace(",", "")
        if digits.isdigit():
            out[key] = int(digits)
    return out


def section(html: str, element_id: str) -> str:
    """The HTML from the element with ``id`` to the end of the page (for a text search
    limited to one part of it)."""
    at = html.find(f'id="{element_id}"')
    assert at >= 0, f"no #{element_id} on the page"
    return html[at:]
