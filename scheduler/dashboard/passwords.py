"""Dashboard passwords: argon2id hashes (argon2-cffi), with its errors translated here.

The only module that imports :mod:`argon2`. ``PasswordHasher.verify`` returns ``True`` or
raises: ``VerifyMismatchError`` (the password is wrong), another ``VerificationError``
(Argon2 refused for another reason, e.g. a damaged hash), ``InvalidHashError`` (a
``ValueError``: not an argon2 hash at all). ``check_needs_rehash`` says whether a hash was
made with other parameters than this hasher's (it raises ``InvalidHashError`` on a string
that is not a hash). Both a wrong password and a damaged hash are a failed login here; a
string that is not shaped like a hash is refused when the settings are read
(:class:`~scheduler.settings.dashboard.DashboardUser`).
"""

from __future__ import annotations

import secrets

from argon2 import PasswordHasher
from argon2.exceptions import HashingError, InvalidHashError, VerificationError

from scheduler.core.errors import SchedulerError

#: The shortest password the hash command accepts.
MIN_PASSWORD_CHARS = 8


#: The hasher type (argon2-cffi's), for annotations elsewhere.
Hasher = PasswordHasher


def hasher() -> PasswordHasher:
    """argon2-cffi's recommended parameters (RFC 9106's low-memory profile), argon2id."""
    return PasswordHasher()


def hash_password(password: str, *, using: PasswordHasher | None = None) -> str:
    """The ``$argon2id$…`` hash of ``password`` (a :class:`SchedulerError` when Argon2 fails)."""
    if len(password) < MIN_PASSWORD_CHARS:
        raise SchedulerError(f"the password is too short: at least {MIN_PASSWORD_CHARS} "
                             "characters")
    try:
        return (using or hasher()).hash(password)
    except HashingError as exc:
        raise SchedulerError(f"the password could not be hashed ({exc})") from None


def verify_password(password_hash: str, password: str,
                    *, using: PasswordHasher | None = None) -> bool:
    """Whether ``password`` matches ``password_hash``; every failure of Argon2 is ``False``."""
    try:
        return (using or hasher()).verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash: str, *, using: PasswordHasher | None = None) -> bool:
    """Whether the hash was made with weaker or other parameters than today's (then a new
    one is worth making); ``False`` for a string that is no hash (refused elsewhere)."""
    try:
        return (using or hasher()).check_needs_rehash(password_hash)
    except (InvalidHashError, ValueError):
        return False


def decoy_hash(using: PasswordHasher | None = None) -> str:
    """A hash of a random password, verified against when the user name is unknown, so an
    unknown name costs the same work as a wrong password (no name can be told by timing)."""
    return (using or hasher()).hash(secrets.token_urlsafe(24))
