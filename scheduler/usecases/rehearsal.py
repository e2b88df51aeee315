"""``campaign run FILE --rehearse``: the whole campaign on a simulated clock, in seconds.

The rehearsal plans the file into a throw-away ledger, starts the embedded sandbox with
the same simulated clock, and dispatches with the campaign's real pacing, windows, caps
and latest send time. Sleeping advances the clock instead of waiting, so a week-long
campaign finishes in seconds. It never touches the configured service, and only reads the
configured ledger (each sender's warm-up day and state, the sessions' labels), read-only:
it neither creates a missing ledger nor migrates one (:mod:`scheduler.ledger.read_only`);
a ledger whose schema is behind is not read, and the rehearsal says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import secrets
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from scheduler.core.display import clean_markup
from scheduler.core.time_words import span
from scheduler.core.timeutil import SimulatedClock, utcnow
from scheduler.dispatch.dispatcher import RunSetup, Timing
from scheduler.dispatch.results import RunResult, TimelineEntry
from scheduler.ledger.db import open_ledger
from scheduler.ledger.read_only import LedgerOutOfDate
from scheduler.ledger.runs import Ledger
from scheduler.ledger.sender_store import seed_profiles
from scheduler.settings.run import SESSION_CHANNELS, RunOptions
from scheduler.usecases.lookups import rehearsal_connections
from scheduler.usecases.planning import plan_run
from scheduler.usecases.sender_seed import project_profiles
from scheduler.wiring import dispatch_run, ensure_senders, run_store, service_target

if TYPE_CHECKING:
    from scheduler.campaign.loader import Campaign
    from scheduler.ledger.models import Run
    from scheduler.service.client import ServiceClient
    from scheduler.settings.load import Settings
    from scheduler.wiring import ServiceTarget


#: The sandbox's real seconds per simulated second of a call in a rehearsal with retry
#: rules (a 40 s call takes 40 ms): the outcomes come in while the clock is held.
REHEARSAL_VOICE_SCALE = 0.001


def second_chances(options: RunOptions) -> bool:
    """Whether the run judges outcomes (retry rules or a fallback)."""
    recycle = options.recycle
    return recycle is not None and (bool(recycle.steps) or recycle.fallback is not None)


async def _receive(settings: Settings, ledger: Ledger, client: ServiceClient,
                   target: ServiceTarget, run: Run, stack: contextlib.ExitStack
                   ) -> dict[str, str]:
    """Start a receiver on a free loopback port for the throw-away ledger and point the
    sandbox's webhooks at it (the account's, for SMS and voice runs and fallbacks); the
    session webhook URL for the senders."""
    from scheduler.tracking import account_webhook_url, session_webhook_url, start_receiver
    from scheduler.wiring import ensure_account_webhook

    server = start_receiver(settings, ledger, client, host="127.0.0.1", port=0)
    stack.callback(server.stop)
    assert run.id is not None
    channels = {run.channel}
    child = ledger.fallback_run_of(run.id)
    if child is not None:
        channels.add(ledger.get_run(child).channel)
    for channel in sorted(channels & {"sms", "voice"}):
        await ensure_account_webhook(client, settings, channel,
                                     account_webhook_url(settings, server))
    return {"session": session_webhook_url(settings, server)}


@dataclass
class Rehearsal:
    """What a real run would look like."""

    campaign: str
    timezone: str
    start: datetime
    finish: datetime
    result: RunResult
    #: Requests to the service, and the messages or calls they carried (bulk: many each).
    sends: int
    per_sender: dict[str, int]
    #: What the rehearsal could not take from the project (a ledger it did not read).
    notes: list[str] = field(default_factory=list)
    #: When each number was sent to (simulated time, UTC), in order.
    sent: list[tuple[datetime, str]] = field(default_factory=list)

    @property
    def timeline(self) -> list[TimelineEntry]:
        """Start, window pauses and resumes, senders at their daily cap or plan limit,
        expiries, finish; in the order of their times (a cap is said when the engine next
        looks, dated when it was reached)."""
        return sorted(self.result.timeline, key=lambda entry: entry.at)


def _reply_script(ledger: Ledger, run: Run, options: RunOptions, seed: int,
                  replies: dict[str, object] | None) -> dict[str, object] | None:
    """The sandbox's ``whatsapp_replies_by_number`` for a run whose steps follow
    replies: ``replies`` (a ``--replies`` file's), or drawn at the campaign's expected
    rate (:mod:`scheduler.usecases.rehearsal_replies`); None for another run."""
    from scheduler.ledger.conversation_store import ConversationStore
    from scheduler.usecases.rehearsal_replies import draw_replies

    if options.conversation is None:
        return None
    if replies is not None:
        return replies
    assert run.id is not None
    numbers = ConversationStore(ledger, run.id).first_step_numbers()
    return dict(draw_replies(options.conversation, numbers, random.Random(f"{seed}:replies")))


async def _rehearse(path: Path, start: datetime, seed: int,
                    replies: dict[str, object] | None = None) -> Rehearsal:
    """Plan ``path`` into a throw-away ledger and dispatch it to the embedded sandbox on a
    simulated clock from ``start``."""
    from scheduler.service.client import ServiceClient
    from scheduler.settings.load import Settings

    clock = SimulatedClock(start)
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rehearsal-") as folder:
        engine = open_ledger(f"sqlite:///{Path(folder) / 'rehearsal.db'}")
        try:
            ledger = Ledger(engine, clock=clock)
            campaign, run = _plan(ledger, path, start)
            senders = list(ledger.options(run).senders)
            settings = Settings(base_url=None, state_dir=Path(folder) / "state",
                                webhook_secret=secrets.token_hex(16), receiver_port=0)
            sandbox, outcomes = _sandbox_config(ledger, run, clock, seed, replies)
            with service_target(settings, force_sandbox=True, sandbox_config=sandbox) as target, \
                    contextlib.ExitStack() as stack:
                async with ServiceClient(target.base_url, target.api_key) as client:
                    hooks = await _receive(settings, ledger, client, target, run, stack) \
                        if outcomes else {}
                    if run.channel in SESSION_CHANNELS:  # SMS and voice: the account
                        await rehearsal_connections(client, campaign, senders)
                        await ensure_senders(client, target, senders, hooks.get("session"))
                    assert run.id is not None
                    setup = _run_setup(ledger, path, senders, start, clock, seed, notes)
                    result = await dispatch_run(run_store(ledger, run.id), client, run, setup)
                    await _dispatch_fallback(ledger, client, run, setup, result)
                sends = target.sandbox.state.sandbox.world.sends
                per_sender, sent = _tally_sends(sends, senders)
            return Rehearsal(run.campaign_name, run.timezone, start, clock(), result,
                             len(sends), per_sender, notes, sent)
        finally:
            engine.dispose()


def _plan(ledger: Ledger, path: Path, start: datetime) -> tuple[Campaign, Run]:
    """Plan the campaign at ``path`` into the throw-away ``ledger`` as a rehearsal."""
    from scheduler.campaign.loader import load_campaign
    from scheduler.usecases.consent_lookup import (
        project_consent,
        project_erased,
        project_listed,
    )
    from scheduler.usecases.label_lookup import project_label_audience

    # a label filter reads the project's label state (the throw-away ledger has none)
    campaign = load_campaign(path)
    run_id = plan_run(ledger, path, start_at=start, campaign=campaign,
                      labels=project_label_audience(campaign), rehearsal=True,
                      consent=project_consent(campaign),
                      erased=project_erased(campaign),
                      listed=project_listed(campaign))
    return campaign, ledger.get_run(run_id)


def _sandbox_config(ledger: Ledger, run: Run, clock: SimulatedClock, seed: int,
                    replies: dict[str, object] | None) -> tuple[dict[str, object], bool]:
    """The embedded sandbox's configuration for ``run``, and whether the rehearsal takes
    the sandbox's events back (outcomes judged, or steps that follow replies)."""
    # retry rules and fallbacks judge outcomes: a receiver takes the sandbox's
    # events into the throw-away ledger (its calls and reports in real time, fast)
    outcomes = second_chances(ledger.options(run))
    sandbox: dict[str, object] = {"seed": seed, "clock": clock, "reply_rate": 0.0}
    # steps that follow replies: the sandbox answers as scripted (or drawn), and
    # a receiver takes the replies and receipts into the throw-away ledger
    script = _reply_script(ledger, run, ledger.options(run), seed, replies)
    if script is not None:
        sandbox["whatsapp_replies_by_number"] = script
        sandbox["recipient_delay_ms"] = (10.0, 20.0)
        outcomes = True
    if outcomes:
        sandbox["voice_time_scale"] = REHEARSAL_VOICE_SCALE
    else:  # nothing reads the receipts
        sandbox["delivered_rate"] = 0.0
    return sandbox, outcomes


def _run_setup(ledger: Ledger, path: Path, senders: list[str], start: datetime,
               clock: SimulatedClock, seed: int, notes: list[str]) -> RunSetup:
    """The dispatch setup on the simulated clock, with the senders seeded as the project's
    ledger has them (a ledger it could not read is said in ``notes``)."""
    from scheduler.settings.load import load_settings

    # the project's [senders] (warm-up and health) apply as in a real run,
    # each sender starting where the project's ledger has it
    project = load_settings(near=path)
    try:
        profiles = project_profiles(project, senders)
    except LedgerOutOfDate as exc:
        profiles = []
        notes.append(f"{exc}; every sender starts as new")
    seed_profiles(ledger.engine, profiles, start)
    return RunSetup(timing=Timing.simulated_by(clock, clock.sleep),
                    rng=random.Random(seed), care=project.senders)


async def _dispatch_fallback(ledger: Ledger, client: ServiceClient, run: Run,
                             setup: RunSetup, result: RunResult) -> None:
    """Dispatch ``run``'s fallback run, if it has deliveries, after its parent on the same
    clock (one simulated clock cannot be slept on by two dispatchers at once); its timeline
    and counts go into ``result``."""
    assert run.id is not None
    child_id = ledger.fallback_run_of(run.id)
    if child_id is None:
        return
    child = ledger.get_run(child_id)
    if not ledger.counts(child_id):
        return
    fallback = await dispatch_run(run_store(ledger, child_id), client, child, setup)
    name = f"{child.channel.upper()} fallback run"
    result.timeline.extend(
        dataclasses.replace(entry, what=f"{name}: {entry.what}")
        for entry in fallback.timeline)
    for state, n in fallback.counts.items():
        result.counts[f"fallback {state}"] = n


def _tally_sends(sends: list[dict[str, Any]], senders: list[str],
                 ) -> tuple[dict[str, int], list[tuple[datetime, str]]]:
    """The sandbox's sends counted per sender (bulk: each number), and each number's send
    time in order."""
    per_sender: dict[str, int] = {}
    sent: list[tuple[datetime, str]] = []
    for send in sends:
        to = send.get("to")
        at = datetime.fromisoformat(str(send["at"]).replace("Z", "+00:00"))
        sent.extend((at, str(n)) for n in (to if isinstance(to, list) else [to]))
        who = send.get("sessionId") or (senders[0] if senders else "account")
        per_sender[who] = per_sender.get(who, 0) + (
            len(to) if isinstance(to, list) else 1)
    return per_sender, sent


def rehearse_campaign(path: Path, *, start: datetime | None = None, seed: int = 1,
                      replies: Path | None = None) -> Rehearsal:
    """Rehearse the campaign at ``path`` from ``start`` (default: now); a campaign whose
    steps follow replies gets ``replies``'s script (the sandbox's
    ``whatsapp_replies_by_number``), or replies drawn at its expected rate."""
    from scheduler.usecases.rehearsal_replies import load_replies

    script: dict[str, object] | None = (dict(load_replies(replies)) if replies is not None
                                        else None)
    return asyncio.run(_rehearse(path, start or utcnow(), seed, script))


def print_rehearsal(rehearsal: Rehearsal, console: Console) -> None:
    """The timeline a real run would have, in the campaign's time zone."""
    from scheduler.core.units import load_zone

    zone = load_zone(rehearsal.timezone)
    console.print(f"[bold]Rehearsal of {rehearsal.campaign!r}[/] (simulated clock, embedded "
                  f"sandbox; nothing was sent) · times in {rehearsal.timezone}")
    table = Table("when", "what", show_edge=False)
    for entry in rehearsal.timeline:
        table.add_row(f"{entry.at.astimezone(zone):%a %Y-%m-%d %H:%M:%S}", clean_markup(entry.what))
    console.print(table)
    for note in rehearsal.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    took = span(rehearsal.finish - rehearsal.start)
    carried = sum(rehearsal.per_sender.values())
    requests = f"requests {rehearsal.sends:,} · " if carried != rehearsal.sends else ""
    console.print(f"{requests}sends {carried:,} · "
                  + " · ".join(f"{k} {v:,}" for k, v in sorted(rehearsal.per_sender.items()))
                  + f" · finishes {rehearsal.finish.astimezone(zone):%a %Y-%m-%d %H:%M} "
                  f"({took})")
    console.print("  " + ", ".join(f"{state} {n:,}"
                                   for state, n in sorted(rehearsal.result.counts.items())))
