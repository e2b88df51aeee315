"""The audience rules of a claim batch: which rows a number's frequency caps or the
unengaged hold keep from being sent, and skipping them with their reason.

A campaign's ``[audience]`` (:mod:`scheduler.campaign.audience_spec`) caps the messages
one number receives per local day and per 7 days, counted over every campaign, run and
channel of the ledger, and holds a number that received several messages in 30 days
without reading or replying to any. A message counts from its dispatch: rows the service
took or may have taken (``RECEIVED_STATES``) and rows in flight (``dispatching``); a row
refused (``failed``), skipped, expired or back in ``planned`` for a retry reached nobody.

Hot (inside the claim transaction, once per batch when a rule is set): one ``GROUP BY``
over the batch's numbers (``ix_deliveries_to`` finds each number's rows; a number's rows
are the messages it ever received, a handful) and, only for numbers the hold would keep,
one look at ``replies`` (indexed on ``number``). Per row the decision is Python over those
counts, so a batch costs two statements at most whatever its size; a statement per row
would add its round trip to every send. Measured on SQLite (2 cores, loaded), 100,000
deliveries, four earlier messages per number: about 0.3 ms a batch of 1, 2.5 ms (40 µs a
row) a batch of 64, 25 µs a row a batch of 512.

Exact across processes: before counting, the claim transaction holds the batch's numbers
until it commits (:func:`~scheduler.ledger.queries.claim_locks.hold_numbers`: an advisory
lock per number on PostgreSQL, the write lock on SQLite), so two workers claiming rows to
one number at the same moment count one after the other, and the second counts the
first's claim (before, each could let one more message through than a cap allows).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import Connection, and_, bindparam, case, func, or_, select
from sqlmodel.sql.sqltypes import UTCDateTime

from scheduler.ledger.queries.claim_locks import hold_numbers
from scheduler.ledger.queries.conversation import skip_later_steps
from scheduler.ledger.queries.dispatch import record_final
from scheduler.ledger.queries.tables import deliveries, replies
from scheduler.ledger.states import RECEIVED_STATES
from scheduler.ledger.states import DeliveryState as S
from scheduler.settings.run import UNENGAGED_DAYS

#: The rows whose dispatch counts as a message to their number (see the module doc).
COUNTED_STATES = tuple(sorted(RECEIVED_STATES | {S.DISPATCHING}))
#: Kinds of the skip reasons (``kind: detail``, as ``campaign status`` groups them).
CAP_KIND = "frequency_cap"
HOLD_KIND = "unengaged"
#: The reason of a held recipient's later steps (as for any step not sent).
LATER_STEPS_REASON = "previous step not sent"


class _Counts(NamedTuple):
    """One number's messages before the batch: today, in 7 days, in 30 days, and how many
    of the 30 days' were read or replied to."""

    today: int = 0
    week: int = 0
    month: int = 0
    engaged: int = 0


def _messages(n: int) -> str:
    return f"{n} message{'' if n == 1 else 's'}"


def held_back(conn: Connection, claims: Sequence[tuple[int, str]], now: datetime, *,
              max_per_day: int | None, max_per_week: int | None,
              hold_unengaged_after: int | None, day_start: datetime) -> dict[int, str]:
    """The rows of a claim batch that must not be sent, by delivery id, with the reason.

    ``claims`` are (delivery id, recipient number) in the order they would be sent;
    ``day_start`` is the start of the local day ``max_per_day`` counts (the campaign's
    zone). Messages are counted over every run and campaign before the batch, then within
    it: an earlier row of the batch to the same number counts when it passes (two rows to
    one number never both pass a cap of 1). The batch's own rows are left out of the
    ledger's count, so the answer is the same called before or after the claim in the
    same transaction. The batch's numbers are held until the transaction ends (see the
    module), so call it in the claim's transaction, before the claim. No rule set: no
    statement, an empty answer."""
    if not claims or (max_per_day is None and max_per_week is None
                      and hold_unengaged_after is None):
        return {}
    hold_numbers(conn, [to for _i, to in claims])
    week_start = now - timedelta(days=7)
    month_start = now - timedelta(days=UNENGAGED_DAYS)
    counts = _counts(conn, claims, day_start=day_start, week_start=week_start,
                     month_start=month_start, month=hold_unengaged_after is not None)
    replied: set[str] = set()
    if hold_unengaged_after is not None:
        # a number could be held only if its messages, with the batch's earlier rows to
        # it, reach the hold: only those are looked up in the replies
        in_batch = Counter(to for _i, to in claims)
        maybe = sorted(to for to, n in in_batch.items()
                       if (c := counts.get(to, _Counts())).engaged == 0
                       and c.month + n - 1 >= hold_unengaged_after)
        replied = _replied(conn, maybe, month_start)
    held: dict[int, str] = {}
    passed: Counter[str] = Counter()  # rows of this batch that pass, per number
    for delivery_id, to in claims:
        c = counts.get(to, _Counts())
        extra = passed[to]
        reason = None
        if max_per_day is not None and c.today + extra >= max_per_day:
            reason = (f"{CAP_KIND}: {_messages(c.today + extra)} to this number today "
                      f"(max_per_day = {max_per_day})")
        elif max_per_week is not None and c.week + extra >= max_per_week:
            reason = (f"{CAP_KIND}: {_messages(c.week + extra)} to this number in 7 days "
                      f"(max_per_week = {max_per_week})")
        elif (hold_unengaged_after is not None and c.engaged == 0 and to not in replied
              and c.month + extra >= hold_unengaged_after):
            reason = (f"{HOLD_KIND}: {_messages(c.month + extra)} in {UNENGAGED_DAYS} days, "
                      f"none read or replied to (hold_unengaged_after = "
                      f"{hold_unengaged_after})")
        if reason is None:
            passed[to] += 1
        else:
            held[delivery_id] = reason
    return held


def _at(name: str) -> Any:
    return bindparam(name, type_=UTCDateTime())


def _how_many(*conditions: Any) -> Any:
    return func.sum(case((and_(*conditions), 1), else_=0))


_d = deliveries.c
#: Each number's messages since the day's start, in 7 days, in 30 days, and of those the
#: ones read or replied to. Built once: building it per batch cost more than running it
#: (4.6 ms a batch of 64 against about 1 ms; the expanding lists keep the compiled form
#: cached).
_COUNTS = (
    select(_d.to, _how_many(_d.dispatched_at >= _at("b_day")),
           _how_many(_d.dispatched_at >= _at("b_week")),
           _how_many(_d.dispatched_at >= _at("b_month")),
           _how_many(_d.dispatched_at >= _at("b_month"),
                     or_(_d.read_at.is_not(None), _d.replied_at.is_not(None),
                         _d.state.in_([S.READ, S.ANSWERED]))))
    .where(_d.to.in_(bindparam("b_tos", expanding=True)),
           _d.dispatched_at >= _at("b_since"),
           _d.state.in_(COUNTED_STATES),
           _d.id.not_in(bindparam("b_ids", expanding=True)))
    .group_by(_d.to)
)


def _counts(conn: Connection, claims: Sequence[tuple[int, str]], *, day_start: datetime,
            week_start: datetime, month_start: datetime, month: bool
            ) -> dict[str, _Counts]:
    """Each batch number's messages before the batch (one ``GROUP BY``, see the module
    doc); numbers with none are absent. Without the hold, rows older than the day and the
    week are not read (the 30 days' counts are then partial, and unused)."""
    since = min(day_start, week_start, *([month_start] if month else []))
    params = {"b_day": day_start, "b_week": week_start, "b_month": month_start,
              "b_since": since, "b_tos": sorted({to for _i, to in claims}),
              "b_ids": [i for i, _to in claims]}
    return {to: _Counts(int(a), int(b), int(c), int(e))
            for to, a, b, c, e in conn.execute(_COUNTS, params)}


def _replied(conn: Connection, numbers: Sequence[str], since: datetime) -> set[str]:
    """Of ``numbers``, those that sent anything back since ``since`` (a reply the ledger
    could not tie to a delivery counts as engagement too)."""
    if not numbers:
        return set()
    stmt = (select(replies.c.number).distinct()
            .where(replies.c.number.in_(list(numbers)), replies.c.received_at >= since))
    return {str(n) for (n,) in conn.execute(stmt)}


def skip_held_back(conn: Connection, reasons: Mapping[int, str], now: datetime) -> None:
    """Mark the rows :func:`held_back` answered ``skipped`` with their reason, and skip
    their recipient's later steps in the run (``previous step not sent``, as for any step
    not sent). Rows still ``planned`` move, or ``dispatching`` when the batch was claimed
    in this transaction (never sent: the caller sends only what is left); one read of the
    rows, one ``executemany`` per statement."""
    if not reasons:
        return
    ids = sorted(reasons)
    rows = conn.execute(select(deliveries.c.id, deliveries.c.run_id, deliveries.c.to,
                               deliveries.c.step).where(deliveries.c.id.in_(ids))).all()
    record_final(conn, [(i, S.SKIPPED, reasons[i]) for i in ids], S.SKIPPED, now,
                 from_states=(S.PLANNED, S.DISPATCHING))
    by_run: dict[int, list[tuple[str, int]]] = {}
    for _id, run_id, to, step in rows:
        by_run.setdefault(int(run_id), []).append((str(to), int(step)))
    for run_id, stopped in sorted(by_run.items()):
        skip_later_steps(conn, run_id, stopped, LATER_STEPS_REASON, now)
