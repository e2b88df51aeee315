"""A person's rows in the ledger: found (export), erased (forget), and an erased number
recognised again (a plan).

The person is found by their number's normalised digits in the columns that hold it
(``deliveries."to"``, ``events.number``, ``replies.number``, ``suppressions.number``,
``label_chats.number``), by their deliveries' ids and message ids (events, replies, link
clicks), and then in **every** text column of every table (reflected, so a table added later
is covered) by the number in any of its formats (the ``needles`` the caller gives).

Erasing keeps every row with its states and times (the run tallies the triggers keep, and
the reports' totals, do not move): the number becomes the person's pseudonym, bodies,
variables, replies' text, payloads and user agents are blanked, and the number's keyed hash
is added to the suppression list. Rows still waiting to be sent are skipped in the same
transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    MetaData,
    String,
    Table,
    Text,
    and_,
    cast,
    false,
    or_,
    select,
    update,
)
from sqlalchemy.types import JSON

from scheduler.ledger.privacy_key import ERASED
from scheduler.ledger.privacy_models import privacy_audit
from scheduler.ledger.queries.tables import (
    deliveries,
    events,
    label_chats,
    link_clicks,
    replies,
    runs,
    suppressions,
)
from scheduler.ledger.states import DeliveryState as S

#: The reason of a person's rows that were waiting when they were erased.
SKIP_REASON = "erased"
#: Rows the dispatcher will not send from: waiting ones (skipped on erasure).
_WAITING = (S.PLANNED, S.HELD)
#: CSV values shorter than this are not searched for elsewhere (a "1" or "SP" is no one's).
MIN_VALUE = 3


def _plain(value: Any) -> Any:
    """A column's value as JSON can say it."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return value


def _row(row: Any) -> dict[str, Any]:
    return {key: _plain(value) for key, value in row._mapping.items()}


def text_columns(table: Table) -> list[Any]:
    """The columns of ``table`` that hold text or JSON."""
    return [c for c in table.columns if isinstance(c.type, (String, Text, JSON))
            or type(c.type).__name__.upper() in ("JSONB", "JSON", "TEXT", "VARCHAR")]


def reflected(conn: Connection) -> list[Table]:
    """Every table of the ledger, as the database has it (Alembic's own left out)."""
    meta = MetaData()
    meta.reflect(bind=conn)
    return [t for name, t in sorted(meta.tables.items()) if name != "alembic_version"]


def _as_text(column: Any) -> Any:
    return column if isinstance(column.type, (String, Text)) else cast(column, Text)


def _matching(table: Table, needles: Sequence[str]) -> Any:
    """A condition: some text column of ``table`` contains one of ``needles``."""
    columns = text_columns(table)
    if not columns or not needles:
        return None
    return or_(*(_as_text(c).contains(n, autoescape=True) for c in columns for n in needles))


def deliveries_of(conn: Connection, digits: str) -> list[dict[str, Any]]:
    """The person's deliveries, every column."""
    stmt = select(deliveries).where(deliveries.c.to == digits).order_by(deliveries.c.id)
    return [_row(r) for r in conn.execute(stmt)]


def csv_values(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The person's CSV values (their deliveries' variables), as text, long enough to look
    for; with their JSON-escaped forms."""
    found: set[str] = set()
    for row in rows:
        try:
            values = json.loads(row.get("variables") or "{}")
        except ValueError:
            continue
        for value in values.values() if isinstance(values, dict) else ():
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                text = str(value).strip()
                if len(text) >= MIN_VALUE:
                    found.add(text)
                    found.add(json.dumps(text)[1:-1])
    return sorted(found, key=lambda v: (-len(v), v))


def _linked(digits: str, ids: list[int], msgids: list[str]) -> dict[str, Any]:
    """How each table with a known link to the person finds their rows."""
    return {
        "deliveries": deliveries.c.to == digits,
        "events": or_(events.c.number == digits,
                      events.c.message_id_norm.in_(msgids) if msgids else false()),
        "replies": or_(replies.c.number == digits,
                       replies.c.delivery_id.in_(ids) if ids else false()),
        "link_clicks": link_clicks.c.delivery_id.in_(ids) if ids else None,
        "suppressions": suppressions.c.number == digits,
        "label_chats": label_chats.c.number == digits,
    }


def _known(name: str) -> Table:
    return {"deliveries": deliveries, "events": events, "replies": replies,
            "link_clicks": link_clicks, "suppressions": suppressions,
            "label_chats": label_chats}[name]


def find_person(conn: Connection, digits: str, needles: Sequence[str],
                extra_hash: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table that is about the person: the linked ones, then any row
    whose text holds the number in one of ``needles``' formats (and the suppression list's
    hash of an already erased number, ``extra_hash``)."""
    mine = deliveries_of(conn, digits)
    ids = [r["id"] for r in mine]
    msgids = sorted({r["message_id_norm"] for r in mine if r["message_id_norm"]})
    found: dict[str, dict[Any, dict[str, Any]]] = {}
    for name, where in _linked(digits, ids, msgids).items():
        if where is None:
            continue
        table = _known(name)
        rows = found.setdefault(name, {})
        for r in conn.execute(select(table).where(where)):
            rows[_key(table, r)] = _row(r)
    if extra_hash is not None:
        for r in conn.execute(select(suppressions).where(suppressions.c.number == extra_hash)):
            found.setdefault("suppressions", {})[_key(suppressions, r)] = _row(r)
    for table in reflected(conn):
        where = _matching(table, needles)
        if where is None:
            continue
        rows = found.setdefault(table.name, {})
        for r in conn.execute(select(table).where(where)):
            rows.setdefault(_key(table, r), _row(r))
    return {name: list(rows.values()) for name, rows in sorted(found.items()) if rows}


def _key(table: Table, row: Any) -> Any:
    pk = [c.name for c in table.primary_key.columns]
    mapping = row._mapping
    return tuple(mapping[c] for c in pk) if pk else tuple(mapping.values())


def runs_of(conn: Connection, run_ids: Iterable[int]) -> list[dict[str, Any]]:
    """The runs a person's deliveries belong to (id, campaign, channel, status, times)."""
    ids = sorted(set(run_ids))
    if not ids:
        return []
    cols = [runs.c.id, runs.c.campaign_name, runs.c.channel, runs.c.status,
            runs.c.created_at, runs.c.started_at, runs.c.finished_at]
    return [_row(r) for r in conn.execute(select(*cols).where(runs.c.id.in_(ids))
                                          .order_by(runs.c.id))]


def _replace(value: Any, needles: Sequence[str], by: str) -> Any:
    if not isinstance(value, str):
        return value
    for needle in needles:
        if needle in value:
            value = value.replace(needle, by)
    return value


def forget(conn: Connection, digits: str, *, needles: Sequence[str], pseudonym: str,
           number_hash: str, list_reason: str, now: datetime) -> dict[str, int]:
    """Erase the person in the caller's transaction; the rows changed per table.

    ``needles``: the number's formats (longest first); ``pseudonym`` replaces the number;
    ``number_hash`` goes on the suppression list with ``list_reason``.
    """
    counts: dict[str, int] = {"deliveries": 0, "deliveries skipped": 0}
    mine = deliveries_of(conn, digits)
    ids = [r["id"] for r in mine]
    msgids = sorted({r["message_id_norm"] for r in mine if r["message_id_norm"]})
    values = csv_values(mine)
    wipe = [*needles, *values]
    d = deliveries.c
    if ids:
        skipped = conn.execute(update(deliveries).where(
            d.to == digits, d.state.in_(_WAITING)).values(
            state=S.SKIPPED, reason=SKIP_REASON, watch=None, gate=None, updated_at=now))
        counts["deliveries skipped"] = skipped.rowcount or 0
        for row in mine:  # per row: the reason and errors may quote the number or a value
            conn.execute(update(deliveries).where(d.id == row["id"]).values(
                to=pseudonym, payload="{}", variables="{}", reply_text=None, details=None,
                choices=None, fallback=None,
                last_error=_replace(row["last_error"], wipe, pseudonym),
                verdict=_replace(row["verdict"], wipe, pseudonym)))
        counts["deliveries"] = len(ids)
    e = events.c
    done = conn.execute(update(events).where(or_(
        e.number == digits, e.message_id_norm.in_(msgids) if msgids else false())).values(
        payload="{}", number=pseudonym))
    counts["events"] = done.rowcount or 0
    r = replies.c
    done = conn.execute(update(replies).where(or_(
        r.number == digits, r.delivery_id.in_(ids) if ids else false())).values(
        text=None, choices=None, number=pseudonym))
    counts["replies"] = done.rowcount or 0
    if ids:
        done = conn.execute(update(link_clicks).where(link_clicks.c.delivery_id.in_(ids))
                            .values(user_agent=None))
        counts["link_clicks"] = done.rowcount or 0
    # the suppression list: a clear entry keeps its place under the pseudonym (the reports'
    # opted-out rows join on it), and the hash is added for later plans
    s = suppressions.c
    listed = conn.execute(select(suppressions).where(s.number == digits)).first()
    if listed is not None:
        conn.execute(update(suppressions).where(s.number == digits).values(
            number=pseudonym, reason=_replace(listed.reason, wipe, pseudonym)))
    if conn.execute(select(s.number).where(s.number == number_hash)).first() is None:
        conn.execute(suppressions.insert().values(number=number_hash, source="erasure",
                                                  reason=list_reason, created_at=now))
    counts["suppressions"] = 1 + (listed is not None)
    done = conn.execute(update(label_chats).where(label_chats.c.number == digits)
                        .values(number=pseudonym))
    counts["label_chats"] = done.rowcount or 0
    from scheduler.ledger.queries.names import forget_number

    if gone := forget_number(conn, digits):  # the search by name's keys (folded names)
        counts["recipient_names"] = gone
    # then every text column of every table: the number in any format, and the person's
    # values in the rows that held it
    for table in reflected(conn):
        where = _matching(table, needles)
        if where is None:
            continue
        columns = text_columns(table)
        changed = 0
        for found in conn.execute(select(table).where(where)).all():
            old = found._mapping
            new = {c.name: _replace(old[c.name], wipe, pseudonym) for c in columns}
            new = {k: v for k, v in new.items() if v != old[k]}
            if not new:
                continue
            pk = list(table.primary_key.columns) or list(table.columns)
            match = and_(*(c == old[c.name] if old[c.name] is not None else c.is_(None)
                           for c in pk))
            conn.execute(update(table).where(match).values(**new))
            changed += 1
        if changed:
            counts[f"{table.name} (text)"] = changed
    return counts


def erased_among(conn: Connection, numbers: Iterable[str],
                 key_of: Callable[[], bytes | None]) -> dict[str, tuple[str, str]]:
    """Which of ``numbers`` were erased at the person's request: number → (the list's
    reason, the person's pseudonym, which their new rows carry instead of the number). The
    key is asked for (``key_of``), and numbers hashed, only when the list holds an erased
    number."""
    from scheduler.ledger.privacy_key import number_hash, pseudonym

    s = suppressions.c
    first = conn.execute(select(s.number).where(s.number >= ERASED, s.number < "erased;")
                         .limit(1)).first()
    if first is None:
        return {}
    key = key_of()
    if key is None:
        return {}
    by_hash = {number_hash(key, n): n for n in set(numbers) if not n.startswith(ERASED)}
    found: dict[str, tuple[str, str]] = {}
    hashes = list(by_hash)
    for i in range(0, len(hashes), 500):
        for listed, reason in conn.execute(select(s.number, s.reason).where(
                s.number.in_(hashes[i : i + 500]))):
            number = by_hash[listed]
            found[number] = (reason or "erased at the person's request",
                             pseudonym(key, number))
    return found


def audit(conn: Connection, *, action: str, subject: str, who: str, via: str,
          reason: str | None, at: datetime, counts: dict[str, int]) -> None:
    """Record one use of export or forget."""
    conn.execute(privacy_audit.insert().values(
        action=action, subject=subject, who=who, via=via, reason=reason, at=at,
        counts=json.dumps(counts, sort_keys=True)))


def audit_rows(conn: Connection, limit: int = 100) -> list[dict[str, Any]]:
    """The latest uses, newest first."""
    a = privacy_audit.c
    return [_row(r) for r in conn.execute(select(privacy_audit).order_by(a.id.desc())
                                          .limit(limit))]


def erased_in_events(conn: Connection, key_of: Callable[[], bytes | None]) -> list[str]:
    """Numbers in clear in ``events`` whose hash is on the suppression list: an erased
    person's late events (a message already on its way when they were erased, reported
    after). Read only when the list holds an erased number."""
    e = events.c
    candidates = conn.execute(select(e.number).distinct().where(
        e.number.is_not(None), e.number.not_like(ERASED + "%"))).scalars().all()
    return sorted(erased_among(conn, candidates, key_of)) if candidates else []
