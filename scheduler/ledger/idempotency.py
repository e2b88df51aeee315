"""The HTTP API's ``Idempotency-Key``s (issue 34): a key sent with ``POST /api/v1/runs``
is kept with the run it started, so that the same request sent again (a client's retry
after a timeout) answers with that run instead of starting another.

``api_idempotency_keys`` (migration 0018) holds one row per key: the SHA-256 of the request
it came with (the campaign file and the options, never a number), the run, and when. A key
is claimed before the run is planned (its ``run_id`` empty meanwhile), so two requests with
one key at once plan one run: the second is told the first is under way. A start that fails
gives its key back (the client may send it again once the cause is fixed).

The key is bound to its run as soon as the run's row exists, before its rows are planned
(:func:`settle`, called by the planner's ``on_created``): a retry while a long plan is
being stored answers that run, however long the plan takes. A key still without a run
after :data:`CLAIM_EXPIRES` had a planner that died before its run existed, so nothing of
that request can ever be sent: the key is claimed again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Column, Engine, Integer, MetaData, String, Table, delete, select, update
from sqlmodel.sql.sqltypes import UTCDateTime

from scheduler.core.errors import SchedulerError
from scheduler.ledger import access
from scheduler.ledger.exceptions import LedgerError

#: The longest key accepted (UUIDs are 36; the IETF draft sets no bound).
MAX_KEY_CHARS = 200
#: How long a claimed key with no run yet stays claimed (its planner may have died).
CLAIM_EXPIRES = timedelta(minutes=10)

api_idempotency_keys = Table(
    "api_idempotency_keys", MetaData(),
    Column("key", String, primary_key=True),
    Column("request_hash", String, nullable=False),
    Column("run_id", Integer, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
)


class KeyReused(SchedulerError):
    """The key came with another request before (HTTP 422)."""


class KeyInUse(SchedulerError):
    """A request with the key is being handled now (HTTP 409)."""


@dataclass(frozen=True)
class Claim:
    """What a key says of a request: ``run_id`` None: a new key, now claimed (plan the run,
    then :func:`settle` or :func:`release`); else the run it started before."""

    key: str
    run_id: int | None


def check_key(key: str) -> str:
    """``key`` when it is a usable key: 1 to :data:`MAX_KEY_CHARS` printable ASCII
    characters."""
    if not key or len(key) > MAX_KEY_CHARS or not all(" " < ch <= "~" for ch in key):
        raise SchedulerError(f"the Idempotency-Key must be 1 to {MAX_KEY_CHARS} printable "
                             "characters without spaces (a UUID, say)")
    return key


def claim(engine: Engine, key: str, request_hash: str, now: datetime) -> Claim:
    """Claim ``key`` for a request whose hash is ``request_hash``: a new key is claimed
    (``run_id`` None); a key that started a run with the same request gives that run; a key
    used with another request is :class:`KeyReused`; one still being handled,
    :class:`KeyInUse`."""
    check_key(key)
    try:
        with access.transaction(engine, "claim an Idempotency-Key") as conn:
            row = conn.execute(select(api_idempotency_keys)
                               .where(api_idempotency_keys.c.key == key)).first()
            if row is None:
                conn.execute(api_idempotency_keys.insert().values(
                    key=key, request_hash=request_hash, created_at=now))
                return Claim(key, None)
    except LedgerError:  # another request inserted it a moment before (PostgreSQL)
        with access.read(engine, "read an Idempotency-Key") as conn:
            row = conn.execute(select(api_idempotency_keys)
                               .where(api_idempotency_keys.c.key == key)).first()
        if row is None:
            raise
    if row.request_hash != request_hash:
        raise KeyReused("this Idempotency-Key was sent before with another request (another "
                        "campaign or other options): a key stands for one request; send a "
                        "new key for a new one")
    if row.run_id is None and now - row.created_at > CLAIM_EXPIRES:
        with access.transaction(engine, "claim an Idempotency-Key again") as conn:
            taken = conn.execute(update(api_idempotency_keys).where(
                api_idempotency_keys.c.key == key, api_idempotency_keys.c.run_id.is_(None),
                api_idempotency_keys.c.created_at == row.created_at).values(created_at=now))
        if taken.rowcount == 1:
            return Claim(key, None)
        return claim(engine, key, request_hash, now)
    if row.run_id is None:
        raise KeyInUse("a request with this Idempotency-Key is being handled now (its run "
                       "is being planned); send it again in a moment to get its run")
    return Claim(key, int(row.run_id))


def settle(engine: Engine, key: str, run_id: int) -> None:
    """Keep ``run_id`` as the run ``key`` started; :class:`KeyInUse` when the key is no
    longer this request's to bind (another request claimed it again meanwhile and bound
    its own run): the caller's run is then failed before a row of it is planned."""
    c = api_idempotency_keys.c
    with access.transaction(engine, "keep the run of an Idempotency-Key") as conn:
        bound = conn.execute(update(api_idempotency_keys)
                             .where(c.key == key, c.run_id.is_(None)).values(run_id=run_id))
    if bound.rowcount != 1:
        raise KeyInUse("this Idempotency-Key was claimed again by another request while "
                       "this one was preparing its plan; that request's run is the key's")


def release(engine: Engine, key: str, *, run_id: int | None = None) -> None:
    """Give a claimed key back: its request sends nothing (no run, or ``run_id``, whose
    plan failed and was stored as failed); a key bound to another run is kept."""
    c = api_idempotency_keys.c
    bound = c.run_id.is_(None) if run_id is None else (c.run_id.is_(None) | (c.run_id == run_id))
    with access.transaction(engine, "release an Idempotency-Key") as conn:
        conn.execute(delete(api_idempotency_keys).where(c.key == key, bound))
