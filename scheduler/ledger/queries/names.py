"""The recipients' names (``person_names``, ``person_name_keys``, ``recipient_names``,
migration 0026): written as a plan is stored, read by the recipient page's search by name,
erased with the person (:mod:`scheduler.ledger.person_rows`).

- :func:`note_names`: a plan chunk's names (one per recipient: their steps share one
  CSV values dict, a row with an invalid number has none): the chunk's names not yet
  known to the plan (``ids``, kept by its writer) inserted once with their keys, their
  ids read with one select, then one ``(number, name_id)`` row per recipient in one
  statement (SQLite: ``executemany`` through the driver; PostgreSQL: ``unnest`` of arrays);
- :func:`fill_from_deliveries`: the same for rows already in the ledger (the migration,
  a seeded benchmark), read in batches;
- :func:`numbers_named`: a prefix of a name's word (folded) as one range of
  ``person_name_keys``' primary key (the distinct names', thousands of rows), then the
  numbers of at most :data:`NAMES_AT_MOST` of those names with one bounded read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection, Table, select, text

from scheduler.core.person_names import name_in, name_keys, prefix_range, search_key
from scheduler.ledger.name_models import person_name_keys, person_names, recipient_names
from scheduler.ledger.queries.common import raw

#: Rows read per batch by :func:`fill_from_deliveries`.
FILL_BATCH = 20_000
#: A search reads the numbers of at most this many names (the first in the keys' order).
NAMES_AT_MOST = 500
#: Names whose ids one select reads (SQLite's bound parameters).
_IDS_AT_ONCE = 500
_INVALID = "invalid_number"  # a skipped row's reason: the number was not one

_SQLITE = {
    "names": "INSERT OR IGNORE INTO person_names (name) VALUES (?)",
    "keys": "INSERT OR IGNORE INTO person_name_keys (name_key, name_id) VALUES (?, ?)",
    "rows": "INSERT OR IGNORE INTO recipient_names (number, name_id) VALUES (?, ?)",
}
_POSTGRES = {
    "names": "INSERT INTO person_names (name) SELECT * FROM unnest(CAST(:a AS text[])) "
             "ON CONFLICT DO NOTHING",
    "keys": "INSERT INTO person_name_keys (name_key, name_id) SELECT * FROM "
            "unnest(CAST(:a AS text[]), CAST(:b AS integer[])) ON CONFLICT DO NOTHING",
    "rows": "INSERT INTO recipient_names (number, name_id) SELECT * FROM "
            "unnest(CAST(:a AS text[]), CAST(:b AS integer[])) ON CONFLICT DO NOTHING",
}
_TABLES: dict[str, tuple[Table, tuple[str, ...]]] = {
    "names": (person_names, ("name",)),
    "keys": (person_name_keys, ("name_key", "name_id")),
    "rows": (recipient_names, ("number", "name_id"))}


def _pairs_of(found: Iterable[tuple[str, Any]]) -> list[tuple[str, str]]:
    """``(number, name)`` of each ``(number, CSV values dict)`` with a name; a number's
    steps (the same dict one after another) counted once."""
    pairs: list[tuple[str, str]] = []
    last_number: str | None = None
    last_values: Any = None
    for number, values in found:
        if values is last_values and number == last_number:
            continue
        last_number, last_values = number, values
        name = name_in(values) if isinstance(values, dict) else None
        if name is not None and number:
            pairs.append((number, name))
    return pairs


def _insert(conn: Connection, what: str, rows: list[tuple[Any, ...]]) -> None:
    if not rows:
        return
    if conn.dialect.name == "sqlite":
        raw(conn).executemany(_SQLITE[what], rows)
    elif conn.dialect.name == "postgresql":
        arrays = [list(column) for column in zip(*rows, strict=True)]
        conn.execute(text(_POSTGRES[what]), dict(zip("ab", arrays, strict=False)))
    else:  # any other database: one row at a time, a duplicate skipped
        table, columns = _TABLES[what]
        for row in rows:
            values = dict(zip(columns, row, strict=True))
            there = select(*table.c).where(*(table.c[k] == v for k, v in values.items()))
            if conn.execute(there).first() is None:
                conn.execute(table.insert().values(**values))


def _ids_of(conn: Connection, names: set[str], ids: dict[str, int]) -> None:
    """Put the ids of ``names`` (not in ``ids``) in ``ids``, stored with their keys when
    new."""
    _insert(conn, "names", [(name,) for name in sorted(names)])
    n = person_names.c
    wanted = sorted(names)
    fresh: dict[str, int] = {}
    for i in range(0, len(wanted), _IDS_AT_ONCE):
        batch = wanted[i:i + _IDS_AT_ONCE]
        fresh.update((str(name), int(id_)) for id_, name in conn.execute(
            select(n.id, n.name).where(n.name.in_(batch))))
    _insert(conn, "keys", [(key, id_) for name, id_ in fresh.items()
                           for key in name_keys(name)])
    ids.update(fresh)


#: PostgreSQL: the advisory lock (any constant; "name" in ASCII) a plan's transaction holds
#: from its first names on. Two plans stored at once may add the same new name or number,
#: each waiting on the other's unique entry in the order of its own chunks: a deadlock
#: when the orders cross. One lock makes the second plan's names wait for the first's
#: commit instead (SQLite's plans already take the write lock one at a time).
NAMES_LOCK = 0x6E616D65


def _write(conn: Connection, pairs: list[tuple[str, str]], ids: dict[str, int]) -> int:
    if not pairs:
        return 0
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": NAMES_LOCK})
    new = {name for _number, name in pairs if name not in ids}
    if new:
        _ids_of(conn, new, ids)
    # in the numbers' order, B-tree inserts one after another land in the same pages (P1's
    # 1,000,000 numbers on SQLite: 1.1 s + 0.3 s to sort, not 1.8 s); the same set stored
    _insert(conn, "rows", sorted([(number, ids[name]) for number, name in pairs],
                                 key=itemgetter(0)))  # str keys: list.sort's fast compare
    return len(pairs)


def note_names(conn: Connection, chunk: Iterable[dict[str, Any]],
               ids: dict[str, int] | None = None) -> int:
    """Store the names of a plan chunk's rows (``to`` and the ``variables`` dict as the
    planner built them; an erased person's rows carry no values, a row with an invalid
    number is left out); ``ids``: the names' ids known so far (one dict for a whole plan,
    updated here). The ``(number, name)`` pairs offered."""
    return _write(conn, _chunk_pairs(chunk), {} if ids is None else ids)


def _chunk_pairs(chunk: Iterable[dict[str, Any]]) -> list[tuple[str, str]]:
    """:func:`_pairs_of` the rows of a chunk with a valid number. A row with the values dict
    and number of the last row kept (a recipient's later step) is passed over before its
    reason is read: kept or invalid, it would add nothing (P1: 2,000,000 rows)."""
    pairs: list[tuple[str, str]] = []
    last_number: str | None = None
    last_values: Any = None
    for r in chunk:
        values = r.get("variables")
        if values is last_values and str(r.get("to") or "") == last_number:
            continue
        if str(r.get("reason") or "").startswith(_INVALID):
            continue
        last_number, last_values = str(r.get("to") or ""), values
        name = name_in(values) if isinstance(values, dict) else None
        if name is not None and last_number:
            pairs.append((last_number, name))
    return pairs


def _parsed(found: Iterable[Any]) -> Iterator[tuple[str, Any]]:
    for number, variables in found:
        try:
            values = json.loads(variables) if variables else None
        except ValueError:
            continue
        yield str(number or ""), values


def fill_from_deliveries(conn: Connection, run_id: int | None = None) -> int:
    """Store the names of the deliveries already in the ledger (of ``run_id``, or all),
    one per recipient's first step with a valid number; the pairs offered."""
    where = ("step = 0 AND variables IS NOT NULL AND variables <> '{}' "
             f"AND (reason IS NULL OR reason NOT LIKE '{_INVALID}%')")
    params: dict[str, Any] = {"after": -1, "batch": FILL_BATCH}
    if run_id is not None:
        where += " AND run_id = :run"
        params["run"] = run_id
    stmt = text(f'SELECT id, "to", variables FROM deliveries WHERE {where} AND id > :after '
                "ORDER BY id LIMIT :batch")
    offered = 0
    ids: dict[str, int] = {}
    while True:
        found = conn.execute(stmt, params).all()
        if not found:
            return offered
        params["after"] = found[-1][0]
        offered += _write(conn, _pairs_of(_parsed((r[1], r[2]) for r in found)), ids)


def numbers_named(conn: Connection, words: str, limit: int) -> list[tuple[str, str]]:
    """``(number, name)`` of the numbers whose name has a word starting with ``words``
    (case and accents aside), in the keys' order (then the numbers'); at most ``limit``
    numbers, of the first :data:`NAMES_AT_MOST` names found."""
    key = search_key(words)
    if not key:
        return []
    low, high = prefix_range(key)
    k = person_name_keys.c
    first_key: dict[int, str] = {}  # name id -> its first key in range
    for name_key, name_id in conn.execute(
            select(k.name_key, k.name_id).where(k.name_key >= low, k.name_key < high)
            .order_by(k.name_key, k.name_id).limit(NAMES_AT_MOST * 2)):
        first_key.setdefault(int(name_id), str(name_key))
        if len(first_key) >= NAMES_AT_MOST:
            break
    if not first_key:
        return []
    r = recipient_names.c
    # no index by name id (its cost at plan time): read the numbers of those names in
    # the primary key's order, at most a few rows per number wanted
    rows = conn.execute(select(r.number, r.name_id).where(r.name_id.in_(list(first_key)))
                        .limit(limit * 4)).all()
    best: dict[str, tuple[str, int]] = {}  # number -> (its first key, the name's id)
    for number, name_id in rows:
        mine = (first_key[int(name_id)], int(name_id))
        if str(number) not in best or mine < best[str(number)]:
            best[str(number)] = mine
    chosen = sorted(best.items(), key=lambda item: (item[1][0], item[0]))[:limit]
    n = person_names.c
    name_of = {int(i): str(m) for i, m in conn.execute(select(n.id, n.name).where(
        n.id.in_(sorted({name_id for _number, (_key, name_id) in chosen}))))}
    return [(number, name_of[name_id]) for number, (_key, name_id) in chosen
            if name_id in name_of]  # a name erased meanwhile: none
