"""The Links sheet's reads (:mod:`scheduler.reports.links`), on the report's snapshot.

:class:`LinkReads` over the caller's connection: each link's figures (one ``GROUP BY`` per
table, over the run's links), each step's clickers, the same figures per variant (the run's
rows with a variant, joined to ``deliveries`` by id) and the first clicks; the rows it
returns are the dataclasses below. The links' writes and the receiver's hot reads are
:mod:`scheduler.ledger.queries.links` (behind :mod:`scheduler.ledger.link_store`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from scheduler.ledger.access import Connection
from scheduler.ledger.queries.tables import deliveries, link_clicks, link_rows, links

D, L, R, C = deliveries, links, link_rows, link_clicks


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


@dataclass(frozen=True)
class FirstClick:
    """A recipient's first counted click on a link."""

    link: int
    delivery_id: int
    row: int
    to: str
    at: datetime


class LinkReads:
    """The reads of the report's Links sheet, on the report's snapshot ``conn``."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def figures(self, run_id: int) -> list[LinkFigures]:
        """Every link of the run with its figures, by number; ``sent``: its step's rows of
        the run that reached the service."""
        conn = self.conn
        targets = conn.execute(select(L.c.link, L.c.step, L.c.url)
                               .where(L.c.run_id == run_id).order_by(L.c.link)).all()
        if not targets:
            return []
        sent: dict[int, int] = {step: n for step, n in conn.execute(
            select(R.c.step, func.count()).select_from(R.join(D, D.c.id == R.c.delivery_id))
            .where(R.c.run_id == run_id,
                   D.c.accepted_at.is_not(None) | D.c.sent_at.is_not(None))
            .group_by(R.c.step))}
        hits = {link: (n, clicks, clickers, first) for link, n, clicks, clickers, first in
                conn.execute(
                    select(C.c.link, func.count(),
                           func.count().filter(C.c.counted.is_(True)),
                           func.count(func.distinct(C.c.delivery_id)).filter(
                               C.c.counted.is_(True)),
                           func.min(C.c.at).filter(C.c.counted.is_(True)))
                    .where(C.c.run_id == run_id).group_by(C.c.link))}
        return [LinkFigures(link, step, url, sent.get(step, 0),
                            *hits.get(link, (0, 0, 0, None)))
                for link, step, url in targets]

    def step_clickers(self, run_id: int) -> dict[int, int]:
        """Recipients of each step with links who clicked any of its links (counted)."""
        rows = self.conn.execute(
            select(D.c.step, func.count(func.distinct(C.c.delivery_id)))
            .select_from(C.join(D, D.c.id == C.c.delivery_id))
            .where(C.c.run_id == run_id, C.c.counted.is_(True)).group_by(D.c.step))
        return {step: n for step, n in rows}

    def variants(self, run_id: int) -> VariantFigures:
        """The run's link figures per variant (counted clicks only in ``clicks`` and
        ``clickers``); three ``GROUP BY`` reads."""
        conn = self.conn
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

    def first_clicks(self, run_id: int, *, limit: int = 100_000) -> list[FirstClick]:
        """Each recipient's first counted click on each link of the run, earliest first."""
        first = (select(C.c.link, C.c.delivery_id, func.min(C.c.at).label("at"))
                 .where(C.c.run_id == run_id, C.c.counted.is_(True))
                 .group_by(C.c.link, C.c.delivery_id).subquery())
        rows = self.conn.execute(
            select(first.c.link, first.c.delivery_id, D.c.row, D.c.to, first.c.at)
            .join(D, D.c.id == first.c.delivery_id)
            .order_by(first.c.at, first.c.link, D.c.row).limit(limit))
        return [FirstClick(*row) for row in rows]
