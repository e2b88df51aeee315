"""Where the service posts: the receiver's routes, the session webhook URL (with its token)
and the account webhook URL (signed, see :mod:`scheduler.tracking.identity`)."""

from __future__ import annotations

import secrets
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from scheduler.core.httpserver import BackgroundServer
from scheduler.settings.load import Settings

SESSION_PATH = "/webhooks/session"
ACCOUNT_PATH = "/webhooks/account"
_process_token: str | None = None


def receiver_token(settings: Settings) -> str:
    """The session webhook token: ``webhook_token``, else the one kept in the state folder
    (see :mod:`scheduler.tracking.identity`), else one random token per process."""
    global _process_token
    if settings.webhook_token is not None and settings.webhook_token.get_secret_value():
        return settings.webhook_token.get_secret_value()
    from scheduler.tracking.identity import load_identity

    identity = load_identity(settings)
    if identity is not None:
        return identity.token
    if _process_token is None:
        _process_token = secrets.token_urlsafe(32)
    return _process_token


def session_webhook_url(settings: Settings, server: BackgroundServer | str | None = None
                        ) -> str:
    """The URL to register on each sender: ``webhook_url`` (public), else the local server's
    (a :class:`BackgroundServer` or its ``http://host:port``), always with ``?token=``."""
    if settings.webhook_url:
        base = settings.webhook_url
    elif server is not None:
        root = server if isinstance(server, str) else server.base_url
        base = f"{root.rstrip('/')}{SESSION_PATH}"
    else:
        raise ValueError("no webhook_url is set and no local receiver is running")
    parts = urlsplit(base)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "token"]
    query.append(("token", receiver_token(settings)))
    return urlunsplit(parts._replace(query=urlencode(query)))


def account_webhook_url(settings: Settings, server: BackgroundServer | str | None = None
                        ) -> str:
    """The URL to register as the account's SMS and voice webhook: beside the session route
    of ``webhook_url`` (``…/webhooks/session`` → ``…/webhooks/account``; another path gets
    ``/webhooks/account`` at its root), else the local server's. Signed, so no token."""
    if settings.webhook_url:
        parts = urlsplit(settings.webhook_url)
        path = parts.path.rstrip("/")
        path = path[: -len(SESSION_PATH)] + ACCOUNT_PATH if path.endswith(SESSION_PATH) \
            else ACCOUNT_PATH
        return urlunsplit(parts._replace(path=path, query=""))
    if server is None:
        raise ValueError("no webhook_url is set and no local receiver is running")
    root = server if isinstance(server, str) else server.base_url
    return f"{root.rstrip('/')}{ACCOUNT_PATH}"
