"""A person's rows in the ledger: found (export), erased (forget), and an erased number
recognised again (a plan).

The person is found by their number's normalised digits: each table that holds a person's
data is read by one of its indexes, from the number or from the person's delivery ids,
message ids and runs (:mod:`scheduler.ledger.person_rows` says which index each uses); the
small tables (runs, campaigns, the audit, …, and any table this version does not know) are
searched in every text column for the number in any of its formats (the ``needles`` the
caller gives). Nothing that grows with the recipients is scanned: an export or an erasure
costs a few index lookups whatever the ledger's size (figure PV1).

Erasing keeps every row with its states and times (the run tallies the triggers keep, and
the reports' totals, do not move): the number becomes the person's pseudonym, bodies,
variables, replies' text, payloads and user agents are blanked, the person's CSV values
are replaced in the free-text columns, the names kept for the search by name are deleted,
and the number's keyed hash is added to the suppression list. Rows still waiting to be sent
are skipped in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    String,
    Table,
    Text,
    and_,
    cast,
    delete,
    or_,
    select,
    update,
)
from sqlalchemy.types import JSON

from scheduler.ledger import person_rows as pr
from scheduler.ledger.privacy_key import ERASED
from scheduler.ledger.privacy_models import privacy_audit
from scheduler.ledger.queries.tables import deliveries, events, runs, suppressions
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
    """The columns of ``table`` that hold text or JSON (a model's ``AutoString`` too)."""
    return [c for c in table.columns
            if isinstance(getattr(c.type, "impl", c.type), (String, Text, JSON))
            or type(c.type).__name__.upper() in ("JSONB", "JSON", "TEXT", "VARCHAR")]


def _as_text(column: Any) -> Any:
    return column if isinstance(getattr(column.type, "impl", column.type), (String, Text)) \
        else cast(column, Text)


def _matching(table: Table, needles: Sequence[str]) -> Any:
    """A condition: some text column of ``table`` contains one of ``needles``."""
    columns = text_columns(table)
    if not columns or not needles:
        return None
    return or_(*(_as_text(c).contains(n, autoescape=True) for c in columns for n in needles))


def deliveries_of(conn: Connection, digits: str) -> list[dict[str, Any]]:
    """The person's deliveries, every column (``ix_deliveries_to``)."""
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


def _key(table: Table, row: Any) -> Any:
    pk = [c.name for c in table.primary_key.columns]
    mapping = row._mapping
    return tuple(mapping[c] for c in pk) if pk else tuple(mapping.values())


def _held(conn: Connection, all_tables: Mapping[str, Table], person: pr.Person
          ) -> Iterable[tuple[pr.Holder, Table, Sequence[Any]]]:
    """Each holder table's rows of the person, by its index (the ledger's tables only)."""
    found: pr.Found = {}
    for holder in pr.HOLDERS:
        table = all_tables.get(holder.table)
        if table is None:
            continue
        where = holder.where(table, person, found)
        if where is None:
            continue
        rows = conn.execute(select(table).where(where)).all()
        if holder.theirs is not None:
            rows = list(holder.theirs(conn, person, rows))
        found[holder.table] = [dict(r._mapping) for r in rows]
        yield holder, table, rows


def _person(conn: Connection, digits: str, all_tables: Mapping[str, Table],
            mine: list[dict[str, Any]]) -> pr.Person:
    return pr.Person.of(conn, digits, mine, all_tables.get("labels"))


def find_person(conn: Connection, digits: str, needles: Sequence[str],
                extra_hash: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every row that is about the person: each holder table's by its index, then the small
    tables' whose text holds the number in one of ``needles``' formats (and the suppression
    list's hash of an already erased number, ``extra_hash``)."""
    all_tables = pr.tables(conn)
    person = _person(conn, digits, all_tables, deliveries_of(conn, digits))
    found: dict[str, dict[Any, dict[str, Any]]] = {}
    for _holder, table, rows in _held(conn, all_tables, person):
        kept = found.setdefault(table.name, {})
        for r in rows:
            kept[_key(table, r)] = _row(r)
    if extra_hash is not None:
        for r in conn.execute(select(suppressions).where(suppressions.c.number == extra_hash)):
            found.setdefault("suppressions", {})[_key(suppressions, r)] = _row(r)
    for table in pr.swept(all_tables):
        where = _matching(table, needles)
        if where is None:
            continue
        kept = found.setdefault(table.name, {})
        for r in conn.execute(select(table).where(where)):
            kept.setdefault(_key(table, r), _row(r))
    return {name: list(rows.values()) for name, rows in sorted(found.items()) if rows}


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


def _match(table: Table, old: Any) -> Any:
    """The row ``old`` by its primary key (every column when it has none)."""
    pk = list(table.primary_key.columns) or list(table.columns)
    return and_(*(c == old[c.name] if old[c.name] is not None else c.is_(None) for c in pk))


def _erase_rows(conn: Connection, holder: pr.Holder, table: Table, rows: Sequence[Any], *,
                needles: Sequence[str], wipe: Sequence[str], pseudonym: str) -> int:
    """Erase a holder's rows of the person (see :class:`~scheduler.ledger.person_rows.
    Holder`); how many changed."""
    if holder.delete:
        for r in rows:
            conn.execute(delete(table).where(_match(table, r._mapping)))
        return len(rows)
    columns = {c.name for c in text_columns(table)}
    changed = 0
    for r in rows:
        old = r._mapping
        new: dict[str, Any] = {}
        for name in columns:
            by = wipe if name in holder.free else needles
            new[name] = _replace(old[name], by, pseudonym)
        new.update({k: v for k, v in holder.blank.items() if k in old})
        new.update({k: pseudonym for k in holder.alias if old.get(k) is not None})
        new = {k: v for k, v in new.items() if v != old[k]}
        if new:
            conn.execute(update(table).where(_match(table, old)).values(**new))
            changed += 1
    return changed


def forget(conn: Connection, digits: str, *, needles: Sequence[str], pseudonym: str,
           number_hash: str, list_reason: str, now: datetime) -> dict[str, int]:
    """Erase the person in the caller's transaction; the rows changed per table.

    ``needles``: the number's formats (longest first); ``pseudonym`` replaces the number;
    ``number_hash`` goes on the suppression list with ``list_reason``.
    """
    counts: dict[str, int] = {"deliveries": 0, "deliveries skipped": 0}
    all_tables = pr.tables(conn)
    mine = deliveries_of(conn, digits)
    person = _person(conn, digits, all_tables, mine)
    wipe = [*needles, *csv_values(mine)]
    d = deliveries.c
    if mine:
        skipped = conn.execute(update(deliveries).where(
            d.to == digits, d.state.in_(_WAITING)).values(
            state=S.SKIPPED, reason=SKIP_REASON, watch=None, gate=None, updated_at=now))
        counts["deliveries skipped"] = skipped.rowcount or 0
    for holder, table, rows in list(_held(conn, all_tables, person)):
        done = _erase_rows(conn, holder, table, rows, needles=needles, wipe=wipe,
                           pseudonym=pseudonym)
        if done or holder.table in ("deliveries", "events", "replies", "label_chats"):
            counts[holder.table] = done
    # the suppression list: a clear entry kept its place under the pseudonym (the reports'
    # opted-out rows join on it); the hash is added for later plans
    s = suppressions.c
    listed = counts.pop("suppressions", 0)
    if conn.execute(select(s.number).where(s.number == number_hash)).first() is None:
        conn.execute(suppressions.insert().values(number=number_hash, source="erasure",
                                                  reason=list_reason, created_at=now))
    counts["suppressions"] = 1 + listed
    # then the small tables: the number in any format, and the person's values in the rows
    # that held it
    for table in pr.swept(all_tables):
        where = _matching(table, needles)
        if where is None:
            continue
        columns = text_columns(table)
        changed = 0
        for found in conn.execute(select(table).where(where)).all():
            old = found._mapping
            new = {c.name: _replace(old[c.name], wipe, pseudonym) for c in columns}
            new = {k: v for k, v in new.items() if v != old[k]}
            if new:
                conn.execute(update(table).where(_match(table, old)).values(**new))
                changed += 1
        if changed:
            counts[f"{table.name} (text)"] = changed
    return counts


def erased_reasons(conn: Connection) -> dict[str, str]:
    """The suppression list's erased numbers: keyed hash -> the list's reason ("erased at
    the person's request on …"). Few rows (one per ``person forget``), read by the primary
    key's range."""
    s = suppressions.c
    return {number: reason or "erased at the person's request" for number, reason in
            conn.execute(select(s.number, s.reason).where(
                s.number >= ERASED, s.number < "erased;", s.source == "erasure"))}


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


def erased_in_events(conn: Connection, key_of: Callable[[], bytes | None]) -> list[str]:
    """Numbers in clear in ``events`` whose hash is on the suppression list: an erased
    person's late events (a message already on its way when they were erased, reported
    after). Read only when the list holds an erased number."""
    e = events.c
    candidates = conn.execute(select(e.number).distinct().where(
        e.number.is_not(None), e.number.not_like(ERASED + "%"))).scalars().all()
    return sorted(erased_among(conn, candidates, key_of)) if candidates else []
