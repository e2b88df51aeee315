"""From a campaign file to a finished run: plan, store, find the senders, dispatch.

This is what ``campaign run``, ``campaign resume``, ``campaign serve`` and the demo share.
The service is the configured one (``base_url`` + key) or, only when no service is
configured at all, the embedded sandbox started in-process on a free loopback port. A
service configured halfway (an address without a key, or a key without an address) is an
error: sending to the sandbox instead would fake every result.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scheduler.config import Settings
from scheduler.dispatch.dispatcher import Dispatcher, RunResult
from scheduler.dispatch.options import DispatchOptions
from scheduler.ledger.db import open_ledger
from scheduler.ledger.exceptions import RunStateError
from scheduler.ledger.models import Run
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import FINISHED_RUN_STATUSES, SANDBOX_TARGET, RunStatus
from scheduler.service.exceptions import ServiceError
from scheduler.timeutil import Clock, utcnow


def ledger_from_settings(settings: Settings, clock: Clock = utcnow) -> Ledger:
    """The ledger of the configured database, migrated to the latest schema."""
    return Ledger(open_ledger(settings.resolved_database_url()), clock=clock)


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
    service = settings.service_endpoint()
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
    from scheduler.httpserver import BackgroundServer
    from scheduler.sandbox import SandboxConfig, create_app

    config = SandboxConfig(**(sandbox_config or {}))
    app = create_app(config)
    with BackgroundServer(app) as server:
        yield ServiceTarget(server.base_url, config.api_key.get_secret_value(), sandbox=app)


def plan_run(ledger: Ledger, campaign_path: Path, *, start_at: datetime,
             fire_time: datetime | None = None,
             on_progress: Callable[[int], None] | None = None,
             target: str | None = None, skip_previous: bool = False) -> int:
    """Plan the campaign file and store it as a new run; returns the run id.

    The plan is stored in one transaction: a bad row stops everything and stores nothing.
    The run records its ``target`` and the fingerprint of the files it was planned from;
    ``skip_previous`` skips numbers that received a step of the campaign's earlier runs to
    the same target.
    """
    from scheduler.campaign.fingerprint import fingerprint_of
    from scheduler.campaign.plan import build_plan, load_campaign

    campaign = load_campaign(campaign_path)
    plan = build_plan(campaign)
    spec = campaign.spec
    run_id = ledger.create_run(
        campaign_name=spec.name, channel=spec.channel, definition_path=str(campaign_path),
        definition=spec.model_dump(mode="json"), delivery_mode=spec.delivery,
        timezone=spec.schedule.timezone, fire_time=fire_time, target=target,
        fingerprint=fingerprint_of(campaign).model_dump_json(),
    )
    try:
        ledger.store_plan(run_id, plan.chunks(), start_at=start_at, on_progress=on_progress,
                          skip_previous_of=(spec.name, target) if skip_previous else None)
    except BaseException:
        ledger.set_status(run_id, RunStatus.FAILED, reason="the plan could not be stored")
        ledger.release(run_id)
        raise
    return run_id


def replan_run(ledger: Ledger, run: Run, campaign_path: Path, *, start_at: datetime,
               on_progress: Callable[[int], None] | None = None) -> tuple[int, int]:
    """Plan an unfinished run again from the files as they are now (see ``Ledger.replan``)."""
    from scheduler.campaign.fingerprint import fingerprint_of
    from scheduler.campaign.plan import build_plan, load_campaign

    campaign = load_campaign(campaign_path)
    assert run.id is not None
    return ledger.replan(
        run.id, build_plan(campaign).chunks(), start_at=start_at,
        definition=campaign.spec.model_dump(mode="json"),
        fingerprint=fingerprint_of(campaign).model_dump_json(),
        step_delays_s=[step.delay_s for step in campaign.steps], on_progress=on_progress)


def unfinished_run_for(ledger: Ledger, campaign_name: str) -> Run | None:
    """The campaign's run started by ``campaign run`` that did not finish, if any.

    A run whose planning was killed before its plan was stored is discarded (it holds no
    rows), so the campaign is planned again instead of "continuing" an empty run.
    """
    ledger.discard_interrupted_plans(campaign_name=campaign_name)
    for run in ledger.unfinished_runs(campaign_name=campaign_name):
        if run.fire_time is None and run.planned_count:
            return run
    return None


async def ensure_senders(client: Any, target: ServiceTarget, senders: list[str],
                         webhook_url: str | None = None) -> None:
    """Make sure every sender session exists; on the sandbox, create and connect them."""
    if target.is_sandbox:
        import httpx

        for name in senders:
            with contextlib.suppress(ServiceError):  # already there
                await client.create_session(name, webhook_url=webhook_url)
            async with httpx.AsyncClient(base_url=target.base_url) as raw:
                await raw.post(f"/sandbox/sessions/{name}/scan")
    elif webhook_url:
        for name in senders:
            await client.set_webhook(name, webhook_url)


async def load_quotas(client: Any, senders: list[str]) -> dict[str, tuple[float,
                                                                        datetime | None]]:
    """Each sender's remaining plan quota from ``GET /api/v1/limits/{sessionId}``, when known.

    An unknown or partial answer means "no limit known" for that sender.
    """
    quotas: dict[str, tuple[float, datetime | None]] = {}
    if not hasattr(client, "get_limits"):
        return quotas
    for name in senders:
        try:
            limits = await client.get_limits(name)
        except ServiceError:
            continue
        left = limits.remaining("messages")
        if left is not None:
            resets_at = None
            if limits.resetsAt:
                with contextlib.suppress(ValueError):
                    resets_at = datetime.fromisoformat(limits.resetsAt.replace("Z", "+00:00"))
            quotas[name] = (float(left), resets_at)
    return quotas


async def dispatch(
    ledger: Ledger, client: Any, run: Run, *, clock: Clock = utcnow,
    sleep: Callable[[float], Awaitable[None]] | None = None, rng: random.Random | None = None,
    events_received: bool = False, stop_event: asyncio.Event | None = None,
    on_progress: Callable[[dict[str, int]], None] | None = None,
    progress_every_s: float = 0.0,
    option_overrides: dict[str, Any] | None = None,
    on_note: Callable[[Any], None] | None = None,
) -> RunResult:
    """Dispatch ``run`` to the end (or a stop) with its stored definition."""
    if run.status in FINISHED_RUN_STATUSES:
        raise RunStateError(f"run {run.id} is already {run.status}")
    assert run.id is not None
    options = DispatchOptions.from_definition(
        ledger.definition(run), start=run.started_at or clock(), **(option_overrides or {})
    )
    kwargs: dict[str, Any] = {}
    if sleep is not None:
        kwargs["sleep"] = sleep
    quotas = await load_quotas(client, list(options.senders))
    dispatcher = Dispatcher(
        ledger, client, run.id, options, clock=clock, rng=rng, events_received=events_received,
        on_progress=on_progress, progress_every_s=progress_every_s, stop_event=stop_event,
        quotas=quotas, on_note=on_note,
        **kwargs,
    )
    return await dispatcher.run()
