"""Reports: the ledger of one or more runs as a spreadsheet people open, and charts.

``write_report(ledger, run_ids, fmt="xlsx"|"csv", output=None)`` writes

- **xlsx**: sheets Summary (run, times, counts by state, the funnel and its rates, SMS and
  voice figures, opt-outs, skip reasons, per sender and per step, and how to read them;
  SMS runs add delivery by error code, voice runs their outcomes and the digits pressed),
  Charts (sends per hour, the funnel and each channel section, a printed page each),
  Recipients (one row per delivery, with the CSV's
  own columns and the channel's: SMS segments, encoding, cost, error code; voice answered,
  talk time, digits, cause in words), Replies, Opt-outs, Errors (grouped by message),
  Senders (each sender's state now, why, score and speed, its sends, failures, opt-outs
  and replies in the run, and its state changes while the run lasted) and Sends per hour;
  plus the charts as PNG files beside the workbook
  (``-sends-per-hour``, ``-funnel``, ``-sms-delivery``, ``-voice-outcomes``);
- **csv**: the Recipients table, UTF-8 with a BOM.

Every sheet is set up to read and print alike in Excel and LibreOffice (widths from the
content, date formats both read, A4 one page wide). Planned, sent and the rates are
defined once, in :mod:`scheduler.ledger.funnel`.

Modules: ``source`` (SQL), ``details`` (channel extras), ``channels`` (what the channel
charts count), ``columns`` (row tables), ``summary`` (figures), ``workbook`` (xlsxwriter),
``layout`` (widths, header heights, page setup), ``xlsxcharts`` (the native charts),
``sheetxml`` (streamed rows), ``charts`` (PNG), ``figures`` (a run's funnel for
``campaign status``), ``output`` (paths, formula safety, all-or-nothing files), ``api``
(the entry point).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Re-exported lazily (PEP 562): ``reports.figures`` (``campaign status``) does not import
# ``api`` and its pandas.
if TYPE_CHECKING:
    from scheduler.reports.api import ReportResult, campaign_runs, write_report


def __getattr__(name: str) -> Any:
    """A re-exported name of :mod:`scheduler.reports.api`, imported when first asked for."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("scheduler.reports.api"), name)


__all__ = ["ReportResult", "campaign_runs", "write_report"]
