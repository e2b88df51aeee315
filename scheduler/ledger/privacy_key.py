"""The erasure key: what a forgotten number's keyed hash (HMAC-SHA256) is made with.

The key is the settings' ``[privacy] erasure_key`` when set, else the file ``erasure.key``
of the project's state folder, made once (32 random bytes, hex, mode 0600) by the first
``person forget``. Without the key a hash says nothing about the number; with it, a plan
can tell that a CSV's number was erased (:func:`scheduler.ledger.privacy.erased_among`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler.settings.load import Settings

KEY_FILE = "erasure.key"
#: The prefix of an erased person's pseudonym and of their hash in the suppression list.
ERASED = "erased:"
#: The reason a plan gives for an erased number's rows (with the date).
ERASED_REASON = "erased at the person's request on {date}"


def key_path(settings: Settings) -> Path:
    """Where the key file is (the state folder's ``erasure.key``)."""
    return settings.state_path() / KEY_FILE


def erasure_key(settings: Settings, *, create: bool = False) -> bytes | None:
    """The key: the setting, else the state folder's file (made with 0600 when ``create``);
    None when there is none yet."""
    configured = settings.privacy.erasure_key
    if configured is not None and configured.get_secret_value():
        return configured.get_secret_value().encode()
    path = key_path(settings)
    if path.is_file():
        return path.read_text(encoding="ascii").strip().encode()
    if not create:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return path.read_text(encoding="ascii").strip().encode()
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(secrets.token_hex(32) + "\n")
    return path.read_text(encoding="ascii").strip().encode()


def project_key() -> bytes | None:
    """The current project's key, for a plan (None outside a project or before any
    erasure)."""
    from scheduler.core.errors import SchedulerError
    from scheduler.settings.load import load_settings

    try:
        return erasure_key(load_settings())
    except (SchedulerError, OSError):
        return None


def number_hash(key: bytes, digits: str) -> str:
    """The suppression list's entry for an erased number: ``erased:`` + HMAC-SHA256 hex."""
    return ERASED + hmac.new(key, digits.encode(), hashlib.sha256).hexdigest()


def pseudonym(key: bytes, digits: str) -> str:
    """What replaces the number in the rows kept: ``erased:`` + a short id (another keyed
    hash, so it is not the suppression list's entry)."""
    mac = hmac.new(key, b"pseudonym:" + digits.encode(), hashlib.sha256).hexdigest()
    return ERASED + mac[:16]
