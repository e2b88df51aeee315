"""The wiring, in one module: settings → the parts of a running program (the ledger, the
service or the sandbox, the engine's stores).

One factory for what every command needs: :func:`ledger_from_settings` opens the project's
ledger (:func:`open_reader` its reads alone, for the commands that only read);
:func:`service_target` gives the configured service or, only when no service is
configured at all, the embedded sandbox on a free loopback port (half a configuration is a
:class:`~scheduler.core.errors.ConfigError`, see ``Settings.service_endpoint``);
:func:`ensure_senders` makes the run's sessions ready; :func:`run_store` gives the
dispatcher its stores with tracking's matching, :func:`dispatch_run` starts the dispatcher
on a stored run (its options, channel and senders' quotas), :func:`worker_store` gives a
worker its store.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scheduler.core.errors import ConfigError, SchedulerError
from scheduler.core.timeutil import Clock, monotonic, utcnow
from scheduler.ledger.core import LedgerCore
from scheduler.ledger.schema_head import open_current
from scheduler.ledger.states import SANDBOX_TARGET
from scheduler.service.exceptions import Forbidden, ServiceError
from scheduler.settings.load import Settings, load_settings

# The service's client (aiohttp, httpx), QR codes and rich are imported where they are used:
# `campaign status` and the other commands that only read the ledger open it through here.
if TYPE_CHECKING:
    from rich.console import Console

    from scheduler.dispatch.channel import ServiceCalls
    from scheduler.dispatch.dispatcher import RunSetup
    from scheduler.dispatch.results import RunResult
    from scheduler.dispatch.store import RunStores, StoresFor
    from scheduler.ledger.models import Run
    from scheduler.ledger.runs import Ledger
    from scheduler.ledger.worker_store import WorkerStore
    from scheduler.service.client import ServiceClient


def open_project(near: Path | None = None) -> tuple[Settings, Ledger]:
    """The project's settings (found from ``near``, a campaign file, or the current folder)
    and its ledger: what nearly every command starts with."""
    settings = load_settings(near=near)
    return settings, ledger_from_settings(settings)


def open_reader(near: Path | None = None) -> tuple[Settings, LedgerCore]:
    """The project's settings and its ledger's reads (:class:`LedgerCore`: the runs, their
    counts and options; the read doors take its engine), for the commands that only read
    (``status``, ``runs``, ``senders``): the ledger's writers (``Ledger``: plans, run
    control, suppression, schedules) are not imported (issue 32)."""
    settings = load_settings(near=near)
    ledger = LedgerCore(open_current(settings.resolved_database_url()))
    weakref.finalize(ledger, ledger.engine.dispose)
    return settings, ledger


def ledger_from_settings(settings: Settings, clock: Clock = utcnow) -> Ledger:
    """The ledger of the configured database, migrated to the latest schema (Alembic runs
    only when the schema is behind).

    Its pooled connections are closed when the ledger is dropped (the end of a command,
    also one invoked in-process): PostgreSQL connections left to the garbage collector
    are a ``ResourceWarning`` each.
    """
    from scheduler.ledger.runs import Ledger

    ledger = Ledger(open_current(settings.resolved_database_url()), clock=clock)
    weakref.finalize(ledger, ledger.engine.dispose)
    return ledger


@dataclass(repr=False)
class ServiceTarget:
    """Where sends go: a base URL and its key, and whether it is the embedded sandbox."""

    base_url: str
    api_key: str
    sandbox: Any = None

    @property
    def is_sandbox(self) -> bool:
        """Whether this is the in-process sandbox."""
        return self.sandbox is not None

    @property
    def ledger_value(self) -> str:
        """What ``runs.target`` records: ``sandbox`` or ``service:<host[:port]>``."""
        if self.is_sandbox:
            return SANDBOX_TARGET
        return f"service:{urlsplit(self.base_url).netloc or self.base_url}"

    def __repr__(self) -> str:  # never the key
        return f"ServiceTarget({self.ledger_value})"


def target_value(settings: Settings) -> str:
    """What ``runs.target`` will record for these settings (raises on half a service)."""
    return target_of(settings.service_endpoint())


def target_of(service: tuple[str, str] | None) -> str:
    """``runs.target`` of a ``Settings.service_endpoint()`` answer: sandbox or its host."""
    if service is None:
        return SANDBOX_TARGET
    return f"service:{urlsplit(service[0]).netloc or service[0]}"


@contextmanager
def service_target(settings: Settings, *, force_sandbox: bool = False,
                   sandbox_config: dict[str, Any] | None = None) -> Iterator[ServiceTarget]:
    """The configured service, or an embedded sandbox served on loopback while in use.

    ``force_sandbox`` is for the rehearsal, which never sends anything anywhere.
    """
    service = None if force_sandbox else settings.service_endpoint()
    if service is not None:
        yield ServiceTarget(*service)
        return
    from scheduler.core.httpserver import BackgroundServer
    from scheduler.sandbox import SandboxConfig, create_app

    config = SandboxConfig(**(sandbox_config or {}))
    app = create_app(config)
    with BackgroundServer(app) as server:
        yield ServiceTarget(server.base_url, config.api_key.get_secret_value(), sandbox=app)


#: How long connecting waits for someone to scan a session's QR code on a real service.
SCAN_WAIT_S = 180.0


async def connect_session(client: ServiceClient, base_url: str, session: str,
                          console: Console | None, *, webhook_url: str | None = None,
                          show_qr: bool = True) -> None:
    """Create ``session`` (or reuse it), show its QR code, and wait until it is connected.

    A sandbox (embedded or in another process) is "scanned" through its inspection
    endpoint; a real service waits for a person to scan the code, up to ``SCAN_WAIT_S``.
    """
    import asyncio

    import httpx
    import segno

    with contextlib.suppress(ServiceError):  # already there
        await client.create_session(session, webhook_url=webhook_url)
    if webhook_url:
        await client.set_webhook(session, webhook_url)
    if (await client.get_session(session)).status == "connected":
        return
    if show_qr and console is not None:
        qr = await client.get_qr(session)
        console.print(f"   session {session!r} is {qr.status}; scan this QR code:")
        segno.make(qr.qrCode or session, error="l").terminal(compact=True)
    async with httpx.AsyncClient(base_url=base_url) as raw:
        with contextlib.suppress(httpx.HTTPError):  # only a sandbox has this endpoint
            await raw.post(f"/sandbox/sessions/{session}/scan")
    deadline = monotonic() + SCAN_WAIT_S
    while (status := (await client.get_session(session)).status) != "connected":
        if monotonic() > deadline:
            raise SchedulerError(f"session {session!r} is still {status} after "
                                 f"{SCAN_WAIT_S:.0f} s: scan its QR code (`campaign sessions "
                                 f"qr {session}`) and try again")
        await asyncio.sleep(1.0)


async def ensure_senders(client: ServiceClient, target: ServiceTarget, senders: list[str],
                         webhook_url: str | None = None) -> None:
    """Make sure every sender session exists; on the sandbox, create and connect them.

    A key that may not change a sender (an account member with ``read`` permission, or
    one outside that session) stops here, before any send, with what to do about it."""
    from scheduler.service.session_admin import explain

    for name in senders:
        try:
            if target.is_sandbox:
                await connect_session(client, target.base_url, name, None,
                                      webhook_url=webhook_url, show_qr=False)
            elif webhook_url:
                await client.set_webhook(name, webhook_url)
        except Forbidden as exc:
            raise explain(exc, base_url=target.base_url, session_id=name,
                          doing=f"pointing sender {name}'s webhook at the receiver") from None




async def ensure_account_webhook(client: ServiceClient, settings: Settings, channel: str,
                                 url: str) -> None:
    """Point the account's ``sms`` or ``voice`` webhook at our receiver, signed with the
    settings' ``webhook_secret`` or the secret kept in the state folder (made on first use),
    the way each sender's session webhook is set before a WhatsApp run."""
    from scheduler.dispatch.channels import known_channel
    from scheduler.tracking.identity import account_secret

    secret = account_secret(settings, create=True)
    if secret is None:
        raise ConfigError(
            f"{channel} events are signed with a secret, and there is none: set "
            "webhook_secret (CAMPAIGN_WEBHOOK_SECRET), or run in a project folder, where one "
            "is made and kept in the state folder")
    known = known_channel(channel)
    assert known is not None and known.account_webhook is not None, channel
    await client.set_account_webhook(known.account_webhook, url=url,
                                     secret=secret, events=[], enabled=True)


def client_for(settings: Settings, target: ServiceTarget) -> ServiceClient:
    """The service client for ``target`` with the settings' time-out and concurrency."""
    from scheduler.service.client import ServiceClient

    return ServiceClient(target.base_url, target.api_key, timeout_s=settings.http_timeout_s,
                         concurrency=settings.http_concurrency)


def run_store(ledger: Ledger, run_id: int) -> RunStores:
    """Run ``run_id``'s stores in ``ledger``, by role, and tracking's matching.

    The dispatcher sees :class:`~scheduler.dispatch.store.RunStores` and never imports the
    tracking layer, nor does the ledger; here, one floor above both, the stores are given
    the one matching of stored events to deliveries
    (:func:`scheduler.tracking.matching.match_events`), which the dispatcher calls once the
    message ids it recorded are committed.
    """
    from scheduler.dispatch.store import RunStores
    from scheduler.ledger.conversation_store import ConversationStore
    from scheduler.ledger.experiment_store import ExperimentStore
    from scheduler.ledger.queue_store import QueueStore
    from scheduler.ledger.recycling_store import RecyclingStore
    from scheduler.ledger.run_store import RunControlStore
    from scheduler.ledger.sender_store import SenderStore
    from scheduler.ledger.tracking_store import TrackingStore
    from scheduler.tracking.matching import match_events

    tracking = TrackingStore(ledger)
    return RunStores(RunControlStore(ledger, run_id),
                     QueueStore(ledger, run_id),
                     SenderStore(ledger, run_id), ExperimentStore(ledger, run_id),
                     RecyclingStore(ledger, run_id),
                     match_events=lambda ids, now: match_events(tracking, ids, now, held=True),
                     conversation=ConversationStore(ledger, run_id))


async def dispatch_run(stores: RunStores, client: ServiceCalls, run: Run,
                       setup: RunSetup | None = None, *,
                       option_overrides: dict[str, Any] | None = None) -> RunResult:
    """Dispatch ``run`` (its ``stores``) to the end (or a stop) with its stored options,
    changed by ``option_overrides`` (the engine settings of ``config.toml``): the channel
    and the senders' quotas it needs, then the dispatcher (imported here, when a run
    sends)."""
    from scheduler.dispatch.channels import channel_for
    from scheduler.dispatch.dispatcher import Dispatcher, RunSetup
    from scheduler.dispatch.options import DispatchOptions
    from scheduler.ledger.exceptions import RunStateError
    from scheduler.ledger.states import FINISHED_RUN_STATUSES
    from scheduler.settings.run import SESSION_CHANNELS

    if run.status in FINISHED_RUN_STATUSES:
        raise RunStateError(f"run {run.id} is already {run.status}")
    setup = setup or RunSetup()
    stored = stores.run.options()
    overrides = dict(option_overrides or {})
    if run.channel not in SESSION_CHANNELS and not stored.senders:
        overrides.setdefault("senders", ("account",))  # SMS/voice planned before 0.x named none
    options = DispatchOptions.for_run(stored, start=run.started_at or setup.timing.clock(),
                                      **overrides)
    channel = channel_for(run.channel, options)
    quotas = await channel.quotas(client, list(options.senders))
    dispatcher = Dispatcher(stores, client, options, channel=channel, setup=setup,
                            quotas=quotas)
    return await dispatcher.run()


def store_for(ledger: Ledger) -> StoresFor:
    """Any run's stores in ``ledger`` (a ``serve`` worker settles runs it does not send)."""
    return lambda run_id: run_store(ledger, run_id)


def worker_store(ledger: Ledger) -> WorkerStore:
    """The store of ``campaign serve``'s workers in ``ledger``."""
    from scheduler.ledger.worker_store import WorkerStore

    return WorkerStore(ledger)
