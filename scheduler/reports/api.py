"""``write_report``: one report (xlsx workbook and PNG charts, or a CSV) for one or more runs.

The whole report is read inside one transaction, so every sheet describes the same
snapshot of the ledger even while a run is still sending. Files are written beside their
targets under temporary names and renamed into place only when all of them are complete.
"""

from __future__ import annotations

import csv
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from scheduler.core.timeutil import monotonic, seconds_since
from scheduler.ledger.access import Engine
from scheduler.ledger.exceptions import LedgerError
from scheduler.ledger.report_reads import ReportReads, report_snapshot
from scheduler.reports import (
    attempts,
    charts,
    decisions,
    details,
    experiment,
    links,
    senders,
    source,
    summary,
)
from scheduler.reports.channels import sections_of
from scheduler.reports.columns import (
    Column,
    OptOutsLayout,
    RecipientsLayout,
    RepliesLayout,
    Table,
    local_times,
    variable_keys,
)
from scheduler.reports.exceptions import (
    NothingToReport,
    OutputNotWritable,
    ReportFormatError,
    ReportReadError,
)
from scheduler.reports.layout import fit_lengths, fit_text_columns
from scheduler.reports.output import AtomicFiles, csv_safe, default_stem, resolve_output
from scheduler.reports.sheetxml import RowEncoder, StreamedSheet, splice, split_rows
from scheduler.reports.workbook import WorkbookWriter

if TYPE_CHECKING:
    from scheduler.ledger.runs import Ledger
    from scheduler.settings.load import Settings

FORMATS = ("xlsx", "csv")


@dataclass(frozen=True)
class ReportResult:
    """What a report wrote: the workbook (or CSV), its PNG charts, and rows per sheet."""

    path: Path
    format: str
    run_ids: tuple[int, ...]
    charts: tuple[Path, ...] = ()
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def paths(self) -> tuple[Path, ...]:
        """Every file written, the workbook (or CSV) first."""
        return (self.path, *self.charts)


def _engine(ledger: Ledger | Engine) -> Engine:
    return ledger if isinstance(ledger, Engine) else ledger.engine


def _read_error(exc: LedgerError) -> ReportReadError:
    return ReportReadError(f"cannot read the ledger: {exc}")


def campaign_runs(ledger: Ledger | Engine, name: str) -> list[int]:
    """Every run id of campaign ``name``, oldest first (:class:`CampaignNotFound` if none)."""
    try:
        return source.campaign_run_ids(_engine(ledger), name)
    except LedgerError as exc:
        raise _read_error(exc) from None


def check_format(fmt: str) -> str:
    """``fmt`` in lower case, or :class:`ReportFormatError`."""
    value = (fmt or "").lower().lstrip(".")
    if value not in FORMATS:
        raise ReportFormatError(f"unknown report format {fmt!r}: use xlsx or csv")
    return value


def write_report(
    ledger: Ledger | Engine, run_ids: Sequence[int], *, fmt: str = "xlsx",
    output: Path | str | None = None, settings: Settings | None = None,
) -> ReportResult:  # fmt: skip
    """Write the report of ``run_ids`` to ``output`` (a file or folder), by default
    ``<settings.reports_dir>/<campaign>-run-<id>.<fmt>``; xlsx also writes PNG charts (sends
    per hour, funnel, and one per SMS or voice channel in the report)."""
    started = monotonic()
    fmt = check_format(fmt)
    if not run_ids:
        raise NothingToReport("nothing to report: give one or more run ids, or --campaign NAME")
    try:
        with report_snapshot(_engine(ledger), "read the report's rows") as reads:
            runs = source.load_runs(reads, run_ids)
            if output is None and settings is None:
                from scheduler.settings.load import load_settings

                settings = load_settings()
            folder = settings.reports_path() if settings is not None else Path("reports")
            stem = default_stem([r.campaign for r in runs], [r.id for r in runs])
            target = resolve_output(output, folder, stem, fmt)
            with AtomicFiles() as files:
                pngs: list[Path] = []
                if fmt == "csv":
                    rows = {"Recipients": _write_csv(reads, runs, files.temp_for(target))}
                else:
                    rows, pngs = _write_xlsx(reads, runs, target, files)
                files.commit()
    except LedgerError as exc:
        raise _read_error(exc) from None
    except OSError as exc:  # e.g. the disk filled up while writing
        raise OutputNotWritable(f"cannot write the report: {exc.strerror or exc}") from None
    return ReportResult(target, fmt, tuple(r.id for r in runs), tuple(pngs), rows,
                        seconds_since(started))  # fmt: skip


def download(ledger: Ledger, settings: Settings | None, run_id: int, fmt: str,
             by: str) -> tuple[Path, Path]:
    """One run's report for a download (``by``: ``api``, ``dashboard``), written into a new
    temporary folder: (its file, the folder), which the caller deletes once sent."""
    ledger.get_run(run_id)  # an unknown run: its 404 before any file is made
    folder = Path(tempfile.mkdtemp(prefix=f"campaign-{by}-run-{run_id}-"))
    try:
        result = write_report(ledger, [run_id], fmt=fmt, output=folder, settings=settings)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return result.path, folder



# ---------------------------------------------------------------------- pieces


def _variables(reads: ReportReads, runs: Sequence[source.RunInfo]) -> dict[str, float]:
    widths: dict[str, float] = {}
    for run in runs:
        for key, width in variable_keys(reads.variable_samples(run.id)).items():
            widths[key] = max(widths.get(key, 0.0), width)
    return widths


def _recipients(reads: ReportReads, runs: Sequence[source.RunInfo],
                variables: dict[str, float], scan: details.DetailScan) -> Table:  # fmt: skip
    reached = attempts.ReachedBy(reads, runs)  # second chances: who was reached how
    decided = decisions.StepDecisions(reads.tables, runs)  # steps that follow replies
    tables = reads.tables
    layout = RecipientsLayout(runs, variables, scan, reached.values if reached.shown else None,
                              decided.values if decided.shown else None)

    def frames() -> Iterator[dict[str, Any]]:
        for run in runs:
            for chunk in tables.delivery_chunks(run.id, source.CHUNK_ROWS):
                yield layout.frame(chunk)

    columns = fit_lengths(layout.columns, reads.text_lengths([r.id for r in runs]))
    return Table("Recipients", columns, tables.count_deliveries([r.id for r in runs]),
                 frames)  # fmt: skip


def _other_tables(reads: ReportReads, runs: Sequence[source.RunInfo],
                  variables: dict[str, float], optouts: pd.DataFrame) -> list[Table]:  # fmt: skip
    ids = [r.id for r in runs]
    replies, opted = RepliesLayout(runs, variables), OptOutsLayout(runs)
    tables = reads.tables
    return [
        Table("Replies", replies.columns, tables.count_replies(ids),
              lambda: (replies.frame(c) for c in tables.reply_chunks(ids, source.CHUNK_ROWS))),
        Table("Opt-outs", fit_text_columns(opted.columns, optouts), len(optouts),
              lambda: iter([opted.frame(optouts)] if len(optouts) else [])),
    ]  # fmt: skip


def _title(runs: Sequence[source.RunInfo]) -> str:
    names = ", ".join(dict.fromkeys(r.campaign for r in runs))
    ids = [r.id for r in runs]
    return f"{names} · run {ids[0]}" if len(ids) == 1 else f"{names} · {len(ids)} runs"


def _channel_panels(summ: summary.Summary) -> dict[str, list[charts.Panel]]:
    """The channel PNGs of a report, by file name suffix: ``sms-delivery`` (by error code)
    and ``voice-outcomes`` (outcomes beside the digits pressed), for the channels present."""
    channels = {run.channel for run in summ.runs}
    out: dict[str, list[charts.Panel]] = {}
    for name, titles in sections_of(channels):
        out[name] = [(title, [(m.label, int(m.total or 0)) for m in summ.section(title)])
                     for title in titles]
    return out


@dataclass(frozen=True)
class _Book:
    """What the workbook and its charts show, read from the report's snapshot."""

    summ: summary.Summary
    hourly: pd.DataFrame
    errors: pd.DataFrame
    sender_sheet: senders.SenderSheet
    experiment_sheet: experiment.ExperimentSheet
    link_sheet: links.LinkSheet
    attempt_sheet: attempts.AttemptSheet
    tables: list[Table]
    zone: str  # the runs' one time zone, else "local time"


def _write_xlsx(reads: ReportReads, runs: list[source.RunInfo], target: Path,
                files: AtomicFiles) -> tuple[dict[str, int], list[Path]]:  # fmt: skip
    """The workbook at ``target`` and its PNG charts beside it; rows per sheet."""
    book = _read_book(reads, runs)
    channel_pngs = _channel_panels(book.summ)
    pngs = [target.with_name(f"{target.stem}-sends-per-hour.png"),
            target.with_name(f"{target.stem}-funnel.png"),
            *(target.with_name(f"{target.stem}-{name}.png") for name in channel_pngs)]  # fmt: skip
    png_temps = [files.temp_for(path) for path in pngs]
    book_temp = files.temp_for(target)
    _draw_charts(book, runs, png_temps, channel_pngs)
    return _write_book(book, book_temp), pngs


def _read_book(reads: ReportReads, runs: list[source.RunInfo]) -> _Book:
    """Every sheet's content and the charts' data, read from ``reads``."""
    ids = [r.id for r in runs]
    zones = {r.id: r.timezone for r in runs}
    groups = reads.state_groups(ids)
    scan = (details.scan(reads.tables.detail_rows(ids, source.CHUNK_ROWS))
            if groups["n_details"].sum() else details.DetailScan())  # fmt: skip
    optouts = reads.optouts(ids)
    summ = summary.build(runs, groups, scan, reads.skip_reasons(ids), optouts)
    hourly = summary.hourly_sends(
        (local_times(minutes["at"], run.id, zones), minutes["n"])
        for run in runs for minutes in [reads.send_minutes(run.id)])  # fmt: skip
    errors = summary.errors_table(reads.error_groups(ids), runs, groups)
    variables = _variables(reads, runs)
    sender_sheet = senders.read_senders(reads.sheets, runs)
    experiment_sheet = experiment.read_experiments(reads.sheets, runs)
    link_sheet = links.read_links(reads.links, runs)
    attempt_sheet = attempts.read_sheet(reads, runs)
    tables = [
        _recipients(reads, runs, variables, scan),
        *_other_tables(reads, runs, variables, optouts),
    ]
    zone_names = set(zones.values())
    zone = zone_names.pop() if len(zone_names) == 1 else "local time"
    return _Book(summ, hourly, errors, sender_sheet, experiment_sheet, link_sheet,
                 attempt_sheet, tables, zone)


def _draw_charts(book: _Book, runs: list[source.RunInfo], png_temps: list[Path],
                 channel_pngs: dict[str, list[charts.Panel]]) -> None:  # fmt: skip
    """The report's PNG charts into ``png_temps``: sends per hour, the funnel, and the
    channels' own."""
    charts.sends_per_hour_png(png_temps[0], book.hourly, _title(runs), book.zone)
    charts.funnel_png(png_temps[1], book.summ.funnel, _title(runs), book.summ.channel)
    for temp, panels in zip(png_temps[2:], channel_pngs.values(), strict=True):
        charts.channel_png(temp, panels, _title(runs))


def _write_book(book: _Book, book_temp: Path) -> dict[str, int]:
    """The workbook written to ``book_temp``: a draft by xlsxwriter, the row tables'
    sheets streamed into it; rows per sheet."""
    tables = book.tables
    with tempfile.TemporaryDirectory(prefix="campaign-report-") as scratch:
        draft = Path(scratch) / "draft.xlsx"
        writer = WorkbookWriter(draft)
        _sheet, sections = writer.summary(book.summ)
        parts = [part for table in tables for part in writer.row_table(table)]
        writer.errors(book.errors)
        sender_rows = senders.write_senders(writer, book.sender_sheet)
        experiment_rows = experiment.write_experiments(writer, book.experiment_sheet)
        link_rows = links.write_links(writer, book.link_sheet)  # only when there are links
        attempt_rows = attempts.write_sheet(writer, book.attempt_sheet)  # only with retries
        writer.charts(book.summ, sections, writer.hourly(book.hourly, book.zone), book.zone)
        styles = writer.close()
        streamed = []
        for table in tables:
            mine = [p for p in parts if p.table is table]
            pieces = split_rows(table.frames(), [p.rows for p in mine])
            encoder = RowEncoder(table.columns, styles)
            streamed += [StreamedSheet(p.sheet, encoder, p.rows, piece)
                         for p, piece in zip(mine, pieces, strict=True)]  # fmt: skip
        written = splice(draft, book_temp, streamed)
    rows = {table.name: sum(written.get(p.sheet, 0) for p in parts if p.table is table)
            for table in tables}  # fmt: skip
    rows["Errors"] = len(book.errors)
    rows[senders.SHEET] = sender_rows
    if experiment_rows:  # only when a run has variants
        rows[experiment.SHEET] = experiment_rows
    if link_rows:
        rows[links.SHEET] = link_rows
    if attempt_rows:
        rows[attempts.SHEET] = attempt_rows
    return rows


def _csv_values(frame: dict[str, Any], columns: Sequence[Column]) -> pd.DataFrame:
    data: dict[int, Any] = {}
    for index, column in enumerate(columns):
        values = frame[column.key]
        if column.kind in ("text", "user_text"):
            items = values.tolist() if isinstance(values, pd.Series) else values
            data[index] = [csv_safe(v) if isinstance(v, str) else None for v in items]
        elif column.kind == "date":
            data[index] = values
        elif column.kind == "int":
            data[index] = pd.to_numeric(pd.Series(values), errors="coerce").astype("Int64")
        else:
            data[index] = pd.to_numeric(pd.Series(values), errors="coerce")
    return pd.DataFrame({k: pd.Series(v).reset_index(drop=True) for k, v in data.items()})


def _write_csv(reads: ReportReads, runs: list[source.RunInfo], path: Path) -> int:
    """The Recipients table as CSV (UTF-8 with BOM, formula-like text prefixed with ``'``)."""
    ids = [r.id for r in runs]
    scan = details.scan(reads.tables.detail_rows(ids, source.CHUNK_ROWS))
    table = _recipients(reads, runs, _variables(reads, runs), scan)
    rows = 0
    with open(path, "w", encoding="utf-8-sig", newline="") as fh:
        csv.writer(fh).writerow([csv_safe(c.header) for c in table.columns])
        for frame in table.frames():
            values = _csv_values(frame, table.columns)
            values.to_csv(fh, header=False, index=False, date_format="%Y-%m-%d %H:%M:%S",
                          lineterminator="\r\n")  # fmt: skip
            rows += len(values)
    return rows
