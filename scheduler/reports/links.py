"""The Links sheet: each tracked link of the report's runs with its click rate, each step's
and each variant's click rate, and who clicked first when.

- per link: the run, step, link number and address, how many of the step's messages
  reached the service, the hits (every request of a valid link), the clicks counted (hits
  from link-preview fetchers, HEAD requests and hits within seconds of the send are not:
  :mod:`scheduler.links.clicks`), the people who clicked, the click rate (people who
  clicked / messages sent) and the first click;
- per step: people who clicked any of the step's links / messages sent;
- per variant, for runs whose steps with links have variants (``deliveries.variant``): each
  link's figures over each variant's messages of its step, and, for a step with several
  links, over any of them (a variant whose text lacks a link shows its sends, no clicks);
- each recipient's first counted click on each link, earliest first (row and number).

Written only when a run of the report has tracked links. Read in the report's snapshot
(:mod:`scheduler.ledger.link_reads`); times are local to each run's zone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scheduler.ledger.funnel import share
from scheduler.ledger.link_reads import LinkFigures, LinkReads, VariantCounts, VariantFigures
from scheduler.reports import layout
from scheduler.reports.columns import Column
from scheduler.reports.source import RunInfo, local_time

if TYPE_CHECKING:
    from scheduler.reports.workbook import WorkbookWriter

SHEET = "Links"
LINK_COLUMNS = [
    Column("run_id", "Run", "int", 6), Column("step", "Step", "int", 6),
    Column("link", "Link", "int", 6), Column("url", "Address", "user_text", 36),
    Column("sent", "Sent", "int", 9), Column("hits", "Hits", "int", 9),
    Column("clicks", "Clicks (counted)", "int", 9),
    Column("clickers", "People who clicked", "int", 10),
    Column("rate", "Click rate", "percent", 9),
    Column("first", "First click", "date", 19),
]  # fmt: skip
STEP_COLUMNS = [
    Column("run_id", "Run", "int", 6), Column("step", "Step", "int", 6),
    Column("links", "Links", "int", 6), Column("url", "Addresses", "user_text", 36),
    Column("sent", "Sent", "int", 9), Column("hits", "Hits", "int", 9),
    Column("clicks", "Clicks (counted)", "int", 9),
    Column("clickers", "People who clicked", "int", 10),
    Column("rate", "Click rate", "percent", 9),
]  # fmt: skip
VARIANT_COLUMNS = [
    Column("run_id", "Run", "int", 6), Column("step", "Step", "int", 6),
    Column("link", "Link", "int", 6), Column("url", "Address", "user_text", 36),
    Column("variant", "Variant", "user_text", 9), Column("sent", "Sent", "int", 9),
    Column("hits", "Hits", "int", 9), Column("clicks", "Clicks (counted)", "int", 9),
    Column("clickers", "People who clicked", "int", 10),
    Column("rate", "Click rate", "percent", 9),
]  # fmt: skip
#: The Address of a variant's row over all of its step's links.
ANY_LINK = "any of the step's links"
FIRST_COLUMNS = [
    Column("run_id", "Run", "int", 6), Column("step", "Step", "int", 6),
    Column("link", "Link", "int", 6), Column("to", "Number", "user_text", 36),
    Column("row", "CSV row", "int", 9), Column("at", "First click", "date", 19),
]  # fmt: skip


@dataclass
class LinkSheet:
    """The Links sheet's tables, as records keyed like the columns (``variants`` empty
    when no run has variants)."""

    links: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    first: list[dict[str, Any]]
    variants: list[dict[str, Any]] = field(default_factory=list)


def _variant_rows(run_id: int, figures: Sequence[LinkFigures],
                  found: VariantFigures) -> list[dict[str, Any]]:
    """Each link's figures per variant of its step, then, for a step with several links,
    each variant's over any of them."""
    rows: list[dict[str, Any]] = []

    def add(step: int, link: int | None, url: str, variant: str,
            counts: VariantCounts) -> None:
        sent = found.sent[(step, variant)]
        rows.append({"run_id": run_id, "step": step, "link": link, "url": url,
                     "variant": variant, "sent": sent, "hits": counts.hits,
                     "clicks": counts.clicks, "clickers": counts.clickers,
                     "rate": share(counts.clickers, sent)})

    for step in sorted({f.step for f in figures}):
        variants = sorted(v for s, v in found.sent if s == step)
        on_step = [f for f in figures if f.step == step]
        for f in on_step:
            for variant in variants:
                add(step, f.link, f.url, variant,
                    found.per_link.get((f.link, variant), VariantCounts()))
        if len(on_step) > 1:
            for variant in variants:
                add(step, None, ANY_LINK, variant,
                    found.per_step.get((step, variant), VariantCounts()))
    return rows


def read_links(reads: LinkReads, runs: Sequence[RunInfo]) -> LinkSheet:
    """The tracked links of ``runs`` with their figures (empty when they have none)."""
    sheet = LinkSheet([], [], [])
    for run in runs:
        figures = reads.figures(run.id)
        if not figures:
            continue
        steps: dict[int, dict[str, Any]] = {}
        for f in figures:
            sheet.links.append({
                "run_id": run.id, "step": f.step, "link": f.link, "url": f.url,
                "sent": f.sent, "hits": f.hits, "clicks": f.clicks, "clickers": f.clickers,
                "rate": share(f.clickers, f.sent), "first": local_time(f.first_click_at,
                                                                   run.timezone)})
            step = steps.setdefault(f.step, {"run_id": run.id, "step": f.step, "links": 0,
                                             "sent": f.sent, "hits": 0, "clicks": 0})
            step["links"] += 1
            step["url"] = f.url if step["links"] == 1 else f"{step['url']} · {f.url}"
            step["hits"] += f.hits
            step["clicks"] += f.clicks
        for step_index, people in sorted(reads.step_clickers(run.id).items()):
            steps[step_index]["clickers"] = people
        for step in sorted(steps.values(), key=lambda s: s["step"]):
            step.setdefault("clickers", 0)
            step["rate"] = share(step["clickers"], step["sent"])
            sheet.steps.append(step)
        sheet.variants.extend(_variant_rows(run.id, figures, reads.variants(run.id)))
        targets = {f.link: f.step for f in figures}
        sheet.first.extend({
            "run_id": run.id, "step": targets.get(c.link), "link": c.link, "to": c.to,
            "row": c.row, "at": local_time(c.at, run.timezone)}
            for c in reads.first_clicks(run.id))
    return sheet


def write_links(writer: WorkbookWriter, sheet: LinkSheet) -> int:
    """Add the Links sheet when there are links; returns its links' rows."""
    if not sheet.links:
        return 0
    widths = layout.shared_widths(LINK_COLUMNS, STEP_COLUMNS, VARIANT_COLUMNS, FIRST_COLUMNS)
    ws = writer.new_sheet(SHEET, widths)
    row = writer.records(ws, 0, LINK_COLUMNS, sheet.links, widths)
    ws.freeze_panes(1, 0)
    row += 1
    ws.write_string(row, 0, "Click rate per step (people who clicked any of its links)",
                    writer.formats["section"])
    row = writer.records(ws, row + 1, STEP_COLUMNS, sheet.steps, widths) + 1
    if sheet.variants:
        ws.write_string(row, 0, "Click rate per variant (people who clicked / the variant's "
                        "messages sent)", writer.formats["section"])
        row = writer.records(ws, row + 1, VARIANT_COLUMNS, sheet.variants, widths) + 1
    ws.write_string(row, 0, "Who clicked first, when (counted clicks)",
                    writer.formats["section"])
    row += 1
    if not sheet.first:
        ws.write_string(row, 0, "nobody clicked yet", writer.formats["note"])
    else:
        writer.records(ws, row, FIRST_COLUMNS, sheet.first, widths)
    layout.page_setup(ws, widths)
    return len(sheet.links)


__all__ = ["ANY_LINK", "LINK_COLUMNS", "SHEET", "VARIANT_COLUMNS", "LinkSheet", "read_links",
           "write_links"]
