"""Helpers of the sandbox tests: a valid body per message type, unique session ids, and the
session handles the fixtures give (``Wired``, ``Live``)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from scheduler.sandbox.testing import SandboxHandle, WebhookSink

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


_ids = itertools.count(1)


def unique_id(prefix: str = "t") -> str:
    """A session id no other test of the run uses."""
    return f"{prefix}{next(_ids)}"


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
