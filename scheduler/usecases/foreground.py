"""Dispatch a run in the foreground: the service, the receiver, the progress bar, Ctrl-C.

Shared by ``campaign run``, ``campaign resume`` and the demo. Ctrl-C lets in-flight sends
finish and leaves the run paused; a second Ctrl-C is not needed and not harmful.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import signal
import socket
from collections.abc import Awaitable, Callable, Iterable, Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from scheduler.core.display import clean
from scheduler.core.time_words import local_time
from scheduler.core.timeutil import Clock, monotonic, utcnow
from scheduler.dispatch.channels import from_account
from scheduler.dispatch.dispatcher import RunSetup
from scheduler.dispatch.results import RunResult, TimelineEntry
from scheduler.dispatch.unknowns import RETRY_HORIZON, judge_run
from scheduler.ledger.models import Run
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import SENT_STATES, DeliveryState
from scheduler.service.client import ServiceClient
from scheduler.settings.load import Settings
from scheduler.settings.run import SESSION_CHANNELS, RunOptions
from scheduler.usecases.fallback_run import (
    as_fallback,
    fallback_lines,
    fallback_of,
    point_webhook,
    with_fallback,
)
from scheduler.usecases.reports_wait import hold_for_proof, wait_for_events
from scheduler.views.channel_status import (
    ChannelOutcomes,
    channel_outcomes,
    progress_extra,
    short_outcomes,
)
from scheduler.views.progress import BarState, waiting_line
from scheduler.webhooks_out.alongside import outgoing_webhooks
from scheduler.wiring import (
    ServiceTarget,
    client_for,
    dispatch_run,
    ensure_account_webhook,
    ensure_senders,
    run_store,
    service_target,
)


def tracking_possible(settings: Settings, target_is_sandbox: bool, base_url: str | None
                      ) -> bool:
    """Whether the service can reach a receiver of ours: the sandbox or a service on this
    machine over loopback, or any service given a public ``webhook_url``."""
    local = urlsplit(base_url or "").hostname in ("127.0.0.1", "localhost", "::1")
    return target_is_sandbox or local or bool(settings.webhook_url)


def start_tracking(settings: Settings, ledger: Ledger, client: ServiceClient, target: ServiceTarget,
                   console: Console | None = None, *, sock: socket.socket | None = None
                   ) -> tuple[Any, str | None]:
    """Start the webhook receiver; returns it and the URL to register on the senders.

    A service on this machine (the sandbox) reaches the receiver on loopback. A remote one
    needs a public address: without ``webhook_url`` in the settings, tracking is off (and
    said so), and a
    send whose outcome is ambiguous becomes ``unknown`` at once instead of waiting for
    events that cannot come.
    """
    from scheduler.tracking import session_webhook_url, start_receiver

    if not tracking_possible(settings, target.is_sandbox, target.base_url):
        if sock is not None:
            sock.close()
        if console is not None:
            console.print("[yellow]No webhook_url configured: delivery tracking is off "
                          "(set CAMPAIGN_WEBHOOK_URL to the receiver's public address)[/]")
        return None, None
    server = start_receiver(settings, ledger, client, sock=sock)
    return server, session_webhook_url(settings, server)


@contextlib.contextmanager
def _sigint_sets(event: asyncio.Event) -> Iterator[None]:
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, event.set)
        loop.add_signal_handler(signal.SIGTERM, event.set)
        installed = True
    except (NotImplementedError, RuntimeError):
        installed = False
    try:
        yield
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)
            loop.remove_signal_handler(signal.SIGTERM)


class _Progress(Progress):
    """A progress bar with the channel's outcomes on a line of their own below it, and
    below that why the run waits (redrawn as the clock moves: its countdown is live)."""

    counts_line = ""
    outcome_line = ""
    waiting: Callable[[], str | None] | None = None

    def get_renderables(self) -> Iterable[RenderableType]:
        """The bar, the tally, the outcomes line, the waiting line (each when there is
        one)."""
        yield self.make_tasks_table(self.tasks)
        if self.counts_line:
            yield Text(self.counts_line, overflow="fold")
        if self.outcome_line:
            yield Text(self.outcome_line, overflow="fold")
        line = self.waiting() if self.waiting is not None else None
        if line:
            yield Text(line, style="yellow", overflow="fold")


def settled_counts(counts: dict[str, int]) -> str:
    """The bar's tally: sent, failed (the service refused or gave up), then unknown
    (maybe sent: never counted as failed) and expired, each only when there are some."""
    sent = sum(n for s, n in counts.items() if s in SENT_STATES)
    parts = [f"sent {sent:,}", f"failed {counts.get(DeliveryState.FAILED, 0):,}"]
    for state in (DeliveryState.UNKNOWN, DeliveryState.EXPIRED):
        if counts.get(state):
            parts.append(f"{state} {counts[state]:,}")
    return " ".join(parts)


#: Real seconds between two reads of an SMS or voice run's outcomes for the bar (segments,
#: cost, digits: queries over the run's rows, unlike the counts by state it gets anyway).
OUTCOMES_EVERY_S = 5.0


class RunProgress:
    """A rich progress bar of remaining / rate / ETA; below it the tally (sent, failed,
    unknown, expired: :func:`settled_counts`), the channel's own outcomes (SMS delivered /
    undelivered, segments and cost so far; voice answered / not answered, digits
    pressed), and why the run waits (:mod:`scheduler.views.progress`, given
    ``state``)."""

    def __init__(self, console: Console, total: int, done: int, *, channel: str = "whatsapp",
                 outcomes: Callable[[dict[str, int]], ChannelOutcomes | None] | None = None,
                 state: BarState | None = None, clock: Clock = utcnow) -> None:
        self.progress = _Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(bar_width=20),
            TaskProgressColumn(),
            TextColumn("left {task.fields[remaining]}"),
            TextColumn("{task.fields[rate]}/s"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.task = self.progress.add_task("dispatch", total=max(total, 1), completed=done,
                                           remaining=f"{total - done:,}", rate="0")
        self.state = state
        self.clock = clock
        if state is not None:
            self.progress.waiting = lambda: waiting_line(state, self.clock())
        self._first: tuple[float, int] | None = None
        self.channel = channel
        self._outcomes = outcomes
        self._outcomes_at = -math.inf
        self._extra = ""

    def note(self, entry: TimelineEntry, timezone: str) -> None:
        """Print a timeline entry above the bar (window pauses, senders paused, ...), its
        time in the campaign's zone with the zone's label; the bar's state follows it."""
        if self.state is not None:
            self.state.take(entry)
        line = Text(local_time(entry.at, timezone, seconds=True), style="dim")
        line.append(f" {clean(entry.what)}")
        self.progress.console.print(line, highlight=False)

    def update(self, counts: dict[str, int], *, final: bool = False) -> None:
        """Refresh from the ledger's counts by state (``final``: read the outcomes now)."""
        sent = sum(n for s, n in counts.items() if s in SENT_STATES)
        remaining = counts.get(DeliveryState.PLANNED, 0) + counts.get(DeliveryState.DISPATCHING, 0)
        now = monotonic()
        if self._first is None:
            self._first = (now, sent)
        elapsed = now - self._first[0]
        rate = (sent - self._first[1]) / elapsed if elapsed > 0.5 else 0.0
        total = self.progress.tasks[0].total or 1
        self.progress.update(self.task, completed=total - remaining,
                             remaining=f"{remaining:,}", rate=f"{rate:.1f}")
        self.progress.counts_line = settled_counts(counts)
        self._update_outcomes(counts, now, final)

    def _update_outcomes(self, counts: dict[str, int], now: float, final: bool) -> None:
        if not from_account(self.channel):  # SMS segments and cost, voice calls
            return
        if self._outcomes is not None and (final or now - self._outcomes_at >= OUTCOMES_EVERY_S):
            self._outcomes_at = now
            found = self._outcomes(counts)
            self._extra = progress_extra(found) if found is not None else ""
        line = short_outcomes(self.channel, counts)
        self.progress.outcome_line = f"{self.channel}: {line}" + (
            f" · {self._extra}" if self._extra else "")


def progress_totals(counts: dict[str, int]) -> tuple[int, int]:
    """(deliveries to dispatch, already settled) excluding rows skipped at plan time."""
    total = sum(n for s, n in counts.items() if s != DeliveryState.SKIPPED)
    pending = counts.get(DeliveryState.PLANNED, 0) + counts.get(DeliveryState.DISPATCHING, 0)
    return total, total - pending


async def run_foreground(settings: Settings, ledger: Ledger, run: Run, console: Console, *,
                         target: ServiceTarget | None = None,
                         option_overrides: dict[str, Any] | None = None,
                         show_progress: bool = True,
                         receiver_socket: socket.socket | None = None,
                         settle: Callable[[], Awaitable[None]] | None = None) -> RunResult:
    """Dispatch ``run`` against the configured service (or the embedded sandbox).

    ``receiver_socket``: the receiver's port, bound before planning (see
    :func:`scheduler.tracking.identity.bind_receiver_socket`). ``settle``: awaited once
    the dispatch ended, while the receiver is still up (the demo waits there for the
    receipts of its last sends).
    """
    options = ledger.options(run)
    with contextlib.ExitStack() as stack:
        if target is None:
            target = stack.enter_context(service_target(settings))
        client = client_for(settings, target)
        async with client:
            server, webhook_url = start_tracking(settings, ledger, client, target, console,
                                                 sock=receiver_socket)
            if server is not None:
                stack.callback(server.stop)
            child = fallback_of(ledger, run)
            await _point_webhooks(settings, client, target, run, list(options.senders), child,
                                  server, webhook_url)
            stop = asyncio.Event()
            counts = ledger.counts(run.id or 0)
            overrides = {**settings.engine_overrides(), **(option_overrides or {})}
            bar = _run_bar(console, ledger, run, options, counts, overrides)
            outgoing = stack.enter_context(outgoing_webhooks(settings, ledger.engine, console))
            with _sigint_sets(stop), (bar.progress if show_progress
                                      else contextlib.nullcontext()):
                bar.update(counts)
                dispatch_now = _dispatcher(settings, ledger, client, run, options.timezone,
                                           bar, stop, overrides, events=server is not None)
                result = await with_fallback(dispatch_now(run), child, dispatch_now)
                if server is not None:
                    await wait_for_events(settings, ledger, run, child, result, stop,
                                          console, settle)
                # events applied while the run ended change the counts the summary prints
                result.counts.clear()
                result.counts.update(ledger.counts(run.id or 0))
                if server is not None:
                    result = await hold_for_proof(
                        ledger, run, result, stop, console, dispatch_now,
                        horizon=settings.retry_horizon(),
                        resend=options.resend_unproven)
                bar.update(result.counts, final=True)
            if outgoing is not None:  # what is due now, once more, before the process ends
                await outgoing.finish()
    return result


def _run_bar(console: Console, ledger: Ledger, run: Run, options: RunOptions,
             counts: dict[str, int], overrides: dict[str, Any]) -> RunProgress:
    """The progress bar of ``run``, from its state ``counts`` so far."""
    total, done = progress_totals(counts)
    run_id = run.id or 0
    state = BarState.for_run(options, channel=run.channel,
                             retry_every_s=overrides["engine"].sender_cooloff_s)
    return RunProgress(console, total, done, channel=run.channel,
                       outcomes=lambda counts: channel_outcomes(ledger, run_id,
                                                                run.channel, counts),
                       state=state, clock=ledger.clock)


def _dispatcher(settings: Settings, ledger: Ledger, client: ServiceClient, run: Run,
                zone: str, bar: RunProgress, stop: asyncio.Event, overrides: dict[str, Any],
                *, events: bool) -> Callable[[Run], Awaitable[RunResult]]:
    """How this process dispatches ``run`` or its fallback run: until ``stop``, with the
    bar counting ``run`` and noting both (``events``: a receiver takes their events)."""
    run_id = run.id or 0

    async def dispatch_now(this: Run) -> RunResult:
        assert this.id is not None
        setup = RunSetup(stop_event=stop, events_received=events,
                         # the bar counts the run (its fallback run's in status)
                         on_progress=bar.update if this.id == run_id else None,
                         progress_every_s=0.25,
                         on_note=lambda entry: bar.note(
                             entry if this.id == run_id else as_fallback(entry, this),
                             zone),
                         care=settings.senders)
        return await dispatch_run(run_store(ledger, this.id), client, this, setup,
                                  option_overrides=overrides)

    return dispatch_now


async def _point_webhooks(settings: Settings, client: ServiceClient, target: ServiceTarget,
                          run: Run, senders: list[str], child: Run | None, server: Any,
                          webhook_url: str | None) -> None:
    """Point the service's webhooks at this process's receiver: the account's (SMS, voice),
    else the senders' sessions (WhatsApp), and the fallback run's."""
    if from_account(run.channel) and server is not None:
        from scheduler.tracking import account_webhook_url

        await ensure_account_webhook(client, settings, run.channel,
                                     account_webhook_url(settings, server))
    elif run.channel in SESSION_CHANNELS:
        await ensure_senders(client, target, senders, webhook_url)
    if child is not None:
        await point_webhook(client, settings, child, server)


def describe(result: RunResult, console: Console, ledger: Ledger | None = None, *,
             horizon: timedelta = RETRY_HORIZON) -> None:
    """Print how a dispatch ended (with what can be said of ``unknown`` rows, given the
    ledger, judged over the service's retry ``horizon``: see ``unknowns``)."""
    colour = {"completed": "green", "paused": "yellow", "cancelled": "red"}.get(
        result.status, "white")
    console.print(f"run {result.run_id}: [bold {colour}]{result.status}[/]"
                  + (f" ({result.reason})" if result.reason else ""))
    console.print("  " + ", ".join(f"{state} {n}" for state, n in sorted(result.counts.items())))
    outcomes = None if ledger is None else channel_outcomes(
        ledger, result.run_id, ledger.get_run(result.run_id).channel, result.counts)
    for line in outcomes.lines() if outcomes is not None else ():
        console.print(f"  {line}", highlight=False)
    for line in fallback_lines(ledger, result.run_id) if ledger is not None else ():
        console.print(f"  {line}", highlight=False)
    if ledger is not None and result.counts.get(DeliveryState.UNKNOWN):
        run = ledger.get_run(result.run_id)
        verdicts = judge_run(ledger, result.run_id, ledger.clock(), horizon=horizon)
        for line in verdicts.describe(result.run_id, str(ledger.options(run).timezone)):
            console.print(f"  {line}", highlight=False)
    if result.status == "paused":
        console.print(f"  continue with: campaign resume {result.run_id}")
