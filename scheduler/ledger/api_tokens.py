"""The HTTP API's bearer tokens (issue 34): made, listed, revoked and checked; only their
SHA-256 is stored.

A token is ``cmp_`` and 43 URL-safe characters (32 random bytes): the prefix makes a leaked
token recognisable to secret scanners. It is shown once, by ``campaign api-token create``;
the ledger keeps its SHA-256 (hex) in ``api_tokens`` (migration 0015), and a request's token
is looked up by its hash, then the hashes compared in constant time. Neither the token nor
its hash is ever printed, logged or put in a page; a token's name stands for it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Column, Engine, Integer, MetaData, String, Table, select
from sqlmodel.sql.sqltypes import UTCDateTime

from scheduler.core.errors import SchedulerError
from scheduler.ledger import access

#: What every token starts with (``cmp_``: campaign).
PREFIX = "cmp_"
#: The roles: a viewer reads, an operator also acts (pause, resume, cancel, suppress).
ROLES = ("viewer", "operator")
#: A token's name: what ``list`` and ``revoke`` use.
MAX_NAME_CHARS = 64
#: How stale ``last_used_at`` may be before a use writes it again (one write a minute at
#: most per token, not one per request).
LAST_USED_STEP = timedelta(seconds=60)

api_tokens = Table(
    "api_tokens", MetaData(),
    Column("id", Integer, primary_key=True),
    Column("name", String, nullable=False, unique=True),
    Column("role", String, nullable=False),
    Column("token_hash", String, nullable=False, unique=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("last_used_at", UTCDateTime, nullable=True),
    Column("revoked_at", UTCDateTime, nullable=True),
)


@dataclass(frozen=True)
class TokenInfo:
    """One token as ``campaign api-token list`` shows it (never the token or its hash)."""

    name: str
    role: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None

    @property
    def revoked(self) -> bool:
        """Whether the token was revoked (it is then never accepted)."""
        return self.revoked_at is not None


def token_hash(token: str) -> str:
    """The SHA-256 (hex) of ``token``: what the ledger keeps."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_token(random_bytes: Callable[[int], bytes] = secrets.token_bytes) -> str:
    """A new token: :data:`PREFIX` and 32 random bytes, URL-safe base64 (43 characters)."""
    import base64

    body = base64.urlsafe_b64encode(random_bytes(32)).rstrip(b"=").decode("ascii")
    return PREFIX + body


def check_name(name: str) -> str:
    """``name`` when it is a valid token name, else a :class:`SchedulerError` saying why."""
    if (not name or len(name) > MAX_NAME_CHARS or name != name.strip()
            or not all(ch.isalnum() or ch in "-_." for ch in name)):
        raise SchedulerError(f"token name {name[:80]!r}: 1 to {MAX_NAME_CHARS} letters, digits, "
                             "'-', '_' or '.'")
    return name


def _info(row: object) -> TokenInfo:
    return TokenInfo(name=row.name, role=row.role,  # type: ignore[attr-defined]
                     created_at=row.created_at,  # type: ignore[attr-defined]
                     last_used_at=row.last_used_at,  # type: ignore[attr-defined]
                     revoked_at=row.revoked_at)  # type: ignore[attr-defined]


def create_token(engine: Engine, name: str, role: str, now: datetime, *,
                 random_bytes: Callable[[int], bytes] = secrets.token_bytes) -> str:
    """Make token ``name`` with ``role`` and return it (the only time it is seen); a name in
    use, revoked or not, is an error (names stay unique in the list)."""
    check_name(name)
    if role not in ROLES:
        raise SchedulerError(f"role {role!r}: a role is viewer or operator")
    token = new_token(random_bytes)
    with access.transaction(engine, "store an API token") as conn:
        taken = conn.execute(select(api_tokens.c.id).where(api_tokens.c.name == name)).first()
        if taken is not None:
            raise SchedulerError(f"an API token named {name!r} exists already (see "
                                 "`campaign api-token list`); choose another name")
        conn.execute(api_tokens.insert().values(name=name, role=role,
                                                token_hash=token_hash(token), created_at=now))
    return token


def list_tokens(engine: Engine) -> list[TokenInfo]:
    """Every token, oldest first (revoked ones included)."""
    with access.read(engine, "read the API tokens") as conn:
        rows = conn.execute(select(api_tokens).order_by(api_tokens.c.id)).all()
    return [_info(row) for row in rows]


def live_token_count(engine: Engine) -> int:
    """How many tokens are not revoked."""
    return sum(1 for info in list_tokens(engine) if not info.revoked)


def revoke_token(engine: Engine, name: str, now: datetime) -> TokenInfo:
    """Revoke token ``name`` (from now on refused); revoking it again changes nothing. An
    unknown name is an error."""
    with access.transaction(engine, "revoke an API token") as conn:
        row = conn.execute(select(api_tokens).where(api_tokens.c.name == name)).first()
        if row is None:
            raise SchedulerError(f"no API token named {name[:80]!r} (see `campaign api-token "
                                 "list`)")
        if row.revoked_at is None:
            conn.execute(api_tokens.update().where(api_tokens.c.id == row.id)
                         .values(revoked_at=now))
        row = conn.execute(select(api_tokens).where(api_tokens.c.id == row.id)).one()
    return _info(row)


def authenticate(engine: Engine, token: str, now: datetime) -> TokenInfo | None:
    """The live token that ``token`` is, else None (unknown, malformed or revoked); notes
    its use (at most once per :data:`LAST_USED_STEP`)."""
    if not token.startswith(PREFIX) or len(token) > 200:
        return None
    wanted = token_hash(token)
    with access.read(engine, "check an API token") as conn:
        row = conn.execute(select(api_tokens).where(api_tokens.c.token_hash == wanted)).first()
    if row is None or not hmac.compare_digest(row.token_hash, wanted) or row.revoked_at:
        return None
    if row.last_used_at is None or now - row.last_used_at >= LAST_USED_STEP:
        with access.transaction(engine, "note an API token's use") as conn:
            conn.execute(api_tokens.update().where(api_tokens.c.id == row.id)
                         .values(last_used_at=now))
    return _info(row)
