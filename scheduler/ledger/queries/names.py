"""The recipients' names (``recipient_names``, migration 0023): written as a plan is
stored, read by the recipient page's search by name, erased with the person.

- :func:`note_names`: a plan chunk's names (one per recipient: their steps share one
  CSV values dict), ``INSERT … ON CONFLICT DO NOTHING`` in one statement per chunk (SQLite:
  ``executemany`` through the driver; PostgreSQL: ``unnest`` of three arrays);
- :func:`fill_from_deliveries`: the same for rows already in the ledger (the migration,
  a seeded benchmark), read in batches;
- :func:`numbers_named`: a prefix of a name's word (folded) as one index range of
  ``ix_recipient_names_key``: at a million recipients a lookup, not a scan (figure D1);
- :func:`forget_number`: the person's rows deleted (``person forget``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from sqlalchemy import Connection, delete, select, text

from scheduler.core.person_names import name_in, name_keys, prefix_range, search_key
from scheduler.ledger.name_models import recipient_names
from scheduler.ledger.queries.common import raw

_SQLITE = ("INSERT OR IGNORE INTO recipient_names (number, name_key, name) "
           "VALUES (?, ?, ?)")
_POSTGRES = ("INSERT INTO recipient_names (number, name_key, name) "
             "SELECT * FROM unnest(CAST(:n AS text[]), CAST(:k AS text[]), "
             "CAST(:m AS text[])) ON CONFLICT DO NOTHING")
#: Rows read per batch by :func:`fill_from_deliveries`.
FILL_BATCH = 20_000


def _rows_of(pairs: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, str, str]]:
    """``(number, key, name)`` of each ``(number, CSV values dict)``, each (number, key)
    once; a number's steps (the same dict one after another) counted once, a name's keys
    folded once (names repeat: a million-row plan has a few thousand distinct ones)."""
    last_number: str | None = None
    last_values: Any = None
    keys_of: dict[str, list[str]] = {}
    first_name: dict[str, str] = {}  # number -> the name its keys were first given for
    more: dict[str, set[str]] = {}  # number -> its keys, once it came with another name
    for number, values in pairs:
        if values is last_values and number == last_number:
            continue
        last_number, last_values = number, values
        name = name_in(values) if isinstance(values, dict) else None
        if name is None or not number:
            continue
        keys = keys_of.get(name)
        if keys is None:
            keys = keys_of[name] = name_keys(name)
        first = first_name.get(number)
        if first is None:  # a new number: every key of its name (they are distinct)
            first_name[number] = name
            for key in keys:
                yield number, key, name
        elif first != name:  # the same number with another name: the keys not yet given
            given = more.get(number)
            if given is None:
                given = more[number] = set(keys_of[first])
            for key in keys:
                if key not in given:
                    given.add(key)
                    yield number, key, name


def _write(conn: Connection, rows: list[tuple[str, str, str]]) -> int:
    if not rows:
        return 0
    if conn.dialect.name == "sqlite":
        raw(conn).executemany(_SQLITE, rows)
    elif conn.dialect.name == "postgresql":
        numbers, keys, names = (list(column) for column in zip(*rows, strict=True))
        conn.execute(text(_POSTGRES), {"n": numbers, "k": keys, "m": names})
    else:
        for number, key, name in rows:
            if conn.execute(select(recipient_names.c.number).where(
                    recipient_names.c.number == number,
                    recipient_names.c.name_key == key)).first() is None:
                conn.execute(recipient_names.insert().values(number=number, name_key=key,
                                                             name=name))
    return len(rows)


def note_names(conn: Connection, chunk: Iterable[dict[str, Any]]) -> int:
    """Store the names of a plan chunk's rows (``to`` and the ``variables`` dict as the
    planner built them; an erased person's rows carry no values); the keys offered."""
    return _write(conn, list(_rows_of((str(r.get("to") or ""), r.get("variables"))
                                      for r in chunk)))


def _parsed(found: Iterable[Any]) -> Iterator[tuple[str, Any]]:
    for number, variables in found:
        try:
            values = json.loads(variables) if variables else None
        except ValueError:
            continue
        yield str(number or ""), values


def fill_from_deliveries(conn: Connection, run_id: int | None = None) -> int:
    """Store the names of the deliveries already in the ledger (of ``run_id``, or all),
    one per recipient's first step; the keys offered."""
    where = "step = 0 AND variables IS NOT NULL AND variables <> '{}'"
    params: dict[str, Any] = {"after": -1, "batch": FILL_BATCH}
    if run_id is not None:
        where += " AND run_id = :run"
        params["run"] = run_id
    stmt = text(f'SELECT id, "to", variables FROM deliveries WHERE {where} AND id > :after '
                "ORDER BY id LIMIT :batch")
    offered = 0
    while True:
        found = conn.execute(stmt, params).all()
        if not found:
            return offered
        params["after"] = found[-1][0]
        offered += _write(conn, list(_rows_of(_parsed((r[1], r[2]) for r in found))))


def numbers_named(conn: Connection, words: str, limit: int) -> list[tuple[str, str]]:
    """``(number, name)`` of the numbers whose name has a word starting with ``words``
    (case and accents aside), in the keys' order; at most ``limit`` numbers."""
    key = search_key(words)
    if not key:
        return []
    low, high = prefix_range(key)
    n = recipient_names.c
    stmt = (select(n.number, n.name).where(n.name_key >= low, n.name_key < high)
            .order_by(n.name_key, n.number).limit(limit * 3))
    found: dict[str, str] = {}
    for number, name in conn.execute(stmt):
        found.setdefault(str(number), str(name))
        if len(found) >= limit:
            break
    return list(found.items())


def forget_number(conn: Connection, digits: str) -> int:
    """Delete the names kept for ``digits``; how many rows went."""
    done = conn.execute(delete(recipient_names).where(recipient_names.c.number == digits))
    return done.rowcount or 0
