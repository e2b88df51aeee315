"""Sandbox test fixtures: one valid body per message type and a connected, wired session."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

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
            **base, "document": "https://cdn.example.com/terms.pdf",
            "mimetype": "application/pdf", "fileName": "terms.pdf",
        },
        "sticker": {**base, "sticker": "https://cdn.example.com/smile.webp"},
        "location": {
            **base, "latitude": -23.55, "longitude": -46.63, "name": "Loja", "address": "Av. P",
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
            **base, "title": "Menu", "description": "Escolha", "buttonText": "Ver",
            "footerText": "rodapé",
            "sections": [{"title": "A", "rows": [
                {"rowId": "r1", "title": "Um", "description": "primeiro"},
                {"rowId": "r2", "title": "Dois"},
            ]}],
        },
        "carousel": {
            **base,
            "cards": [
                {"header": {"type": "image", "title": "Card 1", "media": "https://x.io/1.jpg"},
                 "body": "Primeiro",
                 "buttons": [{"type": "quick_reply", "title": "Quero", "id": "q1"}]},
                {"body": "Segundo"},
            ],
        },
        "nativeflow": {
            **base, "title": "T", "body": "Corpo", "footer": "F",
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
