"""The project's link-signing key and the public address short links are made on.

The key is 32 random bytes, kept hex-encoded in ``<state>/links.key`` (mode 0600), made by
the first process that needs it (``O_EXCL``: two processes racing make one key) and read
by every later one: the planner signs with it, the receiver checks with it. It is never
printed. Deleting it makes every link already sent a 404.

The public base is ``webhook_url``'s origin, with the path prefix before
``/webhooks/session`` when the URL ends with it (a receiver behind a reverse proxy under a
prefix): ``https://hooks.example.com/wa/webhooks/session`` → ``https://hooks.example.com/wa``,
and links are ``<base>/r/<token>``.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from scheduler.core.errors import ConfigError
from scheduler.links.exceptions import LinkError
from scheduler.settings.load import Settings

KEY_FILE = "links.key"
_SESSION_PATH = "/webhooks/session"  # tracking.urls.SESSION_PATH (tracking imports links)


def link_base(settings: Settings) -> str | None:
    """``<scheme>://<host>[/prefix]`` of the receiver's public address, or ``None`` when
    ``webhook_url`` is not set."""
    if not settings.webhook_url:
        return None
    parts = urlsplit(settings.webhook_url)
    path = parts.path.rstrip("/")
    prefix = path[: -len(_SESSION_PATH)] if path.endswith(_SESSION_PATH) else ""
    return urlunsplit((parts.scheme, parts.netloc, prefix, "", ""))


def _key_path(settings: Settings) -> Path:
    try:
        return settings.state_path() / KEY_FILE
    except ConfigError:
        raise LinkError("tracked links need a state folder to keep their signing key in "
                        "(set project_dir or state_dir)") from None


def link_key(settings: Settings, *, create: bool = True) -> bytes | None:
    """The project's signing key, made on first use when ``create`` (else ``None`` when
    there is none yet)."""
    path = _key_path(settings)
    try:
        return _read(path)
    except FileNotFoundError:
        if not create:
            return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # written whole to a file of this process, then linked into place: the link fails
        # if another process put its key there first, and nobody ever reads half a key
        tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(32))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process made it first: theirs is the key
        finally:
            tmp.unlink()
    except OSError as exc:
        raise LinkError(f"cannot write the link-signing key {path}: {exc.strerror}") from None
    return _read(path)


def _read(path: Path) -> bytes:
    try:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:
        raise LinkError(f"cannot read the link-signing key {path}: {exc}") from None
    if len(key) < 16:
        raise LinkError(f"the link-signing key {path} is too short: delete it to make a new "
                        "one (links already sent then stop working)")
    return key
