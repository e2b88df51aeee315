"""The hot SQL of the ledger, in one place: bulk insert, claim, outcomes, counts.

Why these are hand-written Core statements rather than ORM objects: a plan can hold a
million rows and a run dispatches thousands of rows per second, so every statement here is
one round trip for many rows (``executemany``), touches only the columns it needs, and is
guarded by the row's current state (``WHERE state = 'planned'``) so a repeated or late call
can never move a row backwards. Each function takes a Connection inside the caller's
transaction; the caller decides when to commit (the dispatcher commits a claim *before*
its HTTP call).

The statements live in four modules, one role each; import them from here::

    from scheduler.ledger import queries
    queries.claim(conn, ...)

- ``common``: the tables, JSON encoding, the suppression lookups;
- ``plan``: the bulk insert of a plan;
- ``reruns``: who already received a campaign, replacing a run's pending plan;
- ``dispatch``: due rows, claim, outcomes, steps, counts, reconciliation;
- ``uptime``: when the receiver was listening (to judge ``unknown`` rows);
- ``tracking``: storing and applying webhook events, replies, opt-outs.
"""

from __future__ import annotations

from scheduler.ledger.queries.common import *  # noqa: F403
from scheduler.ledger.queries.common import _dumps, _state_in  # noqa: F401
from scheduler.ledger.queries.dispatch import *  # noqa: F403
from scheduler.ledger.queries.plan import *  # noqa: F403
from scheduler.ledger.queries.reruns import *  # noqa: F403
from scheduler.ledger.queries.tracking import *  # noqa: F403
from scheduler.ledger.queries.uptime import *  # noqa: F403
