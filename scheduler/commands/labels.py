"""``campaign labels [SESSION ...] [--json]``: the label state the receiver kept.

Per session: each label (id, name, color, deleted) with the chats it is on now, split into
phone numbers (which a campaign's ``labels`` / ``exclude_labels`` can match) and chats that
cannot match a phone (``@lid`` JIDs not resolved to a number, groups), and the messages it
is on. Read from the project's ledger.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import typer

from scheduler.core.errors import SchedulerError


def label_state(session_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Session → its labels with their chats and messages (every session when none given)."""
    from scheduler.ledger.label_state import label_report
    from scheduler.wiring import open_project

    _, ledger = open_project()
    sessions, labels, chats, messages = label_report(ledger.engine, session_ids)
    on_chats: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for chat in chats:
        on_chats[(chat.session_id, chat.label_id)].append(chat)
    on_messages: dict[tuple[str, str], int] = defaultdict(int)
    for session, label_id, _chat, _message in messages:
        on_messages[(session, label_id)] += 1
    out: dict[str, list[dict[str, Any]]] = {s: [] for s in sessions}
    for label in labels:
        key = (label.session_id, label.label_id)
        found = on_chats.get(key, [])
        out[label.session_id].append({
            "id": label.label_id, "name": label.name, "color": label.color,
            "deleted": label.deleted,
            "numbers": sorted(c.number for c in found if c.number),
            "unresolved_chats": sorted(c.chat for c in found if not c.number),
            "messages": on_messages.get(key, 0)})
    return out


def labels_command(
    sessions: list[str] = typer.Argument(None, help="Session ids (default: every session "
                                                    "with label events)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The labels of each session and the chats they are on, as label events left them."""
    state = label_state(list(sessions or []))
    if as_json:
        typer.echo(json.dumps(state, ensure_ascii=False, indent=2))
        return
    if not state:
        raise SchedulerError("no label events stored yet: the receiver keeps them while "
                             "`campaign serve` or a run listens")
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=True)
    for session, labels in state.items():
        console.print(f"session {session}: {len(labels)} labels", markup=False)
        for label in labels:
            gone = " (deleted)" if label["deleted"] else ""
            lids = f", {len(label['unresolved_chats'])} @lid/group chats" \
                if label["unresolved_chats"] else ""
            console.print(f"  {label['id']}  {label['name'] or '(no name)'}{gone}: "
                          f"{len(label['numbers'])} numbers{lids}, "
                          f"{label['messages']} messages", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``labels`` to the ``campaign`` command."""
    app.command("labels")(labels_command)
