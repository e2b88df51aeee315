"""Tracked links in the ledger (``links``, ``link_rows``, ``link_clicks``; migration 0011).

- :func:`store_links` runs inside the plan writer's transaction (``Ledger.store_plan`` and
  ``Ledger.replan``): the run's links (numbers kept, new ones added) and its ``link_rows``
  rebuilt with one ``INSERT … SELECT`` over the run's rows of the steps with links.
- Hot (one per hit on a link, in the receiver): :func:`link_target` and
  :func:`recipients_of` read by primary key (``links``, ``link_rows``, then ``deliveries``
  by id), never scanning the run; :func:`record_click` is one insert.
- The report's reads are :mod:`scheduler.ledger.link_reads`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, delete, func, insert, select

from scheduler.ledger.queries.common import insert_or_ignore
from scheduler.ledger.queries.tables import deliveries, link_clicks, link_rows, links

D, L, R, C = deliveries, links, link_rows, link_clicks


def run_links(conn: Connection, run_id: int) -> dict[tuple[int, str], int]:
    """The run's links: (step, address) → number."""
    rows = conn.execute(select(L.c.step, L.c.url, L.c.link).where(L.c.run_id == run_id))
    return {(step, url): link for step, url, link in rows}


def store_links(conn: Connection, run_id: int, numbers: Mapping[tuple[int, str], int]) -> None:
    """Add the run's new links and rebuild its ``link_rows`` (in the plan's transaction)."""
    if not numbers:
        return
    stmt = insert_or_ignore(conn.dialect.name, L).values([
        {"run_id": run_id, "link": link, "step": step, "url": url}
        for (step, url), link in sorted(numbers.items(), key=lambda item: item[1])
    ]).on_conflict_do_nothing(index_elements=[L.c.run_id, L.c.link])
    conn.execute(stmt)
    steps = sorted({step for step, _url in numbers})
    conn.execute(delete(R).where(R.c.run_id == run_id))
    conn.execute(insert(R).from_select(
        ["run_id", "row", "step", "delivery_id"],
        select(D.c.run_id, D.c.row, D.c.step, D.c.id)
        .where(D.c.run_id == run_id, D.c.step.in_(steps))))


def link_target(conn: Connection, run_id: int, link: int) -> tuple[int, str] | None:
    """(step, address) of a run's link, or ``None``."""
    found = conn.execute(select(L.c.step, L.c.url)
                         .where(L.c.run_id == run_id, L.c.link == link)).first()
    return (found[0], found[1]) if found else None


@dataclass(frozen=True)
class Recipient:
    """A delivery a link was rendered for: its id, number and send time (sent, else
    accepted, else handed over)."""

    delivery_id: int
    to: str
    sent_at: datetime | None


def recipients_of(conn: Connection, run_id: int, row: int, step: int) -> list[Recipient]:
    """The deliveries of (run, CSV row, step): one, or more after a re-plan that gave the
    row to someone else (the token's MAC tells which)."""
    ids = select(R.c.delivery_id).where(R.c.run_id == run_id, R.c.row == row,
                                        R.c.step == step)
    rows = conn.execute(
        select(D.c.id, D.c.to, func.coalesce(D.c.sent_at, D.c.accepted_at, D.c.dispatched_at))
        .where(D.c.id.in_(ids)))
    return [Recipient(i, to, at) for i, to, at in rows]


def record_click(conn: Connection, *, run_id: int, link: int, delivery_id: int,
                 at: datetime, counted: bool, why_not: str | None,
                 user_agent: str | None) -> None:
    """Store one hit on a link."""
    conn.execute(insert(C).values(run_id=run_id, link=link, delivery_id=delivery_id, at=at,
                                  counted=counted, why_not=why_not, user_agent=user_agent))
