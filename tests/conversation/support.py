"""Builders of the conversation tests: a campaign whose steps follow the replies (a
question, two answers, a reminder), the sandbox's script of who answers what, and the
messages each number got, read from the sandbox's record."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from tests.recycling.support import number, phone

CAMPAIGN_FILE = """\
name = "conversa"
channel = "whatsapp"
senders = ["s1"]

[recipients]
file = "data/pessoas.csv"
phone_column = "telefone"
default_country = "BR"

[schedule]
timezone = "UTC"

[pace]
rate = "20/s"

[replies]
wait = "8s"
keywords = { "remarcar" = "reagendar" }

[[steps]]
name = "pergunta"
type = "text"
text = "PERGUNTA {{ nome }}: 1 confirma, 2 reagenda"

[[steps]]
name = "confirmar"
type = "text"
text = "CONFIRMAR {{ nome }}"
when = { reply_matches = "^\\\\s*(1|sim)" }

[[steps]]
name = "reagendar"
type = "text"
text = "REAGENDAR {{ nome }}"
when = { reply_matches = "^\\\\s*(2|reagend)", step = "pergunta" }

[[steps]]
name = "lembrete"
type = "text"
text = "LEMBRETE {{ nome }}"
when = { not_replied_within = "3s", step = "pergunta" }
"""

#: Per kind of recipient: its scripted replies, and the messages it must get.
KINDS: list[tuple[list[dict[str, object] | None], set[str]]] = [
    ([{"text": "1", "after_s": 0.3}], {"PERGUNTA", "CONFIRMAR"}),
    ([{"text": "2 por favor", "after_s": 0.3}], {"PERGUNTA", "REAGENDAR"}),
    ([None], {"PERGUNTA", "LEMBRETE"}),
    ([{"text": "quem é?", "after_s": 0.3}], {"PERGUNTA"}),  # to answer, no branch
    ([{"text": "Sim", "after_s": 5}], {"PERGUNTA", "LEMBRETE", "CONFIRMAR"}),  # after 3 s
    ([{"text": "2", "after_s": 9}], {"PERGUNTA", "LEMBRETE"}),  # after the 8 s wait
    ([{"text": "Remarcar!", "after_s": 0.3}], {"PERGUNTA", "REAGENDAR"}),  # the keyword
]
PER_KIND = 3
PEOPLE = len(KINDS) * PER_KIND


def kind_of(i: int) -> int:
    """The kind of recipient ``i`` (an index of :data:`KINDS`)."""
    return i % len(KINDS)


def write_project(root: Path, senders: tuple[str, ...] = ("s1",)) -> Path:
    """The project of the conversation campaign in ``root``; its campaign file."""
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    rows = ["nome;telefone"] + [f"P{i};{phone(i)}" for i in range(PEOPLE)]
    (root / "data" / "pessoas.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    path = root / "campaigns" / "conversa.toml"
    names = ", ".join(f'"{s}"' for s in senders)
    path.write_text(CAMPAIGN_FILE.replace('senders = ["s1"]', f"senders = [{names}]"),
                    encoding="utf-8")
    return path


def messages_by_number(sends: list[dict[str, Any]]) -> dict[str, Counter[str]]:
    """Each number's messages the service took, by their first word."""
    got: dict[str, Counter[str]] = defaultdict(Counter)
    for send in sends:
        if send["path"].endswith("/messages/send/text"):
            got[send["to"]][send["body"]["text"].split()[0]] += 1
    return got


def reply_script() -> dict[str, list[dict[str, Any] | None]]:
    """``whatsapp_replies_by_number`` of the recipients: each kind's replies."""
    return {number(i): KINDS[kind_of(i)][0] for i in range(PEOPLE)}
