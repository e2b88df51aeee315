"""The ledger's SQL statements, grouped by concern (but those a read door alone reads,
which it holds itself: :mod:`..run_reads`, :mod:`..outcome_reads`, :mod:`..overview_reads`);
import the module you need::

    from scheduler.ledger.queries import dispatch as dq
    with access.transaction(ledger.engine, "claim deliveries") as conn:
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
- ``audience``: a claim batch's rows held back by the frequency caps and the unengaged
  hold of ``[audience]``, and skipping them;
- ``ambiguous``: rows in doubt and the ``messages.sent`` events that prove them sent;
- ``events``: storing and reading webhook events;
- ``tracking``: applying events to deliveries, replies, details, the funnel;
- ``suppression``: the suppression list;
- ``labels``: each session's labels and what they are on (upserts that keep the latest fact);
- ``uptime``: when the receiver was listening (to judge ``unknown`` rows);
- ``runs``: a run's own row (status, control, lease);
- ``schedules``: schedules and fires;
- ``reports``: what a report reads.
"""

from __future__ import annotations
