"""Settle ambiguous deliveries: rows a crash or a time-out left ``dispatching``.

A ``dispatching`` row may or may not have reached the service. The only proof is an event
of its channel (``messages.sent`` from that sender; ``sms.*`` or ``call.*`` of the account)
to that recipient, after the dispatch time, whose message id no other delivery holds. With
proof the row is ``sent``; without it the row is ``unknown`` (at-most-once, the default: a
duplicate marketing message harms the sender's number) or queued again (at-least-once).
While events may still be on their way (the service retries webhooks for minutes), a row
waits in ``dispatching`` until its grace ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from scheduler.ledger.access import Connection
from scheduler.ledger.queries import ambiguous as aq
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.rows import AmbiguousRow, SentProof
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import DeliveryState as S
from scheduler.service.call_models import OUTGOING_STATES
from scheduler.tracking.early import match_early_events

#: Clock skew tolerated between the dispatcher and the receiver that stamps events.
SKEW = timedelta(seconds=5)


#: The events that prove a send of WhatsApp, whose events name the sending session.
WHATSAPP_PROOF = frozenset({"messages.sent"})
#: The events that prove a WhatsApp call placed (they name the session too).
CALL_PROOF = frozenset(OUTGOING_STATES)


def _proof(conn: Connection, row: AmbiguousRow, proof_events: frozenset[str]) -> SentProof | None:
    since = row.dispatched_at - SKEW if row.dispatched_at is not None else None
    # account (SMS, voice) events name no session: the number and the time must do
    session = row.sender if proof_events in (WHATSAPP_PROOF, CALL_PROOF) else None
    found = aq.sent_events_for(conn, row.to, session, since, names=sorted(proof_events))
    return found[0] if found else None


@dataclass
class _Settled:
    """How many rows went each way, and the recipients whose next step is released or
    stopped."""

    counts: dict[str, int] = field(default_factory=lambda: {
        "sent": 0, "unknown": 0, "requeued": 0, "verifying": 0})
    released: list[tuple[str, int, str | None]] = field(default_factory=list)
    stopped: list[tuple[str, int]] = field(default_factory=list)


def _settle(conn: Connection, rows: list[AmbiguousRow], now: datetime, *,
            at_least_once: bool, grace_s: float,
            proof_events: frozenset[str] = WHATSAPP_PROOF) -> _Settled:
    out = _Settled()
    counts, released, stopped = out.counts, out.released, out.stopped
    for row in rows:
        proof = _proof(conn, row, proof_events)
        if proof is not None:
            aq.mark_proven_sent(conn, row.id, proof.message_id_norm, proof.occurred_at, now)
            if proof_events == CALL_PROOF:  # the call's other events: its outcome
                match_early_events(conn, [proof.message_id_norm], now)
            released.append((row.to, row.step, row.sender))
            counts["sent"] += 1
        elif grace_s > 0:
            dq.mark_verifying(conn, [(row.id, now + timedelta(seconds=grace_s),
                                      "interrupted; verifying against events")], now)
            counts["verifying"] += 1
        elif at_least_once:
            dq.record_retry(conn, [(row.id, now, "ambiguous; sent again "
                                    "(delivery = at-least-once)")], now)
            counts["requeued"] += 1
        else:
            dq.record_final(conn, [(row.id, "", f"no {_names(proof_events)} event: may "
                                    "or may not have been sent")], S.UNKNOWN, now)
            stopped.append((row.to, row.step))
            counts["unknown"] += 1
    return out


def _names(proof_events: frozenset[str]) -> str:
    return " / ".join(sorted(proof_events))


def recover_after_crash(ledger: Ledger, run_id: int, now: datetime, *, at_least_once: bool,
                        grace_s: float = 0.0, step_delays_s: tuple[float, ...] = (0.0,),
                        proof_events: frozenset[str] = WHATSAPP_PROOF,
                        only: set[int] | None = None) -> dict[str, int]:
    """At start-up: settle every row a previous owner left ``dispatching`` (a bulk batch's
    rows one by one: each recipient's own event proves it); ``only`` those ids when given
    (a worker taking a sender over settles that sender's rows, not a live worker's)."""
    with ledger.transaction("settle the rows a crash left in doubt") as conn:
        rows = [row for row in dq.dispatching_rows(conn, run_id) if row.due_at is None
                and (only is None or row.id in only)]
        result = _settle(conn, rows, now, at_least_once=at_least_once, grace_s=grace_s,
                         proof_events=proof_events)
        _follow_up(conn, run_id, result, step_delays_s, now)
    return result.counts


def settle_verifying(conn: Connection, run_id: int, now: datetime, *, at_least_once: bool,
                     step_delays_s: tuple[float, ...] = (0.0,),
                     proof_events: frozenset[str] = WHATSAPP_PROOF) -> int:
    """Rows whose grace is over: sent with proof, else unknown or queued again."""
    rows = aq.verifying_due(conn, run_id, now)
    if not rows:
        return 0
    result = _settle(conn, rows, now, at_least_once=at_least_once, grace_s=0.0,
                     proof_events=proof_events)
    _follow_up(conn, run_id, result, step_delays_s, now)
    return len(rows)


def _follow_up(conn: Connection, run_id: int, result: _Settled,
               step_delays_s: tuple[float, ...], now: datetime) -> None:
    dq.release_next_steps(conn, run_id, result.released, step_delays_s, now)
    dq.skip_later_steps(conn, run_id, result.stopped, "previous step not sent", now)


def earliest_verifying(ledger: Ledger, run_id: int) -> datetime | None:
    """When the first row being verified ends its grace (None: no row is being verified)."""
    with ledger.read("read the rows being verified") as conn:
        return min((due for *_rest, due in dq.dispatching_rows(conn, run_id)
                    if due is not None), default=None)
