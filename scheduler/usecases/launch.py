"""``campaign run FILE``: every check that can stop a run comes before the first write.

Order, so that a mistake costs nothing: the settings (a half-configured service stops
here), the campaign file, the receiver's port (a busy port stops here), the senders on a
real service (missing or disconnected ones stop here), then the ledger's view of the
campaign (a finished one-off campaign, an edited unfinished run, a run of another target),
and only then planning and sending.

Which run it continues or starts, and when it must refuse: three traps of ordinary use are
closed here, each with a message that says what happened and which flag chooses otherwise:

- a one-off campaign that already ran is not sent again by accident (``--new-run``; and
  even then its earlier recipients are skipped unless ``--include-previous``);
- an unfinished run whose files were edited is not continued as if nothing changed
  (``--apply-changes``, ``--replan`` or ``--as-planned``);
- a run started against one target (the sandbox, a service) is not continued on another.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from rich.console import Console

from scheduler.campaign.fingerprint import Change, compare, fingerprint_of, load_fingerprint
from scheduler.campaign.loader import Campaign
from scheduler.core.errors import SchedulerError
from scheduler.core.time_words import local_time
from scheduler.core.timeutil import utcnow
from scheduler.ledger.models import Run
from scheduler.ledger.run_store import RunControlStore
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import (
    FINISHED_RUN_STATUSES,
    SENT_STATES,
    DeliveryState,
    RunStatus,
    describe_target,
)
from scheduler.settings.load import Settings, load_settings
from scheduler.settings.run import SESSION_CHANNELS

EditChoice = Literal["apply-changes", "replan", "as-planned"]


# --------------------------------------------------------------------------- which run, refusals


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


# --------------------------------------------------------------------------- checks, then the run


def _receiver_socket(settings: Settings, service: tuple[str, str] | None,
                     notes: list[str]) -> socket.socket | None:
    """Bind the receiver's port now when this run will track deliveries."""
    from scheduler.tracking.identity import bind_receiver_socket
    from scheduler.usecases.foreground import tracking_possible

    if not tracking_possible(settings, service is None, service[0] if service else None):
        return None
    return bind_receiver_socket(settings, notes=notes)


def check_senders(settings: Settings, service: tuple[str, str] | None,
                  campaign: Campaign) -> None:
    """On a real service, the campaign's senders must exist and be connected (a session
    channel's; SMS and voice send from the account)."""
    from scheduler.dispatch.channels import places_session_calls
    from scheduler.service.sender_check import verify_senders

    # SMS and voice send from the account: there is no session to check
    channel = campaign.spec.channel
    if service is not None and campaign.spec.senders and channel in SESSION_CHANNELS:
        verify_senders(*service, campaign.spec.senders, timeout_s=settings.http_timeout_s,
                       calls=places_session_calls(channel))


def _continue(ledger: Ledger, run: Run, campaign: Campaign, file: Path,
              choice: EditChoice | None, console: Console) -> Run:
    """Continue an unfinished run: its target must match, and edits need a choice."""
    from scheduler.campaign.options import run_options
    from scheduler.usecases.planning import replan_run

    assert run.id is not None
    changes = pending_changes(run, campaign)
    if changes:
        counts = ledger.counts(run.id)
        pending = counts.get(DeliveryState.PLANNED, 0)
        if choice is None:
            raise refuse_edits(run, changes, pending, file)
        check_choice(choice, changes, file)
        if choice == "apply-changes":
            freed = ledger.apply_definition(run.id, campaign.spec.model_dump(mode="json"),
                                            fingerprint_of(campaign).model_dump_json(),
                                            run_options(campaign))
            console.print(f"run {run.id}: applied to its {pending:,} pending deliveries: "
                          + "; ".join(c.describe() for c in changes)
                          + (f" ({freed:,} moved off removed senders)" if freed else ""),
                          highlight=False)
        elif choice == "replan":
            with console.status("planning again…") as status:
                written, kept = replan_run(
                    ledger, run, file, start_at=utcnow(),
                    on_progress=lambda n: status.update(f"planning again… {n:,} rows"))
            console.print(f"run {run.id}: planned again from the edited files; {written:,} "
                          f"rows written, {kept:,} left out because the run already handled "
                          "that recipient's step", highlight=False)
        else:
            console.print(f"run {run.id}: continuing as planned; the edits are not used "
                          "by this run", highlight=False)
    console.print(f"continuing unfinished run {run.id} of {campaign.spec.name!r} "
                  f"({run.status})", highlight=False)
    return ledger.get_run(run.id)


def launch_run(file: Path, console: Console, *, new_run: bool = False,
               include_previous: bool = False, edit_choice: EditChoice | None = None) -> None:
    """Check everything, then continue the campaign's unfinished run or plan a new one."""
    from scheduler.campaign.plan import load_campaign
    from scheduler.usecases.foreground import describe, run_foreground
    from scheduler.usecases.planning import unfinished_run_for
    from scheduler.wiring import ledger_from_settings, target_of

    settings = load_settings(near=file)
    service = settings.service_endpoint()  # a half-configured service stops here
    target = target_of(service)
    campaign = load_campaign(file)
    console.print(f"{campaign.spec.name}: sending to {describe_target(target)}"
                  + ("; set CAMPAIGN_BASE_URL and CAMPAIGN_API_KEY to send for real"
                     if target == "sandbox" else ""), highlight=False)
    check_senders(settings, service, campaign)
    # live `campaign serve` workers (PostgreSQL) will send it and receive its events: no
    # receiver here. An SQLite ledger is opened only once the port is bound (a busy port
    # stops the command before it makes a database file).
    served = not settings.resolved_database_url().startswith("sqlite")
    ledger = ledger_from_settings(settings) if served else None
    notes: list[str] = []
    sock = None if ledger is not None and _live_workers(settings, ledger) \
        else _receiver_socket(settings, service, notes)
    with contextlib.ExitStack() as cleanup:
        if sock is not None:
            cleanup.callback(sock.close)
        for note in notes:
            console.print(f"[yellow]{note}[/]")
        if ledger is None:
            ledger = ledger_from_settings(settings)
        run = unfinished_run_for(ledger, campaign.spec.name)
        choice = edit_choice
        if run is not None:
            if new_run:
                raise SchedulerError(
                    f"run {run.id} of {campaign.spec.name!r} is not finished: continue it with "
                    f"`campaign run {file}`, or cancel it (`campaign cancel {run.id}`) before "
                    "a new run")
            check_target(run, target)
            run = _continue(ledger, run, campaign, file, choice, console)
        else:
            run = plan_new_run(ledger, file, campaign, target, console, new_run=new_run,
                               include_previous=include_previous)
        if _handed_to_workers(settings, ledger, run, console):
            return
        result = asyncio.run(run_foreground(settings, ledger, run, console,
                                            receiver_socket=sock))
        sock = None  # the receiver owns it now
    describe(result, console, ledger, horizon=settings.retry_horizon())


def plan_new_run(ledger: Ledger, file: Path, campaign: Campaign, target: str,
                 console: Console, *, new_run: bool = False,
                 include_previous: bool = False,
                 on_created: Callable[[int], None] | None = None) -> Run:
    """Plan a new run of ``campaign`` (loaded from ``file``) and store it, ``planned``: the
    checks of a new run first (a start time already past; a one-off campaign that finished
    to ``target``, unless ``new_run``), then the plan, its counts said on ``console``.
    ``campaign run`` and the HTTP API's start (:mod:`scheduler.api.starts`) both call it;
    ``on_created`` is :func:`~scheduler.usecases.planning.plan_run`'s."""
    from scheduler.campaign.exceptions import DefinitionError
    from scheduler.campaign.loader import start_issues
    from scheduler.usecases.planning import plan_run

    late = start_issues(campaign, utcnow())  # a new run only: a paused one resumes
    if late:
        raise DefinitionError(late)
    earlier = None
    if campaign.spec.schedule.cron is None:
        earlier = last_finished_run(ledger, campaign.spec.name, target)
        if earlier is not None and not new_run:
            raise refuse_repeat(earlier, campaign, file)
    with console.status("planning…") as status:
        run_id = plan_run(ledger, file, start_at=utcnow(), target=target,
                          campaign=campaign,
                          skip_previous=earlier is not None and not include_previous,
                          on_created=on_created,
                          on_progress=lambda n: status.update(f"planning… {n:,} rows"))
    store = RunControlStore(ledger, run_id)
    counts, skipped_before = store.counts(), store.skipped_as_received()
    console.print(f"run {run_id}: {counts.get(DeliveryState.PLANNED, 0):,} deliveries "
                  f"planned" + (f", {skipped_before:,} skipped: those numbers "
                                "already received this campaign" if skipped_before
                                else ""), highlight=False)
    return ledger.get_run(run_id)


def _live_workers(settings: Settings, ledger: Ledger) -> int:
    """How many live ``campaign serve`` workers serve the ledger (PostgreSQL; else 0)."""
    from scheduler.views.workers import served_by_workers

    return served_by_workers(ledger, settings.worker_lease_s, utcnow())


def _handed_to_workers(settings: Settings, ledger: Ledger, run: Run, console: Console) -> bool:
    """On PostgreSQL with live ``campaign serve`` workers, the run is theirs: sending it here
    too would use their leased senders past their pace. True when it was left to them."""
    workers = _live_workers(settings, ledger)
    if workers:
        if run.status == RunStatus.PAUSED:
            ledger.request(run.id or 0, "resume", served=True)
        console.print(f"run {run.id}: left to the {workers} live `campaign serve` worker(s) "
                      f"of this ledger; follow it with `campaign status {run.id}`",
                      highlight=False)
    return workers > 0
