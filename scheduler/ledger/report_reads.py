"""The report's reads (:mod:`scheduler.reports`), every sheet on ONE snapshot of the ledger.

:func:`report_snapshot` opens the snapshot (``access.snapshot``) and yields a
:class:`ReportReads` over it: the runs and the Summary's aggregates, with the doors of the
rest of the report on the same connection: ``tables`` (:class:`TableReads`: the
Recipients and Replies streamed in chunks, their condition and "Reached by" columns),
``sheets`` (:class:`SheetReads`: the Senders, Experiment and Attempts sheets) and ``links``
(:class:`~scheduler.ledger.link_reads.LinkReads`). :func:`campaign_run_ids` is one read of
its own (``campaign report --campaign``). The rows are those of
:mod:`scheduler.ledger.queries.reports` (frames and chunks, no ORM object per row) and the
ledger's plain rows; :func:`reached` says whether one row's state and marks reached the
recipient (the "Reached by" column, by the run's funnel definition).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from scheduler.ledger import access
from scheduler.ledger.access import Connection, Engine
from scheduler.ledger.attempt_funnel import AttemptsView, read_attempts
from scheduler.ledger.link_reads import LinkReads
from scheduler.ledger.queries import attempts as aq
from scheduler.ledger.queries import conversation as cq
from scheduler.ledger.queries import experiments as xq
from scheduler.ledger.queries import reports as rq
from scheduler.ledger.queries import run_senders as rsq
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.queries.tables import runs
from scheduler.ledger.run_rows import Tally

if TYPE_CHECKING:
    import pandas as pd

    from scheduler.ledger.models import Run
    from scheduler.ledger.rows import ExperimentRow, SenderChangeRow, SenderProfileRow


@contextmanager
def report_snapshot(engine: Engine, what: str = "read the report's rows"
                    ) -> Iterator[ReportReads]:
    """The report's reads on one snapshot (``access.snapshot``: ledger errors become
    ``LedgerError``)."""
    with access.snapshot(engine, what) as conn:
        yield ReportReads(conn)


def campaign_run_ids(engine: Engine, name: str) -> list[int]:
    """Every run id of campaign ``name``, oldest first (empty when it has none)."""
    with access.read(engine, "read the campaign's runs") as conn:
        return list(conn.execute(select(runs.c.id).where(runs.c.campaign_name == name)
                                 .order_by(runs.c.id)).scalars())  # fmt: skip


class ReportReads:
    """The report's runs and its Summary's aggregates, on the report's snapshot ``conn``;
    ``tables``, ``sheets`` and ``links`` read the rest on the same snapshot."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.tables = TableReads(conn)
        self.sheets = SheetReads(conn)
        self.links = LinkReads(conn)

    def runs(self, run_ids: Sequence[int]) -> dict[int, Run]:
        """The runs among ``run_ids`` that exist, by id."""
        return rq.runs_by_id(self.conn, run_ids)

    def state_groups(self, run_ids: Sequence[int]) -> pd.DataFrame:
        """Delivery counts by run, sender, step and state (``rq.state_groups``)."""
        return rq.state_groups(self.conn, run_ids)

    def skip_reasons(self, run_ids: Sequence[int]) -> pd.DataFrame:
        """Skipped rows by reason (``rq.skip_reasons``)."""
        return rq.skip_reasons(self.conn, run_ids)

    def error_groups(self, run_ids: Sequence[int]) -> pd.DataFrame:
        """The Errors sheet's groups (``rq.error_groups``)."""
        return rq.error_groups(self.conn, run_ids)

    def send_minutes(self, run_id: int) -> pd.DataFrame:
        """Sends of the run per UTC minute (``rq.send_minutes``)."""
        return rq.send_minutes(self.conn, run_id)

    def optouts(self, run_ids: Sequence[int]) -> pd.DataFrame:
        """The Opt-outs sheet's rows (``rq.optouts``)."""
        return rq.optouts(self.conn, run_ids)

    def variable_samples(self, run_id: int) -> list[dict[str, Any]]:
        """A sample of the run's CSV variables (``rq.variable_samples``)."""
        return rq.variable_samples(self.conn, run_id)

    def text_lengths(self, run_ids: Sequence[int]) -> dict[str, int]:
        """The longest value of each text column (``rq.text_lengths``)."""
        return rq.text_lengths(self.conn, run_ids)


class TableReads:
    """The report's row tables on its snapshot: the Recipients (and their details) and the
    Replies streamed ``chunk_rows`` at a time, and what their extra columns read."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def count_deliveries(self, run_ids: Sequence[int]) -> int:
        """The Recipients' rows."""
        return rq.count_deliveries(self.conn, run_ids)

    def delivery_chunks(self, run_id: int, chunk_rows: int) -> Iterator[dict[str, list[Any]]]:
        """The run's rows, ``chunk_rows`` at a time (``rq.delivery_chunks``)."""
        return rq.delivery_chunks(self.conn, run_id, chunk_rows)

    def detail_rows(self, run_ids: Sequence[int], chunk_rows: int) -> Iterator[list[Any]]:
        """``(run_id, sender, step, state, details)`` of the rows with channel details."""
        return rq.detail_rows(self.conn, run_ids, chunk_rows)

    def count_replies(self, run_ids: Sequence[int]) -> int:
        """The Replies' rows."""
        return rq.count_replies(self.conn, run_ids)

    def reply_chunks(self, run_ids: Sequence[int], chunk_rows: int) -> Iterator[pd.DataFrame]:
        """The runs' replies, ``chunk_rows`` at a time (``rq.reply_chunks``)."""
        return rq.reply_chunks(self.conn, run_ids, chunk_rows)

    def any_decided(self, run_ids: Sequence[int]) -> bool:
        """Whether one of the runs has a conditional step's decision stored."""
        return cq.any_decided(self.conn, run_ids)

    def decisions_between(self, run_id: int, first_id: int, last_id: int
                          ) -> dict[int, tuple[str, str, str | None]]:
        """Delivery id → (outcome, reason, late note) of the run's decisions on deliveries
        ``first_id``…``last_id`` (one chunk)."""
        return cq.decisions_between(self.conn, run_id, first_id, last_id)

    def family(self, run_id: int) -> tuple[int, int | None]:
        """Run ``run_id``'s parent (itself unless it is a fallback run) and fallback run."""
        fam = aq.family(self.conn, run_id)
        return fam.parent, fam.fallback

    def chain_ends(self, run_ids: list[int]) -> dict[int, tuple[int, int, str, int]]:
        """``{first attempt's id: (run, attempt, state, marks)}`` of each recipient's (and
        step's) last attempt, when they had more than one (``aq.chain_ends``)."""
        return aq.chain_ends(self.conn, run_ids)


class SheetReads:
    """The Senders, Experiment and Attempts sheets' reads, on the report's snapshot."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def sender_counts(self, run_ids: Sequence[int]
                      ) -> defaultdict[tuple[int, str], rsq.RunSenderCounts]:
        """Each (run, sender) of the runs' rows that went through a sender, with its counts
        (``rsq.run_sender_counts``); any other (run, sender): zero counts."""
        return defaultdict(rsq.RunSenderCounts, rsq.run_sender_counts(self.conn, run_ids))

    def sender_changes(self, senders: Collection[str], start: datetime,
                       end: datetime | None = None) -> list[SenderChangeRow]:
        """The state changes of ``senders`` from ``start`` (to ``end``), oldest first."""
        return rsq.changes_during(self.conn, senders, start, end)

    def sender_profiles(self, senders: Collection[str]) -> dict[str, SenderProfileRow]:
        """The profiles of ``senders``, by sender."""
        return spq.profiles(self.conn, senders)

    def variant_figures(self, run_id: int) -> list[xq.VariantFigures]:
        """Each (step, variant) of the run's rows with a variant: sent, delivered, read and
        replied."""
        return xq.variant_figures(self.conn, run_id)

    def experiment(self, run_id: int) -> ExperimentRow | None:
        """The run's A/B test, or None when it has none."""
        return xq.read(self.conn, run_id)

    def attempts(self, run: Run) -> AttemptsView | None:
        """The funnel per attempt of ``run``'s family, every awaiting row counted (None: no
        retry rules, fallback or attempt rows)."""
        return read_attempts(self.conn, run, every_row=True)


@cache
def reached(key: str, state: str, marks: int) -> bool | None:
    """Whether a sent row in ``state`` with ``marks`` counts under the funnel's ``key``
    (``delivered``, ``read``, ``answered``…); None for a row not sent yet (planned,
    dispatching, held)."""
    if state in aq.UNSENT:
        return None
    return bool(Tally(((0, state, marks, "", 1),)).funnel().get(key))
