"""Every SQL statement of the program, grouped by concern; import the module you need::

    from scheduler.ledger.queries import dispatch as dq
    with ledger.transaction("claim deliveries") as conn:
        moved = dq.claim(conn, picked, now)

Why these are hand-written Core statements rather than ORM objects: a plan can hold a
million rows and a run dispatches thousands of rows per second, so every hot statement is
one round trip for many rows (``executemany``), touches only the columns it needs, and is
guarded by the row's current state (``WHERE state = 'planned'``) so a repeated or late call
can never move a row backwards. Each function takes a Connection inside the caller's
transaction (opened with :mod:`scheduler.ledger.access`, which translates database
errors); the caller decides when to commit (the dispatcher commits a claim *before* its
HTTP call). Rows come back typed (:mod:`scheduler.ledger.rows`).

- ``tables``: the tables; ``common``: JSON text, ``state IN``, the matching lock;
- ``plan``: the bulk insert of a plan;
- ``reruns``: who already received a campaign, replacing a pending plan, re-queueing;
- ``dispatch``: due rows, claim, outcomes, steps, counts;
- ``ambiguous``: rows in doubt and the ``messages.sent`` events that prove them sent;
- ``events``: storing and reading webhook events;
- ``tracking``: applying events to deliveries, replies, details, the funnel;
- ``suppression``: the suppression list;
- ``uptime``: when the receiver was listening (to judge ``unknown`` rows);
- ``runs``: a run's own row (status, control, lease);
- ``schedules``: schedules and fires;
- ``reports``: what a report reads.
"""

from __future__ import annotations

# ruff: noqa: F401
# Transitional names for callers being moved to the modules above (removed once none is
# left; see tests/test_architecture.py). No ``import *``: each name is listed.
from scheduler.ledger.queries.ambiguous import (
    ambiguous_row_for,
    mark_proven_sent,
    sent_events_for,
    verifying_due,
)
from scheduler.ledger.queries.common import lock_matching
from scheduler.ledger.queries.dispatch import (
    claim,
    counts_by_state,
    defer,
    dispatching_rows,
    due_deliveries,
    expire_pending,
    mark_verifying,
    next_due_time,
    pending_count,
    record_accepted,
    record_final,
    record_retry,
    release_next_steps,
    repair_waiting_steps,
    sent_today_by_sender,
    skip_later_steps,
)
from scheduler.ledger.queries.events import (
    event_payloads,
    insert_events,
    mark_events_applied,
    max_event_id,
    note_event_result,
    recent_unmatched_events,
    stored_event_payloads_for,
    unapplied_events,
    unmatched_events_for,
)
from scheduler.ledger.queries.plan import insert_deliveries
from scheduler.ledger.queries.reruns import (
    continue_after_handled,
    count_rows,
    count_skipped_as_received,
    drop_already_handled,
    drop_replaceable_rows,
    max_delivery_id,
    requeue,
    skip_previous_recipients,
    unpin_removed_senders,
)
from scheduler.ledger.queries.suppression import (
    add_suppression,
    skip_pending_for_number,
    suppressed_numbers,
)
from scheduler.ledger.queries.tables import deliveries, replies, suppressions
from scheduler.ledger.queries.tracking import (
    held_message_ids,
    latest_delivery_to,
    record_reply,
    track_progress,
)
from scheduler.ledger.queries.uptime import (
    open_uptime,
    touch_uptime,
    unknown_rows,
    uptime_intervals,
)
from scheduler.ledger.rows import DueDelivery

mark_sent_from_event = mark_proven_sent
