"""Builders of the tracked-link tests: campaigns with links, and the links in a text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sqlalchemy import select

from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from tests.factories import Project

PUBLIC = "https://hooks.example.com"
#: Two valid recipients (rows 1 and 2).
CSV = "telefone;nome\n11987654321;Ana\n21998765432;João\n"
SHORT_LINK = re.compile(r"https?://[^\s]+/r/[A-Za-z0-9_-]+")


def with_public_address(project: Project, base: str = PUBLIC) -> None:
    """Give the project a public receiver address (``webhook_url``)."""
    project.write("config.toml", f'webhook_url = "{base}/webhooks/session"\n')


def link_campaign(project: Project, text: str, *, channel: str = "whatsapp",
                  extra: str = "", steps: str = "") -> Path:
    """A one-step text campaign over :data:`CSV` (``extra``: top-level keys)."""
    project.write("data/r.csv", CSV)
    senders = 'senders = ["s1"]\n' if channel == "whatsapp" else ""
    kind = 'type = "text"\n' if channel == "whatsapp" else ""
    return project.campaign(
        f'name = "links"\nchannel = "{channel}"\n{senders}{extra}\n'
        '[recipients]\nfile = "data/r.csv"\nphone_column = "telefone"\n\n'
        f"[[steps]]\n{kind}text = '''{text}'''\n{steps}")


def short_links(text: str) -> list[str]:
    """The short links in a rendered text."""
    return SHORT_LINK.findall(text)


def stored(ledger: Ledger, name: str) -> list[dict[str, Any]]:
    """Every row of a ledger table (``deliveries``, ``links``, ``link_clicks`` …), in the
    order of its primary key."""
    table = getattr(tables, name)
    with ledger.engine.connect() as conn:
        found = conn.execute(select(table).order_by(*table.primary_key.columns)).mappings()
        return [dict(r) for r in found]
