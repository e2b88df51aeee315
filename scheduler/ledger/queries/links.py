"""Tracked links in the ledger (``links``, ``link_rows``, ``link_clicks``; migration 0011).

- :func:`store_links` runs inside the plan writer's transaction (``Ledger.store_plan`` and
  ``Ledger.replan``): the run's links (numbers kept, new ones added) and its ``link_rows``
  rebuilt with one ``INSERT … SELECT`` over the run's rows of the steps with links.
- Hot (one per hit on a link, in the receiver): :func:`link_target` and
  :func:`recipients_of` read by primary key (``links``, ``link_rows``, then ``deliveries``
  by id), never scanning the run; :func:`record_click` is one insert.
- The report's: :func:`link_figures` (one ``GROUP BY`` per table, over the run's links),
  :func:`variant_figures` (the same per variant: the run's rows with a variant, joined to
  ``deliveries`` by id) and :func:`first_clicks`.
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


@dataclass(frozen=True)
class LinkFigures:
    """One link of a run: where it is, how many were sent it, hits and clicks."""

    link: int
    step: int
    url: str
    sent: int
    hits: int
    clicks: int
    clickers: int
    first_click_at: datetime | None


def link_figures(conn: Connection, run_id: int) -> list[LinkFigures]:
    """Every link of the run with its figures, by number; ``sent``: its step's rows of the
    run that reached the service."""
    targets = conn.execute(select(L.c.link, L.c.step, L.c.url)
                           .where(L.c.run_id == run_id).order_by(L.c.link)).all()
    if not targets:
        return []
    sent: dict[int, int] = {step: n for step, n in conn.execute(
        select(R.c.step, func.count()).select_from(R.join(D, D.c.id == R.c.delivery_id))
        .where(R.c.run_id == run_id, D.c.accepted_at.is_not(None) | D.c.sent_at.is_not(None))
        .group_by(R.c.step))}
    hits = {link: (n, clicks, clickers, first) for link, n, clicks, clickers, first in
            conn.execute(
                select(C.c.link, func.count(),
                       func.count().filter(C.c.counted.is_(True)),
                       func.count(func.distinct(C.c.delivery_id)).filter(
                           C.c.counted.is_(True)),
                       func.min(C.c.at).filter(C.c.counted.is_(True)))
                .where(C.c.run_id == run_id).group_by(C.c.link))}
    return [LinkFigures(link, step, url, sent.get(step, 0), *hits.get(link, (0, 0, 0, None)))
            for link, step, url in targets]


def step_clickers(conn: Connection, run_id: int) -> dict[int, int]:
    """Recipients of each step with links who clicked any of its links (counted)."""
    rows = conn.execute(
        select(D.c.step, func.count(func.distinct(C.c.delivery_id)))
        .select_from(C.join(D, D.c.id == C.c.delivery_id))
        .where(C.c.run_id == run_id, C.c.counted.is_(True)).group_by(D.c.step))
    return {step: n for step, n in rows}


@dataclass(frozen=True)
class VariantCounts:
    """Hits, counted clicks and people who clicked, of one variant."""

    hits: int = 0
    clicks: int = 0
    clickers: int = 0


@dataclass(frozen=True)
class VariantFigures:
    """A run's links per variant (empty maps: the run's steps with links have no variant).

    ``sent``: (step, variant) → messages of that variant that reached the service;
    ``per_link``: (link, variant) → its counts; ``per_step``: (step, variant) → counts over
    any of the step's links (people: who clicked at least one)."""

    sent: dict[tuple[int, str], int]
    per_link: dict[tuple[int, str], VariantCounts]
    per_step: dict[tuple[int, str], VariantCounts]


def variant_figures(conn: Connection, run_id: int) -> VariantFigures:
    """The run's link figures per variant (counted clicks only in ``clicks``/``clickers``);
    three ``GROUP BY`` reads, for the report only."""
    reached = D.c.accepted_at.is_not(None) | D.c.sent_at.is_not(None)
    sent = {(step, variant): n for step, variant, n in conn.execute(
        select(R.c.step, D.c.variant, func.count().filter(reached))
        .select_from(R.join(D, D.c.id == R.c.delivery_id))
        .where(R.c.run_id == run_id, D.c.variant.is_not(None))
        .group_by(R.c.step, D.c.variant))}
    if not sent:
        return VariantFigures({}, {}, {})
    counted = C.c.counted.is_(True)
    figures = (func.count(), func.count().filter(counted),
               func.count(func.distinct(C.c.delivery_id)).filter(counted))
    clicked = C.join(D, D.c.id == C.c.delivery_id)
    per_link = {(link, variant): VariantCounts(*counts) for link, variant, *counts in
                conn.execute(select(C.c.link, D.c.variant, *figures).select_from(clicked)
                             .where(C.c.run_id == run_id, D.c.variant.is_not(None))
                             .group_by(C.c.link, D.c.variant))}
    per_step = {(step, variant): VariantCounts(*counts) for step, variant, *counts in
                conn.execute(select(D.c.step, D.c.variant, *figures).select_from(clicked)
                             .where(C.c.run_id == run_id, D.c.variant.is_not(None))
                             .group_by(D.c.step, D.c.variant))}
    return VariantFigures(sent, per_link, per_step)


@dataclass(frozen=True)
class FirstClick:
    """A recipient's first counted click on a link."""

    link: int
    delivery_id: int
    row: int
    to: str
    at: datetime


def first_clicks(conn: Connection, run_id: int, *, limit: int = 100_000) -> list[FirstClick]:
    """Each recipient's first counted click on each link of the run, earliest first."""
    first = (select(C.c.link, C.c.delivery_id, func.min(C.c.at).label("at"))
             .where(C.c.run_id == run_id, C.c.counted.is_(True))
             .group_by(C.c.link, C.c.delivery_id).subquery())
    rows = conn.execute(
        select(first.c.link, first.c.delivery_id, D.c.row, D.c.to, first.c.at)
        .join(D, D.c.id == first.c.delivery_id)
        .order_by(first.c.at, first.c.link, D.c.row).limit(limit))
    return [FirstClick(*row) for row in rows]
