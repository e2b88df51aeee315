"""What the answers of a batch of sends do to the ledger and to the senders.

:func:`settle` turns each outcome into ledger changes (a :class:`Settlement`) and tells the
sender pool what happened; the run's store writes them
(:meth:`scheduler.dispatch.store.QueueStore.write`), in the transaction of the next claim. Keeping
this apart from the dispatcher's loop makes the rules readable in one place:

- accepted → ``accepted`` with its ``messageId``; the recipient's next step is released;
  events about that id stored before it (``messages.sent`` often comes first) are matched
  by tracking once that transaction commits (``RunStores.match_events``, from the wiring);
- ``fail`` (a 4xx about the message) → ``failed`` at once, with the service's text;
- ``stop_run`` (401/403) → the row goes back to ``planned``; the run stops and says why;
- ``sender_down`` → back to ``planned`` for another sender; the sender cools off;
- ``ambiguous`` (time-out, dropped connection) → verified against ``messages.sent`` when
  events are received; otherwise ``unknown`` (at-most-once) or sent again (at-least-once);
- ``out_of_funds`` (the wallet ran out) → back to ``planned``; the run pauses and says how
  many were not sent;
- ``retry`` / ``throttled`` → back to ``planned`` after back-off or ``Retry-After``, up to
  ``max_attempts``, then ``failed``; a throttled row is due again at once when another
  sender is free (its own waits out ``Retry-After``; another takes the row).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.results import TimelineEntry
from scheduler.dispatch.retry import Verdict, classify, retry_delay, stop_reason_for
from scheduler.dispatch.senders import SenderPool, SenderState
from scheduler.ledger.changes import Changes
from scheduler.ledger.rows import DueDelivery
from scheduler.service.exceptions import RateLimited, ServiceError


@dataclass(slots=True)
class SendOutcome:
    """The answer to one send: a message id, or the error."""

    row: DueDelivery
    sender: SenderState
    message_id: str | None = None
    error: ServiceError | None = None
    details: dict[str, Any] | None = None


@dataclass
class Settlement(Changes):
    """Ledger changes of one batch (written by the store), plus what the run should note or
    do: ``stop_reason`` pauses it; ``fatal``: the stop is the account's (a wrong or revoked
    API key), and the run's caller is told with :class:`RunStopped`."""

    notes: list[TimelineEntry] = field(default_factory=list)
    stop_reason: str | None = None
    fatal: bool = False
    #: (sender, signal) of each 429 (``rate_limited``) and server error or time-out
    #: (``server_errors``): the health score's signals no row keeps.
    trouble: list[tuple[str, str]] = field(default_factory=list)


def settle(outcomes: list[SendOutcome], pool: SenderPool, options: DispatchOptions,
           rng: random.Random, now: datetime, *, events_received: bool) -> Settlement:
    """Decide what each outcome does (see the module doc, and the error rules of
    :func:`~scheduler.dispatch.retry.classify`); updates the senders' health."""
    out = Settlement(step_delays_s=options.step_delays_s)
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
        kind, why = classify(o.error), str(o.error)
        if kind is Verdict.FAIL:
            out.failed.append((row.id, "", why))
            out.stopped.append((row.to, row.step))
        elif kind is Verdict.OUT_OF_FUNDS:
            out.retries.append((row.id, now, why))
            unpaid += 1
        elif kind is Verdict.STOP_RUN:
            out.retries.append((row.id, now, why))
            out.stop_reason = stop_reason_for(o.error)
            out.fatal = True
        elif kind is Verdict.SENDER_DOWN:
            pool.on_down(o.sender, now, why)
            out.retries.append((row.id, now, why))
            out.notes.append(TimelineEntry(now, f"sender {o.sender.name} paused: {why}",
                                           kind="sender_down", sender=o.sender.name, why=why))
        elif kind is Verdict.AMBIGUOUS:
            out.trouble.append((o.sender.name, "server_errors"))
            if events_received:
                due = now + timedelta(seconds=options.engine.verify_grace_s)
                out.verifying.append((row.id, due, f"{why}; verifying against events"))
            elif options.at_least_once:
                out.retries.append((row.id, now, why))
            else:
                out.unknown.append((row.id, "", f"ambiguous: {why}"))
                out.stopped.append((row.to, row.step))
        else:
            out.trouble.append((o.sender.name, "rate_limited" if kind is Verdict.THROTTLED
                                else "server_errors"))
            _retry_later(o, kind, why, pool, options, rng, now, out)
    if unpaid and out.stop_reason is None:
        out.stop_reason = (
            f"the account's wallet ran out: the service skipped {unpaid} "
            f"{'recipient' if unpaid == 1 else 'recipients'}, which wait in the plan with "
            "everything not yet sent; top up the wallet, then `campaign resume` the run")
    return out


def _retry_later(o: SendOutcome, verdict: Verdict, why: str, pool: SenderPool,
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
    if attempts >= options.engine.send_max_attempts:
        out.failed.append((o.row.id, "", f"gave up after {attempts} attempts: {why}"))
        out.stopped.append((o.row.to, o.row.step))
        return
    if verdict is Verdict.THROTTLED and any(
            s is not o.sender and s.held_reason is None
            and (s.blocked_until is None or s.blocked_until <= now)
            for s in pool.senders.values()):
        # a 429 is about the sender (it waits out Retry-After), not the row: another
        # sender of the run, not blocked itself, may send it now (when every sender is
        # blocked, an account-wide storm, the row waits: it would only spend attempts)
        delay = 0.0
    else:
        delay = retry_delay(verdict, attempts, rng, retry_after=retry_after,
                            base_s=options.engine.send_backoff_base_s,
                            cap_s=options.engine.send_backoff_cap_s)
    out.retries.append((o.row.id, now + timedelta(seconds=delay), why))


__all__ = ["SendOutcome", "Settlement", "settle"]
