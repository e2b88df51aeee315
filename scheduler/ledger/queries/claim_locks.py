"""The locks that make a claim's caps exact: the claim counts, then claims, as one step.

A cap is counted and then used inside one claim transaction: a sender's warm-up cap (its
sends today) and a number's audience caps (its messages today and in 7 days, and the
unengaged hold). Two claims counted at the same moment do not see each other's uncommitted
rows, so both could take the last place under a cap (two PostgreSQL workers, two ``campaign
run`` processes on one SQLite file). So before counting, the transaction takes a lock it
keeps until it commits; the next claim to the same sender or number waits for that commit
and counts the rows it claimed.

- PostgreSQL: transaction-level advisory locks (``pg_advisory_xact_lock``), released at
  commit or rollback, never left behind by a killed process. A sender's key is
  ``hashtext('sender:NAME')`` (one key); a number's is the pair (:data:`NUMBER_LOCKS`, a
  32-bit hash of the number), a key space of its own, so no number waits on a sender. A
  transaction takes its numbers before its senders, each kind in one fixed order (numbers
  by key, senders by name): two claims never wait on each other in a circle.
- SQLite: one writer at a time, but Python's driver opens the transaction only at the first
  write, so the counts before it would read outside it. ``BEGIN IMMEDIATE`` first takes the
  database's write lock: the counts and the claim are then one transaction nobody else
  writes between (:func:`hold_writer`; a transaction that already wrote holds it).

Hot (in the claim transaction, once per batch when a cap applies): one statement for all the
batch's numbers (``unnest`` over their sorted keys; a statement per number would add its
round trip to every send), one per capped sender. A lock costs a slot of PostgreSQL's shared
lock table (``max_locks_per_transaction`` × ``max_connections``, 6,400 by default) for the
milliseconds of the claim: a batch takes one per distinct number, at most the dispatcher's
read-ahead (512 rows, or two bulk SMS requests). A claim without audience rules takes no
number lock: a campaign that sets no cap neither waits for nor is counted against one it
races; its messages count for the others' caps once committed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection

from sqlalchemy import Connection, func, select, text

#: The first key of every number's advisory lock ("audi" in ASCII).
NUMBER_LOCKS = 0x61756469

#: Lock each key in array order (``unnest`` yields its elements in order, and the
#: aggregate reads them in that order), so every transaction takes its keys ascending.
_HOLD_NUMBERS = text(
    f"SELECT count(pg_advisory_xact_lock({NUMBER_LOCKS}, t.k)) "
    "FROM unnest(CAST(:keys AS integer[])) AS t(k)")


def number_key(to: str) -> int:
    """The second key of ``to``'s advisory lock: a signed 32-bit hash of the number, the
    same in every process (Python's ``hash`` is not)."""
    return int.from_bytes(hashlib.blake2b(to.encode(), digest_size=4).digest(), "big",
                          signed=True)


def hold_writer(conn: Connection) -> None:
    """SQLite: make the transaction the database's one writer now (``BEGIN IMMEDIATE``),
    unless it already wrote; see the module. Other databases: nothing."""
    if conn.dialect.name != "sqlite":
        return
    if not conn.connection.driver_connection.in_transaction:  # type: ignore[union-attr]
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def hold_numbers(conn: Connection, numbers: Collection[str]) -> None:
    """Hold each recipient number until the transaction ends, so its messages counted now
    stay the count when the claim commits (audience caps, see the module)."""
    if conn.dialect.name != "postgresql":
        hold_writer(conn)
        return
    keys = sorted({number_key(to) for to in numbers})
    if keys:
        conn.execute(_HOLD_NUMBERS, {"keys": keys})


def hold_senders(conn: Connection, senders: Collection[str]) -> None:
    """Hold each sender until the transaction ends (advisory, in name order), so the count
    of its sends and the claim that follows it are one step for every process — workers,
    ``campaign run`` and ``serve`` alike — and a warm-up cap is never passed by two claims
    counted at once (see the module)."""
    if conn.dialect.name != "postgresql":
        hold_writer(conn)
        return
    for sender in sorted(senders):
        conn.execute(select(func.pg_advisory_xact_lock(func.hashtext(f"sender:{sender}"))))


__all__ = ["NUMBER_LOCKS", "hold_numbers", "hold_senders", "hold_writer", "number_key"]
