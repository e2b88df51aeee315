"""The receiver's identity kept in the state folder: its webhook token and its port.

The service retries a webhook it could not deliver for about six minutes, to the URL that
was registered when the message was sent. If each process made a new token (or took a new
port), events for sends in flight when a process died would be refused by the next one,
and those sends would end ``unknown`` although the service accepted them. So the generated
token, and the port where the user fixed none, are written once to
``<state>/receiver.json`` (mode 0600; the token is a secret) and reused by every later
process of the project: ``campaign run``, ``resume``, ``serve`` and ``receiver``.

The account webhook's (SMS, voice) signing secret is kept there too when the settings name
none: generated when a run first registers the account webhooks, read by every receiver.

``webhook_token``, ``webhook_secret`` and ``receiver_port`` in the settings always win over
what is kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import BaseModel, ValidationError

from scheduler.core.errors import ConfigError
from scheduler.core.httpserver import try_bind
from scheduler.settings.load import Settings

IDENTITY_FILE = "receiver.json"


class ReceiverIdentity(BaseModel):
    """What a project's receiver keeps between processes."""

    token: str
    port: int | None = None
    #: The account webhook's signing secret, generated when none is configured (SMS, voice).
    account_secret: str | None = None


def _path(settings: Settings) -> Path | None:
    try:
        return settings.state_path() / IDENTITY_FILE
    except ConfigError:  # no project: nowhere to keep it (a database URL was given)
        return None


@contextlib.contextmanager
def _held(path: Path) -> Iterator[None]:
    """Hold the identity's lock file (``receiver.json.lock``) while reading and changing it.

    Several processes of one project start at once (workers, a run beside ``serve``); without
    the lock, two of them would each make a token on first use and one would refuse the
    other's events, or one's kept port would overwrite the other's account secret.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _read(path: Path) -> ReceiverIdentity | None:
    if not path.is_file():
        return None
    try:
        return ReceiverIdentity.model_validate_json(path.read_bytes())
    except (ValidationError, OSError):
        return None  # unreadable: a new one is made (old in-flight events are then refused)


def _write(path: Path, identity: ReceiverIdentity) -> None:
    """Write atomically, readable by its owner only; the temporary file is this process's
    own, so two writers never rename each other's."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(identity.model_dump_json())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None


def _update(settings: Settings, change: Callable[[ReceiverIdentity], bool]
            ) -> ReceiverIdentity | None:
    """Read the kept identity (made with a new random token when there is none), let
    ``change`` edit it, and write it back when ``change`` says it changed, all under the lock;
    ``None`` without a state folder."""
    path = _path(settings)
    if path is None:
        return None
    with _held(path):
        identity = _read(path)
        made = identity is None
        if identity is None:
            identity = ReceiverIdentity(token=secrets.token_urlsafe(32))
        if change(identity) or made:
            _write(path, identity)
    return identity


def load_identity(settings: Settings) -> ReceiverIdentity | None:
    """The kept identity, created (with a new random token) on first use; ``None`` without
    a state folder."""
    return _update(settings, lambda identity: False)


def account_secret(settings: Settings, *, create: bool = False) -> str | None:
    """The account webhook's secret: ``webhook_secret``, else the one kept in the state
    folder (made and kept when ``create``); ``None`` when there is none (nor a state folder)."""
    if settings.webhook_secret is not None and settings.webhook_secret.get_secret_value():
        return settings.webhook_secret.get_secret_value()
    path = _path(settings)
    if path is None or (not create and not path.is_file()):
        return None

    def give_secret(identity: ReceiverIdentity) -> bool:
        if identity.account_secret is None and create:
            identity.account_secret = secrets.token_hex(32)
            return True
        return False

    identity = _update(settings, give_secret)
    return identity.account_secret if identity is not None else None


def bind_receiver_socket(settings: Settings, *, notes: list[str] | None = None
                         ) -> socket.socket:
    """Bind the receiver's port now (before any planning), so a busy port stops the command
    before it does anything.

    ``receiver_port`` set: that port or a :class:`ConfigError`. Otherwise the port kept from
    the last process, else (or when it is taken) a free one, which is kept for next time;
    ``notes`` gets a line when the kept port had to change.
    """
    host = settings.receiver_host
    if settings.receiver_port is not None:
        sock = try_bind(host, settings.receiver_port)
        if sock is None:
            raise ConfigError(
                f"receiver_port {settings.receiver_port} on {host} is in use (is `campaign "
                "serve`, `campaign receiver` or another run using it?): stop that process, "
                "or set CAMPAIGN_RECEIVER_PORT to a free port (0 picks one)")
        return sock
    if settings.webhook_url:
        raise ConfigError(
            "webhook_url is set, so the receiver must listen on the port it forwards to: "
            "set receiver_port (CAMPAIGN_RECEIVER_PORT) as well")
    identity = load_identity(settings)
    kept = identity.port if identity is not None else None
    sock = try_bind(host, kept) if kept else None
    if sock is None:
        sock = try_bind(host, 0)
        if sock is None:
            raise ConfigError(f"cannot listen on {host}: no free port")
        if kept and notes is not None:
            notes.append(f"receiver port {kept} (kept from the last run) is in use; listening "
                         f"on {sock.getsockname()[1]} instead, so webhooks retried to the old "
                         "port for sends of an earlier process will not arrive here")
    port = sock.getsockname()[1]
    if identity is not None and identity.port != port:

        def keep_port(kept_identity: ReceiverIdentity) -> bool:
            kept_identity.port = port
            return True

        with contextlib.suppress(ConfigError):
            _update(settings, keep_port)
    return sock
