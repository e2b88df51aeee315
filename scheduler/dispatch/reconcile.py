"""Settle ambiguous deliveries: rows a crash or a time-out left ``dispatching``.

A ``dispatching`` row may or may not have reached the service. The only proof is a
``messages.sent`` event to that recipient from that sender, after the dispatch time, whose
message id no other delivery holds. With proof the row is ``sent``; without it the row is
``unknown`` (at-most-once, the default: a duplicate marketing message harms the sender's
number) or queued again (at-least-once). While events may still be on their way (the service
retries webhooks for minutes), a row waits in ``dispatching`` until its grace ends.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Connection

from scheduler.ledger import queries
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import DeliveryState as S

#: Clock skew tolerated between the dispatcher and the receiver that stamps events.
SKEW = timedelta(seconds=5)


def _proof(conn: Connection, to: str, sender: str | None,
           dispatched_at: datetime | None) -> tuple[str, datetime | None] | None:
    since = dispatched_at - SKEW if dispatched_at is not None else None
    found = queries.sent_events_for(conn, to, sender, since)
    return found[0] if found else None


def _settle(conn: Connection, run_id: int, rows: list[tuple[int, str, int, str | None,
                                                            datetime | None]],
            now: datetime, *, at_least_once: bool, grace_s: float) -> dict[str, int]:
    counts = {"sent": 0, "unknown": 0, "requeued": 0, "verifying": 0}
    released: list[tuple[str, int, str | None]] = []
    stopped: list[tuple[str, int]] = []
    for delivery_id, to, step, sender, dispatched_at in rows:
        proof = _proof(conn, to, sender, dispatched_at)
        if proof is not None:
            queries.mark_sent_from_event(conn, delivery_id, proof[0], proof[1], now)
            released.append((to, step, sender))
            counts["sent"] += 1
        elif grace_s > 0:
            queries.mark_verifying(conn, [(delivery_id, now + timedelta(seconds=grace_s),
                                           "interrupted; verifying against events")], now)
            counts["verifying"] += 1
        elif at_least_once:
            queries.record_retry(conn, [(delivery_id, now, "ambiguous; sent again "
                                         "(delivery = at-least-once)")], now)
            counts["requeued"] += 1
        else:
            queries.record_final(conn, [(delivery_id, "", "no messages.sent event: may or "
                                         "may not have been sent")], S.UNKNOWN, now)
            stopped.append((to, step))
            counts["unknown"] += 1
    return counts | {"_released": released, "_stopped": stopped}  # type: ignore[dict-item]


def recover_after_crash(ledger: Ledger, run_id: int, now: datetime, *, at_least_once: bool,
                        grace_s: float = 0.0, step_delays_s: tuple[float, ...] = (0.0,),
                        ) -> dict[str, int]:
    """At start-up: settle every row a previous owner left ``dispatching``."""
    with ledger.engine.begin() as conn:
        rows = [(i, to, step, sender, at) for i, to, sender, at, step, due
                in queries.dispatching_rows(conn, run_id) if due is None]
        result = _settle(conn, run_id, rows, now, at_least_once=at_least_once,
                         grace_s=grace_s)
        _follow_up(conn, run_id, result, step_delays_s, now)
    return {k: v for k, v in result.items() if not k.startswith("_")}


def settle_verifying(conn: Connection, run_id: int, now: datetime, *, at_least_once: bool,
                     step_delays_s: tuple[float, ...] = (0.0,)) -> int:
    """Rows whose grace is over: sent with proof, else unknown or queued again."""
    rows = queries.verifying_due(conn, run_id, now)
    if not rows:
        return 0
    result = _settle(conn, run_id, rows, now, at_least_once=at_least_once, grace_s=0.0)
    _follow_up(conn, run_id, result, step_delays_s, now)
    return len(rows)


def _follow_up(conn: Connection, run_id: int, result: dict, step_delays_s: tuple[float, ...],
               now: datetime) -> None:
    queries.release_next_steps(conn, run_id, result["_released"], step_delays_s, now)
    queries.skip_later_steps(conn, run_id, result["_stopped"], "previous step not sent", now)
