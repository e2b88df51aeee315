"""Sandbox test fixtures: valid bodies per message type, and sessions on a shared sandbox.

Most tests need no special settings: they get ``live``, their own connected session on a
sandbox and webhook sink shared by the whole test module (starting and stopping uvicorn
costs tenths of a second). Tests that change settings use ``make_sandbox`` instead.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from scheduler.sandbox import SandboxConfig
from scheduler.sandbox.testing import QUIET_SANDBOX, SandboxHandle, WebhookSink

TO = "5511988887777"
SESSION = "s1"


def sample_bodies(session_id: str = SESSION, to: str = TO) -> dict[str, dict[str, Any]]:
    """A valid body for every send endpoint, keyed by message type."""
    base = {"sessionId": session_id, "to": to}
    return {
        "text": {**base, "text": "Olá!"},
        "image": {**base, "image": "https://cdn.example.com/promo.jpg", "caption": "Promo"},
        "video": {**base, "video": "https://cdn.example.com/clip.mp4", "caption": "Clip"},
        "audio": {**base, "audio": "https://cdn.example.com/note.ogg", "ptt": True},
        "document": {
            **base,
            "document": "https://cdn.example.com/terms.pdf",
            "mimetype": "application/pdf",
            "fileName": "terms.pdf",
        },
        "sticker": {**base, "sticker": "https://cdn.example.com/smile.webp"},
        "location": {
            **base,
            "latitude": -23.55,
            "longitude": -46.63,
            "name": "Loja",
            "address": "Av. P",
        },
        "contact": {**base, "contactName": "Suporte", "contactPhone": "5511900001111"},
        "poll": {**base, "question": "Qual dia?", "options": ["Seg", "Ter"]},
        "reaction": {**base, "messageId": "3EB0ABCDEF", "emoji": "👍"},
        "album": {
            **base,
            "media": [
                {"type": "image", "url": "https://cdn.example.com/1.jpg", "caption": "um"},
                {"type": "video", "url": "https://cdn.example.com/2.mp4"},
                {"type": "image", "url": "https://cdn.example.com/3.png"},
            ],
            "caption": "Álbum",
        },
        "list": {
            **base,
            "title": "Menu",
            "description": "Escolha",
            "buttonText": "Ver",
            "footerText": "rodapé",
            "sections": [
                {
                    "title": "A",
                    "rows": [
                        {"rowId": "r1", "title": "Um", "description": "primeiro"},
                        {"rowId": "r2", "title": "Dois"},
                    ],
                }
            ],
        },
        "carousel": {
            **base,
            "cards": [
                {
                    "header": {"type": "image", "title": "Card 1", "media": "https://x.io/1.jpg"},
                    "body": "Primeiro",
                    "buttons": [{"type": "quick_reply", "title": "Quero", "id": "q1"}],
                },
                {"body": "Segundo"},
            ],
        },
        "nativeflow": {
            **base,
            "title": "T",
            "body": "Corpo",
            "footer": "F",
            "buttons": [{"type": "copy", "title": "Copiar", "copy_code": "ABC"}],
        },
        "pix": {**base, "content": "Pague aqui", "pixKey": "chave@pix.com", "pixAmount": 10.5},
    }


@dataclass
class Wired:
    """A sandbox with a connected session ``s1`` whose webhook is the sink."""

    sandbox: Any
    sink: Any
    session_id: str = SESSION


@pytest.fixture
def bodies() -> dict[str, dict[str, Any]]:
    """One valid body per message type for session ``s1``."""
    return sample_bodies()


@pytest.fixture
def wired(sandbox: Any, webhook_sink: Any) -> Wired:
    """The quiet sandbox with ``s1`` connected and posting to ``webhook_sink``."""
    sandbox.create_session(SESSION, webhook_url=webhook_sink.url)
    return Wired(sandbox, webhook_sink)


_ids = itertools.count(1)


def unique_id(prefix: str = "t") -> str:
    """A session id no other test of the run uses."""
    return f"{prefix}{next(_ids)}"


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[SandboxHandle, WebhookSink]]:
    """A quiet sandbox and a webhook sink for the whole test module."""
    box = SandboxHandle(SandboxConfig(**QUIET_SANDBOX))
    sink = WebhookSink()
    yield box, sink
    closers = [threading.Thread(target=close) for close in (box.close, sink.close)]
    for thread in closers:
        thread.start()
    for thread in closers:
        thread.join(timeout=15)


@dataclass
class Live:
    """A connected session of its own on the module's shared sandbox, wired to the sink."""

    sandbox: SandboxHandle
    sink: WebhookSink
    session_id: str
    start: int
    bodies: dict[str, dict[str, Any]] = field(default_factory=dict)

    def send(self, kind: str, body: dict[str, Any] | None = None, **change: Any) -> httpx.Response:
        """Send ``body`` (default: the sample of ``kind``) with ``change`` applied."""
        return self.sandbox.send(kind, {**(body or self.bodies[kind]), **change})

    def sends(self) -> list[dict[str, Any]]:
        """What the sandbox accepted for this session during this test."""
        return [e for e in self.sandbox.sends(self.start) if e["sessionId"] == self.session_id]

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        """Events of this session received so far (of one name, if given)."""
        return [
            e
            for e in self.sink.snapshot()
            if e.get("sessionId") == self.session_id and (name is None or e.get("event") == name)
        ]

    def wait_for(
        self,
        predicate: Callable[[dict[str, Any]], bool] = lambda e: True,
        count: int = 1,
    ) -> list[dict[str, Any]]:
        """Wait for ``count`` events of this session that satisfy ``predicate``."""
        return self.sink.wait_for(
            lambda e: e.get("sessionId") == self.session_id and predicate(e), count=count
        )


@pytest.fixture
def live(shared: tuple[SandboxHandle, WebhookSink]) -> Live:
    """A fresh connected session on the shared sandbox, with sample bodies addressed to it."""
    box, sink = shared
    session_id = unique_id("live")
    box.create_session(session_id, webhook_url=sink.url)
    return Live(box, sink, session_id, len(box.state.world.sends), sample_bodies(session_id))
