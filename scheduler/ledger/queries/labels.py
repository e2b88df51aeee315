"""Each session's labels and what they are on: the receiver's upserts and the plan's reads.

Why upserts guarded by a rank: label events arrive late, twice and out of order (the
service retries deliveries, and a full sync replays the whole state beside real-time
events), and the state they leave must not depend on that order. Each row keeps the
``rank`` of the fact it holds (event time in ms, then full sync over real time, then a fixed
tie-break: see :mod:`scheduler.tracking.label_facts`); one ``INSERT … ON CONFLICT DO UPDATE``
replaces the row only with a higher rank, so a repeated or older fact changes nothing and no
read-then-write race exists between concurrent receivers. A label's ``name`` and ``color``
are kept per field (with their own rank): an edit that carries no name (a deletion, often)
must not erase the name an older edit gave, whichever arrives first.

One statement per event, on the receiver's path; label events are rare beside message
events (a few per labelled chat), so no batching.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Connection, case, select

from scheduler.ledger.queries.common import insert_or_ignore
from scheduler.ledger.queries.tables import label_chats, label_messages, labels


class LabelRow(NamedTuple):
    """A session's label as its events last said it."""

    session_id: str
    label_id: str
    name: str | None
    color: int | None
    deleted: bool


class LabelledChat(NamedTuple):
    """A chat a label is on now (``number``: its phone digits; None for ``@lid``/groups)."""

    session_id: str
    label_id: str
    chat: str
    number: str | None


def _newer(stmt: Any, table: Any, column: str = "rank") -> Any:
    """``excluded.rank > table.<column>`` (a NULL column counts as older than anything)."""
    held = table.c[column]
    return (held.is_(None)) | (stmt.excluded.rank > held)


def upsert_label(conn: Connection, row: dict[str, Any]) -> None:
    """Keep a ``labels.edit`` fact: deleted by the whole fact's rank, name and color each by
    the rank of the latest fact that carried one (see the module doc)."""
    stmt = insert_or_ignore(conn.dialect.name, labels).values(
        **row, name_rank=row["rank"] if row.get("name") is not None else None,
        color_rank=row["rank"] if row.get("color") is not None else None)
    x, t = stmt.excluded, labels.c
    newer = _newer(stmt, labels)
    has_name = x.name.is_not(None) & _newer(stmt, labels, "name_rank")
    has_color = x.color.is_not(None) & _newer(stmt, labels, "color_rank")
    conn.execute(stmt.on_conflict_do_update(
        index_elements=[t.session_id, t.label_id],
        set_={
            "deleted": case((newer, x.deleted), else_=t.deleted),
            "rank": case((newer, x.rank), else_=t.rank),
            "name": case((has_name, x.name), else_=t.name),
            "name_rank": case((has_name, x.rank), else_=t.name_rank),
            "color": case((has_color, x.color), else_=t.color),
            "color_rank": case((has_color, x.rank), else_=t.color_rank),
            "updated_at": case((newer | has_name | has_color, x.updated_at),
                               else_=t.updated_at),
        }))


def _upsert_association(conn: Connection, table: Any, keys: Sequence[str],
                        row: dict[str, Any], extra: Sequence[str] = ()) -> None:
    stmt = insert_or_ignore(conn.dialect.name, table).values(**row)
    x = stmt.excluded
    conn.execute(stmt.on_conflict_do_update(
        index_elements=[table.c[k] for k in keys],
        set_={name: x[name] for name in ("labeled", "rank", "updated_at", *extra)},
        where=stmt.excluded.rank > table.c.rank))


def upsert_chat(conn: Connection, row: dict[str, Any]) -> None:
    """Keep a chat association fact (applied or removed) if it is newer than the held one."""
    _upsert_association(conn, label_chats, ("session_id", "label_id", "chat"), row,
                        ("number",))


def upsert_message(conn: Connection, row: dict[str, Any]) -> None:
    """Keep a message association fact if it is newer than the held one."""
    _upsert_association(conn, label_messages,
                        ("session_id", "label_id", "chat", "message_id"), row)


def session_labels(conn: Connection, session_ids: Sequence[str]) -> list[LabelRow]:
    """Every label the sessions' events named (deleted ones too), by session and id."""
    if not session_ids:
        return []
    t = labels.c
    stmt = select(t.session_id, t.label_id, t.name, t.color, t.deleted).where(
        t.session_id.in_(list(session_ids))).order_by(t.session_id, t.label_id)
    return [LabelRow(s, i, n, c, bool(d)) for s, i, n, c, d in conn.execute(stmt)]


def labelled_chats(conn: Connection, session_ids: Sequence[str]) -> list[LabelledChat]:
    """The chats a label is on now (``labeled`` true), in the sessions."""
    if not session_ids:
        return []
    t = label_chats.c
    stmt = select(t.session_id, t.label_id, t.chat, t.number).where(
        t.session_id.in_(list(session_ids)), t.labeled.is_(True)
    ).order_by(t.session_id, t.label_id, t.chat)
    return [LabelledChat(*row) for row in conn.execute(stmt)]


def labelled_messages(conn: Connection, session_ids: Sequence[str]
                      ) -> list[tuple[str, str, str, str]]:
    """``(session, label, chat, message id)`` of the messages a label is on now."""
    if not session_ids:
        return []
    t = label_messages.c
    stmt = select(t.session_id, t.label_id, t.chat, t.message_id).where(
        t.session_id.in_(list(session_ids)), t.labeled.is_(True)
    ).order_by(t.session_id, t.label_id, t.chat, t.message_id)
    return [(s, i, c, m) for s, i, c, m in conn.execute(stmt)]


def labelled_sessions(conn: Connection) -> list[str]:
    """Every session with a stored label, in order."""
    stmt = select(labels.c.session_id).distinct().order_by(labels.c.session_id)
    return [str(s) for s in conn.execute(stmt).scalars()]
