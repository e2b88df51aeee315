"""``campaign report RUN... [--campaign NAME] [--format xlsx|csv] [-o PATH]``.

Writes the spreadsheet of one or more runs (or of every run of a campaign): by default an
xlsx workbook and its PNG charts (funnel, hourly sends, one per SMS or voice channel) under
``reports/`` (the ``reports_dir`` setting). The format follows ``--format``, else the
suffix of ``-o``, else xlsx. ``-o`` names a file, or a folder (an existing one, or a path
without a suffix) that receives the default name.
"""

from __future__ import annotations

from pathlib import Path

import typer

_SUFFIX_FORMATS = {".xlsx": "xlsx", ".csv": "csv"}


def report_command(
    runs: list[int] | None = typer.Argument(
        None, help="Run ids (see `campaign runs`).", show_default=False
    ),
    campaign: str | None = typer.Option(
        None, "--campaign", "-c", help="Report every run of this campaign.", show_default=False
    ),
    fmt: str | None = typer.Option(
        None,
        "--format",
        "-f",
        help="xlsx (workbook + PNG charts) or csv (the Recipients "
        "table). Default: from -o's suffix, else xlsx.",
        show_default=False,
    ),
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        help="File or folder to write (default: the reports folder).",
        show_default=False,
    ),
) -> None:
    """Write the spreadsheet report of runs: Summary, Recipients, Replies, Errors, Opt-outs,
    Senders."""
    from scheduler.ledger.db import open_ledger
    from scheduler.reports import campaign_runs, write_report
    from scheduler.reports.api import check_format
    from scheduler.reports.exceptions import NothingToReport
    from scheduler.settings.load import load_settings

    if not runs and not campaign:
        raise NothingToReport("nothing to report: give one or more run ids, or --campaign NAME")
    suffix = output.suffix.lower() if output is not None else ""
    fmt = check_format(fmt or _SUFFIX_FORMATS.get(suffix, "xlsx"))
    settings = load_settings()
    engine = open_ledger(settings.resolved_database_url())
    try:
        ids = list(runs or [])
        if campaign:
            ids += [i for i in campaign_runs(engine, campaign) if i not in ids]
        result = write_report(engine, ids, fmt=fmt, output=output, settings=settings)
    finally:
        engine.dispose()
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=True)
    counts = ", ".join(f"{result.rows[name]:,} {name.lower()}" for name in
                       ("Recipients", "Replies", "Opt-outs") if name in result.rows)  # fmt: skip
    noun = "run" if len(result.run_ids) == 1 else "runs"
    console.print(f"report of {noun} {', '.join(map(str, result.run_ids))}: {result.path} "
                  f"({counts}) in {result.seconds:.1f} s")  # fmt: skip
    for chart in result.charts:
        console.print(f"chart: {chart}")


def register(app: typer.Typer) -> None:
    """Add ``campaign report``."""
    app.command("report")(report_command)
