"""What ``campaign senders`` shows: every sender's profile (state, since when and why, warm-up
day, sends today, score, throttle), today's warm-up cap of a sender on its ramp (from
``[senders]`` in ``config.toml``) and, for WhatsApp sessions, the plan limits the service
reports and what is left of them today.

The senders are those with a profile and those named in stored runs' options without one
yet (shown as ``new``: the profile is made on their first run). Each sender's times and
"today" are in the zone of the newest run naming it (the newest run's zone otherwise, UTC
before any run), as ``events`` shows times. The limits are read from the configured service
(the embedded sandbox when none is configured, as ``run`` would send); a failure to read
them is said on that sender's entry, never replaced by a guess.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

from pydantic import field_serializer

from scheduler.core.errors import SchedulerError
from scheduler.core.lazy_model import LazyModel
from scheduler.core.time_words import iso_utc
from scheduler.core.units import day_start, load_zone
from scheduler.dispatch.warmup import cap_for_day, day_at, is_warming
from scheduler.ledger import access
from scheduler.ledger.sender_reads import SenderReads
from scheduler.ledger.states import NO_PROFILE, SANDBOX_TARGET, SenderStatus, describe_target
from scheduler.service.exceptions import ServiceError
from scheduler.settings.load import Settings
from scheduler.settings.run import SESSION_CHANNELS, OptionsError
from scheduler.settings.senders import SenderCare

if TYPE_CHECKING:  # the client (aiohttp, httpx) comes with the service, when limits are read
    from scheduler.ledger.core import LedgerCore
    from scheduler.service.client import ServiceClient
    from scheduler.service.responses import Limits  # and its wire model (status reads none)

#: The state shown for a sender named by a run that has no profile yet.
NEW = NO_PROFILE
#: What a sender is: a WhatsApp session (plan limits per session) or the SMS/voice account.
SESSION, ACCOUNT = "session", "account"


class PlanLimits(LazyModel):
    """A session's plan limits as the service reported them, and what is left today."""

    plan: str | None
    period: str | None
    limits: dict[str, int]
    used: dict[str, int]
    #: ``limits - used`` (never below 0) for each count the service gave both of.
    left: dict[str, int]
    resets_at: datetime | None
    #: ``resetsAt`` as the service gave it, when it was not ISO 8601.
    resets_text: str | None = None

    @field_serializer("resets_at")
    def _utc(self, value: datetime | None) -> str | None:
        return iso_utc(value)


class SenderInfo(LazyModel):
    """One sender as ``campaign senders`` shows it."""

    sender: str
    kind: str
    #: A state of ``SenderStatus``, or ``new`` (named by a run, no profile yet).
    state: str
    since: datetime | None
    reason: str | None
    first_seen_at: datetime | None
    last_sent_at: datetime | None
    warm_profile: str | None
    warm_day: int | None
    warm_day_date: date | None
    sends_today: int
    score: float | None
    throttle: float | None
    #: The zone its times and "today" are in (the newest run naming it).
    zone: str
    #: On its warm-up ramp ([senders] in config.toml): today's warm-up day (the engine's
    #: rule: one more after a day it sent while healthy, 1 after an idle spell), the
    #: ramp's length and today's cap (a campaign's lower ``daily_cap`` wins in its runs).
    warm_day_today: int | None = None
    warm_days: int | None = None
    warm_cap_today: int | None = None
    limits: PlanLimits | None = None
    #: Why the limits are not shown (the service's failure, or why none apply).
    limits_error: str | None = None

    @field_serializer("since", "first_seen_at", "last_sent_at")
    def _utc(self, value: datetime | None) -> str | None:
        return iso_utc(value)


class SendersView(LazyModel):
    """Every sender of the ledger (``campaign senders --json``)."""

    senders: list[SenderInfo]
    #: Where the limits were read (``describe_target``'s words); None when not read.
    limits_from: str | None = None
    #: Why no limits were read at all (a half-configured service), if so.
    limits_note: str | None = None

    def names(self) -> list[str]:
        """The senders' ids, in order."""
        return [s.sender for s in self.senders]


@dataclass
class _Named:
    """What the stored runs say of one sender: the newest run's zone and channel."""

    zone: str
    channels: set[str] = field(default_factory=set)


def _named_by_runs(ledger: LedgerCore) -> tuple[dict[str, _Named], str]:
    """Senders named in stored runs' options (newest run first wins the zone), and the
    newest run's zone (UTC before any run). A run whose options cannot be read is passed
    over (``status`` says why for it)."""
    named: dict[str, _Named] = {}
    default: str | None = None
    for run in ledger.list_runs():  # newest first
        try:
            options = ledger.options(run)
        except OptionsError:
            continue
        default = default or options.timezone
        for sender in options.senders:
            entry = named.setdefault(sender, _Named(zone=options.timezone))
            entry.channels.add(run.channel)
    return named, default or "UTC"


def _kind(sender: str, named: _Named | None) -> str:
    if named is not None and named.channels:
        return SESSION if named.channels & SESSION_CHANNELS else ACCOUNT
    return ACCOUNT if sender == "account" else SESSION


def read_senders(ledger: LedgerCore, now: datetime) -> SendersView:
    """Every sender's profile and its sends today, from the ledger alone (no limits)."""
    named, default_zone = _named_by_runs(ledger)
    with access.read(ledger.engine, "read the senders' profiles") as conn:
        reads = SenderReads(conn)
        stored = reads.profiles()
        names = sorted(set(stored) | set(named))
        zones = {s: named[s].zone if s in named else default_zone for s in names}
        today: dict[str, int] = {}
        for zone in sorted(set(zones.values())):
            members = [s for s in names if zones[s] == zone]
            today.update(reads.sends_since(members, day_start(now, zone)))
        last = reads.last_sends(list(stored))
    infos = []
    for sender in names:
        row = stored.get(sender)
        common = {"sender": sender, "kind": _kind(sender, named.get(sender)),
                  "sends_today": today.get(sender, 0), "zone": zones[sender]}
        if row is None:
            infos.append(SenderInfo(
                state=NEW, since=None, reason="no profile yet: made on its first run",
                first_seen_at=None, last_sent_at=None, warm_profile=None, warm_day=None,
                warm_day_date=None, score=None, throttle=None, **common))
            continue
        infos.append(SenderInfo(
            state=row.state, since=row.since, reason=row.reason,
            first_seen_at=row.first_seen_at, last_sent_at=last.get(sender),
            warm_profile=row.warm_profile, warm_day=row.warm_day,
            warm_day_date=row.warm_day_date, score=row.score, throttle=row.throttle,
            **common))
    return SendersView(senders=infos)


def plan_limits(limits: Limits) -> PlanLimits:
    """The service's limits document as shown: counts it gave, what is left of each."""
    given = {k: v for k, v in limits.limits.model_dump().items() if v is not None}
    used = {k: v for k, v in limits.used.model_dump().items() if v is not None}
    left = {k: max(0, v - used[k]) for k, v in given.items() if k in used}
    resets_at, resets_text = None, None
    if limits.resetsAt:
        try:
            resets_at = datetime.fromisoformat(limits.resetsAt)
        except ValueError:
            resets_text = limits.resetsAt
        else:
            if resets_at.tzinfo is None:
                resets_at = resets_at.replace(tzinfo=UTC)
    return PlanLimits(plan=limits.plan, period=limits.period, limits=given, used=used,
                      left=left, resets_at=resets_at, resets_text=resets_text)


async def fetch_limits(client: ServiceClient, base_url: str,
                       sessions: list[str]) -> dict[str, PlanLimits | str]:
    """Each session's plan limits from a configured service, or the sentence saying why
    they could not be read (one session's failure does not hide the others')."""
    from scheduler.service.responses import Limits
    from scheduler.service.session_admin import explain

    async def one(session: str) -> PlanLimits | str:
        try:
            found = await client.get_limits(session)
        except ServiceError as exc:
            said = explain(exc, base_url=base_url, session_id=session,
                           doing=f"reading the plan limits of {session}")
            return str(said)
        if found == Limits():
            return f"the service gave no plan limits for {session}"
        return plan_limits(found)

    answers = await asyncio.gather(*(one(s) for s in sessions))
    return dict(zip(sessions, answers, strict=True))


def embedded_limits(sessions: list[str]) -> dict[str, PlanLimits | str]:
    """Each session's plan limits as the embedded sandbox gives them, read in process.

    The embedded sandbox is started afresh by each command, where a session is created
    and scanned before it is asked: its answer is the default configuration's limits with
    nothing used today. Reading :func:`~scheduler.sandbox.plan_limits.limits_document`
    gives that same answer without starting the sandbox's app and server (FastAPI,
    uvicorn, the client: most of ``campaign senders``'s time; issue 32).
    """
    from scheduler.sandbox.config import SandboxConfig
    from scheduler.sandbox.plan_limits import limits_document
    from scheduler.service.responses import Limits

    config = SandboxConfig()
    now = config.clock()
    return {s: plan_limits(Limits.model_validate(limits_document(config, None, now)))
            for s in sessions}


def add_limits(view: SendersView, settings: Settings) -> SendersView:
    """``view`` with each WhatsApp session's plan limits from the configured service (the
    embedded sandbox when none is configured); the SMS/voice account has none per session."""
    from scheduler.wiring import client_for, service_target

    sessions = [s.sender for s in view.senders if s.kind == SESSION]
    for info in view.senders:
        if info.kind == ACCOUNT:
            info.limits_error = "the SMS/voice account: plan limits are read per session"
    if not sessions:
        return view
    try:
        service = settings.service_endpoint()
    except SchedulerError as exc:
        view.limits_note = f"plan limits not read: {exc}"
        return view
    if service is None:
        found = embedded_limits(sessions)
        view.limits_from = describe_target(SANDBOX_TARGET)
    else:
        with service_target(settings) as target:
            async def read() -> dict[str, PlanLimits | str]:
                async with client_for(settings, target) as client:
                    return await fetch_limits(client, target.base_url, sessions)

            found = asyncio.run(read())
            view.limits_from = describe_target(target.ledger_value)
    for info in view.senders:
        answer = found.get(info.sender)
        if isinstance(answer, PlanLimits):
            info.limits = answer
        elif answer is not None:
            info.limits_error = answer
    return view


def add_warmup(view: SendersView, care: SenderCare, now: datetime) -> SendersView:
    """``view`` with today's warm-up day and cap of each sender still on its ramp (its own
    ``warmup_of``, else ``[senders] warmup``); nothing for a sender without one."""
    for info in view.senders:
        ramp = care.ramp_of(info.sender)
        if ramp is None:
            continue
        day = 1 if info.warm_day is None else day_at(
            ramp, warm_day=info.warm_day, warm_day_date=info.warm_day_date,
            last_sent_at=info.last_sent_at, at=now, tz=load_zone(info.zone),
            healthy=info.state in (SenderStatus.WARMING, SenderStatus.HEALTHY))
        if is_warming(ramp, day):
            info.warm_day_today, info.warm_days = day, ramp.days
            info.warm_cap_today = cap_for_day(ramp, day, None)
    return view


def senders_view(ledger: LedgerCore, settings: Settings, now: datetime, *,
                 limits: bool = True) -> SendersView:
    """Every sender of the ledger, today's warm-up caps and, with ``limits``, its
    session's plan limits."""
    view = add_warmup(read_senders(ledger, now), settings.senders, now)
    return add_limits(view, settings) if limits else view
