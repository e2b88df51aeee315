"""Settle ambiguous deliveries: rows a crash or a time-out left ``dispatching``.

A ``dispatching`` row may or may not have reached the service. The only proof is an event
of its channel (:attr:`Channel.proof_events <scheduler.dispatch.channel.Channel>`, from that
sender when the channel's events name the session) to that recipient, after the dispatch
time, whose message id no other delivery holds. With proof the row is ``sent``; without it
the row is ``unknown`` (at-most-once, the default: a duplicate marketing message harms the
sender's number) or queued again (at-least-once). While events may still be on their way
(the service retries webhooks for minutes), a row waits in ``dispatching`` until its grace
ends.

:func:`decider` is the rule, a pure function of a row and its proof; the store looks the
proof up and writes the verdict in one transaction. Nothing here knows a channel by name.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime, timedelta

from scheduler.dispatch.channel import Channel
from scheduler.dispatch.store import MatchEvents, QueueStore
from scheduler.ledger.changes import InDoubt, ProofRule, Settle


def proof_rule(channel: Channel) -> ProofRule:
    """What proves a send of ``channel``: its proof events, by session when they name it."""
    return ProofRule(channel.proof_events, channel.events_name_session)


def decider(now: datetime, *, at_least_once: bool, grace_s: float,
            proof_events: Collection[str]) -> Callable[[InDoubt], Settle]:
    """The rule for a row in doubt: proven → sent; else verified until the grace ends
    (``grace_s`` > 0); else sent again (at-least-once) or ``unknown`` (at-most-once)."""
    names = " / ".join(sorted(proof_events))

    def decide(item: InDoubt) -> Settle:
        row = item.row
        if item.proof is not None:
            return Settle(row, "sent", proof=item.proof)
        if grace_s > 0:
            return Settle(row, "verifying", "interrupted; verifying against events",
                          until=now + timedelta(seconds=grace_s))
        if at_least_once:
            return Settle(row, "requeued", "ambiguous; sent again (delivery = at-least-once)")
        return Settle(row, "unknown", f"no {names} event: may or may not have been sent")

    return decide


def _noting(decide: Callable[[InDoubt], Settle], proven: list[str]
            ) -> Callable[[InDoubt], Settle]:
    """``decide``, keeping the message ids of the rows it proves sent in ``proven``."""
    def noted(item: InDoubt) -> Settle:
        verdict = decide(item)
        if verdict.kind == "sent" and verdict.proof is not None:
            proven.append(verdict.proof.message_id_norm)
        return verdict

    return noted


def recover_after_crash(store: QueueStore, channel: Channel, now: datetime, *,
                        match_events: MatchEvents, at_least_once: bool, grace_s: float = 0.0,
                        step_delays_s: tuple[float, ...] = (0.0,),
                        only: Collection[int] | None = None) -> dict[str, int]:
    """At start-up: settle every row a previous owner left ``dispatching`` (a bulk batch's
    rows one by one: each recipient's own event proves it); ``only`` those ids when given
    (a worker taking a sender over settles that sender's rows, not a live worker's).
    The events stored earlier about the rows proven sent (receipts, a call's outcome) are
    then matched (``match_events``, tracking's, after the commit)."""
    proven: list[str] = []
    decide = _noting(decider(now, at_least_once=at_least_once, grace_s=grace_s,
                             proof_events=channel.proof_events), proven)
    counts = store.settle_in_doubt(now, proof_rule(channel), decide, only=only,
                                   step_delays_s=step_delays_s)
    match_events(proven, now)
    return counts


def settle_verifying(store: QueueStore, channel: Channel, now: datetime, *,
                     match_events: MatchEvents, at_least_once: bool,
                     step_delays_s: tuple[float, ...] = (0.0,)) -> int:
    """Rows whose grace is over: sent with proof, else unknown or queued again; how many
    (the events about those proven sent are matched after, as above)."""
    proven: list[str] = []
    decide = _noting(decider(now, at_least_once=at_least_once, grace_s=0.0,
                             proof_events=channel.proof_events), proven)
    counts = store.settle_in_doubt(now, proof_rule(channel), decide, grace_over=True,
                                   step_delays_s=step_delays_s)
    match_events(proven, now)
    return sum(counts.values())
