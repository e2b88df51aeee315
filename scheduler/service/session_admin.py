"""Managing sender sessions on a configured service: what ``campaign sessions`` stands on.

- :func:`configured_service`: the base URL and key, or a clear error (no service, or half a
  configuration); never the embedded sandbox.
- :func:`call_service`: run one async action with a client, every service failure turned by
  :func:`explain` into a one-line error that names the session and says what to do.
- :func:`find_session`, :func:`fetch_qr`: a session's record and its QR code (text + PNG).
- :func:`qr_terminal_text`, :func:`default_qr_path`, :func:`save_png`: showing and keeping it.

The API key never appears in a message: the service's own error text is scrubbed by the
client, and nothing here prints settings.
"""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from scheduler.core.errors import ConfigError, SchedulerError
from scheduler.service.client import ServiceClient
from scheduler.service.exceptions import (
    Forbidden,
    InvalidRequest,
    NoAnswer,
    RateLimited,
    RequestRejected,
    ServerError,
    ServiceError,
    ServiceHTTPError,
    ServiceTimeout,
    SessionNotFound,
    Unauthorized,
)
from scheduler.service.responses import QrCode, SessionRecord
from scheduler.settings.load import Settings

T = TypeVar("T")
#: Widest QR code printed in the terminal (columns, quiet zone included).
MAX_QR_COLUMNS = 80
_UNSAFE_FILE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


class SessionCommandError(SchedulerError):
    """A session could not be listed, created, shown or changed; the message says why."""


def shown_url(base_url: str) -> str:
    """The service's address as shown to a user: scheme, host, port and path only."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path.rstrip('/')}"


def configured_service(settings: Settings) -> tuple[str, str]:
    """``(base_url, api_key)`` of the configured service, or a :class:`ConfigError`.

    Both must be set: with neither, the error says how to configure a service (the embedded
    sandbox has no sessions to manage); with one of the two, it names the missing one.
    """
    service = settings.service_endpoint()  # half a configuration is an error there
    if service is not None:
        return service
    raise ConfigError(
        "no service configured: set CAMPAIGN_BASE_URL and CAMPAIGN_API_KEY (or base_url and "
        "api_key_file in config.toml); `campaign sessions` manages the sessions of a real "
        "service and never uses the embedded sandbox"
    )


def _detail(exc: ServiceError) -> str:
    """The parenthesised cause at the end of a no-answer message (e.g. the connect error)."""
    text = str(exc)
    start = text.find(" (")
    return f" ({text[start + 2:-1]})" if start >= 0 and text.endswith(")") else ""


def explain(exc: ServiceError, *, base_url: str, doing: str,
            session_id: str | None = None) -> SchedulerError:
    """One line for a service failure: what was being done, what happened, what to do."""
    where = shown_url(base_url)
    if isinstance(exc, Unauthorized):
        return SessionCommandError(
            f"{where} refused the API key while {doing} (HTTP 401: {exc.error}): check "
            "CAMPAIGN_API_KEY (or api_key_file); the key itself is never shown"
        )
    if isinstance(exc, Forbidden):
        target = f" to session {session_id}" if session_id else ""
        return SessionCommandError(
            f"{where} refused this API key access{target} while {doing} (HTTP 403: "
            f"{exc.error}): use the account owner's key, or a member's key with write "
            "permission on it (`campaign members update USER_ID -p write -s SESSION`)"
        )
    if isinstance(exc, SessionNotFound):
        name = session_id or "the session"
        return SessionCommandError(
            f"session {name} does not exist on {where} (HTTP 404 while {doing}): create it "
            f"with `campaign sessions create {name}`; `campaign sessions list` shows the "
            "account's sessions"
        )
    if isinstance(exc, RateLimited):
        wait = f"in {exc.retry_after:g} s" if exc.retry_after is not None else "in a moment"
        return SessionCommandError(
            f"{where} is throttling requests (HTTP 429 while {doing}): try again {wait}"
        )
    if isinstance(exc, ServerError):
        return SessionCommandError(
            f"{where} failed while {doing} (HTTP {exc.status}: {exc.error}): try again later"
        )
    if isinstance(exc, RequestRejected):
        return SessionCommandError(
            f"{where} refused {doing} (HTTP {exc.status}: {exc.error})"
        )
    if isinstance(exc, ServiceTimeout):
        return SessionCommandError(
            f"no answer from {where} while {doing}: the service is slow or unreachable; "
            f"try again, or raise http_timeout_s{_detail(exc)}"
        )
    if isinstance(exc, NoAnswer):
        return SessionCommandError(
            f"cannot reach the service at {where} while {doing}: check CAMPAIGN_BASE_URL "
            f"and that the service is up{_detail(exc)}"
        )
    if isinstance(exc, ServiceHTTPError | InvalidRequest):
        return SessionCommandError(f"{doing}: {exc}")
    return SessionCommandError(f"{where}: unexpected answer while {doing}: {exc}")


def call_service(settings: Settings, action: Callable[[ServiceClient], Awaitable[T]], *,
                 doing: str,
                 session_id: str | None = None) -> T:
    """Run ``action(client)`` against the configured service; failures explained in one line."""
    base_url, key = configured_service(settings)

    async def run() -> T:
        async with ServiceClient(base_url, key, timeout_s=settings.http_timeout_s,
                                 concurrency=2) as client:
            return await action(client)

    try:
        return asyncio.run(run())
    except ServiceError as exc:
        raise explain(exc, base_url=base_url, doing=doing, session_id=session_id) from None


class SessionMissing(SessionCommandError):
    """The account has no session of that id."""


async def find_session(client: ServiceClient, session_id: str) -> SessionRecord:
    """The session's record from the account's listing; :class:`SessionMissing` if absent."""
    for record in await client.list_sessions():
        if record.sessionId == session_id:
            return record
    raise SessionMissing(
        f"session {session_id} does not exist on this account (or this API key may not see "
        f"it): create it with `campaign sessions create {session_id}`"
    )


async def fetch_qr(client: ServiceClient, session_id: str) -> tuple[QrCode, bytes]:
    """The session's QR code and its PNG image (from the JSON's data URL, else ``?image=1``).

    A session that is already connected has no QR code: :class:`SessionCommandError` says so.
    """
    try:
        qr = await client.get_qr(session_id)
    except SessionNotFound:
        raise
    except RequestRejected as exc:
        record = await find_session(client, session_id)
        if record.status == "connected":
            raise SessionCommandError(_already_connected(record)) from None
        raise exc from None
    if qr.status == "connected" and not qr.qrCode:
        record = await find_session(client, session_id)
        raise SessionCommandError(_already_connected(record))
    png = qr.png_bytes() if qr.qrCodeImage else None
    if png is None:
        png = await client.get_qr_png(session_id)
    return qr, png


def _already_connected(record: SessionRecord) -> str:
    phone = f" as {record.phone}" if record.phone else ""
    return (f"session {record.sessionId} is already connected{phone}: there is no QR code to "
            f"scan; `campaign sessions status {record.sessionId}` shows it")


def qr_terminal_text(payload: str, *, max_columns: int = MAX_QR_COLUMNS) -> str | None:
    """The QR code of ``payload`` drawn with half blocks (2 rows per line), or ``None`` when
    it would not fit in ``max_columns`` even with a narrow quiet zone."""
    import segno

    code = segno.make(payload, error="l", micro=False)
    for border in (4, 2):
        width, _ = code.symbol_size(scale=1, border=border)
        if width <= max_columns:
            buffer = io.StringIO()
            code.terminal(out=buffer, compact=True, border=border)
            return buffer.getvalue()
    return None


def default_qr_path(settings: Settings, session_id: str, cwd: Path | None = None) -> Path:
    """``<project's state folder>/qr-<id>.png`` when that folder exists, else in ``cwd``.

    Outside a project, or before its state folder exists, the PNG goes to the current folder:
    showing a QR code never creates a state folder.
    """
    name = f"qr-{_UNSAFE_FILE_CHARS.sub('_', session_id) or 'session'}.png"
    try:
        state: Path | None = settings.state_path()
    except ConfigError:  # no project: there is no state folder
        state = None
    folder = state if state is not None and state.is_dir() else (cwd or Path.cwd())
    return folder / name


def save_png(path: Path, png: bytes) -> Path:
    """Write ``png`` to ``path`` whole (a temporary file renamed over it); the path written."""
    target = path.expanduser()
    if target.is_dir():
        raise SessionCommandError(f"{target}: is a folder; give a file name such as qr.png")
    if not target.parent.is_dir():
        raise SessionCommandError(f"{target}: the folder {target.parent} does not exist")
    partial = target.with_name(f".{target.name}.partial")
    try:
        partial.write_bytes(png)
        partial.replace(target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise SessionCommandError(f"{target}: cannot be written ({exc.strerror})") from None
    return target
