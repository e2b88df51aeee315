"""One recipient's story: every delivery, attempt, variant, event, reply, click and opt-out
of one number across runs, in time order, with the sender and the decisions taken (the
retry rules' verdicts; the conditional steps' decisions where the ledger has them).

Read by ``campaign recipient NUMBER`` and the dashboard's ``/recipients/NUMBER`` page; the
SQL is :mod:`scheduler.ledger.story_reads`. A number is normalised as the
campaign normalises its CSV (:class:`~scheduler.campaign.phones.PhoneNormalizer`, the
default region ``BR`` unless told): ``+55 (11) 98765-4321``, ``11 98765-4321`` and
``5511987654321`` are the same person.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from scheduler.core.errors import SchedulerError
from scheduler.ledger import access
from scheduler.ledger.runs import Ledger
from scheduler.ledger.story_reads import StoryDelivery, StoryReads
from scheduler.views.run_parts import event_summary, recipient

#: The times of a delivery that make a line of the story: (column, what happened).
_MOMENTS = (("dispatched_at", "handed to the service"), ("accepted_at", "accepted"),
            ("sent_at", "sent"), ("delivered_at", "delivered"), ("read_at", "read"),
            ("failed_at", "failed"), ("ended_at", "call ended"))
#: The longest text a line of the story carries (a reply's whole text is in ``replies``).
TEXT_SHOWN = 300


class NumberError(SchedulerError):
    """A value that is not a phone number (said with why)."""


class StoryDeliveryLine(BaseModel):
    """One delivery of the number: a step (or attempt n of it) of one run."""

    id: int
    run_id: int
    campaign: str
    channel: str
    #: the step (0: the first) and the attempt (1: the first)
    step: int
    attempt: int
    kind: str
    state: str
    reason: str | None = None
    variant: str | None = None
    sender: str | None = None
    #: the retry rule that made this attempt, and the verdict taken on its outcome
    rule: str | None = None
    verdict: str | None = None
    #: the decision on the step's condition (``go``/``skip``) and why
    decision: str | None = None
    decision_reason: str | None = None
    last_error: str | None = None
    message_id: str | None = None


class StoryItem(BaseModel):
    """One moment of the story."""

    at: datetime
    #: ``planned``, ``handed to the service``, ``accepted``, ``sent``, ``delivered``,
    #: ``read``, ``failed``, ``skipped``, ``verdict``, ``decision``, ``late reply``,
    #: ``reply``, ``click``, ``event``, ``opt-out``
    what: str
    run_id: int | None = None
    campaign: str | None = None
    step: int | None = None
    attempt: int | None = None
    variant: str | None = None
    sender: str | None = None
    delivery_id: int | None = None
    reply_id: int | None = None
    #: a reply's state in the inbox (``new``, ``to answer``, ``handled``)
    state: str | None = None
    #: the words of it: a reply's text, an error, a verdict, a link (shown escaped)
    text: str | None = None
    #: the zone it is shown in (its run's; the newest run's for what belongs to none)
    timezone: str = "UTC"


class RecipientStory(BaseModel):
    """Everything about one number."""

    number: str
    #: the names the CSVs gave it (each once)
    names: list[str]
    runs: list[int]
    deliveries: list[StoryDeliveryLine]
    items: list[StoryItem]
    replies: int
    opted_out: bool
    read_at: datetime


def normalise_number(raw: str, region: str = "BR") -> str:
    """``raw`` as the campaign stores numbers (international digits, no ``+``)."""
    from scheduler.campaign.phones import PhoneNormalizer

    try:
        normalizer = PhoneNormalizer(region)
    except ValueError as exc:
        raise NumberError(f"--country {region!r}: {exc}") from None
    found = normalizer.normalize(raw)
    if found.digits:
        return found.digits
    digits = "".join(ch for ch in raw if ch.isdigit())
    if digits and len(digits) >= 8 and not any(ch.isalpha() for ch in raw):
        return digits  # a number phonenumbers refuses may still be in the ledger as given
    why = found.reason or "not valid"
    raise NumberError(f"{raw!r} is not a phone number"
                      + ("" if why == "not a phone number" else f": {why}"))


def looks_like_number(text: str) -> bool:
    """Whether a search is a number (digits and phone punctuation, 8 digits or more)."""
    digits = sum(ch.isdigit() for ch in text)
    return digits >= 8 and all(ch.isdigit() or ch in " +()-./" for ch in text.strip())


def _short(text: str | None) -> str | None:
    if text is None:
        return None
    return text if len(text) <= TEXT_SHOWN else text[:TEXT_SHOWN - 1] + "…"


def _line(d: StoryDelivery) -> StoryDeliveryLine:
    return StoryDeliveryLine(
        id=d.id, run_id=d.run_id, campaign=d.campaign, channel=d.channel, step=d.step,
        attempt=d.attempt, kind=d.kind, state=d.state, reason=d.reason, variant=d.variant,
        sender=d.sender, rule=d.rule, verdict=d.verdict, decision=d.decision,
        decision_reason=d.decision_reason, last_error=d.last_error, message_id=d.message_id)


def _delivery_items(d: StoryDelivery) -> list[StoryItem]:
    """The moments of one delivery."""
    base: dict[str, Any] = {"run_id": d.run_id, "campaign": d.campaign, "step": d.step,
                            "attempt": d.attempt, "variant": d.variant,
                            "delivery_id": d.id, "timezone": d.timezone}
    items = []
    if d.dispatched_at is None and d.due_at is not None:
        items.append(StoryItem(at=d.due_at, what="planned", text=f"due ({d.state})", **base))
    for column, what in _MOMENTS:
        moment = getattr(d, column)
        if moment is not None:
            text = _short(d.last_error) if what == "failed" else None
            sender = d.sender if column == "dispatched_at" else None
            items.append(StoryItem(at=moment, what=what, sender=sender, text=text, **base))
    if d.state == "skipped" and d.updated_at is not None:
        items.append(StoryItem(at=d.updated_at, what="skipped", text=_short(d.reason), **base))
    if d.verdict and d.updated_at is not None:
        items.append(StoryItem(at=d.updated_at, what="verdict", text=_short(d.verdict), **base))
    if d.decision and d.decided_at is not None:
        why = f"{d.decision}: {d.decision_reason}" if d.decision_reason else d.decision
        items.append(StoryItem(at=d.decided_at, what="decision", text=_short(why), **base))
    if d.late_note and d.late_at is not None:
        items.append(StoryItem(at=d.late_at, what="late reply", text=_short(d.late_note),
                               **base))
    return items


def read_story(ledger: Ledger, number: str, *, now: datetime) -> RecipientStory:
    """The story of ``number`` (normalised already), read in one snapshot."""
    with access.snapshot(ledger.engine, f"read the story of {number}") as conn:
        reads = StoryReads(conn)
        found = reads.story_deliveries(number)
        replies = reads.story_replies(number)
        events = reads.story_events(number)
        clicks = reads.story_clicks([d.id for d in found])
        opt_out = reads.story_opt_out(number)
    by_id = {d.id: d for d in found}
    zone_of = {d.run_id: d.timezone for d in found}
    # what belongs to no run (an event, the opt-out) in the zone of the newest run
    home = found[-1].timezone if found else "UTC"
    campaign_of = {d.run_id: d.campaign for d in found}
    items = [item for d in found for item in _delivery_items(d)]
    for r in replies:
        d = by_id.get(r.delivery_id) if r.delivery_id is not None else None
        items.append(StoryItem(
            at=r.received_at, what="reply", run_id=r.run_id,
            campaign=campaign_of.get(r.run_id) if r.run_id else None,
            step=d.step if d else None, attempt=d.attempt if d else None,
            variant=d.variant if d else None, sender=r.session_id,
            delivery_id=r.delivery_id, reply_id=r.id, state=r.state,
            text=_short(r.text) if r.text else f"({r.kind})",
            timezone=zone_of.get(r.run_id, home) if r.run_id else home))
    for e in events:
        if (e.result or "").startswith("reply"):
            continue  # a reply's own event: the reply is in the story already
        words = event_summary(e.payload, TEXT_SHOWN)
        items.append(StoryItem(at=e.at, what="event", sender=e.session_id, timezone=home,
                               text=" · ".join(x for x in (e.event, words) if x)))
    for c in clicks:
        d = by_id[c.delivery_id]
        words = c.url or "a tracked link"
        if not c.counted:
            words += f" (not counted: {c.why_not})" if c.why_not else " (not counted)"
        items.append(StoryItem(at=c.at, what="click", run_id=c.run_id, campaign=d.campaign,
                               step=d.step, attempt=d.attempt, variant=d.variant,
                               delivery_id=d.id, text=_short(words), timezone=d.timezone))
    if opt_out is not None:
        items.append(StoryItem(at=opt_out.created_at, what="opt-out", timezone=home,
                               text=_short(f"{opt_out.source}: {opt_out.reason}"
                                           if opt_out.reason else opt_out.source)))
    items.sort(key=lambda item: item.at)
    names = list(dict.fromkeys(n for n in (recipient(d.variables) for d in found) if n))
    return RecipientStory(number=number, names=names,
                          runs=sorted({d.run_id for d in found}),
                          deliveries=[_line(d) for d in found], items=items,
                          replies=len(replies), opted_out=opt_out is not None, read_at=now)


class NamedNumber(BaseModel):
    """A number whose name has a word starting with the words searched for, with the name."""

    number: str
    name: str | None = None


def find_by_name(ledger: Ledger, words: str, limit: int = 20) -> list[NamedNumber]:
    """Numbers whose name (a CSV's name column) has a word starting with ``words`` (case
    and accents aside: "jose s" finds "José Silva"), at most ``limit``; the names by an
    index, then their numbers (:meth:`scheduler.ledger.story_reads.StoryReads.numbers_named`)."""
    words = words.strip()
    if not words:
        return []
    with access.read(ledger.engine, "search the recipients by name") as conn:
        found = StoryReads(conn).numbers_named(words, limit)
    return [NamedNumber(number=number, name=name) for number, name in found]
