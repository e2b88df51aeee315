"""``campaign api [--host H] [--port P] [--openapi]`` and ``campaign api-token
create|list|revoke``: the HTTP API (``/api/v1``) and its bearer tokens.

The API listens on ``[api] host`` and ``port`` (127.0.0.1:8791 unless config.toml says
otherwise); another address than loopback refuses to start while no token exists. ``campaign
serve`` serves it too when ``[api] serve = true`` (:func:`serve_alongside`), never on the
webhook receiver's port. FastAPI is imported only when the API is served or its document
printed: registering these commands imports none of it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import typer

from scheduler.core.errors import ConfigError, SchedulerError

if TYPE_CHECKING:
    import socket

    from scheduler.ledger.runs import Ledger
    from scheduler.settings.load import Settings

tokens_app = typer.Typer(help="Bearer tokens of the HTTP API (`campaign api`): create, list, "
                              "revoke. Only their hashes are stored.", no_args_is_help=True)


def listen(settings: Settings, ledger: Ledger, host: str, port: int) -> socket.socket:
    """The API's socket on ``host:port``: refused on a non-loopback host while no token
    exists, on the webhook receiver's port, and (clearly) on a port in use."""
    from scheduler.core.httpserver import try_bind
    from scheduler.ledger.api_tokens import live_token_count
    from scheduler.settings.api import LOOPBACK

    if host not in LOOPBACK and live_token_count(ledger.engine) == 0:
        raise ConfigError(f"the API would listen on {host}, which other machines reach, but no "
                          "API token exists: make one first with `campaign api-token create "
                          "NAME --role viewer|operator` (or listen on 127.0.0.1)")
    if port and port == settings.receiver_port:
        raise ConfigError(f"the API cannot use port {port}: it is the webhook receiver's "
                          "(receiver_port); choose another [api] port or --port")
    if port and port == settings.dashboard.port and settings.dashboard.serve:
        raise ConfigError(f"the API cannot use port {port}: the dashboard serves on it; "
                          "choose another [api] port or --port")
    sock = try_bind(host, port)
    if sock is None:
        raise SchedulerError(f"cannot serve the API on {host}:{port}: the port is in use or the "
                             "address is not this machine's; choose another with --port or "
                             "[api] port in config.toml")
    sock.listen(2048)
    return sock


def api_command(
    host: str | None = typer.Option(None, "--host", show_default=False,
                                    help="Address to listen on (default: [api] host, else "
                                         "127.0.0.1). Another address needs a token to exist."),
    port: int | None = typer.Option(None, "--port", min=0, max=65535, show_default=False,
                                    help="Port (default: [api] port, else 8791; 0: a free one)."),
    openapi: bool = typer.Option(False, "--openapi",
                                 help="Print the OpenAPI 3.1 document (JSON) and exit."),
) -> None:
    """Serve the HTTP API (/api/v1): runs, senders, the suppression list; bearer tokens."""
    if openapi:
        from scheduler.api.app import openapi_document

        typer.echo(json.dumps(openapi_document(), ensure_ascii=False, indent=2))
        return
    from scheduler.api.app import create_api
    from scheduler.ledger.api_tokens import live_token_count
    from scheduler.wiring import open_project

    settings, ledger = open_project()
    conf = settings.api.model_copy(update={"host": host or settings.api.host,
                                           "port": settings.api.port if port is None else port})
    settings = settings.model_copy(update={"api": conf})
    sock = listen(settings, ledger, conf.host, conf.port)
    from rich.console import Console

    from scheduler.ledger.db import ledger_label

    console = Console(highlight=False)
    console.print(f"API at {conf.address(sock.getsockname()[1])}/api/v1 (Ctrl-C stops it)",
                  markup=False)
    console.print(f"ledger: {ledger_label(settings)}", soft_wrap=True, markup=False)
    if live_token_count(ledger.engine) == 0:
        console.print("no API token yet: every request is refused until you make one with "
                      "`campaign api-token create NAME --role viewer|operator`", markup=False)
    from scheduler.commands.dashboard import check_campaign
    from scheduler.core.httpserver import serve_until_stopped

    serve_until_stopped(create_api(settings, ledger, check=check_campaign), sock)


@contextlib.contextmanager
def serve_alongside(settings: Settings, ledger: Ledger) -> Iterator[str | None]:
    """With ``[api] serve = true``: the API served on its own port while the block runs (its
    address; None when the setting is off)."""
    if not settings.api.serve:
        yield None
        return
    from scheduler.api.app import create_api
    from scheduler.commands.dashboard import check_campaign
    from scheduler.core.httpserver import BackgroundServer

    conf = settings.api
    sock = listen(settings, ledger, conf.host, conf.port)
    server = BackgroundServer(create_api(settings, ledger, check=check_campaign),
                              sock=sock).start()
    try:
        yield conf.address(server.port) + "/api/v1"
    finally:
        server.stop()


@tokens_app.command("create")
def create_command(
    name: str = typer.Argument(..., help="A name for the token (what list and revoke use)."),
    role: str = typer.Option(..., "--role", help="viewer (reads) or operator (also acts)."),
) -> None:
    """Make a token and print it once (only its SHA-256 is stored)."""
    from scheduler.core.timeutil import utcnow
    from scheduler.ledger.api_tokens import create_token
    from scheduler.wiring import open_project

    _, ledger = open_project()
    token = create_token(ledger.engine, name, role, utcnow())
    typer.echo(token)
    typer.echo(f"API token {name!r} ({role}) made: the line above is the token, shown this once; "
               "send it as 'Authorization: Bearer TOKEN'", err=True)


@tokens_app.command("list")
def list_command(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Every token: name, role, created, last used, revoked (never the token)."""
    from scheduler.ledger.api_tokens import list_tokens
    from scheduler.wiring import open_project

    _, ledger = open_project()
    found = list_tokens(ledger.engine)

    def when(moment: object) -> str | None:
        return moment.isoformat(timespec="seconds") if moment is not None else None  # type: ignore[attr-defined]

    rows = [{"name": t.name, "role": t.role, "created": when(t.created_at),
             "last_used": when(t.last_used_at), "revoked": when(t.revoked_at)} for t in found]
    if as_json:
        typer.echo(json.dumps({"tokens": rows}, indent=2))
        return
    if not rows:
        typer.echo("no API tokens: make one with `campaign api-token create NAME --role viewer`")
        return
    from scheduler.core import display

    table = display.table("name", "role", "created (UTC)", "last used", "revoked",
                          show_edge=False)
    for row in rows:
        table.add_row(*(display.clean_markup(str(row[key] or "-"))
                        for key in ("name", "role", "created", "last_used", "revoked")))
    from rich.console import Console

    Console(highlight=False).print(table)


@tokens_app.command("revoke")
def revoke_command(name: str = typer.Argument(..., help="The token's name.")) -> None:
    """Revoke a token: refused from now on (kept in the list as revoked)."""
    from scheduler.core.timeutil import utcnow
    from scheduler.ledger.api_tokens import revoke_token
    from scheduler.wiring import open_project

    _, ledger = open_project()
    info = revoke_token(ledger.engine, name, utcnow())
    typer.echo(f"API token {info.name!r} revoked")


def register(app: typer.Typer) -> None:
    """Add ``campaign api`` and ``campaign api-token``."""
    app.command("api")(api_command)
    app.add_typer(tokens_app, name="api-token")
