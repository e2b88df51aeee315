"""Which run ``campaign run FILE`` continues or starts, and when it must refuse.

Three traps of ordinary use are closed here, each with a message that says what happened
and which flag chooses otherwise:

- a one-off campaign that already ran is not sent again by accident (``--new-run``; and
  even then its earlier recipients are skipped unless ``--include-previous``);
- an unfinished run whose files were edited is not continued as if nothing changed
  (``--apply-changes``, ``--replan`` or ``--as-planned``);
- a run started against one target (the sandbox, a service) is not continued on another.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from scheduler.campaign.fingerprint import Change, compare, fingerprint_of, load_fingerprint
from scheduler.campaign.loader import Campaign
from scheduler.core.errors import SchedulerError
from scheduler.core.time_words import local_time
from scheduler.ledger.models import Run
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import (
    FINISHED_RUN_STATUSES,
    SENT_STATES,
    DeliveryState,
    RunStatus,
    describe_target,
)

EditChoice = Literal["apply-changes", "replan", "as-planned"]


class RunRefused(SchedulerError):
    """``campaign run`` would send again, or continue on stale terms: it asks first."""


@dataclass(frozen=True)
class EarlierRun:
    """A finished run of the campaign that reached people (or might have)."""

    run: Run
    sent: int
    total: int
    failed: int


def _local(moment: datetime | None, zone: str) -> str:
    return local_time(moment, zone, empty="(unknown time)")


def _same_target(run: Run, target: str) -> bool:
    return run.target is None or run.target == target


def last_finished_run(ledger: Ledger, campaign_name: str, target: str) -> EarlierRun | None:
    """The newest finished run of the campaign to ``target`` that completed or sent anything."""
    for run in ledger.list_runs(campaign_name=campaign_name):
        if run.status not in FINISHED_RUN_STATUSES or not _same_target(run, target) \
                or run.parent_run_id is not None:  # a fallback run follows its parent
            continue
        assert run.id is not None
        counts = ledger.counts(run.id)
        sent = sum(n for state, n in counts.items() if state in SENT_STATES)
        if run.status == RunStatus.COMPLETED or sent:
            failed = counts.get(DeliveryState.FAILED, 0)
            skipped = counts.get(DeliveryState.SKIPPED, 0)
            return EarlierRun(run, sent, sum(counts.values()) - skipped, failed)
    return None


def refuse_repeat(earlier: EarlierRun, campaign: Campaign, file: Path) -> RunRefused:
    """The error for running a one-off campaign that already ran."""
    run = earlier.run
    when = _local(run.finished_at, run.timezone or "UTC")
    failed = f", {earlier.failed:,} failed" if earlier.failed else ""
    return RunRefused(
        f"campaign {campaign.spec.name!r} already ran: run {run.id} {run.status} at {when} "
        f"and sent {earlier.sent:,} of {earlier.total:,} deliveries{failed} "
        f"(to {describe_target(run.target)}). Nothing was sent now. To run it again: "
        f"`campaign run {file} --new-run`; numbers that already received a step of this "
        "campaign are then skipped, unless you also add --include-previous")


def check_target(run: Run, target: str) -> None:
    """Refuse to continue a run on another target than the one it started on."""
    if run.target is None or run.target == target:
        return
    raise RunRefused(
        f"run {run.id} of {run.campaign_name!r} was started against "
        f"{describe_target(run.target)}, but now the target is {describe_target(target)}; "
        f"a run's sends cannot continue somewhere else. Cancel it with "
        f"`campaign cancel {run.id}`, then start a new run")


def pending_changes(run: Run, campaign: Campaign) -> list[Change]:
    """What changed in the campaign's files since ``run`` was planned (cosmetic excluded)."""
    before = load_fingerprint(run.fingerprint)
    if before is None:
        return []
    changes = compare(before, fingerprint_of(campaign))
    return [c for c in changes if c.kind != "cosmetic"]


def refuse_edits(run: Run, changes: list[Change], pending: int, file: Path) -> RunRefused:
    """The error for continuing an edited run without saying how."""
    lines = [f"{c.kind:<8} {c.describe()}" for c in changes]
    content = any(c.kind == "content" for c in changes)
    apply = ("apply the pacing, window, schedule and sender changes to them"
             if not content else "not possible: content or audience changed")
    return RunRefused(
        f"{file} changed since run {run.id} was planned "
        f"({_local(run.created_at, run.timezone or 'UTC')}):\n  " + "\n  ".join(lines) +
        f"\nrun {run.id} has {pending:,} deliveries not yet sent. Nothing was sent now; "
        "choose one:\n"
        f"  campaign run {file} --apply-changes   {apply}\n"
        f"  campaign run {file} --replan          plan content and audience again for what "
        "is not yet sent (nothing already sent is sent again)\n"
        f"  campaign run {file} --as-planned      continue with the plan as it was")


def check_choice(choice: EditChoice, changes: list[Change], file: Path) -> None:
    """``--apply-changes`` cannot apply content: say which changes need ``--replan``."""
    if choice != "apply-changes":
        return
    content = [c.describe() for c in changes if c.kind == "content"]
    if content:
        raise RunRefused(
            "--apply-changes applies pacing, window, schedule and sender changes only; these "
            "need --replan: " + "; ".join(content) + f" (`campaign run {file} --replan`)")
