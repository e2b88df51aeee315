"""The suppression list as the HTTP API reads and edits it: one number looked up, one taken
off (adding goes through :meth:`Ledger.suppress <scheduler.ledger.runs.Ledger.suppress>`, as
an opt-out does); and the list's numbers in clear, read once by a plan."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, delete, select

from scheduler.ledger import access
from scheduler.ledger.privacy_key import ERASED
from scheduler.ledger.queries.tables import suppressions


def entry(engine: Engine, number: str) -> dict[str, Any] | None:
    """The list's entry for ``number`` (number, source, reason, created_at as ISO text);
    None when it is not listed."""
    with access.read(engine, "look a number up in the suppression list") as conn:
        row = conn.execute(select(suppressions).where(suppressions.c.number == number)).first()
    if row is None:
        return None
    return {"number": row.number, "source": row.source, "reason": row.reason,
            "created_at": row.created_at.isoformat()}


def remove(engine: Engine, number: str) -> bool:
    """Take ``number`` off the list (rows already skipped stay skipped); False when it was
    not listed."""
    with access.transaction(engine, "remove a number from the suppression list") as conn:
        done = conn.execute(delete(suppressions).where(suppressions.c.number == number))
    return bool(done.rowcount)


def listed_numbers(engine: Engine) -> frozenset[str] | None:
    """The list's numbers in clear (opt-out replies and keys, the API; not the
    erased numbers' keyed hashes), read in one statement; None when there are none.

    A plan skips and counts them as the run's plan writer does (reason ``suppressed``,
    :mod:`scheduler.ledger.planwriter`), and leaves them out of an A/B test's share.
    """
    s = suppressions.c
    with access.read(engine, "read the suppression list") as conn:
        found = frozenset(n for n in conn.execute(select(s.number)).scalars()
                          if not n.startswith(ERASED))
    return found or None
