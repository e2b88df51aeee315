"""The Experiment sheet: each run's variants compared, and its A/B test's decision.

- per run, step and variant: messages sent (the service took them), delivered, read and
  replied, with their rates over the sent (a plain split, without ``[experiment]``, is
  compared here only);
- per run with ``[experiment]``: the decision (outcome, winner, the variant sent to the
  rest, the reason in words, when the test share's last send went out and when the test
  decided, in the run's zone) and each arm's numbers as the test saw them: sends,
  successes, rate with its Wilson interval, opt-outs, the difference from the control
  with its Newcombe interval, the chi-squared p-value raw and after Holm.

Written only when a run of the report has variants; read in the report's snapshot
(:class:`scheduler.ledger.report_reads.SheetReads`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler.ledger.funnel import share
from scheduler.ledger.report_reads import SheetReads
from scheduler.reports import layout
from scheduler.reports.columns import Column
from scheduler.reports.source import RunInfo, local_time

if TYPE_CHECKING:
    from scheduler.reports.workbook import WorkbookWriter

SHEET = "Experiment"
SPLIT_COLUMNS = [
    Column("run_id", "Run", "int", 6), Column("step", "Step", "int", 6),
    Column("variant", "Variant", "user_text", 12), Column("sent", "Sent", "int", 9),
    Column("delivered", "Delivered", "int", 9), Column("read", "Read", "int", 9),
    Column("replied", "Replied", "int", 9),
    Column("delivered_rate", "Delivery rate", "percent", 9),
    Column("read_rate", "Read rate", "percent", 9),
    Column("reply_rate", "Reply rate", "percent", 9),
]  # fmt: skip
DECISION_COLUMNS = [
    Column("run_id", "Run", "int", 6), Column("metric", "Metric", "text", 10),
    Column("outcome", "Outcome", "text", 16), Column("winner", "Winner", "user_text", 12),
    Column("goes", "Sent to the rest", "user_text", 12),
    Column("test_sent_at", "Test share sent by", "date", 19),
    Column("decided_at", "Decided at", "date", 19),
    Column("reason", "Why", "user_text", 60),
]  # fmt: skip
ARM_COLUMNS = [
    Column("run_id", "Run", "int", 6), Column("variant", "Variant", "user_text", 12),
    Column("role", "Role", "text", 10), Column("sends", "Sends", "int", 9),
    Column("successes", "Successes", "int", 9), Column("rate", "Rate", "percent", 9),
    Column("rate_low", "Rate CI low", "percent", 9),
    Column("rate_high", "Rate CI high", "percent", 9),
    Column("opt_outs", "Opt-outs", "int", 9),
    Column("difference", "Difference vs control", "percent", 10),
    Column("difference_low", "Difference CI low", "percent", 10),
    Column("difference_high", "Difference CI high", "percent", 10),
    Column("p_value", "p-value", "float", 9),
    Column("p_adjusted", "p-value (Holm)", "float", 9),
]  # fmt: skip


@dataclass
class ExperimentSheet:
    """The Experiment sheet's three tables, as records keyed like the columns."""

    split: list[dict[str, Any]]
    decisions: list[dict[str, Any]]
    arms: list[dict[str, Any]]


def read_experiments(reads: SheetReads, runs: Sequence[RunInfo]) -> ExperimentSheet:
    """The variants and tests of ``runs`` (empty when none has variants)."""
    sheet = ExperimentSheet([], [], [])
    for run in runs:
        for f in reads.variant_figures(run.id):
            sheet.split.append({
                "run_id": run.id, "step": f.step, "variant": f.variant, "sent": f.sent,
                "delivered": f.delivered, "read": f.read, "replied": f.replied,
                "delivered_rate": share(f.delivered, f.sent),
                "read_rate": share(f.read, f.sent), "reply_rate": share(f.replied, f.sent)})
        row = reads.experiment(run.id)
        if row is None or row.decision is None:
            continue
        decision = row.decision
        sheet.decisions.append({
            "run_id": run.id, "metric": decision["metric"], "outcome": decision["outcome"],
            "winner": decision["winner"], "goes": decision["goes"],
            "test_sent_at": local_time(row.test_sent_at, run.timezone),
            "decided_at": local_time(row.decided_at, run.timezone),
            "reason": decision["reason"]})
        tests = {c["variant"]: c for c in decision["comparisons"]}
        for arm in decision["arms"]:
            test = tests.get(arm["name"], {})
            sheet.arms.append({
                "run_id": run.id, "variant": arm["name"],
                "role": "control" if arm["is_control"] else "variant",
                "sends": arm["sends"], "successes": arm["successes"], "rate": arm["rate"],
                "rate_low": arm["rate_low"], "rate_high": arm["rate_high"],
                "opt_outs": arm["guardrail_events"],
                "difference": test.get("difference"),
                "difference_low": test.get("difference_low"),
                "difference_high": test.get("difference_high"),
                "p_value": test.get("p_value"), "p_adjusted": test.get("p_adjusted")})
    return sheet


def write_experiments(writer: WorkbookWriter, sheet: ExperimentSheet) -> int:
    """Add the Experiment sheet when a run has variants; returns its variants' rows."""
    if not sheet.split and not sheet.decisions:
        return 0
    widths = layout.shared_widths(SPLIT_COLUMNS, DECISION_COLUMNS, ARM_COLUMNS)
    ws = writer.new_sheet(SHEET, widths)
    row = writer.records(ws, 0, SPLIT_COLUMNS, sheet.split, widths)
    ws.freeze_panes(1, 0)
    row += 1
    ws.write_string(row, 0, "The A/B test's decision (chi-squared, 1 df, no continuity "
                    "correction; Holm across variants)", writer.formats["section"])
    row += 1
    if not sheet.decisions:
        ws.write_string(row, 0, "no test decided (a plain split, or still waiting)",
                        writer.formats["note"])
    else:
        row = writer.records(ws, row, DECISION_COLUMNS, sheet.decisions, widths) + 1
        ws.write_string(row, 0, "Each variant as the test saw it (its test share)",
                        writer.formats["section"])
        writer.records(ws, row + 1, ARM_COLUMNS, sheet.arms, widths)
    layout.page_setup(ws, widths)
    return len(sheet.split)


__all__ = ["ARM_COLUMNS", "SHEET", "ExperimentSheet", "read_experiments",
           "write_experiments"]
