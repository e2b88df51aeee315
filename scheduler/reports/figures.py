"""One run's funnel for the terminal (``campaign status``): the same counts and rates as
the report's Summary, by the one definition in :mod:`scheduler.ledger.funnel`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler.ledger import access
from scheduler.ledger import funnel as fn
from scheduler.ledger.exceptions import LedgerError
from scheduler.ledger.queries import reports as rq
from scheduler.reports.exceptions import ReportReadError

if TYPE_CHECKING:
    from scheduler.ledger.runs import Ledger


def run_funnel(ledger: Ledger, run_id: int, channel: str, digits: int = 0) -> dict[str, Any]:
    """``{"counts": {planned, sent, …}, "rates": {label: share or None}, "line": text}``;
    ``digits``: calls where keys were pressed (voice: from the channel's own outcomes)."""
    try:
        with access.read(ledger.engine, f"count the funnel of run {run_id}") as conn:
            counts = rq.funnel_counts(conn, run_id)
    except LedgerError as exc:
        raise ReportReadError(f"cannot read the ledger: {exc}") from None
    return funnel_of(channel, counts, digits)


def funnel_of(channel: str, counts: dict[str, int], digits: int = 0) -> dict[str, Any]:
    """:func:`run_funnel` from the run's funnel counts (``rq.funnel_counts``, read by the
    caller in its snapshot)."""
    counts = {**counts, "digits": digits}
    wanted = {stage.key for stage in fn.stages(channel)} | {"skipped"}
    shown = {key: n for key, n in counts.items() if key in wanted}
    return {"counts": shown,
            "rates": {r.label: r.value for r in fn.rates(channel, counts)},
            "line": fn.funnel_line(channel, counts)}  # fmt: skip
