"""A campaign's run options: built once from the checked definition when a run is planned.

The values come parsed from the definition (:mod:`scheduler.units` values) and from the
compiled steps (their delays); the result is stored with the run (see
:mod:`scheduler.run_options`).
"""

from __future__ import annotations

from scheduler.campaign.loader import Campaign
from scheduler.run_options import SESSION_CHANNELS, RunOptions, WindowOptions, latest_parts


def run_options(campaign: Campaign) -> RunOptions:
    """The options a run of ``campaign`` is dispatched with."""
    spec = campaign.spec
    schedule, pace = spec.schedule, spec.pace
    window = None
    if schedule.window is not None:
        window = WindowOptions(opens_min=schedule.window.opens_min,
                               closes_min=schedule.window.closes_min,
                               weekdays=tuple(sorted(schedule.days.weekdays)))
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
    )
