"""The figures of ``campaign plan``: the senders' plan limits, the channel's totals and pace,
and the estimated finish given the send window, daily caps and warm-up ramps.

Plan limits come from ``GET /api/v1/limits/{sessionId}`` for WhatsApp senders when a
service is configured, else from the file's ``pace.plan_limit``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from scheduler.core.channel_terms import terms_of
from scheduler.core.errors import SchedulerError

if TYPE_CHECKING:
    from scheduler.campaign.loader import Campaign
    from scheduler.campaign.plan import PlanStats
    from scheduler.commands.plan_channels import BulkTally
    from scheduler.dispatch.pacing import Estimate, Quota
    from scheduler.dispatch.warmup_eta import RampStart
    from scheduler.dispatch.windows import SendWindow
    from scheduler.settings.run import RunOptions


class BulkTallies:
    """The bulk requests of a plan's rows as the plan is read (channels that group
    deliveries into requests); the engine's settings, read with the first rows."""

    def __init__(self) -> None:
        self.settings: dict[str, Any] = {}
        self.tally: BulkTally | None = None

    def feed(self, campaign: Campaign, rows: list[dict[str, Any]]) -> None:
        """Tally a chunk of plan rows (nothing for a channel with one endpoint per step)."""
        if terms_of(campaign.spec.channel).step_endpoints:
            return
        if self.tally is None:
            from scheduler.commands.plan_channels import BulkTally
            from scheduler.commands.preview import campaign_channel, engine_settings

            self.settings.update(engine_settings(campaign))
            self.tally = BulkTally(campaign_channel(campaign, self.settings))
        self.tally.feed(rows)


@dataclass(frozen=True)
class PlanFigures:
    """What ``campaign plan`` works out beyond the plan's own counts."""

    options: RunOptions
    quotas: list[Quota | None]
    limits_source: str  # "service", "file" or "none"
    counts: list[int]  # deliveries per sender
    channel_totals: dict[str, Any]
    limited_by: str
    ramps: dict[str, RampStart]
    window: SendWindow | None
    estimate: Estimate


def _note(text: str) -> None:
    """A note on stderr (rich markup in ``text``)."""
    from rich.console import Console

    Console(stderr=True).print(text, markup=True, highlight=False)


async def _service_quotas(campaign: Campaign) -> list[Quota | None] | None:
    """Each sender's plan limit as the service says (``None``: no service configured)."""
    from scheduler.dispatch.pacing import Quota
    from scheduler.settings.load import load_settings

    settings = load_settings(near=campaign.path)
    service = settings.service_endpoint()  # half a configuration is an error, said above
    if service is None:
        return None
    from scheduler.service.client import ServiceClient

    quotas: list[Quota | None] = []
    async with ServiceClient(*service, timeout_s=settings.http_timeout_s) as client:
        for sender in campaign.senders:
            limits = await client.get_limits(sender)
            limit = limits.limits.messages
            used = limits.used.messages or 0
            resets = None
            if limits.resetsAt:
                try:
                    resets = datetime.fromisoformat(limits.resetsAt.replace("Z", "+00:00"))
                except ValueError:
                    resets = None
            quotas.append(Quota(limit, used, resets) if limit is not None else None)
    return quotas


def plan_quotas(campaign: Campaign) -> tuple[list[Quota | None], str]:
    """Per-sender plan limits and where they came from: service, file or none. SMS and
    voice send from the account, which has no per-session plan limit (as the engine's
    channels say): only the file's ``plan_limit`` applies to them."""
    import asyncio

    from scheduler.dispatch.channels import known_channel
    from scheduler.dispatch.pacing import Quota

    channel = known_channel(campaign.spec.channel)
    try:
        quotas = None
        if channel is not None and channel.sender_quotas:
            quotas = asyncio.run(_service_quotas(campaign))
    except SchedulerError as exc:
        _note(f"[yellow]plan limits not read from the service:[/] {exc}")
        quotas = None
    if quotas is not None:
        return quotas, "service"
    limit = campaign.spec.pace.plan_limit
    if limit is not None:
        return [Quota(limit) for _ in campaign.senders], "file"
    return [None for _ in campaign.senders], "none"


def plan_figures(campaign: Campaign, stats: PlanStats, tallies: BulkTallies,
                 start: datetime, call_seconds: float | None) -> PlanFigures:
    """The channel's totals and pace and the estimated finish of ``campaign`` from
    ``start`` (``call_seconds``: as ``campaign plan --call-seconds``)."""
    from scheduler.campaign.options import run_options
    from scheduler.commands import plan_channels as pc
    from scheduler.commands.preview import campaign_channel
    from scheduler.settings.engine import EngineSettings  # a pydantic model: not at start-up

    quotas, source = plan_quotas(campaign)
    counts = [stats.recipients_per_sender[s] * len(campaign.steps) for s in campaign.senders]
    options = run_options(campaign)
    tally = tallies.tally
    channel = tally.channel if tally else campaign_channel(campaign, tallies.settings)
    bulk = tally.finish() if tally else None
    deliveries = sum(stats.planned_per_step.values())
    engine: EngineSettings = tallies.settings.get("engine") or EngineSettings()
    call_s = call_seconds if call_seconds is not None else engine.voice_call_estimate_s
    totals = pc.totals(
        channel, bulk, recipients=stats.valid, deliveries=deliveries,
        encodings=dict(stats.sms_encodings),
        prices=dict(getattr(channel, "prices", {})), call_seconds=call_s,
        call_seconds_source="--call-seconds" if call_seconds is not None
        else "settings voice_call_estimate_s",
        max_calls_asked=options.max_calls,
        account_calls=engine.voice_max_calls)
    rate, jitter, limited_by = pc.pace(channel, options, counts, deliveries,
                                     bulk.total if bulk else 0, call_s)
    timed = counts if bulk is None or channel.has_calls else \
        pc.effective_counts(counts, deliveries, bulk.total)
    extra_delay_s = sum(options.step_delays_s) + (call_s if channel.has_calls else 0.0)
    ramps, window, estimate = _estimate(campaign, options, timed, start, (rate, jitter),
                                        quotas, extra_delay_s)
    return PlanFigures(options, quotas, source, counts, totals, limited_by, ramps, window,
                       estimate)


def _estimate(campaign: Campaign, options: RunOptions, timed: list[int], start: datetime,
              pace: tuple[float, tuple[float, float]], quotas: list[Quota | None],
              extra_delay_s: float,
              ) -> tuple[dict[str, RampStart], SendWindow | None, Estimate]:
    """The finish of ``timed`` sends per sender from ``start`` at ``pace`` (rate, jitter),
    within the window, daily caps, plan limits and the senders' warm-up ramps."""
    from scheduler.dispatch.pacing import estimate_finish
    from scheduler.dispatch.warmup_eta import ramp_caps
    from scheduler.dispatch.windows import SendWindow
    from scheduler.usecases.plan_warmup import plan_ramps

    senders = campaign.senders
    ramps = plan_ramps(campaign.path, senders, start=start, tz=options.zone,
                       normal_cap=options.daily_cap)
    window = SendWindow.of(options.window, options.timezone)
    estimate = estimate_finish(
        timed,
        start=start,
        rate=pace[0],
        jitter=pace[1],
        window=window,
        daily_cap=options.daily_cap,
        quotas=quotas,
        tz=options.zone,
        extra_delay_s=extra_delay_s,
        day_caps=[ramp_caps(r.profile, r.day, options.daily_cap) if (r := ramps.get(s))
                  else None for s in senders],
    )
    return ramps, window, estimate
