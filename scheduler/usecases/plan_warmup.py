"""Where each sender of a campaign is on its warm-up ramp when the plan starts.

``campaign plan`` asks this only when the project's ``config.toml`` turns warm-up on for a
sender of the campaign (``[senders] warmup`` or ``[senders.warmup_of]``): then it reads the
senders' profiles (``warm_day``) and latest sends from the project's ledger, as the engine
will when the run starts. A sender with no profile yet starts on day 1.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from pathlib import Path

from scheduler.dispatch.warmup import day_at
from scheduler.dispatch.warmup_eta import RampStart, ramp_start
from scheduler.ledger.sender_store import SenderStore
from scheduler.ledger.states import SenderStatus
from scheduler.settings.load import Settings, load_settings
from scheduler.settings.senders import WarmupProfile


def warming_senders(settings: Settings, senders: list[str], *, start: datetime,
                    tz: tzinfo, normal_cap: int | None) -> list[RampStart]:
    """The senders still on their ramp at ``start`` (in ``senders``' order), each with its
    day and that day's cap; empty, without opening the ledger, when none has a ramp."""
    ramps: dict[str, WarmupProfile] = {}
    for sender in senders:
        ramp = settings.senders.ramp_of(sender)
        if ramp is not None:
            ramps[sender] = ramp
    if not ramps:
        return []
    from scheduler.wiring import ledger_from_settings

    store = SenderStore(ledger_from_settings(settings), 0)  # any run: profiles, last sends
    profiles = store.read_sender_profiles(list(ramps))
    last = store.last_sends(list(ramps))
    found = []
    for sender, ramp in ramps.items():
        row = profiles.get(sender)
        day = 1 if row is None else day_at(
            ramp, warm_day=row.warm_day, warm_day_date=row.warm_day_date,
            last_sent_at=last.get(sender), at=start, tz=tz,
            healthy=row.state in (SenderStatus.WARMING, SenderStatus.HEALTHY))
        entry = ramp_start(sender, ramp, day, normal_cap)
        if entry is not None:
            found.append(entry)
    return found


def plan_ramps(campaign_path: Path, senders: list[str], *, start: datetime, tz: tzinfo,
               normal_cap: int | None) -> dict[str, RampStart]:
    """:func:`warming_senders` of the project holding ``campaign_path``, by sender."""
    settings = load_settings(near=campaign_path)
    return {r.sender: r for r in warming_senders(settings, senders, start=start, tz=tz,
                                                 normal_cap=normal_cap)}


__all__ = ["plan_ramps", "warming_senders"]
