"""Start the engine on a stored run: its options, the senders' quotas, the dispatcher."""

from __future__ import annotations

from typing import Any

from scheduler.dispatch.channel import ServiceCalls
from scheduler.dispatch.channels import channel_for
from scheduler.dispatch.dispatcher import Dispatcher, RunSetup
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.results import RunResult
from scheduler.dispatch.store import RunStores
from scheduler.ledger.exceptions import RunStateError
from scheduler.ledger.models import Run
from scheduler.ledger.states import FINISHED_RUN_STATUSES
from scheduler.settings.run import SESSION_CHANNELS


async def dispatch(stores: RunStores, client: ServiceCalls, run: Run,
                   setup: RunSetup | None = None, *,
                   option_overrides: dict[str, Any] | None = None) -> RunResult:
    """Dispatch ``run`` (its ``stores``) to the end (or a stop) with its stored options,
    changed by ``option_overrides`` (the engine settings of ``config.toml``)."""
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
