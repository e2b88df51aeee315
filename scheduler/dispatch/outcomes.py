"""What the answers of a batch of sends do to the ledger and to the senders.

:func:`settle` turns each outcome into ledger changes (a :class:`Settlement`) and tells the
sender pool what happened; :func:`apply` writes a settlement in one transaction. Keeping
this apart from the dispatcher's loop makes the rules readable in one place:

- accepted → ``accepted`` with its ``messageId``; the recipient's next step is released;
  events about that id stored before it (``messages.sent`` often comes first) are applied
  in the same transaction;
- ``fail`` (a 4xx about the message) → ``failed`` at once, with the service's text;
- ``stop_run`` (401/403) → the row goes back to ``planned``; the run stops and says why;
- ``sender_down`` → back to ``planned`` for another sender; the sender cools off;
- ``ambiguous`` (time-out, dropped connection) → verified against ``messages.sent`` when
  events are received; otherwise ``unknown`` (at-most-once) or sent again (at-least-once);
- ``out_of_funds`` (the wallet ran out) → back to ``planned``; the run pauses and says how
  many were not sent;
- ``retry`` / ``throttled`` → back to ``planned`` after back-off or ``Retry-After``, up to
  ``max_attempts``, then ``failed``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.results import TimelineEntry
from scheduler.dispatch.retry import Verdict, classify, retry_delay, stop_reason_for
from scheduler.dispatch.senders import SenderPool, SenderState
from scheduler.ledger.access import Connection
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import tracking as tq
from scheduler.ledger.rows import DueDelivery
from scheduler.ledger.states import DeliveryState as S
from scheduler.service.exceptions import RateLimited, ServiceError
from scheduler.tracking.early import match_early_events


@dataclass(slots=True)
class Outcome:
    """The answer to one send: a message id, or the error."""

    row: DueDelivery
    sender: SenderState
    message_id: str | None = None
    error: ServiceError | None = None
    details: dict[str, Any] | None = None


@dataclass
class Settlement:
    """Ledger changes of one batch, plus what the run should note or do."""

    accepted: list[tuple[int, str | None]] = field(default_factory=list)
    details: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    released: list[tuple[str, int, str | None]] = field(default_factory=list)
    retries: list[tuple[int, datetime, str]] = field(default_factory=list)
    failed: list[tuple[int, str, str | None]] = field(default_factory=list)
    unknown: list[tuple[int, str, str | None]] = field(default_factory=list)
    verifying: list[tuple[int, datetime, str]] = field(default_factory=list)
    stopped: list[tuple[str, int]] = field(default_factory=list)
    notes: list[TimelineEntry] = field(default_factory=list)
    stop_reason: str | None = None


def settle(outcomes: list[Outcome], pool: SenderPool, options: DispatchOptions,
           rng: random.Random, now: datetime, *, events_received: bool,
           verdict: Callable[[ServiceError], Verdict] = classify) -> Settlement:
    """Decide what each outcome does (see the module doc); updates the senders' health.

    ``verdict`` is the channel's reading of an error (``Channel.verdict``).
    """
    out = Settlement()
    unpaid = 0
    for o in outcomes:
        row = o.row
        if o.error is None:
            out.accepted.append((row.id, o.message_id))
            if o.details:
                out.details.append((row.id, o.details))
            out.released.append((row.to, row.step, o.sender.name))
            pool.on_accepted(o.sender)
            continue
        kind, why = verdict(o.error), str(o.error)
        if kind is Verdict.FAIL:
            out.failed.append((row.id, "", why))
            out.stopped.append((row.to, row.step))
        elif kind is Verdict.OUT_OF_FUNDS:
            out.retries.append((row.id, now, why))
            unpaid += 1
        elif kind is Verdict.STOP_RUN:
            out.retries.append((row.id, now, why))
            out.stop_reason = stop_reason_for(o.error)
        elif kind is Verdict.SENDER_DOWN:
            pool.on_down(o.sender, now, why)
            out.retries.append((row.id, now, why))
            out.notes.append(TimelineEntry(now, f"sender {o.sender.name} paused: {why}",
                                           kind="sender_down", sender=o.sender.name, why=why))
        elif kind is Verdict.AMBIGUOUS:
            if events_received:
                due = now + timedelta(seconds=options.verify_grace_s)
                out.verifying.append((row.id, due, f"{why}; verifying against events"))
            elif options.at_least_once:
                out.retries.append((row.id, now, why))
            else:
                out.unknown.append((row.id, "", f"ambiguous: {why}"))
                out.stopped.append((row.to, row.step))
        else:
            _retry_later(o, kind, why, pool, options, rng, now, out)
    if unpaid and out.stop_reason is None:
        out.stop_reason = (
            f"the account's wallet ran out: the service skipped {unpaid} "
            f"{'recipient' if unpaid == 1 else 'recipients'}, which wait in the plan with "
            "everything not yet sent; top up the wallet, then `campaign resume` the run")
    return out


def _retry_later(o: Outcome, verdict: Verdict, why: str, pool: SenderPool,
                 options: DispatchOptions, rng: random.Random, now: datetime,
                 out: Settlement) -> None:
    retry_after = o.error.retry_after if isinstance(o.error, RateLimited) else None
    if verdict is Verdict.THROTTLED:
        pool.on_throttled(o.sender, now, retry_after)
    elif pool.on_failure(o.sender, now, why):
        out.notes.append(TimelineEntry(now, f"sender {o.sender.name} paused: kept failing "
                                       f"({why})", kind="sender_down", sender=o.sender.name,
                                       why=f"kept failing ({why})"))
    attempts = o.row.attempts + 1
    if attempts >= options.max_attempts:
        out.failed.append((o.row.id, "", f"gave up after {attempts} attempts: {why}"))
        out.stopped.append((o.row.to, o.row.step))
        return
    delay = retry_delay(verdict, attempts, rng, retry_after=retry_after,
                        base_s=options.backoff_base_s, cap_s=options.backoff_cap_s)
    out.retries.append((o.row.id, now + timedelta(seconds=delay), why))


def apply(conn: Connection, run_id: int, s: Settlement, step_delays_s: tuple[float, ...],
          now: datetime) -> None:
    """Write a settlement (the caller's transaction)."""
    dq.record_accepted(conn, s.accepted, now)  # first: it takes the matching lock
    tq.record_details(conn, s.details)
    match_early_events(conn, (m for _i, m in s.accepted), now)
    dq.release_next_steps(conn, run_id, s.released, step_delays_s, now)
    dq.record_retry(conn, s.retries, now)
    dq.record_final(conn, s.failed, S.FAILED, now)
    dq.record_final(conn, s.unknown, S.UNKNOWN, now)
    dq.mark_verifying(conn, s.verifying, now)
    dq.skip_later_steps(conn, run_id, s.stopped, "previous step not sent", now)


__all__ = ["Outcome", "Settlement", "apply", "settle"]
