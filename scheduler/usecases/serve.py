"""``campaign serve``: triggers, the webhook receiver, and a dispatcher for every live run.

Every second the server turns due fires into runs (or records them as missed when they
are later than the start grace), and starts a dispatcher for each unfinished run that no
live process holds: after a crash, everything that was running simply continues.

Each serve is a worker of the ledger (:mod:`scheduler.dispatch.workers`). On PostgreSQL
several may run at once: every worker dispatches every run through the senders it leases,
and only the trigger leader (the ``@trigger`` lease) runs APScheduler and turns fires into
runs. On SQLite a second serve is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from rich.console import Console

from scheduler.core.errors import SchedulerError
from scheduler.core.time_words import span
from scheduler.dispatch.channels import from_account
from scheduler.dispatch.dispatcher import RunSetup
from scheduler.dispatch.exceptions import DispatchError
from scheduler.dispatch.shared_senders import SharedSenders
from scheduler.dispatch.triggers import DEFAULT_START_GRACE_S, Triggers
from scheduler.dispatch.workers import WorkerSeat
from scheduler.ledger.exceptions import RunLocked
from scheduler.ledger.lease import owner_alive
from scheduler.ledger.models import Run
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus, describe_target
from scheduler.service.client import ServiceClient
from scheduler.settings.load import Settings
from scheduler.usecases.foreground import start_tracking
from scheduler.usecases.serve_fires import DueFires
from scheduler.wiring import (
    ServiceTarget,
    client_for,
    dispatch_run,
    ensure_account_webhook,
    ensure_senders,
    run_store,
    store_for,
    worker_store,
)

#: Webhooks pointed at once when a worker takes senders over (``follow_leases``).
POINT_AT_ONCE = 16


#: How long a run whose dispatch could not start waits before it is tried again.
RETRY_SETUP_AFTER = timedelta(seconds=30)


class Server:
    """Triggers + receiver + dispatchers, until stopped."""

    def __init__(self, settings: Settings, ledger: Ledger, target: ServiceTarget,
                 console: Console, *, start_grace_s: float = DEFAULT_START_GRACE_S,
                 poll_s: float = 1.0) -> None:
        self.settings = settings
        self.ledger = ledger
        self.target = target
        self.console = console
        self.start_grace = timedelta(seconds=start_grace_s)
        self.poll_s = poll_s
        self.triggers: Triggers | None = None
        self.seat = WorkerSeat(worker_store(ledger), store_for(ledger),
                               lease_s=settings.worker_lease_s, target=target.ledger_value)
        self.tasks: dict[int, asyncio.Task[Any]] = {}
        self.stops: dict[int, asyncio.Event] = {}
        self.wrong_target: set[int] = set()  # runs of another target, said once
        self.webhook_url: str | None = None
        self.account_url: str | None = None
        self.events_received = False
        self.channels: dict[int, str] = {}  # the channel of each run being dispatched
        #: held senders whose webhooks reach our receiver (the account's, per channel)
        self.pointed: set[tuple[str, str | None]] = set()
        self.pointing = asyncio.Lock()
        #: Runs dispatched at once pace a sender they share together (shared_senders).
        self.shared = SharedSenders()
        #: Due fires being planned into runs (the trigger leader's).
        self.fires = DueFires(ledger, target, console, start_grace=self.start_grace,
                              plan_limit_s=settings.plan_limit_s)
        #: Runs whose dispatch could not start (the service refused a set-up call): when to
        #: try again, and the error last said (said again only when it changes).
        self.retry_at: dict[int, datetime] = {}
        self.setup_errors: dict[int, str] = {}

    @property
    def follows_leases(self) -> bool:
        """Whether each sender's webhook follows its lease to the worker holding it: on
        PostgreSQL with each worker's own receiver (no shared, load-balanced ``webhook_url``),
        so that a dead worker's receiver is never left receiving its senders' events."""
        return self.seat.leasing and self.events_received and not self.settings.webhook_url

    def runs_to_dispatch(self) -> list[Run]:
        """Unfinished runs that are not paused and that no task of ours is dispatching.

        A run whose plan is still being stored (``planned_count`` 0) is left to its planner;
        one whose planner died is discarded and, if it came from a fire, planned again
        (unless the planner was a child of ours: this worker marks its run failed).
        """
        for run_id in self.ledger.discard_interrupted_plans(spare=self.fires.planner.in_flight):
            self.console.print(f"run {run_id}: its planning was interrupted; discarded")
        now = self.ledger.clock()
        runs = [run for run in self.ledger.unfinished_runs()
                if (run.status in (RunStatus.PLANNED, RunStatus.RUNNING)
                    or self._parent_resumed(run))
                # a fallback run is planned empty: its parent hands it rows
                and (run.planned_count or run.parent_run_id is not None)
                and run.id not in self.tasks
                # a worker leaves a run to a foreground `campaign run` that holds it
                and not (self.seat.leasing and run.owner_pid is not None
                         and owner_alive(run, now))]
        runs = [run for run in runs
                if run.id not in self.retry_at or now >= self.retry_at[run.id]]
        here = self.target.ledger_value
        for run in runs:
            if run.target not in (None, here) and run.id not in self.wrong_target:
                self.wrong_target.add(run.id or 0)
                self.console.print(
                    f"[yellow]run {run.id} ({run.campaign_name}) was started against "
                    f"{describe_target(run.target)}; this serve sends to "
                    f"{describe_target(here)}: left alone (cancel it, or serve it with the "
                    "settings it started with)[/]")
        return [run for run in runs if run.target in (None, here)]

    def _parent_resumed(self, run: Run) -> bool:
        """A fallback run paused with its parent, whose parent runs again: it goes on."""
        if run.status != RunStatus.PAUSED or run.parent_run_id is None:
            return False
        return self.ledger.get_run(run.parent_run_id).status == RunStatus.RUNNING

    async def _dispatch_one(self, client: ServiceClient, run: Run) -> None:
        assert run.id is not None
        stop = self.stops[run.id]
        self.channels[run.id] = run.channel
        try:
            if self.follows_leases:  # webhooks follow the leases (follow_leases)
                if not from_account(run.channel):
                    await ensure_senders(client, self.target, list(self.ledger.options(run)
                                                                  .senders))
            elif from_account(run.channel):
                if self.account_url is not None:
                    await ensure_account_webhook(client, self.settings, run.channel,
                                                 self.account_url)
            else:
                senders = list(self.ledger.options(run).senders)
                await ensure_senders(client, self.target, senders, self.webhook_url)
            setup = RunSetup(stop_event=stop, events_received=self.events_received,
                             seat=self.seat, shared=self.shared, care=self.settings.senders)
            result = await dispatch_run(run_store(self.ledger, run.id), client, run, setup,
                                        option_overrides=self.settings.engine_overrides())
            if stop.is_set() and result.status == RunStatus.PAUSED:
                # the server is stopping, not the operator: the next serve continues it
                self.ledger.set_status(run.id, RunStatus.RUNNING,
                                       reason="interrupted when serve stopped")
            self.console.print(f"run {run.id} ({run.campaign_name}): {result.status}")
        except RunLocked:
            pass
        except DispatchError as exc:
            self.console.print(f"[red]run {run.id}: {exc}[/]")
        except SchedulerError as exc:  # e.g. a sender the service does not know: said once,
            # tried again a while later (the operator may create it), never a traceback
            self.retry_at[run.id] = self.ledger.clock() + RETRY_SETUP_AFTER
            if self.setup_errors.get(run.id) != str(exc):
                self.setup_errors[run.id] = str(exc)
                self.console.print(f"run {run.id} ({run.campaign_name}) cannot start: {exc}; "
                                   f"trying again every {span(RETRY_SETUP_AFTER)}",
                                   style="red", markup=False, highlight=False)
        finally:
            self.tasks.pop(run.id, None)
            self.stops.pop(run.id, None)
            self.channels.pop(run.id, None)

    def tick(self) -> None:
        """The worker's heartbeat and leases; start or stop the triggers with leadership."""
        self.seat.tick()
        for sender, _at, settled in self.seat.takeovers:
            self.console.print(f"took sender {sender} over: {settled} rows another worker "
                               "left in doubt settled")
        self.seat.takeovers.clear()
        if self.seat.leader and self.triggers is None:
            self.triggers = Triggers(self.ledger, start_grace_s=self.start_grace.total_seconds())
            self.triggers.start()
        elif not self.seat.leader and self.triggers is not None:
            self.triggers.stop()
            self.triggers = None

    async def follow_leases(self, client: ServiceClient) -> None:
        """Point the webhooks of the senders this worker has just taken at its receiver
        before it sends through them (each stays in ``seat.unready`` until its own webhooks
        are pointed); a worker that took a dead worker's senders receives their events from
        then on. The webhooks are pointed a few at a time, so a sender taken with many
        others is ready after one round trip, not after all of theirs."""
        if not self.follows_leases:
            return
        self.seat.unready |= self._hooks_to_point()[1]  # before anything awaits
        async with self.pointing:
            new, _senders = self._hooks_to_point()
            left = Counter(sender for sender, _channel in new)
            gate = asyncio.Semaphore(POINT_AT_ONCE)

            async def point(sender: str, channel: str | None) -> None:
                async with gate:
                    await self._point(client, sender, channel)
                left[sender] -= 1
                if not left[sender]:
                    self.seat.unready.discard(sender)

            await asyncio.gather(*(point(sender, channel)
                                   for sender, channel in sorted(new, key=str)))

    async def _point(self, client: ServiceClient, sender: str, channel: str | None) -> None:
        """Point one webhook of a held sender at this worker's receiver."""
        try:
            if channel is not None:
                assert self.account_url is not None
                await ensure_account_webhook(client, self.settings, channel,
                                             self.account_url)
            else:
                assert self.webhook_url is not None
                await client.set_webhook(sender, self.webhook_url)
        except SchedulerError as exc:  # its sends will meet the same fault, said then
            self.console.print(f"[yellow]sender {sender}: its webhook could not be "
                               f"pointed at this worker: {exc}[/]")
        self.pointed.add((sender, channel))

    def _hooks_to_point(self) -> tuple[set[tuple[str, str | None]], set[str]]:
        """The webhooks of held senders not pointed at this worker yet, and their senders."""
        hooks = self._hooks_of_held_senders()
        self.pointed &= hooks
        new = hooks - self.pointed
        return new, {sender for sender, _channel in new}

    def _hooks_of_held_senders(self) -> set[tuple[str, str | None]]:
        """Each held sender's webhook: a session's own, or the account's ``sms`` / ``voice``
        webhook of each run being dispatched that sends from the account."""
        account = sorted({channel for run_id, channel in self.channels.items()
                          if from_account(channel) and run_id in self.seat.wanted})
        hooks: set[tuple[str, str | None]] = set()
        for sender in set(self.seat.held) - self.seat.draining:
            if sender == "account":
                hooks.update((sender, channel) for channel in account)
            else:
                hooks.add((sender, None))
        return hooks

    async def _tick(self, client: ServiceClient) -> None:
        self.tick()
        await self.follow_leases(client)

    async def _keep_seat(self, client: ServiceClient, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self._tick(client)
            with contextlib.suppress(TimeoutError):  # a dead worker's lease ends: wake then
                await asyncio.wait_for(stop.wait(), timeout=self.seat.next_tick_s())

    def _outgoing_webhooks(self, stop: asyncio.Event) -> asyncio.Task[None] | None:
        """Deliver the outbox to ``[[webhooks]]`` until ``stop`` (none configured: only
        give its events out to nobody and prune them, once a minute)."""
        from scheduler.webhooks_out.worker import worker_for

        worker = worker_for(self.ledger.engine, self.settings, idle_too=True)
        if worker is None:
            return None
        return asyncio.create_task(worker.run(stop, on_error=lambda line: self.console.print(
            line, style="yellow", markup=False, highlight=False)))

    async def serve(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set; in-flight sends finish before returning."""
        client = client_for(self.settings, self.target)
        async with client:
            receiver = self._start_receiver(client)
            keeper: asyncio.Task[None] | None = None
            outgoing_stop = asyncio.Event()  # set when serving ends, however it ends
            outgoing = self._outgoing_webhooks(outgoing_stop)  # the outbox, while it serves
            try:
                self.seat.register()
                await self._tick(client)
                keeper = asyncio.create_task(self._keep_seat(client, stop))
                await self._serve_runs(client, stop)
            finally:
                if keeper is not None:
                    await keeper
                outgoing_stop.set()
                if outgoing is not None:
                    await outgoing
                await self._wind_down()
                if receiver is not None:
                    receiver.stop()

    def _start_receiver(self, client: ServiceClient) -> Any:
        """The webhook receiver when events can reach this worker (else None), its URLs."""
        receiver, self.webhook_url = start_tracking(self.settings, self.ledger, client,
                                                    self.target, self.console)
        self.events_received = receiver is not None
        # rows a dead worker left in doubt wait for their events as a restart's do
        self.seat.grace_s = self.settings.engine.verify_grace_s if self.events_received else 0.0
        if receiver is not None:
            from scheduler.tracking import account_webhook_url

            self.account_url = account_webhook_url(self.settings, receiver)
        return receiver

    async def _serve_runs(self, client: ServiceClient, stop: asyncio.Event) -> None:
        """Until ``stop``: due fires planned and the daily purge (the trigger leader's), a
        dispatcher started for each run to dispatch, senders leased as dispatchers ready."""
        self.console.print(f"serving as worker {self.seat.id}"
                           + (" (trigger leader)" if self.seat.leader else "")
                           + (f", receiver {self.webhook_url.split('?')[0]}"
                              if self.webhook_url else ""))
        from scheduler.privacy.retention import daily_purge  # [privacy], daily

        purge = daily_purge(self.settings, self.ledger.engine, self.ledger.clock,
                            self.console.print)
        while not stop.is_set():
            if self.triggers is not None:
                self.triggers.sync()
                self.fires.start_due_fires()
                purge.run_if_due()  # the trigger leader's: one worker purges
            for run in self.runs_to_dispatch():
                assert run.id is not None
                self.stops[run.id] = asyncio.Event()
                self.tasks[run.id] = asyncio.create_task(self._dispatch_one(client, run))
            for _ in range(max(1, int(self.poll_s / 0.1))):
                if self.seat.dirty:  # a dispatcher is ready: lease its senders now
                    await self._tick(client)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=min(0.1, self.poll_s))
                if stop.is_set():
                    break

    async def _wind_down(self) -> None:
        """Cut plannings short, stop the triggers, let every dispatcher finish its in-flight
        sends, and leave the seat."""
        await self.fires.cancel()
        if self.triggers is not None:
            self.triggers.stop()
        for event in self.stops.values():
            event.set()
        if self.tasks:
            await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        self.seat.stop()
