"""A campaign's run options: built once from the checked definition when a run is planned.

The values come parsed from the definition (:mod:`scheduler.core.units` values) and from the
compiled steps (their delays, their retry rules); the result is stored with the run (see
:mod:`scheduler.settings.run`). A campaign with ``[fallback]`` has a second run, its
fallback run, whose options :func:`fallback_run_options` gives.
"""

from __future__ import annotations

from scheduler.campaign.loader import Campaign
from scheduler.core.units import parse_rate
from scheduler.settings.conversation import ConversationOptions
from scheduler.settings.retry_rules import FallbackOptions, RecycleOptions
from scheduler.settings.run import (
    DEFAULT_RATE,
    SESSION_CHANNELS,
    RunOptions,
    WindowOptions,
    latest_parts,
)


def recycle_options(campaign: Campaign) -> RecycleOptions | None:
    """The campaign's second chances: each step's retry rules and ``min_talk``, and the
    fallback (None: it has none)."""
    steps = {step.index: step.recycle for step in campaign.steps if step.recycle is not None}
    spec = campaign.spec.fallback
    fallback = None if spec is None else FallbackOptions(
        after_s=spec.after, when=spec.when, channel=spec.channel)
    if not steps and fallback is None:
        return None
    return RecycleOptions(steps=steps, fallback=fallback)


def run_options(campaign: Campaign) -> RunOptions:
    """The options a run of ``campaign`` is dispatched with."""
    spec = campaign.spec
    schedule, pace = spec.schedule, spec.pace
    window = None
    if schedule.window is not None:
        window = WindowOptions(opens_min=schedule.window.opens_min,
                               closes_min=schedule.window.closes_min,
                               weekdays=tuple(sorted(schedule.days.weekdays)),
                               holidays=schedule.holidays)
    elif schedule.holidays is not None:  # no hours: the whole day, off holidays
        window = WindowOptions(opens_min=0, closes_min=0,
                               weekdays=tuple(sorted(schedule.days.weekdays)),
                               holidays=schedule.holidays)
    latest_at, latest_clock = latest_parts(schedule.latest, campaign.zone)
    return RunOptions(
        # SMS and voice send from the account ("account" unless the file names it)
        senders=tuple(spec.senders if spec.channel in SESSION_CHANNELS else campaign.senders),
        rate_per_s=pace.rate.per_s,
        jitter_s=pace.jitter.bounds_s,
        daily_cap=pace.daily_cap,
        plan_limit=pace.plan_limit,
        timezone=schedule.timezone,
        window=window,
        recipient_timezone=spec.recipient_timezone,
        latest_at=latest_at,
        latest_clock_min=latest_clock,
        delivery_mode=spec.delivery,
        rotation=spec.sender_rotation,
        step_delays_s=tuple(step.delay_s for step in campaign.steps),
        resend_unproven=spec.resend_unproven,
        batch_size=pace.batch,
        max_calls=pace.max_calls,
        max_per_day=spec.audience.max_per_day,
        max_per_week=spec.audience.max_per_week,
        hold_unengaged_after=spec.audience.hold_unengaged_after,
        recycle=recycle_options(campaign),
        conversation=conversation_options(campaign),
    )


def conversation_options(campaign: Campaign) -> ConversationOptions | None:
    """The steps' conditions and ``[replies]`` (None: no step has a condition); a loaded
    campaign's are valid (the loader reported any problem)."""
    from scheduler.campaign.conversation_spec import conversation

    spec = campaign.spec
    found, _problems = conversation(spec.steps, channel=spec.channel,
                                    track_links=spec.track_links, replies=spec.replies)
    return found


def fallback_run_options(campaign: Campaign, parent: RunOptions) -> RunOptions | None:
    """The options of the campaign's fallback run (None: no ``[fallback]``): one step on
    the fallback's channel, sent from the account at ``[fallback] rate`` (else the default
    rate), in the parent run's zone, window, recipient zones, latest time and delivery
    mode; no daily cap, audience rule or retry of its own (a fallback is the recipient's
    last attempt)."""
    spec = campaign.spec.fallback
    if spec is None:
        return None
    return RunOptions(
        senders=("account",),
        rate_per_s=spec.rate.per_s if spec.rate is not None else parse_rate(DEFAULT_RATE),
        jitter_s=(0.0, 0.0),
        daily_cap=None,
        plan_limit=None,
        timezone=parent.timezone,
        window=parent.window,
        recipient_timezone=parent.recipient_timezone,
        latest_at=parent.latest_at,
        latest_clock_min=parent.latest_clock_min,
        delivery_mode=parent.delivery_mode,
        rotation=parent.rotation,
        step_delays_s=(0.0,),
        resend_unproven=parent.resend_unproven,
    )
