"""Writing outgoing-webhook events to the outbox, inside the transaction of each change.

The state-change points call these with their own connection, so an event exists exactly
when its change was committed (issue 34, item 3):

- a run's status (:mod:`scheduler.ledger.run_control`): :func:`run_before` locks and reads
  the run before the change, :func:`run_changed` writes ``run.*`` if the status moved;
- a sender's health state (:func:`scheduler.ledger.queries.sender_profiles.change_state`):
  :func:`sender_changed`;
- a reply stored (:mod:`scheduler.tracking.apply`): :func:`reply_stored`;
- an A/B test decided (:func:`scheduler.ledger.queries.experiments.store_decision`):
  :func:`experiment_decided`;
- a run found stuck (:mod:`scheduler.webhooks_out.stuck`): :func:`run_stuck`, once per stuck
  spell (its ``dedupe_key``).

The events' payloads are :mod:`scheduler.outbox.events`' models; the secret of a
subscription never comes here.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel
from sqlalchemy import Connection, select, update

from scheduler.ledger.queries import outbox as oq
from scheduler.ledger.queries.tables import runs
from scheduler.outbox.events import (
    RUN_STATUS_EVENTS,
    SENDER_RESUMED_FROM,
    SENDER_RESUMED_TO,
    SENDER_STATE_EVENTS,
    ExperimentData,
    RecipientData,
    RunData,
    RunStuckData,
    SenderData,
)


def new_msg_id() -> str:
    """A new event id: ``msg_`` and 32 hex digits (the ``webhook-id`` of every try)."""
    return f"msg_{uuid.uuid4().hex}"


def emit(conn: Connection, event_type: str, data: BaseModel, now: datetime, *,
         run_id: int | None = None, dedupe_key: str | None = None) -> bool:
    """Write one event in the caller's transaction; False when ``dedupe_key`` was taken."""
    return oq.add_event(conn, new_msg_id(), event_type, data.model_dump_json(), now,
                        run_id=run_id, dedupe_key=dedupe_key)


@dataclass(frozen=True)
class RunBefore:
    """A run's row as it was before a change, read under the change's lock."""

    run_id: int
    status: str
    started: bool


def run_before(conn: Connection, run_id: int) -> RunBefore | None:
    """Lock the run's row for this transaction (a no-op UPDATE: PostgreSQL's row lock,
    SQLite's write lock) and read its status, so two workers changing it at once write
    one event, not two."""
    conn.execute(update(runs).where(runs.c.id == run_id).values(status=runs.c.status))
    row = conn.execute(select(runs.c.status, runs.c.started_at)
                       .where(runs.c.id == run_id)).first()
    return None if row is None else RunBefore(run_id, str(row[0]), row[1] is not None)


def run_changed(conn: Connection, before: RunBefore | None, now: datetime) -> str | None:
    """After the change: write the run's event if its status moved; the event's type."""
    if before is None:
        return None
    row = conn.execute(select(runs.c.status, runs.c.campaign_name, runs.c.channel,
                              runs.c.stop_reason).where(runs.c.id == before.run_id)).first()
    if row is None or str(row[0]) == before.status:
        return None
    status = str(row[0])
    if status == "running":
        event_type = "run.resumed" if before.started else "run.started"
    else:
        found = RUN_STATUS_EVENTS.get(status)
        if found is None:
            return None
        event_type = found
    data = RunData(run_id=before.run_id, campaign=str(row[1]), channel=str(row[2]),
                   status=status, previous_status=before.status,
                   reason=None if status == "running" else row[3], at=now)
    emit(conn, event_type, data, now, run_id=before.run_id)
    return event_type


def run_stuck(conn: Connection, data: RunStuckData, now: datetime) -> bool:
    """``run.stuck`` once per stuck spell: the spell is the run and its last send time
    (a send ends it; the next spell has another last send)."""
    since = data.last_send_at.isoformat() if data.last_send_at else "never"
    return emit(conn, "run.stuck", data, now, run_id=data.run_id,
                dedupe_key=f"run.stuck:{data.run_id}:{since}")


def sender_changed(conn: Connection, sender: str, previous: str, state: str,
                   reason: str | None, source: str, now: datetime) -> str | None:
    """A sender's state moved from ``previous`` to ``state``: its event, if it has one."""
    event_type = SENDER_STATE_EVENTS.get(state)
    if event_type is None and previous in SENDER_RESUMED_FROM and state in SENDER_RESUMED_TO:
        event_type = "sender.resumed"
    if event_type is None or previous == state:
        return None
    emit(conn, event_type, SenderData(sender=sender, state=state, previous_state=previous,
                                      reason=reason, source=source, at=now), now)
    return event_type


def reply_stored(conn: Connection, *, run_id: int | None, delivery_id: int | None,
                 number: str, kind: str, opted_out: bool, received_at: datetime,
                 now: datetime) -> None:
    """A reply to one of our deliveries was stored: ``recipient.replied``, and
    ``recipient.opted_out`` when it opted out. A reply tied to no delivery has none."""
    if run_id is None or delivery_id is None:
        return
    campaign = conn.execute(select(runs.c.campaign_name).where(runs.c.id == run_id)).scalar()
    data = RecipientData(run_id=run_id, campaign=str(campaign or ""), delivery_id=delivery_id,
                         number=number, kind=kind, opted_out=opted_out,
                         received_at=received_at)
    emit(conn, "recipient.replied", data, now, run_id=run_id)
    if opted_out:
        emit(conn, "recipient.opted_out", data, now, run_id=run_id)


def experiment_decided(conn: Connection, run_id: int, winner: str | None, goes: str,
                       now: datetime) -> None:
    """A run's A/B test was decided: ``experiment.decided``."""
    campaign = conn.execute(select(runs.c.campaign_name).where(runs.c.id == run_id)).scalar()
    emit(conn, "experiment.decided",
         ExperimentData(run_id=run_id, campaign=str(campaign or ""), winner=winner, goes=goes,
                        decided_at=now), now, run_id=run_id)
